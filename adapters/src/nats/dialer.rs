//! [`NatsDialer`]: connects one async-nats client to a slot's approved
//! server, after starting the driver that accounts for its tasks.
//!
//! Invariants:
//! - The driver is started before the TCP connect starts (on no worker
//!   slot: it holds the connection's charges); a dial that fails or is
//!   dropped drops the client's options, and with them the callback the
//!   driver waits on, so the driver ends at once.
//! - A refused credential is a [`DialErrorKind::Handshake`] dial error
//!   (the client backs off) whose message is fixed: nothing from the
//!   server or the credential.
//! - The client connects once, to the approved server only: no retry on
//!   the initial connect, no reconnect (see [`crate::nats::auth`]), servers
//!   the server advertises are ignored.
//! - Every client queue is bounded: commands, per-subscription messages,
//!   in-flight publish acks.

use std::fmt;
use std::time::Duration;

use async_nats::{ConnectErrorKind, ConnectOptions};
use provider_pools_actors::{DialError, DialErrorKind, DialTarget, Dialer, ProviderPools};
use tokio::sync::watch;

use crate::dialer_core::{unusable_target, DialerCore};
use crate::nats::auth::{self, ClientAuth};
use crate::nats::connection::NatsConnection;
use crate::nats::error::DENIED_DIAL;
use crate::nats::health::{self, Health};
use crate::nats::target::NatsTarget;
use crate::tls_roots;

/// Longest TCP connect plus handshake of one client.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(2);
/// Longest wait for a JetStream API reply or a publish ack, when the
/// request's own deadline is later.
pub(crate) const API_TIMEOUT: Duration = Duration::from_secs(5);
/// Messages one subscription buffers (a fetched batch, a request's reply).
pub(crate) const SUBSCRIPTION_CAPACITY: usize = 1024;
/// Commands the client queues for its connection handler.
const COMMAND_CAPACITY: usize = 256;
/// Publish acks in flight per client.
const MAX_ACKS_IN_FLIGHT: usize = 256;

/// Dials NATS clients to a slot's approved server (`nats://` or `tls://`),
/// authenticating with the epoch's credential.
#[derive(Clone)]
pub struct NatsDialer {
    core: DialerCore,
}

impl NatsDialer {
    /// A dialer whose clients' drivers run on `pools`.
    pub fn new(pools: ProviderPools) -> Self {
        Self {
            core: DialerCore::new(pools),
        }
    }

    /// Dials started so far (for metrics and tests).
    pub fn dials(&self) -> u64 {
        self.core.dials()
    }
}

impl fmt::Debug for NatsDialer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("NatsDialer")
            .field("dials", &self.dials())
            .finish_non_exhaustive()
    }
}

impl Dialer for NatsDialer {
    type Conn = NatsConnection;

    /// Starts the client's driver, then connects and authenticates.
    ///
    /// # Cancel safety
    ///
    /// Dropping the future drops the half-made client; its driver then
    /// ends at once and is joined.
    ///
    /// # Errors
    ///
    /// A [`DialError`]: `Saturated` when the pools have no room for the
    /// driver now (nothing was dialed), `Other` for an unusable target, `auth` setting or
    /// credential, `Handshake` for a refused credential or a failed TLS
    /// handshake, `Refused`/`Timeout` from the connect.
    async fn dial(&self, target: DialTarget<'_>) -> Result<NatsConnection, DialError> {
        self.core.count_dial();
        let server = NatsTarget::parse(target.target).map_err(unusable_target)?;
        let auth = ClientAuth::from_credential(target.credential, target.settings)?;
        let tls = if server.is_tls() {
            Some(tls_config(target.settings)?)
        } else {
            None
        };
        let (health_tx, health_rx) = watch::channel(Health::Healthy);
        let gone = health_rx.clone();
        // Our own limit, not the server's failure: no backoff.
        let driver = self
            .core
            .start_driver(&target, "the nats client", move || health::gone(gone))
            .await?;
        let mut options = ConnectOptions::with_auth_callback(auth::connect_once(auth))
            .event_callback(health::recorder(health_tx))
            .max_reconnects(1)
            .ignore_discovered_servers()
            .retain_servers_order()
            .connection_timeout(CONNECT_TIMEOUT)
            .request_timeout(Some(API_TIMEOUT))
            .subscription_capacity(SUBSCRIPTION_CAPACITY)
            .client_capacity(COMMAND_CAPACITY)
            .name("provider-pools");
        if let Some(config) = tls {
            options = options.require_tls(true).tls_client_config(config);
        }
        let client = options
            .connect(server.server_addr())
            .await
            .map_err(connect_error)?;
        let jetstream = async_nats::jetstream::ContextBuilder::new()
            .timeout(API_TIMEOUT)
            .ack_timeout(API_TIMEOUT)
            .max_ack_inflight(MAX_ACKS_IN_FLIGHT)
            .build(client.clone());
        Ok(NatsConnection::new(client, jetstream, health_rx, driver))
    }
}

/// The TLS configuration of a `tls://` server: ring, and the epoch's
/// `ca_file` or the bundled roots.
fn tls_config(
    settings: &std::collections::BTreeMap<String, String>,
) -> Result<rustls::ClientConfig, DialError> {
    let roots = tls_roots::configured_roots(settings)?
        .unwrap_or_else(provider_pools_tls_roots::default_roots);
    provider_pools_tls_roots::ring_client_config(roots)
        .map_err(|e| DialError::new(DialErrorKind::Handshake, e.to_string()))
}

fn connect_error(e: async_nats::ConnectError) -> DialError {
    match e.kind() {
        ConnectErrorKind::AuthorizationViolation | ConnectErrorKind::Authentication => {
            DialError::new(DialErrorKind::Handshake, DENIED_DIAL)
        }
        ConnectErrorKind::TimedOut => DialError::new(DialErrorKind::Timeout, e.to_string()),
        ConnectErrorKind::Tls => DialError::new(DialErrorKind::Handshake, e.to_string()),
        // A refused certificate surfaces as an I/O error carrying rustls's.
        ConnectErrorKind::Io if is_tls_failure(&e) => {
            DialError::new(DialErrorKind::Handshake, e.to_string())
        }
        ConnectErrorKind::Io => DialError::new(DialErrorKind::Refused, e.to_string()),
        _ => DialError::new(DialErrorKind::Other, e.to_string()),
    }
}

/// True when `e` was caused by a failed TLS handshake.
fn is_tls_failure(e: &async_nats::ConnectError) -> bool {
    std::error::Error::source(e)
        .and_then(|source| source.downcast_ref::<std::io::Error>())
        .and_then(std::io::Error::get_ref)
        .is_some_and(|inner| inner.is::<rustls::Error>())
}
