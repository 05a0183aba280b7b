//! [`VaultDialer`] and [`VaultConnection`]: one client for one Vault
//! address, holding the epoch's token, whose reqwest client keeps at most
//! one socket.
//!
//! Invariants:
//! - The reqwest client is built here: HTTP/1.1 only, at most one idle
//!   socket, no proxy, no redirects, no retries, a connect timeout, rustls
//!   on ring. Used by one request at a time (a `PooledConnection` is
//!   exclusive), it never holds more than one socket, so one connection
//!   charge pays for one socket.
//! - A dial opens that socket: it asks the unauthenticated `sys/health`
//!   endpoint, so an unreachable or sealed server is a failed dial and the
//!   client backs off.
//! - The token is copied once into vaultrs's middleware, zeroized when the
//!   connection is dropped, and never shown by `Debug` or an error.
//! - Dropping a [`VaultConnection`] drops the reqwest client, its pool and
//!   so its socket.

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};

use provider_pools_actors::{DialError, DialErrorKind, DialTarget, Dialer};
use vaultrs::api::EndpointMiddleware;
use zeroize::Zeroize;

use crate::vault::config::{self, VaultAddress, CA_FILE_SETTING, NAMESPACE_SETTING};
use crate::vault::exchange::read_capped;
use crate::vault::tls;
use crate::vault::VaultLimits;

/// Largest `sys/health` answer a dial reads, in bytes.
const MAX_HEALTH_BODY: usize = 4096;

/// Dials [`VaultConnection`]s to a Vault slot's address.
pub struct VaultDialer {
    limits: VaultLimits,
    dials: AtomicU64,
}

impl VaultDialer {
    /// A dialer whose clients use `limits.connect_timeout`.
    pub fn new(limits: VaultLimits) -> Self {
        Self {
            limits,
            dials: AtomicU64::new(0),
        }
    }

    /// Dials started so far (for metrics and tests).
    pub fn dials(&self) -> u64 {
        self.dials.load(Ordering::Relaxed)
    }
}

impl fmt::Debug for VaultDialer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("VaultDialer")
            .field("dials", &self.dials())
            .finish_non_exhaustive()
    }
}

/// One Vault client: a reqwest client holding at most one socket, the
/// address it reaches, and vaultrs's middleware carrying the epoch's token
/// and namespace.
pub struct VaultConnection {
    http: reqwest::Client,
    base: String,
    middle: EndpointMiddleware,
}

impl VaultConnection {
    pub(crate) fn http(&self) -> &reqwest::Client {
        &self.http
    }

    pub(crate) fn base(&self) -> &str {
        &self.base
    }

    pub(crate) fn middle(&self) -> &EndpointMiddleware {
        &self.middle
    }
}

impl Drop for VaultConnection {
    fn drop(&mut self) {
        self.middle.token.zeroize();
    }
}

impl fmt::Debug for VaultConnection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("VaultConnection")
            .field("base", &self.base)
            .field("namespace", &self.middle.namespace)
            .finish_non_exhaustive()
    }
}

impl Dialer for VaultDialer {
    type Conn = VaultConnection;

    /// Builds the client with the epoch's token and opens its socket with
    /// an unauthenticated `GET /v1/sys/health`.
    ///
    /// # Cancel safety
    ///
    /// Dropping the future drops the client and any socket it opened.
    ///
    /// # Errors
    ///
    /// A [`DialError`]: `Other` for an unusable target, namespace or token
    /// (never echoed) or a client that cannot be built; `Handshake` for an
    /// unusable `ca_file` or a failed TLS handshake; `Refused` and `Timeout`
    /// from the connect; `Protocol` when the server does not answer as an
    /// initialised, unsealed Vault.
    async fn dial(&self, target: DialTarget<'_>) -> Result<VaultConnection, DialError> {
        self.dials.fetch_add(1, Ordering::Relaxed);
        let invalid =
            |e: crate::vault::VaultError| DialError::new(DialErrorKind::Other, e.to_string());
        let address = VaultAddress::parse(target.target).map_err(invalid)?;
        let namespace =
            config::namespace(target.settings.get(NAMESPACE_SETTING).map(String::as_str))
                .map_err(invalid)?;
        let ca_file = target
            .settings
            .get(CA_FILE_SETTING)
            .filter(|_| address.is_tls());
        let tls = tls::client_config(ca_file.map(String::as_str))?;
        let http = reqwest::Client::builder()
            .tls_backend_preconfigured(tls)
            .http1_only()
            .pool_max_idle_per_host(1)
            .pool_idle_timeout(None)
            .no_proxy()
            .redirect(reqwest::redirect::Policy::none())
            .retry(reqwest::retry::never())
            .referer(false)
            .connect_timeout(self.limits.connect_timeout)
            .tcp_nodelay(true)
            .https_only(address.is_tls())
            .build()
            .map_err(|_| DialError::new(DialErrorKind::Other, "the http client cannot be built"))?;
        let token = config::token(target.credential.expose_to_adapter()).map_err(invalid)?;
        let connection = VaultConnection {
            http,
            base: address.base().to_owned(),
            middle: EndpointMiddleware {
                token: token.to_owned(),
                version: "v1".to_owned(),
                wrap: None,
                namespace,
            },
        };
        connection.open().await?;
        Ok(connection)
    }
}

impl VaultConnection {
    /// Opens the socket: `GET /v1/sys/health`, no token, body read whole
    /// (so the socket can carry the next request) and dropped.
    async fn open(&self) -> Result<(), DialError> {
        let url = format!(
            "{}v1/sys/health?standbyok=true&perfstandbyok=true",
            self.base
        );
        let response = self.http.get(url).send().await.map_err(send_error)?;
        let status = response.status().as_u16();
        read_capped(response, MAX_HEALTH_BODY)
            .await
            .map_err(|e| DialError::new(DialErrorKind::Protocol, format!("sys/health: {e}")))?;
        match status {
            // Active, standby, DR secondary, performance standby.
            200 | 429 | 472 | 473 => Ok(()),
            status => Err(DialError::new(
                DialErrorKind::Protocol,
                format!(
                    "sys/health answered {status}: vault is not initialised, sealed or not vault"
                ),
            )),
        }
    }
}

/// Classifies a failed `sys/health` exchange.
fn send_error(e: reqwest::Error) -> DialError {
    let kind = if e.is_timeout() {
        DialErrorKind::Timeout
    } else if e.is_connect() {
        connect_kind(&e)
    } else {
        DialErrorKind::Protocol
    };
    DialError::new(kind, format!("sys/health: {}", error_chain(&e)))
}

/// What failed inside a connect: the TLS handshake, or the TCP connect.
fn connect_kind(e: &(dyn std::error::Error + 'static)) -> DialErrorKind {
    let mut current = Some(e);
    while let Some(error) = current {
        if error.downcast_ref::<rustls::Error>().is_some() {
            return DialErrorKind::Handshake;
        }
        current = match error.downcast_ref::<std::io::Error>() {
            // An io error wraps its cause without naming it as `source`.
            Some(io) => match (io.get_ref(), io.kind()) {
                (Some(inner), _) => Some(inner as &(dyn std::error::Error + 'static)),
                (None, std::io::ErrorKind::TimedOut) => return DialErrorKind::Timeout,
                (None, _) => return DialErrorKind::Refused,
            },
            None => error.source(),
        };
    }
    DialErrorKind::Refused
}

/// An error and its sources, joined; reqwest's errors carry the URL only
/// (the address and `sys/health`), never a header.
pub(crate) fn error_chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}
