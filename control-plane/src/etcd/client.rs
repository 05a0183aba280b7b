//! [`EtcdClient`]: the [`ControlPlane`] trait over etcd's v3 JSON gateway.

use std::fmt;

use crate::board::{Board, FencedRecord, Post};
use crate::client::{BoxFuture, CallResult, ControlPlane};
use crate::error::ControlPlaneError;
use crate::etcd::config::EtcdConfig;
use crate::etcd::gateway::Gateway;
use crate::etcd::layout::Keyspace;
use crate::lease::{LeaseGrant, LeaseKey, LeaseRequest, LeaseState};
use crate::name::{ServiceGroup, TopicName};
use crate::presence::{PresenceKey, Registration};

/// A control-plane client backed by an etcd cluster (v3 API, reached
/// through its JSON gateway at `/v3/`; etcd 3.4 or newer).
///
/// Several clients (in one process or many) configured with the same
/// endpoint and prefix share one control plane. The client holds one
/// pooled HTTP client and no state of its own: every answer comes from
/// etcd.
///
/// ```no_run
/// use std::time::Duration;
/// use provider_pools_control_plane::etcd::{EtcdClient, EtcdConfig};
/// use provider_pools_control_plane::{ControlPlane, LeaseKey, LeaseName, LeaseRequest, NodeId};
///
/// # async fn run() -> Result<(), provider_pools_control_plane::ControlPlaneError> {
/// let client = EtcdClient::new(EtcdConfig::new("http://127.0.0.1:2379"))?;
/// let key = LeaseKey::Global(LeaseName::new("scheduler")?);
/// let grant = client
///     .acquire(LeaseRequest::new(key, NodeId::new("node-a")?, Duration::from_secs(10))?)
///     .await?;
/// println!("leader with fencing token {}", grant.token);
/// # Ok(())
/// # }
/// ```
pub struct EtcdClient {
    pub(super) gateway: Gateway,
    pub(super) keys: Keyspace,
    pub(super) max_discovered: usize,
    config: EtcdConfig,
}

impl EtcdClient {
    /// A client for `config`. Nothing is sent until the first call.
    ///
    /// # Errors
    ///
    /// [`ControlPlaneError::InsecureEndpoint`] for plain http off loopback
    /// or credentials in the URL; [`ControlPlaneError::Invalid`] naming the
    /// field that is out of bounds; [`ControlPlaneError::Transport`] when
    /// the HTTP client cannot be built.
    pub fn new(config: EtcdConfig) -> Result<Self, ControlPlaneError> {
        let base = config.check()?;
        Ok(Self {
            gateway: Gateway::new(base, config.request_timeout(), config.max_response_bytes())?,
            keys: Keyspace::new(config.prefix()),
            max_discovered: config.max_discovered(),
            config,
        })
    }

    /// The configuration this client was made with.
    pub fn config(&self) -> &EtcdConfig {
        &self.config
    }
}

impl fmt::Debug for EtcdClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EtcdClient")
            .field("endpoint", &self.config.endpoint())
            .field("prefix", &self.config.prefix())
            .field("request_timeout", &self.config.request_timeout())
            .finish_non_exhaustive()
    }
}

/// Every call is a short sequence of HTTP exchanges, each bounded by the
/// request timeout; a future dropped before its first poll sends nothing.
impl ControlPlane for EtcdClient {
    fn register(&self, registration: Registration) -> BoxFuture<'_, CallResult<()>> {
        Box::pin(self.etcd_register(registration))
    }

    fn heartbeat(&self, key: PresenceKey) -> BoxFuture<'_, CallResult<()>> {
        Box::pin(self.etcd_heartbeat(key))
    }

    fn deregister(&self, key: PresenceKey) -> BoxFuture<'_, CallResult<()>> {
        Box::pin(self.etcd_deregister(key))
    }

    fn discover(&self, service: ServiceGroup) -> BoxFuture<'_, CallResult<Vec<Registration>>> {
        Box::pin(self.etcd_discover(service))
    }

    fn acquire(&self, request: LeaseRequest) -> BoxFuture<'_, CallResult<LeaseGrant>> {
        Box::pin(self.etcd_acquire(request))
    }

    fn renew(&self, grant: LeaseGrant) -> BoxFuture<'_, CallResult<LeaseGrant>> {
        Box::pin(self.etcd_renew(grant))
    }

    fn release(&self, grant: LeaseGrant) -> BoxFuture<'_, CallResult<()>> {
        Box::pin(self.etcd_release(grant))
    }

    fn read_lease(&self, key: LeaseKey) -> BoxFuture<'_, CallResult<Option<LeaseState>>> {
        Box::pin(self.etcd_read_lease(key))
    }
}

/// Posts share their registration's etcd lease; fenced records are plain
/// keys written by a transaction pinned to the lease key's creation
/// revision (see the module `board` of this backend). Re-post after
/// re-registering: a replaced registration's posts go with its old etcd
/// lease.
impl Board for EtcdClient {
    fn post(
        &self,
        key: PresenceKey,
        topic: TopicName,
        value: Vec<u8>,
    ) -> BoxFuture<'_, CallResult<()>> {
        Box::pin(self.etcd_post(key, topic, value))
    }

    fn read_posts(
        &self,
        service: ServiceGroup,
        topic: TopicName,
    ) -> BoxFuture<'_, CallResult<Vec<Post>>> {
        Box::pin(self.etcd_read_posts(service, topic))
    }

    fn write_fenced(&self, grant: LeaseGrant, value: Vec<u8>) -> BoxFuture<'_, CallResult<()>> {
        Box::pin(self.etcd_write_fenced(grant, value))
    }

    fn read_fenced(&self, key: LeaseKey) -> BoxFuture<'_, CallResult<Option<FencedRecord>>> {
        Box::pin(self.etcd_read_fenced(key))
    }
}
