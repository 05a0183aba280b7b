//! What the file client's tests share: a state file in a fresh temporary
//! directory, a manual clock, and names.

#![allow(dead_code, unreachable_pub)]

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use provider_pools_control_plane::clock::ManualClock;
use provider_pools_control_plane::file::{FileClient, FileOptions};
use provider_pools_control_plane::{
    ControlPlane, LeaseKey, LeaseName, LeaseRequest, NodeId, Registration, ServiceGroup,
};
use tempfile::TempDir;

/// A time to live long enough that nothing expires unless a test says so.
pub const TTL: Duration = Duration::from_secs(60);

/// A state file path in a fresh directory, and the clock its clients use.
pub struct Place {
    pub directory: TempDir,
    pub path: PathBuf,
    pub clock: ManualClock,
}

impl Place {
    pub fn new() -> Self {
        let directory = tempfile::tempdir().expect("temporary directory");
        let path = directory.path().join("control-plane.json");
        Self {
            directory,
            path,
            clock: ManualClock::starting_at(1_000),
        }
    }

    pub fn options(&self) -> FileOptions {
        FileOptions::new().with_clock(Arc::new(self.clock.clone()))
    }

    pub fn open(&self) -> FileClient {
        self.options().open(&self.path).expect("state file opens")
    }

    /// The state file's bytes.
    pub fn bytes(&self) -> Vec<u8> {
        fs::read(&self.path).expect("state file readable")
    }

    /// The state file's full-disk reserve.
    pub fn reserve(&self) -> PathBuf {
        self.path.with_file_name("control-plane.json.reserve")
    }

    /// Every entry of the directory except the state file, its lock, its
    /// reserve and `keep`: what a writer left behind.
    pub fn leftovers(&self, keep: &[&Path]) -> Vec<String> {
        let lock = self.path.with_file_name("control-plane.json.lock");
        let reserve = self.reserve();
        let mut left: Vec<String> = fs::read_dir(self.directory.path())
            .expect("directory listed")
            .map(|entry| entry.expect("entry").path())
            .filter(|path| {
                *path != self.path
                    && *path != lock
                    && *path != reserve
                    && !keep.contains(&path.as_path())
            })
            .map(|path| path.display().to_string())
            .collect();
        left.sort();
        left
    }
}

pub fn node(name: &str) -> NodeId {
    NodeId::new(name).expect("valid node")
}

pub fn service(name: &str) -> ServiceGroup {
    ServiceGroup::new(name).expect("valid service")
}

pub fn global(name: &str) -> LeaseKey {
    LeaseKey::Global(LeaseName::new(name).expect("valid lease"))
}

pub fn registration(service_name: &str, node_name: &str, address: &str) -> Registration {
    Registration::new(service(service_name), node(node_name), address, TTL)
        .expect("valid registration")
}

pub fn request(key: &LeaseKey, holder: &str) -> LeaseRequest {
    LeaseRequest::new(key.clone(), node(holder), TTL).expect("valid request")
}

/// The addresses discovered for `service_name`, ordered by node.
pub async fn addresses(client: &impl ControlPlane, service_name: &str) -> Vec<String> {
    client
        .discover(service(service_name))
        .await
        .expect("discovered")
        .iter()
        .map(|found| found.address().to_owned())
        .collect()
}
