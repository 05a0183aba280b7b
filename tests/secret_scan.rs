//! A planted secret never appears in the `Debug` (nor, where there is one,
//! the `Display`) output of any public configuration type of the
//! workspace, built with the secret in every string field where a secret
//! could end up: the credential, the userinfo of every endpoint, origin and
//! authority (in every spelling of [`spellings`]), a bearer token, and
//! settings named like secrets.
//!
//! Types covered, each built with the secret planted (a value that is
//! refused is covered through its error's `Debug` and `Display`):
//! - node facade: `NodeConfig`, `ProviderDecl`, `CapabilityDecl`,
//!   `NodeConfigError` (`Syntax` quoting a value, `Invalid` for an origin
//!   and an authority), `NodeError` (`Install` with its rollback report),
//!   `Node`;
//! - engine: `Installation`, `ProviderConfig`, `OriginSpec`, `Authority`
//!   (refused: `IdentityError`), `CredentialError`, `DialTarget`, `InstallReceipt`,
//!   `ProviderDescriptor`, `Snapshot`, `PoolsConfig`, `Limits`,
//!   `RestartPolicy`, `ProviderPools`; `Credential` has no `Debug` or
//!   `Display` at all (asserted);
//! - HTTP and blob adapters: `ApprovedOrigin` (refused: `OriginError`),
//!   `RequestTarget` (refused: `TargetError`), `BodyLimits`, `BlobLimits`,
//!   `HttpDialer`;
//! - control plane: `HttpClientConfig`, `HttpControlPlaneClient` (refused),
//!   `EtcdConfig`, `EtcdClient` (refused), `Endpoint` (refused),
//!   `PooledTransportConfig`, `PooledHttpTransport`, `StdHttpTransport`,
//!   `BearerToken`, `BearerHttpTransport`, `RetryConfig`, `RetryPolicy`,
//!   `CoordinatorConfig`, `HeartbeatPolicy`, `FileOptions`, `StoreLimits`.
//!
//! The S3, Vault, NATS and local-secret adapters' configuration types are
//! scanned by `adapters/tests/secret_scan.rs` (they need those features).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use provider_pools::node::{NodeConfig, NodeConfigError, NodeError};
use provider_pools::{
    Authority, BrokerGeneration, Credential, DialTarget, Epoch, Installation, Limits, OriginKind,
    OriginSlot, OriginSpec, PoolsConfig, ProviderConfig, ProviderId, ProviderPools, RestartPolicy,
    ServiceName,
};
use provider_pools_adapters::blob::BlobLimits;
use provider_pools_adapters::http_origin::{ApprovedOrigin, BodyLimits, HttpDialer, RequestTarget};
use provider_pools_control_plane::coordinator::CoordinatorConfig;
use provider_pools_control_plane::file::FileOptions;
use provider_pools_control_plane::heartbeat::HeartbeatPolicy;
use provider_pools_control_plane::retry::{RetryConfig, RetryPolicy};
use provider_pools_control_plane::transport::{
    BearerHttpTransport, BearerToken, Endpoint, PooledHttpTransport, PooledTransportConfig,
    StdHttpTransport,
};
use provider_pools_control_plane::v1::HttpClientConfig;
use provider_pools_control_plane::{
    EtcdClient, EtcdConfig, HttpControlPlaneClient, NodeId, StoreLimits,
};

const SECRET: &str = "s3cret-PLANTED";

static_assertions::assert_not_impl_any!(Credential: std::fmt::Debug, std::fmt::Display);

/// Every spelling of a URL carrying the secret as userinfo.
fn spellings(host: &str) -> Vec<String> {
    vec![
        format!("https://user:{SECRET}@{host}"),
        format!("https://{SECRET}@{host}"),
        format!("https:user:{SECRET}@{host}"),
        format!("HTTPS://user:{SECRET}@{host}"),
        format!("HTTPS:\\\\user:{SECRET}@{host}"),
        format!("http:/user:{SECRET}@{host}"),
        format!("//user:{SECRET}@{host}"),
        format!("user:{SECRET}@{host}"),
        format!("https://user%3A{SECRET}@{host}"),
        format!("https://user:{SECRET}%40{host}"),
        format!("https://user:{SECRET}@[::1]:8443"),
    ]
}

/// Fails naming `what` when `text` shows the secret.
fn assert_hidden(what: &str, text: &str) {
    assert!(!text.contains(SECRET), "{what} shows the secret: {text}");
}

fn debug(what: &str, value: &impl std::fmt::Debug) {
    assert_hidden(what, &format!("{value:?}"));
    assert_hidden(what, &format!("{value:#?}"));
}

