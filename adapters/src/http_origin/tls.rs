//! TLS for `https` origins: the client configuration (trust anchors from the
//! provider setting `ca_file`, or the bundled web PKI roots) and the
//! handshake over an already connected TCP stream.
//!
//! Invariants:
//! - Trust anchors and the ring provider come from [`crate::tls_roots`]
//!   and [`provider_pools_tls_roots`]; the provider is given to each
//!   configuration, never installed as the process default.
//! - The server name checked is the approved origin's host, nothing a guest
//!   supplies.

use std::collections::BTreeMap;
use std::sync::{Arc, OnceLock};

use provider_pools_actors::{DialError, DialErrorKind};
use rustls::pki_types::ServerName;
use rustls::{ClientConfig, RootCertStore};
use tokio::net::TcpStream;
use tokio_rustls::client::TlsStream;
use tokio_rustls::TlsConnector;

use crate::http_origin::origin::ApprovedOrigin;
use crate::tls_roots;

pub use crate::tls_roots::CA_FILE_SETTING;

/// The application protocol a dial asks for by ALPN.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Alpn {
    /// `http/1.1`.
    Http1,
    /// `h2` only: a handshake where the origin selects anything else fails.
    H2,
}

impl Alpn {
    fn protocol(self) -> &'static [u8] {
        match self {
            Self::Http1 => b"http/1.1",
            Self::H2 => b"h2",
        }
    }
}

/// The client configuration for one dial: `ca_file`'s anchors when the
/// epoch sets it, the shared default-roots configuration otherwise; ALPN
/// offering `alpn` alone.
///
/// # Errors
///
/// [`DialErrorKind::Handshake`], naming the setting, when `ca_file` is not
/// absolute, cannot be read, is too large or holds no usable certificate.
pub(crate) fn client_config(
    settings: &BTreeMap<String, String>,
    alpn: Alpn,
) -> Result<Arc<ClientConfig>, DialError> {
    match tls_roots::configured_roots(settings)? {
        Some(roots) => Ok(Arc::new(with_roots(roots, alpn)?)),
        None => {
            static HTTP1: OnceLock<Arc<ClientConfig>> = OnceLock::new();
            static H2: OnceLock<Arc<ClientConfig>> = OnceLock::new();
            let shared = match alpn {
                Alpn::Http1 => &HTTP1,
                Alpn::H2 => &H2,
            };
            if let Some(config) = shared.get() {
                return Ok(Arc::clone(config));
            }
            let config = Arc::new(with_roots(provider_pools_tls_roots::default_roots(), alpn)?);
            Ok(Arc::clone(shared.get_or_init(|| config)))
        }
    }
}

/// A configuration on the ring provider, given explicitly: the process
/// default provider is neither read nor installed.
fn with_roots(roots: RootCertStore, alpn: Alpn) -> Result<ClientConfig, DialError> {
    let mut config = provider_pools_tls_roots::ring_client_config(roots)
        .map_err(|error| DialError::new(DialErrorKind::Handshake, error.to_string()))?;
    config.alpn_protocols = vec![alpn.protocol().to_vec()];
    Ok(config)
}

/// Fails unless the handshake on `stream` selected `h2` by ALPN.
///
/// # Errors
///
/// [`DialErrorKind::Handshake`] naming ALPN.
pub(crate) fn require_h2(stream: &TlsStream<TcpStream>) -> Result<(), DialError> {
    match stream.get_ref().1.alpn_protocol() {
        Some(b"h2") => Ok(()),
        _ => Err(DialError::new(
            DialErrorKind::Handshake,
            "the origin did not select h2 by ALPN",
        )),
    }
}

/// Runs the TLS handshake on `stream` for `origin`'s host.
///
/// # Cancel safety
///
/// Dropping the future drops the TCP stream and the half-done session.
///
/// # Errors
///
/// [`DialErrorKind::Handshake`] when the host is no valid server name or
/// the handshake fails (an untrusted certificate, a name mismatch, …).
pub(crate) async fn handshake(
    config: Arc<ClientConfig>,
    origin: &ApprovedOrigin,
    stream: TcpStream,
) -> Result<TlsStream<TcpStream>, DialError> {
    let host = origin.host();
    let host = host
        .strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .unwrap_or(host);
    let name = ServerName::try_from(host.to_owned()).map_err(|_| {
        DialError::new(
            DialErrorKind::Handshake,
            "the origin's host is not a valid TLS server name",
        )
    })?;
    TlsConnector::from(config)
        .connect(name, stream)
        .await
        .map_err(|e| DialError::new(DialErrorKind::Handshake, format!("tls handshake: {e}")))
}
