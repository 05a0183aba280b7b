//! FULL DISK: on a real, full filesystem a held lease can still be released
//! and a registration deregistered (they draw on the state file's reserve),
//! while a change that needs more room is refused and changes nothing.
//!
//! Each test runs its body on a 1 MiB tmpfs mounted in a private user and
//! mount namespace: the test runs this same executable again under
//! `unshare --user --map-root-user --mount`, which mounts the tmpfs over a
//! fresh directory and runs only that test, with `FULL_DISK_ROOT` naming
//! the mount. The mount lives and dies with that process: nothing is
//! mounted on the host, and no privilege is needed where user namespaces
//! are enabled. The disk is then filled by writing a file until the
//! filesystem answers `StorageFull`. No sleeps and no timing: every step
//! waits for its own answer.

use std::env;
use std::fs::{self, File};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

use provider_pools_control_plane::clock::ManualClock;
use provider_pools_control_plane::file::{FileClient, FileOptions};
use provider_pools_control_plane::{
    ControlPlane, ControlPlaneError, LeaseKey, LeaseName, LeaseRequest, NodeId, PresenceKey,
    Registration, ServiceGroup,
};

const ROOT: &str = "FULL_DISK_ROOT";
const TTL: Duration = Duration::from_secs(60);

/// Runs `body` on a small, private tmpfs: directly when this process is
/// the re-run inside the namespace, else by re-running this test there.
fn on_a_small_tmpfs(test: &str, body: fn(&Path)) {
    if let Some(root) = env::var_os(ROOT) {
        body(Path::new(&root));
        return;
    }
    let mount_point = tempfile::tempdir().expect("mount point");
    let output = Command::new("unshare")
        .args(["--user", "--map-root-user", "--mount", "sh", "-c"])
        .arg(r#"mount -t tmpfs -o size=1m tmpfs "$1" && shift && exec "$@""#)
        .arg("sh")
        .arg(mount_point.path())
        .arg(env::current_exe().expect("this test executable"))
        .args(["--exact", test, "--test-threads=1", "--nocapture"])
        .env(ROOT, mount_point.path())
        .output()
        .expect("unshare runs (util-linux; user namespaces must be enabled)");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "the test on a tmpfs failed ({}):\n{stdout}\n{stderr}",
        output.status
    );
    assert!(
        stdout.contains("1 passed"),
        "the re-run did not run {test}:\n{stdout}\n{stderr}"
    );
}

fn node(name: &str) -> NodeId {
    NodeId::new(name).expect("valid node")
}

fn service() -> ServiceGroup {
    ServiceGroup::new("billing").expect("valid service")
}

fn lease() -> LeaseKey {
    LeaseKey::Global(LeaseName::new("scheduler").expect("valid lease"))
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("runtime")
}

/// A registration of `node_name` with enough metadata that the state file
/// takes several pages.
fn registration(node_name: &str) -> Registration {
    let mut registration = Registration::new(service(), node(node_name), "10.0.0.1:8443", TTL)
        .expect("valid registration");
    for index in 0..8 {
        registration = registration
            .with_metadata(format!("key-{index}"), "v".repeat(200))
            .expect("metadata");
    }
    registration
}

fn open(path: &Path) -> FileClient {
    FileOptions::new()
        .with_clock(Arc::new(ManualClock::starting_at(1_000)))
        .open(path)
        .expect("state file opens")
}

/// Fills the filesystem holding `directory` until it answers `StorageFull`,
/// and checks that even a copy of `state` no longer fits.
fn fill(directory: &Path, state: &Path) -> PathBuf {
    let filler = directory.join("filler");
    let mut file = File::create(&filler).expect("filler");
    let block = vec![0x5a; 4096];
    let full = loop {
        if let Err(error) = file.write_all(&block) {
            break error;
        }
    };
    assert_eq!(full.kind(), io::ErrorKind::StorageFull, "{full}");
    let copy = fs::write(directory.join("copy"), fs::read(state).expect("state"));
    assert_eq!(
        copy.map_err(|error| error.kind()),
        Err(io::ErrorKind::StorageFull),
        "the disk is full: not even a copy of the state file fits"
    );
    let _removed = fs::remove_file(directory.join("copy"));
    filler
}

/// Whether `error` is a storage error of a full disk.
fn is_full(error: &ControlPlaneError) -> bool {
    matches!(error, ControlPlaneError::Storage { source, .. }
        if source.kind() == io::ErrorKind::StorageFull)
}

/// No staged file is left beside the state file.
fn assert_no_staged_files(directory: &Path) {
    let staged: Vec<_> = fs::read_dir(directory)
        .expect("listed")
        .map(|entry| entry.expect("entry").file_name())
        .filter(|name| name.to_string_lossy().contains(".tmp-"))
        .collect();
    assert!(staged.is_empty(), "{staged:?}");
}