fn both(what: &str, value: &(impl std::fmt::Debug + std::fmt::Display)) {
    debug(what, value);
    assert_hidden(what, &value.to_string());
}

/// Settings holding the secret under secret-like names and in URLs.
fn planted_settings(url: &str) -> BTreeMap<String, String> {
    [
        ("password", SECRET.to_owned()),
        ("api_token", SECRET.to_owned()),
        ("client_secret", SECRET.to_owned()),
        ("endpoint", url.to_owned()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v))
    .collect()
}

fn planted_config(url: &str) -> ProviderConfig {
    let mut config = ProviderConfig::new(ServiceName::new("scan/v1").expect("service"))
        .with_origin(OriginSlot::new(0), OriginKind::Http, url);
    config.settings = planted_settings(url);
    config
}

#[test]
fn no_engine_config_shows_a_planted_secret() {
    for url in spellings("api.example.net") {
        let config = planted_config(&url);
        debug("ProviderConfig", &config);
        debug("OriginSpec", &config.origins[0]);
        let spec = OriginSpec {
            slot: OriginSlot::new(1),
            kind: OriginKind::Http,
            target: url.clone(),
        };
        debug("OriginSpec", &spec);
        match Authority::new(url.as_str()) {
            Ok(authority) => both("Authority", &authority),
            Err(error) => both("IdentityError", &error),
        }
        let installation = Installation {
            provider: ProviderId::new("scan").expect("id"),
            authority: Authority::new("https://api.example.net").expect("authority"),
            expected: Epoch::ZERO,
            credential: Credential::new(SECRET.as_bytes().to_vec()).expect("credential"),
            config,
        };
        debug("Installation", &installation);
        let dial = DialTarget::new(
            &url,
            &installation.config.settings,
            &installation.credential,
        );
        debug("DialTarget", &dial);
    }
    let too_long = SECRET.repeat(provider_pools::Credential::MAX_LEN / SECRET.len() + 1);
    let too_long = Credential::new(too_long.into_bytes())
        .err()
        .expect("over the ceiling");
    both("CredentialError", &too_long);
    debug("Limits", &Limits::DEFAULT);
    debug("RestartPolicy", &RestartPolicy::default());
}

#[tokio::test]
async fn no_installed_provider_or_node_shows_a_planted_secret() {
    let base = PoolsConfig::new(tokio::runtime::Handle::current(), BrokerGeneration::new());
    debug("PoolsConfig", &base);
    let pools = ProviderPools::start(base).await.expect("pools start");
    let installation = Installation {
        provider: ProviderId::new("scan").expect("id"),
        authority: Authority::new("https://api.example.net").expect("authority"),
        expected: Epoch::ZERO,
        credential: Credential::new(SECRET.as_bytes().to_vec()).expect("credential"),
        config: planted_config(&format!("https://user:{SECRET}@api.example.net")),
    };
    let receipt = pools.install(installation).await.expect("installed");
    debug("InstallReceipt", &receipt);
    let descriptor = pools
        .describe(&ProviderId::new("scan").expect("id"))
        .expect("described");
    debug("ProviderDescriptor", &descriptor);
    debug("Snapshot", &pools.snapshot());
    debug("ProviderPools", &pools);
    debug("HttpDialer", &HttpDialer::new(pools.clone()));
    let report = pools
        .shutdown(tokio::time::Instant::now() + Duration::from_secs(5))
        .await;
    debug("Snapshot", &report);

    // A node whose settings hold the secret starts; its Debug hides it.
    let text = format!(
        "[[capability]]\nname = \"scan.read\"\nprovider = \"scan\"\n\n[[provider]]\nid = \"scan\"\nkind = \"http\"\nservice = \"scan/v1\"\nauthority = \"http://127.0.0.1:1\"\norigins = [\"http://127.0.0.1:1\"]\nsettings = {{ password = \"{SECRET}\", endpoint = \"https:u:{SECRET}@h\" }}\n"
    );
    let config = NodeConfig::parse(&text).expect("valid file");
    debug("NodeConfig", &config);
    debug("ProviderDecl", &config.providers[0]);
    debug("CapabilityDecl", &config.capabilities[0]);
    let base = PoolsConfig::new(tokio::runtime::Handle::current(), BrokerGeneration::new());
    let node = config.start(base).await.expect("node starts");
    debug("Node", &node);

    // A node whose second install fails: the error and its rollback report.
    let failing = format!(
        "[limits]\nretained_configurations = 1\n\n{text}\n[[provider]]\nid = \"scan2\"\nkind = \"http\"\nservice = \"scan/v2\"\nauthority = \"http://127.0.0.1:2\"\norigins = [\"http://127.0.0.1:2\"]\nsettings = {{ token = \"{SECRET}\" }}\n"
    );
    let config = NodeConfig::parse(&failing).expect("valid file");
    let base = PoolsConfig::new(tokio::runtime::Handle::current(), BrokerGeneration::new());
    match config.start(base).await {
        Err(error @ NodeError::Install { .. }) => both("NodeError", &error),
        other => panic!("expected a failed install, got {other:?}"),
    }
}

