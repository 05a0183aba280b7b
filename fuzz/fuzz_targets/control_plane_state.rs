//! The control plane's file-state decoder through its public path: the
//! bytes are written as a state file on tmpfs and `FileOptions::open`ed.
//! Never a panic; a refusal is `TooLarge`, `LimitExceeded` or `Corrupt`;
//! an accepted file stays within the limits it was opened under.
//!
//! The first input byte picks the options (the defaults, or small record,
//! byte and file limits so the limit paths are reached); the rest is the
//! file.
#![no_main]

use std::path::PathBuf;
use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use provider_pools_control_plane::file::FileOptions;
use provider_pools_control_plane::{ControlPlaneError, StoreLimits};

fn dir() -> &'static PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let base = if std::path::Path::new("/dev/shm").is_dir() {
            PathBuf::from("/dev/shm")
        } else {
            std::env::temp_dir()
        };
        let dir = base.join(format!("pp-fuzz-state-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("fuzz state directory");
        dir
    })
}

fuzz_target!(|data: &[u8]| {
    let Some((&choice, file)) = data.split_first() else {
        return;
    };
    let path = dir().join("state.json");
    std::fs::write(&path, file).expect("write the state file");
    let (options, limits, max_file) = if choice & 1 == 0 {
        (
            FileOptions::new(),
            StoreLimits::FILE_DECODED,
            provider_pools_control_plane::file::MAX_STATE_FILE_BYTES,
        )
    } else {
        let limits = StoreLimits {
            max_records: usize::from(choice >> 4).max(1),
            max_bytes: 256 + u64::from(choice >> 1) * 64,
        };
        let max_file = 64 + u64::from(choice >> 1) * 16;
        let options = FileOptions::new()
            .with_limits(limits)
            .and_then(|options| options.with_max_file_bytes(max_file))
            .expect("valid fuzz options");
        (options, limits, max_file)
    };
    match options.open(&path) {
        Ok(client) => {
            assert!(file.len() as u64 <= max_file, "accepted an oversized file");
            let stats = client.stats();
            let records = stats.registrations + stats.lease_slots;
            assert!(
                records <= limits.max_records,
                "{records} records over {limits:?}"
            );
            assert!(
                stats.current_bytes <= limits.max_bytes,
                "{stats:?} over {limits:?}"
            );
        }
        Err(
            ControlPlaneError::TooLarge { .. }
            | ControlPlaneError::LimitExceeded { .. }
            | ControlPlaneError::Corrupt { .. },
        ) => {}
        Err(other) => panic!("unexpected refusal: {other:?}"),
    }
});
