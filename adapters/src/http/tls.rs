//! TLS for `https` origins: the client configuration (trust anchors from the
//! provider setting `ca_file`, or the bundled web PKI roots) and the
//! handshake over an already connected TCP stream.
//!
//! Invariants:
//! - Trust anchors and the ring provider come from [`crate::tls_roots`].
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

use crate::http::origin::ApprovedOrigin;
use crate::tls_roots;

pub use crate::tls_roots::CA_FILE_SETTING;

/// The client configuration for one dial: `ca_file`'s anchors when the
/// epoch sets it, the shared default-roots configuration otherwise.
///
/// # Errors
///
/// [`DialErrorKind::Handshake`], naming the setting, when `ca_file` is not
/// absolute, cannot be read, is too large or holds no usable certificate.
pub(crate) fn client_config(
    settings: &BTreeMap<String, String>,
) -> Result<Arc<ClientConfig>, DialError> {
    tls_roots::install_ring_provider();
    match tls_roots::configured_roots(settings)? {
        Some(roots) => Ok(Arc::new(with_roots(roots))),
        None => {
            static DEFAULT: OnceLock<Arc<ClientConfig>> = OnceLock::new();
            Ok(Arc::clone(DEFAULT.get_or_init(|| {
                Arc::new(with_roots(tls_roots::default_roots()))
            })))
        }
    }
}

fn with_roots(roots: RootCertStore) -> ClientConfig {
    let mut config = ClientConfig::builder()
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    config
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
