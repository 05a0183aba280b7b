//! The trust anchors every TLS client of provider-pools verifies servers
//! against: the PEM bundle a `ca_file` names, or the bundled web PKI roots,
//! on rustls's ring provider.
//!
//! The adapters (`https` origins, `tls://` NATS servers) and the control
//! plane's transports both read a `ca_file`; each maps a [`CaFileError`]
//! into its own error type and decides when the file is read. This crate
//! depends on neither, so the control plane uses it without depending on
//! the engine.
//!
//! Invariants:
//! - rustls runs on the ring provider: [`ring_client_config`] builds with it
//!   explicitly. Nothing here installs a process-wide default provider, so
//!   the host's choice (or its absence) stands.
//! - A `ca_file` replaces the default roots: a deployment with a private CA
//!   trusts that CA only.
//! - A `ca_file` is read up to [`MAX_CA_FILE_BYTES`] (one byte more, to see
//!   that it is too large), and must hold at least one certificate that is a
//!   valid trust anchor.
//! - A [`CaFileError`] names the file's defect, never its contents.

#![forbid(unsafe_code)]

use std::io::Read;
use std::path::Path;
use std::sync::Arc;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::CertificateDer;
use rustls::{ClientConfig, RootCertStore};

/// Largest `ca_file` read, in bytes.
pub const MAX_CA_FILE_BYTES: u64 = 1 << 20;

/// Why a `ca_file` cannot serve as trust anchors. The message completes
/// "the file …" and never quotes the file's contents.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CaFileError {
    /// The file could not be opened.
    #[error("cannot be opened: {}", .0.kind())]
    Open(#[source] std::io::Error),
    /// The file could not be read to its end.
    #[error("cannot be read: {}", .0.kind())]
    Read(#[source] std::io::Error),
    /// The file is larger than [`MAX_CA_FILE_BYTES`].
    #[error("is larger than {MAX_CA_FILE_BYTES} bytes")]
    TooLarge,
    /// The file is not a sequence of PEM sections.
    #[error("is not a valid PEM bundle")]
    NotPem,
    /// A certificate in the file is no valid trust anchor.
    #[error("holds a certificate that is no valid trust anchor")]
    NotAnAnchor,
    /// The file holds no certificate.
    #[error("holds no certificate")]
    Empty,
}

/// The bundled web PKI roots.
pub fn default_roots() -> RootCertStore {
    RootCertStore {
        roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
    }
}

/// Reads and parses the PEM bundle at `path` (synchronously: it is a small
/// local file).
///
/// # Errors
///
/// A [`CaFileError`] when the file cannot be opened or read, is larger than
/// [`MAX_CA_FILE_BYTES`], is no PEM bundle, or holds no usable certificate.
pub fn read_roots(path: &Path) -> Result<RootCertStore, CaFileError> {
    let file = std::fs::File::open(path).map_err(CaFileError::Open)?;
    let mut pem = Vec::new();
    file.take(MAX_CA_FILE_BYTES + 1)
        .read_to_end(&mut pem)
        .map_err(CaFileError::Read)?;
    if pem.len() as u64 > MAX_CA_FILE_BYTES {
        return Err(CaFileError::TooLarge);
    }
    let mut roots = RootCertStore::empty();
    for cert in CertificateDer::pem_slice_iter(&pem) {
        let cert = cert.map_err(|_| CaFileError::NotPem)?;
        roots.add(cert).map_err(|_| CaFileError::NotAnAnchor)?;
    }
    if roots.is_empty() {
        return Err(CaFileError::Empty);
    }
    Ok(roots)
}

/// A client configuration on the ring provider (given explicitly, whatever
/// the process default is) with rustls's safe default protocol versions,
/// trusting `roots`, without client authentication and without ALPN.
///
/// # Errors
///
/// rustls's error when the ring provider supports none of the safe default
/// protocol versions (it always supports them).
pub fn ring_client_config(roots: RootCertStore) -> Result<ClientConfig, rustls::Error> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    Ok(ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .with_root_certificates(roots)
        .with_no_client_auth())
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use super::*;

    /// `read_roots` of a temporary file holding `contents`.
    fn read_of(contents: &[u8]) -> Result<RootCertStore, CaFileError> {
        let mut file = tempfile::NamedTempFile::new().expect("temp file");
        file.write_all(contents).expect("write");
        read_roots(file.path())
    }

    #[test]
    fn each_defect_is_its_own_error_and_none_quotes_the_file() {
        let missing = read_roots(Path::new("/nonexistent/provider-pools/ca.pem"));
        assert!(matches!(missing, Err(CaFileError::Open(_))));
        assert!(matches!(read_of(b""), Err(CaFileError::Empty)));
        let oversized = vec![b'a'; usize::try_from(MAX_CA_FILE_BYTES).expect("small") + 1];
        assert!(matches!(read_of(&oversized), Err(CaFileError::TooLarge)));
        let garbage = read_of(b"-----BEGIN CERTIFICATE-----\nnot base64 secret\n");
        let Err(error @ CaFileError::NotPem) = garbage else {
            panic!("garbage is no PEM bundle: {garbage:?}");
        };
        assert_eq!(error.to_string(), "is not a valid PEM bundle");
    }

    #[test]
    fn a_ring_configuration_offers_no_alpn() {
        let config = ring_client_config(default_roots()).expect("web pki roots");
        assert!(config.alpn_protocols.is_empty());
    }
}
