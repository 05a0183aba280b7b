//! Standalone startup from a TOML node file: providers opt in, capabilities
//! construct nothing, origins are checked by the HTTP adapter's own parser,
//! a failed start leaves nothing installed, and every error names its key
//! and line.

use provider_pools::node::{NodeConfig, NodeConfigError, NodeError};
use provider_pools::{
    BrokerGeneration, ControlState, Fairness, InstallError, LimitField, LimitsError, PoolsConfig,
    Priority, ProviderId,
};

fn base() -> PoolsConfig {
    PoolsConfig::new(tokio::runtime::Handle::current(), BrokerGeneration::new())
}

#[tokio::test]
async fn declaring_a_capability_alone_constructs_no_client() {
    let config = NodeConfig::parse(
        r#"
[[capability]]
name = "weather.read"
provider = "weather"
"#,
    )
    .expect("valid file");
    let node = config.start(base()).await.expect("node starts");
    let pools = node.pools;
    assert!(node.receipts.is_empty());
    let snapshot = pools.snapshot();
    assert_eq!((snapshot.configured_epochs, snapshot.clients), (0, 0));
    assert!(pools
        .describe(&ProviderId::new("weather").expect("id"))
        .is_none());
}

#[tokio::test]
async fn provider_sections_and_limits_are_applied() {
    let root = tempfile::tempdir().expect("temp dir");
    let text = format!(
        r#"
[limits]
pending_requests = 64
queue_age_ms = 2000

[[provider]]
id = "weather"
kind = "http"
service = "weather/v1"
authority = "http://127.0.0.1:8080"
origins = ["http://127.0.0.1:8080", "http://127.0.0.1:8081"]
settings = {{ auth_header = "authorization" }}

[[provider]]
id = "files"
kind = "blob"
service = "files/v1"
authority = "file:local"
origins = ["{}"]
"#,
        root.path().display()
    );
    let config = NodeConfig::parse(&text).expect("valid file");
    let node = config.start(base()).await.expect("node starts");
    assert_eq!(node.receipts.len(), 2);
    let pools = node.pools;
    assert_eq!(pools.limits().pending_requests, 64);
    assert_eq!(pools.limits().queue_age, std::time::Duration::from_secs(2));
    let snapshot = pools.snapshot();
    assert_eq!((snapshot.configured_epochs, snapshot.clients), (2, 3));
    let weather = pools
        .describe(&ProviderId::new("weather").expect("id"))
        .expect("installed");
    assert_eq!(weather.origins.len(), 2);
}

#[test]
fn errors_name_the_key_and_its_line() {
    let bad_id = "\n[[provider]]\nid = \"Bad Id\"\nkind = \"http\"\nservice = \"s\"\nauthority = \"a\"\norigins = [\"http://127.0.0.1:1\"]\n";
    let config = NodeConfig::parse(bad_id).expect("syntax is fine");
    match config.installations() {
        Err(NodeConfigError::Invalid { key, line, .. }) => {
            assert_eq!((key, line), ("provider.id", 3));
        }
        other => panic!("expected an invalid provider.id, got {other:?}"),
    }

    let unknown = "[limits]\npending_requests = 8\n\n[[provider]]\nid = \"p\"\nkinds = \"http\"\n";
    match NodeConfig::parse(unknown) {
        Err(NodeConfigError::Syntax { line, message }) => {
            assert_eq!(line, 6, "{message}");
            assert!(message.contains("kinds"), "{message}");
        }
        other => panic!("expected a syntax error, got {other:?}"),
    }

    let bad_origin = "[[provider]]\nid = \"p\"\nkind = \"blob\"\nservice = \"s\"\nauthority = \"a\"\norigins = [\"relative/dir\"]\n";
    let config = NodeConfig::parse(bad_origin).expect("syntax is fine");
    assert!(matches!(
        config.installations(),
        Err(NodeConfigError::Invalid {
            key: "provider.origins",
            line: 6,
            ..
        })
    ));

    let missing_env = "[[provider]]\nid = \"p\"\nkind = \"http\"\nservice = \"s\"\nauthority = \"a\"\norigins = [\"http://127.0.0.1:1\"]\ncredential_env = \"PROVIDER_POOLS_TEST_UNSET_VARIABLE\"\n";
    let config = NodeConfig::parse(missing_env).expect("syntax is fine");
    assert!(matches!(
        config.installations(),
        Err(NodeConfigError::Invalid {
            key: "provider.credential_env",
            line: 7,
            ..
        })
    ));

    assert_eq!(
        NodeConfig::parse("[limits]\nidle_connections = 300\n").err(),
        Some(NodeConfigError::Limits(LimitsError::Relation {
            field: LimitField::IdleConnections,
            value: 300,
            bound_field: LimitField::Connections,
            bound: 256,
        }))
    );
    let refused = NodeConfig::parse("[limits]\nidle_connections = 300\n").err();
    let source = refused.as_ref().and_then(std::error::Error::source);
    assert_eq!(
        source.map(ToString::to_string),
        Some("limit idle_connections = 300 must not exceed connections = 256".to_owned())
    );
}

