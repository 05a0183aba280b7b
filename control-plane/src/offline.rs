//! [`OfflineClient`]: the control plane of a node configured to run alone.
//! Every call answers [`ControlPlaneError::Offline`] at once.

use crate::client::{BoxFuture, CallResult, ControlPlane};
use crate::error::ControlPlaneError;
use crate::lease::{LeaseGrant, LeaseKey, LeaseRequest, LeaseState};
use crate::name::ServiceGroup;
use crate::presence::{PresenceKey, Registration};

/// A client whose every call fails with [`ControlPlaneError::Offline`].
///
/// ```
/// use provider_pools_control_plane::{ControlPlane, ErrorCode, OfflineClient, ServiceGroup};
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let client = OfflineClient;
/// let error = client.discover(ServiceGroup::new("billing")?).await.unwrap_err();
/// assert_eq!(error.code(), ErrorCode::Offline);
/// # Ok::<(), provider_pools_control_plane::ControlPlaneError>(())
/// # }).unwrap();
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct OfflineClient;

fn offline<'a, T: Send + 'a>() -> BoxFuture<'a, CallResult<T>> {
    Box::pin(async { Err(ControlPlaneError::Offline) })
}

impl ControlPlane for OfflineClient {
    fn register(&self, _: Registration) -> BoxFuture<'_, CallResult<()>> {
        offline()
    }

    fn heartbeat(&self, _: PresenceKey) -> BoxFuture<'_, CallResult<()>> {
        offline()
    }

    fn deregister(&self, _: PresenceKey) -> BoxFuture<'_, CallResult<()>> {
        offline()
    }

    fn discover(&self, _: ServiceGroup) -> BoxFuture<'_, CallResult<Vec<Registration>>> {
        offline()
    }

    fn acquire(&self, _: LeaseRequest) -> BoxFuture<'_, CallResult<LeaseGrant>> {
        offline()
    }

    fn renew(&self, _: LeaseGrant) -> BoxFuture<'_, CallResult<LeaseGrant>> {
        offline()
    }

    fn release(&self, _: LeaseGrant) -> BoxFuture<'_, CallResult<()>> {
        offline()
    }

    fn read_lease(&self, _: LeaseKey) -> BoxFuture<'_, CallResult<Option<LeaseState>>> {
        offline()
    }
}