#[test]
fn a_held_lease_can_be_released_on_a_full_disk() {
    on_a_small_tmpfs("a_held_lease_can_be_released_on_a_full_disk", |root| {
        let path = root.join("control-plane.json");
        let client = open(&path);
        let runtime = runtime();
        let grant = runtime.block_on(async {
            for name in ["node-a", "node-b", "node-c", "node-d"] {
                client
                    .register(registration(name))
                    .await
                    .expect("registered");
            }
            client
                .acquire(LeaseRequest::new(lease(), node("node-a"), TTL).expect("request"))
                .await
                .expect("acquired")
        });
        let reserve = fs::metadata(root.join("control-plane.json.reserve"))
            .expect("the reserve is made")
            .len();
        let state_len = fs::metadata(&path).expect("state").len();
        assert!(reserve >= state_len, "{reserve} < {state_len}");
        let filler = fill(root, &path);

        runtime.block_on(async {
            // A change that needs room is refused, and changes nothing.
            let error = client
                .register(registration("node-e"))
                .await
                .expect_err("no room for a new registration");
            assert!(is_full(&error), "{error:?}");
            assert_eq!(client.discover(service()).await.expect("found").len(), 4);

            client
                .release(grant.clone())
                .await
                .expect("released on a full disk");
            let state = client
                .read_lease(lease())
                .await
                .expect("read")
                .expect("slot");
            assert_eq!(state.holder, None);
            assert_eq!(state.token, grant.token);
        });
        assert_no_staged_files(root);
        drop(client);

        // The release is durable, and the token still only moves forward.
        let client = open(&path);
        runtime.block_on(async {
            let state = client
                .read_lease(lease())
                .await
                .expect("read")
                .expect("slot");
            assert_eq!(state.holder, None);
            fs::remove_file(&filler).expect("room again");
            let again = client
                .acquire(LeaseRequest::new(lease(), node("node-b"), TTL).expect("request"))
                .await
                .expect("acquired once there is room");
            assert!(again.token > grant.token);
        });
    });
}

#[test]
fn a_registration_can_be_deregistered_on_a_full_disk() {
    on_a_small_tmpfs(
        "a_registration_can_be_deregistered_on_a_full_disk",
        |root| {
            let path = root.join("control-plane.json");
            let client = open(&path);
            let runtime = runtime();
            runtime.block_on(async {
                for name in ["node-a", "node-b", "node-c", "node-d"] {
                    client
                        .register(registration(name))
                        .await
                        .expect("registered");
                }
            });
            let _filler = fill(root, &path);
            runtime.block_on(async {
                let error = client
                    .acquire(LeaseRequest::new(lease(), node("node-a"), TTL).expect("request"))
                    .await
                    .expect_err("no room for a new lease");
                assert!(is_full(&error), "{error:?}");
                // One after the other: each draws on what the last one freed.
                for name in ["node-a", "node-b", "node-c"] {
                    client
                        .deregister(PresenceKey {
                            service: service(),
                            node: node(name),
                        })
                        .await
                        .expect("deregistered on a full disk");
                }
            });
            assert_no_staged_files(root);
            drop(client);
            let client = open(&path);
            let left = runtime.block_on(client.discover(service())).expect("found");
            let nodes: Vec<_> = left.iter().map(|found| found.node().as_str()).collect();
            assert_eq!(nodes, ["node-d"]);
        },
    );
}

#[test]
fn a_change_that_cannot_keep_the_reserve_is_refused_and_changes_nothing() {
    on_a_small_tmpfs(
        "a_change_that_cannot_keep_the_reserve_is_refused_and_changes_nothing",
        |root| {
            let path = root.join("control-plane.json");
            let client = open(&path);
            let runtime = runtime();
            let state_len = || fs::metadata(&path).expect("state").len();
            // Registrations up to just below 60 KiB of state: the reserve's
            // target stays 64 KiB. The next one crosses it (128 KiB).
            let grant = runtime.block_on(async {
                let grant = client
                    .acquire(LeaseRequest::new(lease(), node("node-a"), TTL).expect("request"))
                    .await
                    .expect("acquired");
                for count in 0.. {
                    let old = state_len();
                    client
                        .register(registration(&format!("node-{count:02}")))
                        .await
                        .expect("registered");
                    // Every registration after the first adds the same bytes.
                    let step = state_len() - old;
                    if count > 0 && state_len() + step > 60 * 1024 {
                        break;
                    }
                }
                grant
            });
            let before = fs::read(&path).expect("state");
            let instances = runtime
                .block_on(client.discover(service()))
                .expect("found")
                .len();

            // Room for the next generation (at most 64 KiB), not for the
            // 64 KiB the reserve must then grow by.
            let filler = fill(root, &path);
            let filled = fs::metadata(&filler).expect("filler").len();
            File::options()
                .write(true)
                .open(&filler)
                .and_then(|file| file.set_len(filled - 80 * 1024))
                .expect("80 KiB freed");

            runtime.block_on(async {
                let error = client
                    .register(registration("node-zz"))
                    .await
                    .expect_err("the reserve cannot grow");
                assert!(
                    matches!(
                        &error,
                        ControlPlaneError::Storage {
                            operation: "reserve",
                            ..
                        }
                    ) && is_full(&error),
                    "{error:?}"
                );
                assert_eq!(
                    client.discover(service()).await.expect("found").len(),
                    instances
                );
            });
            assert!(
                fs::read(&path).expect("state") == before,
                "the file is unchanged"
            );
            assert_no_staged_files(root);
            runtime
                .block_on(client.release(grant))
                .expect("the lease is still released");
        },
    );
}
