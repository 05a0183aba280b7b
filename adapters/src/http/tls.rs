//! TLS for `https` origins: the client configuration (trust anchors from the
//! provider setting `ca_file`, or the bundled web PKI roots) and the
//! handshake over an already connected TCP stream.
//!
//! Invariants:
//! - rustls runs on the ring provider, installed as the process default
//!   once; a provider installed earlier by someone else is kept.
//! - A `ca_file` replaces the default roots; it is read when a dial needs
//!   it, so a rotated epoch with a rewritten file is trusted afresh.
//! - A `ca_file` must be an absolute path to a PEM bundle of at most
//!   [`MAX_CA_FILE`] bytes holding at least one certificate.
//! - Errors name the setting and the failing step, never the file's contents.
//! - The server name checked is the approved origin's host, nothing a guest
//!   supplies.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::Path;
use std::sync::{Arc, Once, OnceLock};

use provider_pools_actors::{DialError, DialErrorKind};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName};
use rustls::{ClientConfig, RootCertStore};
use tokio::net::TcpStream;
use tokio_rustls::client::TlsStream;
use tokio_rustls::TlsConnector;

use crate::http::origin::ApprovedOrigin;

/// The provider setting naming a PEM bundle of trust anchors that replaces
/// the default roots for `https` origins (an absolute path).
pub const CA_FILE_SETTING: &str = "ca_file";

/// Largest `ca_file` read, in bytes.
pub(crate) const MAX_CA_FILE: u64 = 1 << 20;

/// Installs the ring provider as rustls's process default, once.
fn install_ring_provider() {
    static INSTALL: Once = Once::new();
    INSTALL.call_once(|| {
        // An error means a provider is already installed: keep it.
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}

/// The client configuration for one dial: `ca_file`'s anchors when the
/// epoch sets it, the shared default-roots configuration otherwise.
///
/// Reads the file synchronously: it is a small local file, read only when a
/// connection is dialed.
///
/// # Errors
///
/// [`DialErrorKind::Handshake`], naming the setting, when `ca_file` is not
/// absolute, cannot be read, is too large or holds no usable certificate.
pub(crate) fn client_config(
    settings: &BTreeMap<String, String>,
) -> Result<Arc<ClientConfig>, DialError> {
    install_ring_provider();
    match settings.get(CA_FILE_SETTING) {
        Some(path) => Ok(Arc::new(with_roots(read_roots(Path::new(path))?))),
        None => {
            static DEFAULT: OnceLock<Arc<ClientConfig>> = OnceLock::new();
            Ok(Arc::clone(DEFAULT.get_or_init(|| {
                let roots = RootCertStore {
                    roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
                };
                Arc::new(with_roots(roots))
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

/// Reads and parses the `ca_file` bundle.
fn read_roots(path: &Path) -> Result<RootCertStore, DialError> {
    if !path.is_absolute() {
        return Err(ca_error("is not an absolute path"));
    }
    let file = std::fs::File::open(path)
        .map_err(|e| ca_error(&format!("cannot be opened: {}", e.kind())))?;
    let mut pem = Vec::new();
    file.take(MAX_CA_FILE + 1)
        .read_to_end(&mut pem)
        .map_err(|e| ca_error(&format!("cannot be read: {}", e.kind())))?;
    if pem.len() as u64 > MAX_CA_FILE {
        return Err(ca_error(&format!("is larger than {MAX_CA_FILE} bytes")));
    }
    let mut roots = RootCertStore::empty();
    for cert in CertificateDer::pem_slice_iter(&pem) {
        let cert = cert.map_err(|_| ca_error("is not a valid PEM bundle"))?;
        roots
            .add(cert)
            .map_err(|_| ca_error("holds a certificate that is no valid trust anchor"))?;
    }
    if roots.is_empty() {
        return Err(ca_error("holds no certificate"));
    }
    Ok(roots)
}

fn ca_error(what: &str) -> DialError {
    DialError::new(
        DialErrorKind::Handshake,
        format!("the file named by setting `{CA_FILE_SETTING}` {what}"),
    )
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
