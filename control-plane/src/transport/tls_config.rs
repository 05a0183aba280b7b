//! The rustls client configuration of the pooled transports.
//!
//! Invariants:
//! - rustls runs on the ring provider: the configuration is built with it
//!   explicitly, and it is installed as the process default once (a
//!   provider installed earlier by someone else is kept).
//! - A `ca_file` replaces the bundled web PKI roots: a deployment with a
//!   private CA trusts that CA only.
//! - A `ca_file` is a PEM bundle of at most [`MAX_CA_FILE_BYTES`] holding at
//!   least one certificate; it is read once, when the transport is built.
//! - ALPN offers `http/1.1` only (the transports speak HTTP/1.1).
//! - Errors name the file's defect, never its contents.

use std::io::Read;
use std::path::Path;
use std::sync::{Arc, Once};

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::CertificateDer;
use rustls::{ClientConfig, RootCertStore};

use crate::error::ControlPlaneError;

/// Largest `ca_file` read, in bytes.
pub const MAX_CA_FILE_BYTES: u64 = 1 << 20;

/// Installs the ring provider as rustls's process default, once.
pub(crate) fn install_ring_provider() {
    static INSTALL: Once = Once::new();
    INSTALL.call_once(|| {
        // An error means a provider is already installed: keep it.
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}

/// A client configuration trusting `ca_file`'s certificates, or the web PKI
/// roots when there is none.
pub(crate) fn client_config(ca_file: Option<&Path>) -> Result<ClientConfig, ControlPlaneError> {
    install_ring_provider();
    let roots = match ca_file {
        Some(path) => read_roots(path)?,
        None => RootCertStore {
            roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
        },
    };
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|error| ControlPlaneError::invalid("tls", error.to_string()))?
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(config)
}

fn read_roots(path: &Path) -> Result<RootCertStore, ControlPlaneError> {
    let file = std::fs::File::open(path)
        .map_err(|error| ca_error(&format!("cannot be opened: {}", error.kind())))?;
    let mut pem = Vec::new();
    file.take(MAX_CA_FILE_BYTES + 1)
        .read_to_end(&mut pem)
        .map_err(|error| ca_error(&format!("cannot be read: {}", error.kind())))?;
    if pem.len() as u64 > MAX_CA_FILE_BYTES {
        return Err(ControlPlaneError::TooLarge {
            what: "ca_file",
            limit: MAX_CA_FILE_BYTES,
        });
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

fn ca_error(what: &str) -> ControlPlaneError {
    ControlPlaneError::invalid("ca_file", format!("the file {what}"))
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use super::*;

    fn file_with(contents: &[u8]) -> tempfile::NamedTempFile {
        let mut file = tempfile::NamedTempFile::new().expect("temp file");
        file.write_all(contents).expect("write");
        file
    }

    #[test]
    fn an_unusable_ca_file_is_refused_naming_the_setting_not_the_contents() {
        let missing = Path::new("/nonexistent/provider-pools/ca.pem");
        let empty = file_with(b"");
        let garbage = file_with(b"-----BEGIN CERTIFICATE-----\nnot base64 secret\n");
        for (path, expected) in [
            (missing, "cannot be opened"),
            (empty.path(), "holds no certificate"),
            (garbage.path(), "not a valid PEM"),
        ] {
            let error = client_config(Some(path)).expect_err("refused");
            let text = error.to_string();
            assert!(
                text.contains("ca_file") && text.contains(expected),
                "{text}"
            );
            assert!(!text.contains("secret"), "{text}");
        }
    }

    #[test]
    fn an_oversized_ca_file_is_too_large() {
        let big = file_with(&vec![
            b'a';
            usize::try_from(MAX_CA_FILE_BYTES).expect("small") + 1
        ]);
        let error = client_config(Some(big.path())).expect_err("too large");
        assert!(matches!(
            error,
            ControlPlaneError::TooLarge {
                what: "ca_file",
                ..
            }
        ));
    }

    #[test]
    fn the_default_roots_offer_http1_only() {
        let config = client_config(None).expect("web pki roots");
        assert_eq!(config.alpn_protocols, vec![b"http/1.1".to_vec()]);
    }
}