const TWO_PROVIDERS: &str = "[[provider]]\nid = \"a\"\nkind = \"blob\"\nservice = \"s1\"\nauthority = \"x\"\norigins = [\"/tmp\"]\n\n[[provider]]\nid = \"ID\"\nkind = \"blob\"\nservice = \"SERVICE\"\nauthority = \"x\"\norigins = [\"/tmp\"]\n";

#[test]
fn duplicate_provider_ids_and_services_are_refused_before_anything_is_installed() {
    let twice_id = TWO_PROVIDERS.replace("ID", "a").replace("SERVICE", "s2");
    let config = NodeConfig::parse(&twice_id).expect("syntax is fine");
    match config.installations() {
        Err(NodeConfigError::Invalid { key, line, .. }) => {
            assert_eq!((key, line), ("provider.id", 9));
        }
        other => panic!("expected a duplicate id, got {other:?}"),
    }
    let twice_service = TWO_PROVIDERS.replace("ID", "b").replace("SERVICE", "s1");
    let config = NodeConfig::parse(&twice_service).expect("syntax is fine");
    assert!(matches!(
        config.installations(),
        Err(NodeConfigError::Invalid {
            key: "provider.service",
            line: 11,
            ..
        })
    ));
    let distinct = TWO_PROVIDERS.replace("ID", "b").replace("SERVICE", "s2");
    let config = NodeConfig::parse(&distinct).expect("syntax is fine");
    assert_eq!(config.installations().expect("distinct").len(), 2);
}

#[test]
fn node_files_above_the_size_bound_are_refused_before_parsing() {
    let huge = format!(
        "# {}\n",
        "x".repeat(provider_pools::node::MAX_NODE_FILE_BYTES)
    );
    assert_eq!(
        NodeConfig::parse(&huge).map(|_| ()),
        Err(NodeConfigError::TooLarge {
            max: provider_pools::node::MAX_NODE_FILE_BYTES
        })
    );
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("node.toml");
    std::fs::write(&path, &huge).expect("write");
    assert!(matches!(
        NodeConfig::read(&path),
        Err(NodeConfigError::TooLarge { .. })
    ));
    std::fs::write(&path, TWO_PROVIDERS).expect("write");
    assert!(
        NodeConfig::read(&path).is_ok(),
        "{:?}",
        NodeConfig::read(&path)
    );
}

#[test]
fn reserved_headers_cannot_be_the_auth_header() {
    for reserved in [
        "host",
        "Content-Length",
        "transfer-encoding",
        "connection",
        "te",
        "upgrade",
        "trailer",
        "keep-alive",
        "proxy-authorization",
    ] {
        let text = format!("[[provider]]\nid = \"p\"\nkind = \"http\"\nservice = \"s\"\nauthority = \"a\"\norigins = [\"http://127.0.0.1:1\"]\nsettings = {{ auth_header = \"{reserved}\" }}\n");
        let config = NodeConfig::parse(&text).expect("syntax is fine");
        match config.installations() {
            Err(NodeConfigError::Invalid { key, message, .. }) => {
                assert_eq!(key, "provider.settings", "{reserved}");
                assert!(message.contains("reserved"), "{message}");
            }
            other => panic!("{reserved}: expected a refusal, got {other:?}"),
        }
    }
}

