//! The rustls client configuration of the pooled transports, on the shared
//! trust anchors ([`provider_pools_tls_roots`]).
//!
//! Invariants:
//! - rustls runs on the ring provider: the configuration is built with it
//!   explicitly; the process default provider is neither read nor
//!   installed.
//! - A `ca_file` replaces the bundled web PKI roots: a deployment with a
//!   private CA trusts that CA only.
//! - A `ca_file` is a PEM bundle of at most [`MAX_CA_FILE_BYTES`] holding at
//!   least one certificate; it is read once, when the transport is built.
//! - ALPN offers `http/1.1` only (the transports speak HTTP/1.1).
//! - Errors name the file's defect, never its contents.

use std::path::Path;

use provider_pools_tls_roots::CaFileError;
use rustls::{ClientConfig, RootCertStore};

use crate::error::ControlPlaneError;

pub use provider_pools_tls_roots::MAX_CA_FILE_BYTES;

/// A client configuration trusting `ca_file`'s certificates, or the web PKI
/// roots when there is none.
pub(crate) fn client_config(ca_file: Option<&Path>) -> Result<ClientConfig, ControlPlaneError> {
    let roots = match ca_file {
        Some(path) => read_roots(path)?,
        None => provider_pools_tls_roots::default_roots(),
    };
    let mut config = provider_pools_tls_roots::ring_client_config(roots)
        .map_err(|error| ControlPlaneError::invalid("tls", error.to_string()))?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(config)
}

fn read_roots(path: &Path) -> Result<RootCertStore, ControlPlaneError> {
    provider_pools_tls_roots::read_roots(path).map_err(|error| match error {
        CaFileError::TooLarge => ControlPlaneError::TooLarge {
            what: "ca_file",
            limit: MAX_CA_FILE_BYTES,
        },
        error => ControlPlaneError::invalid("ca_file", format!("the file {error}")),
    })
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
