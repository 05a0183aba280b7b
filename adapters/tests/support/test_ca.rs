//! A test certificate authority: its PEM (for the setting `ca_file`) and
//! server certificates it signs for loopback hosts.

use std::io::Write;

use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, KeyPair, KeyUsagePurpose};
use tempfile::NamedTempFile;

/// A self-signed CA, generated fresh.
pub(crate) struct TestCa {
    key: KeyPair,
    cert: rcgen::Certificate,
}

impl TestCa {
    pub(crate) fn new(name: &str) -> Self {
        let key = KeyPair::generate().expect("ca key");
        let mut params = CertificateParams::new(Vec::<String>::new()).expect("ca params");
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
        params.distinguished_name.push(DnType::CommonName, name);
        let cert = params.self_signed(&key).expect("self-signed ca");
        Self { key, cert }
    }

    /// The CA certificate as a PEM file, for the setting `ca_file`.
    pub(crate) fn pem_file(&self) -> NamedTempFile {
        pem_file(self.cert.pem().as_bytes())
    }

    /// A server certificate for `localhost` and `127.0.0.1`, and its key.
    pub(crate) fn issue(&self) -> (rcgen::Certificate, KeyPair) {
        let key = KeyPair::generate().expect("server key");
        let params = CertificateParams::new(vec!["localhost".to_owned(), "127.0.0.1".to_owned()])
            .expect("server params");
        let cert = params
            .signed_by(&key, &self.cert, &self.key)
            .expect("server certificate");
        (cert, key)
    }

    /// [`Self::issue`], as PEM: the certificate and the private key.
    pub(crate) fn issue_pem(&self) -> (Vec<u8>, Vec<u8>) {
        let (cert, key) = self.issue();
        (cert.pem().into_bytes(), key.serialize_pem().into_bytes())
    }
}

/// `contents` in a temporary file.
pub(crate) fn pem_file(contents: &[u8]) -> NamedTempFile {
    let mut file = NamedTempFile::new().expect("temp file");
    file.write_all(contents).expect("write the pem file");
    file.flush().expect("flush the pem file");
    file
}
