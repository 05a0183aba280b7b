//! rustls' process-wide default crypto provider is the host's to choose:
//! building the control plane's https transports installs none (their
//! configurations name the ring provider explicitly). This binary holds
//! this one test, so nothing else in the process installs a provider.

use provider_pools_control_plane::{PooledHttpTransport, PooledTransportConfig};

#[test]
fn building_an_https_transport_installs_no_process_default_crypto_provider() {
    let transport = PooledHttpTransport::new(PooledTransportConfig::default());
    assert!(transport.is_ok(), "{:?}", transport.err());
    assert!(
        rustls::crypto::CryptoProvider::get_default().is_none(),
        "building a transport installed a process-wide crypto provider"
    );
}
