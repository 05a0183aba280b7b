//! The Debug output of every public control-plane config type, built with
//! a planted secret in every URL-like field in several userinfo spellings,
//! never shows the secret.

use provider_pools_control_plane::transport::PooledTransportConfig;
use provider_pools_control_plane::v1::HttpClientConfig;
use provider_pools_control_plane::EtcdConfig;

const SECRET: &str = "s3cret-planted";

#[test]
fn no_public_config_debug_shows_a_planted_secret() {
    for url in [
        format!("https://user:{SECRET}@cp.example.net/base"),
        format!("https:user:{SECRET}@cp.example.net"),
        format!("HTTPS:\\\\user:{SECRET}@cp.example.net"),
        format!("http:/user:{SECRET}@127.0.0.1:1"),
    ] {
        let shown = [
            format!("{:?}", HttpClientConfig::new(url.clone())),
            format!("{:?}", EtcdConfig::new(url.clone())),
            format!("{:?}", PooledTransportConfig::default()),
        ];
        for text in shown {
            assert!(!text.contains(SECRET), "{url}: {text}");
        }
    }
}