#[test]
fn no_node_file_shows_a_planted_secret() {
    for url in spellings("127.0.0.1:1") {
        let text = format!(
            "[[provider]]\nid = \"p\"\nkind = \"http\"\nservice = \"s\"\nauthority = {url:?}\norigins = [{url:?}]\nsettings = {{ password = \"{SECRET}\", endpoint = {url:?} }}\n"
        );
        let config = NodeConfig::parse(&text).expect("syntax is fine");
        debug("NodeConfig", &config);
        debug("ProviderDecl", &config.providers[0]);
        let error = config.installations().expect_err("refused");
        both("NodeConfigError", &error);
        // Only the origin refused: the authority's refusal, on its own.
        let text = format!(
            "[[provider]]\nid = \"p\"\nkind = \"http\"\nservice = \"s\"\nauthority = {url:?}\norigins = [\"http://127.0.0.1:1\"]\n"
        );
        let config = NodeConfig::parse(&text).expect("syntax is fine");
        let error = config.installations().expect_err("refused");
        assert!(
            matches!(
                error,
                NodeConfigError::Invalid {
                    key: "provider.authority",
                    ..
                }
            ),
            "{error:?}"
        );
        both("NodeConfigError", &error);
        // A parser error quoting the value (a string where a list belongs).
        let text = format!(
            "[[provider]]\nid = \"p\"\nkind = \"http\"\nservice = \"s\"\nauthority = \"a\"\norigins = {url:?}\n"
        );
        let error = NodeConfig::parse(&text).expect_err("a string is not a list");
        assert!(
            matches!(error, NodeConfigError::Syntax { line: 6, .. }),
            "{error:?}"
        );
        both("NodeConfigError", &error);
    }
}

#[test]
fn no_adapter_target_shows_a_planted_secret() {
    for url in spellings("api.example.net") {
        match ApprovedOrigin::parse(&url) {
            Ok(origin) => both("ApprovedOrigin", &origin),
            Err(error) => both("OriginError", &error),
        }
        match RequestTarget::parse(&url) {
            Ok(target) => both("RequestTarget", &target),
            Err(error) => both("TargetError", &error),
        }
    }
    debug("BodyLimits", &BodyLimits::default());
    debug("BlobLimits", &BlobLimits::default());
}

#[tokio::test]
async fn no_control_plane_config_shows_a_planted_secret() {
    let pooled = PooledHttpTransport::new(PooledTransportConfig::default()).expect("transport");
    debug("PooledTransportConfig", &PooledTransportConfig::default());
    debug("PooledHttpTransport", &pooled);
    debug("StdHttpTransport", &StdHttpTransport::new());
    let token = BearerToken::new(SECRET).expect("token");
    debug("BearerToken", &token);
    let bearer = BearerHttpTransport::new(pooled, token);
    debug("BearerHttpTransport", &bearer);
    let bearer: Arc<BearerHttpTransport> = Arc::new(bearer);
    for url in spellings("cp.example.net") {
        let config = HttpClientConfig::new(url.clone());
        debug("HttpClientConfig", &config);
        match HttpControlPlaneClient::new(config, bearer.clone()) {
            Ok((client, worker)) => {
                debug("HttpControlPlaneClient", &client);
                debug("HttpWorker", &worker);
            }
            Err(error) => both("ControlPlaneError", &error),
        }
        let etcd = EtcdConfig::new(url.clone());
        debug("EtcdConfig", &etcd);
        match EtcdClient::new(etcd) {
            Ok(client) => debug("EtcdClient", &client),
            Err(error) => both("ControlPlaneError", &error),
        }
        match Endpoint::parse(&url) {
            Ok(endpoint) => both("Endpoint", &endpoint),
            Err(error) => both("ControlPlaneError", &error),
        }
    }
    let retry = RetryConfig::default();
    debug("RetryConfig", &retry);
    debug("RetryPolicy", &RetryPolicy::new(retry));
    let node = NodeId::new("scan-node").expect("node id");
    let coordinator = CoordinatorConfig::new(node, Duration::from_secs(3)).expect("coordinator");
    debug("CoordinatorConfig", &coordinator);
    debug(
        "HeartbeatPolicy",
        &HeartbeatPolicy::for_ttl(Duration::from_secs(3)),
    );
    debug("FileOptions", &FileOptions::new());
    debug("StoreLimits", &StoreLimits::default());
}
