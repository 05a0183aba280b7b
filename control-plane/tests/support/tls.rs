//! A test certificate authority and a server certificate it signs for
//! `localhost` and `127.0.0.1`, as a rustls acceptor and a PEM `ca_file`.

use std::io::Write;
use std::sync::Arc;

use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, KeyPair, KeyUsagePurpose};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use tempfile::NamedTempFile;
use tokio_rustls::TlsAcceptor;

/// A test certificate authority.
pub(crate) struct Ca {
    key: KeyPair,
    cert: rcgen::Certificate,
}

impl Ca {
    /// A new self-signed CA named `name`.
    pub(crate) fn new(name: &str) -> Self {
        let key = KeyPair::generate().expect("ca key");
        let mut params = CertificateParams::new(Vec::<String>::new()).expect("ca params");
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
        params.distinguished_name.push(DnType::CommonName, name);
        let cert = params.self_signed(&key).expect("self-signed ca");
        Self { key, cert }
    }

    /// The CA certificate as a PEM file, for `ca_file`.
    pub(crate) fn pem_file(&self) -> NamedTempFile {
        let mut file = NamedTempFile::new().expect("temp file");
        file.write_all(self.cert.pem().as_bytes()).expect("write");
        file.flush().expect("flush");
        file
    }

    /// A TLS acceptor whose certificate (for `localhost` and `127.0.0.1`)
    /// this CA signed.
    pub(crate) fn acceptor(&self) -> TlsAcceptor {
        let key = KeyPair::generate().expect("server key");
        let params = CertificateParams::new(vec!["localhost".to_owned(), "127.0.0.1".to_owned()])
            .expect("server params");
        let cert = params
            .signed_by(&key, &self.cert, &self.key)
            .expect("server certificate");
        let chain = vec![CertificateDer::from(cert.der().to_vec())];
        let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der()));
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .expect("protocol versions")
            .with_no_client_auth()
            .with_single_cert(chain, key)
            .expect("server config");
        TlsAcceptor::from(Arc::new(config))
    }
}
