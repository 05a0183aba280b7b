//! The conformance suite against the file client, in a real temporary
//! directory, on a manual clock.

mod conformance;

use std::sync::Arc;
use std::time::Duration;

use conformance::Backend;
use provider_pools_control_plane::clock::ManualClock;
use provider_pools_control_plane::file::{FileClient, FileOptions};
use provider_pools_control_plane::{BoxFuture, ControlPlane};
use tempfile::TempDir;

struct FileBackend {
    clock: ManualClock,
    client: Arc<FileClient>,
    _directory: TempDir,
}

impl FileBackend {
    fn new() -> Self {
        let directory = tempfile::tempdir().expect("temporary directory");
        let clock = ManualClock::starting_at(1_000);
        let client = FileOptions::new()
            .with_clock(Arc::new(clock.clone()))
            .open(directory.path().join("control-plane.json"))
            .expect("opened");
        Self {
            clock,
            client: Arc::new(client),
            _directory: directory,
        }
    }
}

impl Backend for FileBackend {
    /// One client: a state file has one owner, and the nodes of the suite
    /// share it.
    fn client(&self) -> Arc<dyn ControlPlane> {
        self.client.clone()
    }

    fn ttl(&self) -> Duration {
        Duration::from_secs(1)
    }

    fn elapse(&self, by: Duration) -> BoxFuture<'_, ()> {
        self.clock
            .advance_ms(u64::try_from(by.as_millis()).expect("short"));
        Box::pin(async {})
    }

    fn expiry_slack(&self) -> Duration {
        Duration::ZERO
    }
}

conformance_suite!(async { FileBackend::new() });