#[test]
fn http_connection_settings_out_of_range_are_refused_naming_the_setting() {
    for (setting, value) in [
        ("max_head_bytes", "1048577"),
        ("idle_timeout_ms", "0"),
        ("max_connection_age_ms", "86400001"),
        ("max_connection_requests", "1000001"),
    ] {
        let text = format!("[[provider]]\nid = \"p\"\nkind = \"http\"\nservice = \"s\"\nauthority = \"a\"\norigins = [\"http://127.0.0.1:1\"]\nsettings = {{ {setting} = \"{value}\" }}\n");
        let config = NodeConfig::parse(&text).expect("syntax is fine");
        match config.installations() {
            Err(NodeConfigError::Invalid { key, message, .. }) => {
                assert_eq!(key, "provider.settings", "{setting}");
                assert!(message.contains(setting), "{message}");
            }
            other => panic!("{setting} = {value}: expected a refusal, got {other:?}"),
        }
    }
}

/// A one-provider HTTP file whose only origin is `origin`, on line 6.
fn http_with_origin(origin: &str) -> String {
    format!("[[provider]]\nid = \"p\"\nkind = \"http\"\nservice = \"s\"\nauthority = \"a\"\norigins = [{origin:?}]\n")
}

#[test]
fn an_origin_with_userinfo_port_zero_a_path_or_crlf_is_refused_naming_the_key_and_line() {
    const SECRET: &str = "s3cret-PLANTED";
    let refused = [
        (format!("http://user:{SECRET}@127.0.0.1:1"), "userinfo"),
        (format!("https://{SECRET}@api.example.net"), "userinfo"),
        ("http://127.0.0.1:0".to_owned(), "port"),
        ("http://127.0.0.1:65536".to_owned(), "port"),
        ("http://127.0.0.1:".to_owned(), "port"),
        ("http://127.0.0.1:1/".to_owned(), "path"),
        ("http://127.0.0.1:1/base".to_owned(), "path"),
        ("http://127.0.0.1:1?q=1".to_owned(), "query"),
        ("http://127.0.0.1:1#f".to_owned(), "fragment"),
        ("http://127.0.0.1:1\r\nX-Injected: 1".to_owned(), "port"),
        ("http://api.example.net\r\n".to_owned(), "host"),
        ("http://..".to_owned(), "host"),
        ("ftp://127.0.0.1:1".to_owned(), "scheme"),
        (format!("https:user:{SECRET}@api.example.net"), "scheme"),
    ];
    for (origin, why) in refused {
        let config = NodeConfig::parse(&http_with_origin(&origin)).expect("syntax is fine");
        match config.installations() {
            Err(error @ NodeConfigError::Invalid { key, line, .. }) => {
                assert_eq!((key, line), ("provider.origins", 6), "{origin:?}");
                let text = format!("{error} {error:?}");
                assert!(text.contains(why), "{origin:?}: {text}");
                assert!(!text.contains(SECRET), "{origin:?}: {text}");
            }
            other => panic!("{origin:?}: expected a refused origin, got {other:?}"),
        }
    }
    for accepted in [
        "http://127.0.0.1:1",
        "https://api.example.net",
        "HTTPS://API.example.net:8443",
        "http://[::1]:65535",
    ] {
        let config = NodeConfig::parse(&http_with_origin(accepted)).expect("syntax is fine");
        assert!(config.installations().is_ok(), "{accepted}");
    }
    let blob = "[[provider]]\nid = \"p\"\nkind = \"blob\"\nservice = \"s\"\nauthority = \"a\"\norigins = [\"/tmp/a\\nb\"]\n";
    let config = NodeConfig::parse(blob).expect("syntax is fine");
    assert!(matches!(
        config.installations(),
        Err(NodeConfigError::Invalid {
            key: "provider.origins",
            line: 6,
            ..
        })
    ));
}

