//! TLS for `https` Vault addresses: the rustls client configuration handed
//! to the connection's reqwest client — trust anchors from the provider
//! setting `ca_file`, or the bundled web PKI roots.
//!
//! Invariants:
//! - rustls runs on the ring provider, installed as the process default
//!   once; a provider installed earlier by someone else is kept. The
//!   configuration names ring explicitly, so the default is never needed.
//! - A `ca_file` replaces the default roots; it is read at each dial, so a
//!   rotated epoch with a rewritten file is trusted afresh.
//! - Errors name the setting and the failing step, never the file's contents.
//! - ALPN offers HTTP/1.1 only.

use std::io::Read;
use std::path::Path;
use std::sync::{Arc, Once};

use provider_pools_actors::{DialError, DialErrorKind};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::CertificateDer;
use rustls::{ClientConfig, RootCertStore};

use crate::vault::config::CA_FILE_SETTING;

/// Largest `ca_file` read, in bytes.
const MAX_CA_FILE: u64 = 1 << 20;

/// Installs the ring provider as rustls's process default, once (reqwest
/// asks for the default when it builds a client).
pub(crate) fn install_ring_provider() {
    static INSTALL: Once = Once::new();
    INSTALL.call_once(|| {
        // An error means a provider is already installed: keep it.
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}

/// The client configuration for one connection: `ca_file`'s anchors when
/// set, the bundled web PKI roots otherwise.
///
/// Reads the file synchronously: it is a small local file, read only when a
/// connection is dialed.
///
/// # Errors
///
/// [`DialErrorKind::Handshake`], naming the setting, when `ca_file` is not
/// absolute, cannot be read, is too large or holds no usable certificate.
pub(crate) fn client_config(ca_file: Option<&str>) -> Result<ClientConfig, DialError> {
    install_ring_provider();
    let roots = match ca_file {
        Some(path) => read_roots(Path::new(path))?,
        None => RootCertStore {
            roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
        },
    };
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| DialError::new(DialErrorKind::Handshake, format!("tls versions: {e}")))?
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(config)
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
