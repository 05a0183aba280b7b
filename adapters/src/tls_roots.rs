//! Trust anchors shared by the TLS-speaking adapters (`http` for `https`,
//! `nats` for `tls://`): the provider setting `ca_file`, or the bundled web
//! PKI roots, on rustls's ring provider.
//!
//! Invariants:
//! - rustls runs on the ring provider, installed as the process default
//!   once; a provider installed earlier by someone else is kept.
//! - A `ca_file` replaces the default roots; it is read when a dial needs
//!   it, so a rotated epoch with a rewritten file is trusted afresh.
//! - A `ca_file` must be an absolute path to a PEM bundle of at most
//!   [`MAX_CA_FILE`] bytes holding at least one certificate.
//! - Errors name the setting and the failing step, never the file's contents.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::Path;
use std::sync::Once;

use provider_pools_actors::{DialError, DialErrorKind};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::CertificateDer;
use rustls::RootCertStore;

/// The provider setting naming a PEM bundle of trust anchors that replaces
/// the default roots (an absolute path).
pub const CA_FILE_SETTING: &str = "ca_file";

/// Largest `ca_file` read, in bytes.
pub(crate) const MAX_CA_FILE: u64 = 1 << 20;

/// Installs the ring provider as rustls's process default, once.
#[cfg_attr(not(feature = "http"), allow(dead_code))]
pub(crate) fn install_ring_provider() {
    static INSTALL: Once = Once::new();
    INSTALL.call_once(|| {
        // An error means a provider is already installed: keep it.
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}

/// The trust anchors of one dial: `ca_file`'s when the epoch sets it,
/// `None` for the bundled default roots.
///
/// Reads the file synchronously: it is a small local file, read only when a
/// connection is dialed.
///
/// # Errors
///
/// [`DialErrorKind::Handshake`], naming the setting, when `ca_file` is not
/// absolute, cannot be read, is too large or holds no usable certificate.
pub(crate) fn configured_roots(
    settings: &BTreeMap<String, String>,
) -> Result<Option<RootCertStore>, DialError> {
    settings
        .get(CA_FILE_SETTING)
        .map(|path| read_roots(Path::new(path)))
        .transpose()
}

/// The bundled web PKI roots.
pub(crate) fn default_roots() -> RootCertStore {
    RootCertStore {
        roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
    }
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