#[tokio::test]
async fn a_start_that_fails_halfway_leaves_no_provider_installed() {
    // One retained configuration: the first provider installs, the second
    // is refused by the registry after the first is already published.
    let text = format!(
        "[limits]\nretained_configurations = 1\n\n{}",
        TWO_PROVIDERS.replace("ID", "b").replace("SERVICE", "s2")
    );
    let config = NodeConfig::parse(&text).expect("valid file");
    assert_eq!(config.installations().expect("both validate").len(), 2);
    match config.start(base()).await {
        Err(NodeError::Install {
            provider,
            source,
            rollback,
        }) => {
            assert_eq!(provider, "b");
            assert!(
                matches!(source, InstallError::Capacity(ref e) if e.resource == "retained_configurations"),
                "{source:?}"
            );
            // Taken from the registry the start used, after its shutdown:
            // provider `a` (installed before the failure) is gone and the
            // registry completed.
            assert_eq!(rollback.configured_epochs, 0, "{rollback:?}");
            assert_eq!(rollback.retained_epochs, 0, "{rollback:?}");
            assert_eq!(rollback.control, ControlState::Completed, "{rollback:?}");
            assert!(rollback.is_clean(), "{rollback:?}");
        }
        Err(other) => panic!("expected the second install to fail, got {other:?}"),
        Ok(node) => panic!("expected a failed start, got {node:?}"),
    }
}

/// A node file that cannot be read keeps the `io::Error` as its source
/// (not flattened to text), and the message does not repeat it.
#[test]
fn reading_a_missing_node_file_keeps_the_io_error_as_its_source() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let error = NodeConfig::read(&dir.path().join("absent.toml")).expect_err("no such file");
    let source = std::error::Error::source(&error)
        .and_then(|s| s.downcast_ref::<std::io::Error>())
        .expect("the io::Error is the source");
    assert_eq!(source.kind(), std::io::ErrorKind::NotFound);
    assert_eq!(error.to_string(), "node configuration could not be read");
}

#[tokio::test]
async fn a_providers_rate_in_the_node_file_is_configured_after_its_install() {
    let text = "[[provider]]\nid = \"weather\"\nkind = \"http\"\nservice = \"s\"\nauthority = \"a\"\norigins = [\"http://127.0.0.1:1\"]\nrate = { requests = 300, period_ms = 1000, burst = 20 }\n";
    let node = NodeConfig::parse(text)
        .expect("valid file")
        .start(base())
        .await
        .expect("node starts");
    let weather = ProviderId::new("weather").expect("id");
    let rate = node.pools.provider_rate(&weather).expect("a rate");
    let configured = provider_pools::RateLimit::new(300, std::time::Duration::from_secs(1), 20);
    assert_eq!(
        (rate.rate, rate.configured, rate.tokens),
        (configured, configured, 20)
    );
    // A rate of no requests is refused before anything starts, naming the
    // key and its line.
    let zero = text.replace("requests = 300", "requests = 0");
    match NodeConfig::parse(&zero)
        .expect("valid syntax")
        .start(base())
        .await
    {
        Err(NodeError::Config(NodeConfigError::Invalid { key, line, .. })) => {
            assert_eq!((key, line), ("provider.rate", 7));
        }
        other => panic!("expected an invalid rate, got {:?}", other.err()),
    }
}

