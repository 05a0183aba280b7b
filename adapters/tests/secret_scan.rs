//! A planted secret never appears in the `Debug` or `Display` output of the
//! S3, Vault, NATS and local-secret adapters' configuration types, built
//! with the secret as the userinfo of every target spelling, as a setting
//! value and inside a credential.
//!
//! Types covered: `S3Endpoint` (refused: `S3ConfigError`, also for a
//! credential of the wrong shape), `S3Limits`, `VaultAddress` (refused:
//! `VaultError`), `VaultLimits`, `NatsTarget` (refused: `NatsTargetError`),
//! `NatsLimits`, `SecretSettings` (refused: `SecretError`). The engine's,
//! the node facade's, the HTTP and blob adapters' and the control plane's
//! types are scanned by the root crate's `tests/secret_scan.rs`.

use std::collections::BTreeMap;

use provider_pools_actors::Credential;
use provider_pools_adapters::nats::{NatsLimits, NatsTarget};
use provider_pools_adapters::s3::{validate_credential, S3Endpoint, S3Limits};
use provider_pools_adapters::secret::SecretSettings;
use provider_pools_adapters::vault::{VaultAddress, VaultLimits};

const SECRET: &str = "s3cret-PLANTED";

/// Every spelling of a target carrying the secret as userinfo.
fn spellings(scheme: &str) -> Vec<String> {
    let upper = scheme.to_ascii_uppercase();
    vec![
        format!("{scheme}://user:{SECRET}@host.example:4222"),
        format!("{scheme}://{SECRET}@host.example"),
        format!("{scheme}:user:{SECRET}@host.example"),
        format!("{upper}://user:{SECRET}@host.example"),
        format!("{upper}:\\\\user:{SECRET}@host.example"),
        format!("//user:{SECRET}@host.example"),
        format!("user:{SECRET}@host.example"),
        format!("{scheme}://user%3A{SECRET}@host.example"),
        format!("{scheme}://user:{SECRET}%40host.example"),
        format!("{scheme}://user:{SECRET}@[::1]:8443"),
    ]
}

fn assert_hidden(what: &str, text: &str) {
    assert!(!text.contains(SECRET), "{what} shows the secret: {text}");
}

fn shown<T: std::fmt::Debug, E: std::fmt::Debug + std::fmt::Display>(
    what: &str,
    result: &Result<T, E>,
) {
    match result {
        Ok(value) => assert_hidden(what, &format!("{value:?} {value:#?}")),
        Err(error) => assert_hidden(what, &format!("{error:?} {error:#?} {error}")),
    }
}

#[test]
fn no_adapter_config_shows_a_planted_secret() {
    for url in spellings("https") {
        let settings: BTreeMap<String, String> = [
            ("region", "eu-west-1".to_owned()),
            ("bucket", "scan".to_owned()),
            ("password", SECRET.to_owned()),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v))
        .collect();
        shown("S3Endpoint", &S3Endpoint::parse(&url, &settings));
        let planted: BTreeMap<String, String> = [
            ("region", SECRET.to_owned()),
            ("bucket", SECRET.to_owned()),
            ("path_style", SECRET.to_owned()),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v))
        .collect();
        shown(
            "S3Endpoint",
            &S3Endpoint::parse("https://s3.example.net", &planted),
        );
        shown("VaultAddress", &VaultAddress::parse(&url));
    }
    for url in spellings("nats").into_iter().chain(spellings("tls")) {
        shown("NatsTarget", &NatsTarget::parse(&url));
    }
    for credential in [
        SECRET.to_owned(),
        format!(":{SECRET}"),
        format!("{SECRET}:"),
    ] {
        let credential = Credential::new(credential.into_bytes()).expect("credential");
        shown("S3ConfigError", &validate_credential(&credential));
    }
    shown("SecretSettings", &SecretSettings::parse(|_| Some(SECRET)));
    assert_hidden("S3Limits", &format!("{:?}", S3Limits::default()));
    assert_hidden("VaultLimits", &format!("{:?}", VaultLimits::default()));
    assert_hidden("NatsLimits", &format!("{:?}", NatsLimits::default()));
    assert_hidden(
        "SecretSettings",
        &format!("{:?}", SecretSettings::default()),
    );
}
