//! The node file's `[cluster]` section: a valid section is
//! checked into the cluster's configuration, and each wrong value is
//! refused naming its key and the section's line, before anything starts.

use provider_pools::node::{NodeConfig, NodeConfigError};

const PROVIDER: &str = r#"
[[provider]]
id = "weather"
kind = "http"
service = "weather/v1"
authority = "http://127.0.0.1:8080"
origins = ["http://127.0.0.1:8080"]
"#;

/// The provider section, then a cluster section whose body is `body`
/// (it starts on line 9).
fn file(body: &str) -> String {
    format!("{PROVIDER}\n[cluster]\n{body}")
}

const VALID: &str = r#"node = "a"
members = ["a", "b", "c"]
endpoints = ["http://127.0.0.1:2379", "http://127.0.0.1:2380"]
lease_ttl_ms = 2000
period_ms = 250
drain_ms = 800

[[cluster.ceiling]]
provider = "weather"
running = 30
floor = 5
"#;

fn refusal(body: &str) -> (&'static str, usize, String) {
    let config = NodeConfig::parse(&file(body)).expect("the file parses");
    match config.cluster() {
        Err(NodeConfigError::Invalid { key, line, message }) => (key, line, message),
        other => panic!("expected a refusal, got {other:?}"),
    }
}

#[test]
fn a_valid_section_is_checked_into_the_clusters_configuration() {
    let config = NodeConfig::parse(&file(VALID)).expect("parses");
    let cluster = config.cluster().expect("valid").expect("present");
    assert_eq!(cluster.node.as_str(), "a");
    assert_eq!(cluster.members.len(), 3);
    assert_eq!(cluster.endpoints.len(), 2);
    assert_eq!(cluster.lease_ttl.as_millis(), 2_000);
    assert_eq!(cluster.period.as_millis(), 250);
    assert_eq!(cluster.drain.as_millis(), 800);
    let ceiling = &cluster.ceilings[0];
    assert_eq!(
        (ceiling.provider.as_str(), ceiling.running, ceiling.floor),
        ("weather", 30, 5)
    );
    assert_eq!(ceiling.dynamic_pool(cluster.members.len()), 15);
}

#[test]
fn a_node_file_without_a_cluster_section_runs_alone() {
    let config = NodeConfig::parse(PROVIDER).expect("parses");
    assert!(config.cluster().expect("valid").is_none());
}

#[test]
fn each_wrong_value_is_refused_naming_its_key_and_the_sections_line() {
    let cases: [(&str, &str, &str); 7] = [
        (
            r#"node = "z""#,
            "cluster.node",
            "not one of `cluster.members`",
        ),
        (r#"members = ["a", "a"]"#, "cluster.members", "listed twice"),
        (r#"members = ["a", "b/c"]"#, "cluster.members", "0x2f"),
        (r#"endpoints = []"#, "cluster.endpoints", "none given"),
        (r#"period_ms = 1000"#, "cluster.period_ms", "two periods"),
        (
            r#"running = 10"#,
            "cluster.ceiling.floor",
            "above the ceiling of 10",
        ),
        (
            r#"provider = "rain""#,
            "cluster.ceiling.provider",
            "not a declared [[provider]]",
        ),
    ];
    for (change, key, says) in cases {
        let (name, _) = change.split_once(" = ").expect("a key = value change");
        let body: String = VALID
            .lines()
            .map(|line| {
                if line.starts_with(&format!("{name} =")) {
                    change
                } else {
                    line
                }
            })
            .collect::<Vec<_>>()
            .join("\n");
        assert_ne!(body, VALID.trim_end(), "{change} changes the file");
        let (refused_key, line, message) = refusal(&body);
        assert_eq!(refused_key, key, "{change}: {message}");
        assert_eq!(line, 9, "{change}: the [cluster] section's line");
        assert!(message.contains(says), "{change}: {message}");
    }
}

#[test]
fn two_ceilings_for_one_provider_are_refused() {
    let body = format!("{VALID}\n[[cluster.ceiling]]\nprovider = \"weather\"\nrunning = 4\n");
    let (key, _, message) = refusal(&body);
    assert_eq!(key, "cluster.ceiling.provider");
    assert!(message.contains("two ceilings"), "{message}");
}

#[test]
fn an_unknown_key_in_the_section_is_a_syntax_error_with_its_line() {
    let error =
        NodeConfig::parse(&file(&format!("{VALID}\nsurprise = 1\n"))).expect_err("unknown key");
    assert!(matches!(error, NodeConfigError::Syntax { .. }), "{error}");
    assert!(error.to_string().contains("surprise"), "{error}");
}

/// The file of [`file`] with a `rate` on the provider (or none) and the
/// cluster rate `rate` after the valid section.
fn with_rate(provider_rate: bool, rate: &str) -> String {
    let provider = if provider_rate {
        format!("{PROVIDER}rate = {{ requests = 50, period_ms = 1000, burst = 5 }}\n")
    } else {
        PROVIDER.to_owned()
    };
    format!("{provider}\n[cluster]\n{VALID}\n[[cluster.rate]]\n{rate}")
}

#[test]
fn a_cluster_rate_is_checked_into_the_clusters_configuration() {
    let text = with_rate(
        true,
        "provider = \"weather\"\nrequests = 60\nperiod_ms = 1000\nfloor = 10\n",
    );
    let config = NodeConfig::parse(&text).expect("parses");
    let cluster = config.cluster().expect("valid").expect("present");
    let rate = &cluster.rates[0];
    assert_eq!(
        (
            rate.provider.as_str(),
            rate.requests,
            rate.period.as_millis(),
            rate.floor
        ),
        ("weather", 60, 1_000, 10)
    );
    assert_eq!(rate.dynamic_pool(cluster.members.len()), 30);
}

#[test]
fn each_wrong_cluster_rate_is_refused_naming_its_key() {
    let cases = [
        (
            true,
            "provider = \"weather\"\nrequests = 60\nperiod_ms = 1000\nfloor = 0\n",
            "cluster.rate.floor",
            "at least 1",
        ),
        (
            true,
            "provider = \"weather\"\nrequests = 20\nperiod_ms = 1000\nfloor = 10\n",
            "cluster.rate.floor",
            "above the rate of 20",
        ),
        (
            true,
            "provider = \"weather\"\nrequests = 60\nperiod_ms = 0\nfloor = 10\n",
            "cluster.rate.period_ms",
            "above 0",
        ),
        (
            false,
            "provider = \"weather\"\nrequests = 60\nperiod_ms = 1000\nfloor = 10\n",
            "cluster.rate.provider",
            "not a declared [[provider]] with a rate",
        ),
    ];
    for (provider_rate, rate, key, says) in cases {
        let config = NodeConfig::parse(&with_rate(provider_rate, rate)).expect("the file parses");
        match config.cluster() {
            Err(NodeConfigError::Invalid {
                key: refused,
                message,
                ..
            }) => {
                assert_eq!(refused, key, "{rate}: {message}");
                assert!(message.contains(says), "{rate}: {message}");
            }
            other => panic!("{rate}: expected a refusal, got {other:?}"),
        }
    }
}