/// The `[admission]` section sets the fairness policy and the classes'
/// minimum shares; what it leaves out keeps the caller's.
#[test]
fn the_admission_section_chooses_the_policy_and_the_minimum_shares() {
    let config = NodeConfig::parse(
        "[admission]\nfairness = \"least_held\"\nmin_shares = { interactive = 50, batch = 10 }\n",
    )
    .expect("valid file");
    assert_eq!(config.fairness(), Ok(Some(Fairness::LeastHeld)));
    let shares = config.min_shares().expect("valid").expect("set");
    assert_eq!(
        Priority::ALL.map(|class| shares.percent(class)),
        [0, 50, 10]
    );

    let silent = NodeConfig::parse("[limits]\npending_requests = 64\n").expect("valid file");
    assert_eq!(
        (silent.fairness(), silent.min_shares()),
        (Ok(None), Ok(None))
    );
}

/// A policy of another name, or shares above 100 % in all, are refused at
/// parse, naming the key and its line.
#[test]
fn an_unknown_policy_or_shares_over_a_hundred_percent_are_refused_naming_the_line() {
    for (text, key, line) in [
        (
            "[admission]\n\nfairness = \"fifo\"\n",
            "admission.fairness",
            3,
        ),
        (
            "[admission]\nmin_shares = { system = 40, interactive = 50, batch = 20 }\n",
            "admission.min_shares",
            2,
        ),
    ] {
        match NodeConfig::parse(text) {
            Err(NodeConfigError::Invalid {
                key: k, line: l, ..
            }) => {
                assert_eq!((k, l), (key, line), "{text}");
            }
            other => panic!("expected {key} refused, got {:?}", other.err()),
        }
    }
}

/// A started node serves plans by the file's minimum shares: with
/// interactive keeping half of two slots, a batch tenant runs one request
/// and waits with its second, though a slot is free. Paused clock: the
/// timeout fires only once every task has run as far as it can.
#[tokio::test(start_paused = true)]
async fn a_started_node_applies_the_admission_section() {
    let config = NodeConfig::parse(
        "[limits]\nrunning_requests = 2\nrunning_per_tenant = 2\nrunning_per_provider = 2\n\
         [admission]\nmin_shares = { interactive = 50 }\n",
    )
    .expect("valid file");
    let node = config.start(base()).await.expect("node starts");
    let pools = node.pools;
    let receipt = pools.install(installation()).await.expect("install");
    let request = |session| {
        let plan = plan(session).with_priority(Priority::Batch);
        let input = pools
            .stage_input(&plan, provider_pools::Bytes::from_static(b"x"))
            .expect("input");
        provider_pools::AdmitRequest {
            plan,
            provider: receipt.provider.clone(),
            slot: receipt.slots[0],
            kind: provider_pools::OriginKind::Http,
            input,
        }
    };
    let _first = pools.admit(request(1)).await.expect("the first runs");
    let mut second = Box::pin(pools.admit(request(2)));
    let waited = tokio::time::timeout(std::time::Duration::from_millis(50), second.as_mut()).await;
    assert!(waited.is_err(), "the second batch request waits");
    let snapshot = pools.snapshot();
    assert_eq!(
        (snapshot.running_requests, snapshot.pending_requests),
        (1, 1),
        "one runs, one waits, a slot free"
    );
}

fn plan(session: u64) -> provider_pools::ExecutionPlan {
    let far = tokio::time::Instant::now() + std::time::Duration::from_secs(60);
    provider_pools::ExecutionPlan::seal(
        provider_pools::TenantId::new("batch").expect("tenant"),
        provider_pools::SessionId::new(session),
        provider_pools::LedgerId::new(1),
        far,
        far,
    )
}

fn installation() -> provider_pools::Installation {
    provider_pools::Installation {
        provider: ProviderId::new("p").expect("id"),
        authority: provider_pools::Authority::new("http://127.0.0.1:1").expect("authority"),
        expected: provider_pools::Epoch::ZERO,
        credential: provider_pools::Credential::from_slice(b"k").expect("credential"),
        config: provider_pools::ProviderConfig::new(
            provider_pools::ServiceName::new("p/v1").expect("service"),
        )
        .with_origin(
            provider_pools::OriginSlot::new(0),
            provider_pools::OriginKind::Http,
            "http://127.0.0.1:1",
        ),
    }
}
