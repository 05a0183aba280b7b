//! The Prometheus exposition for a known workload (paused clock): parsed
//! from the text format, with exact families, labels and values — the
//! snapshot's gauges, admissions by stable code, the wait histogram, and the
//! per-tenant served counts and shares under a bounded tenant-label set.
#![cfg(feature = "metrics")]

mod support;

use std::collections::BTreeMap;
use std::time::Duration;

use prometheus_client::registry::Registry;
use provider_pools::metrics::{MetricsError, PoolsMetrics};
use provider_pools::Limits;
use support::{bounded, installation, provider, running, start, tcp_config};

/// A parsed text exposition: family types, and samples by their full
/// `name{labels}` key.
struct Exposition {
    types: BTreeMap<String, String>,
    samples: BTreeMap<String, f64>,
}

impl Exposition {
    fn parse(text: &str) -> Self {
        assert!(text.ends_with("# EOF\n"), "OpenMetrics text ends with EOF");
        let mut types = BTreeMap::new();
        let mut samples = BTreeMap::new();
        for line in text.lines() {
            if let Some(rest) = line.strip_prefix("# TYPE ") {
                let (name, kind) = rest.split_once(' ').expect("TYPE name kind");
                types.insert(name.to_owned(), kind.to_owned());
            } else if !line.starts_with('#') && !line.is_empty() {
                let (key, value) = line.rsplit_once(' ').expect("sample key value");
                let value: f64 = value.parse().expect("numeric sample");
                assert!(
                    samples.insert(key.to_owned(), value).is_none(),
                    "duplicate sample {key}"
                );
            }
        }
        Self { types, samples }
    }

    fn value(&self, key: &str) -> f64 {
        *self
            .samples
            .get(key)
            .unwrap_or_else(|| panic!("no sample {key} in {:#?}", self.samples))
    }

    /// The sample keys of one family (name prefix), sorted.
    fn keys(&self, prefix: &str) -> Vec<&str> {
        self.samples
            .keys()
            .filter(|k| k.starts_with(prefix))
            .map(String::as_str)
            .collect()
    }
}

/// Pools under `limits` with provider `web` installed and the metrics
/// (two tenant labels) registered.
async fn observed(
    limits: Limits,
) -> (
    provider_pools::ProviderPools,
    Registry,
    provider_pools::InstallReceipt,
) {
    let pools = start(limits).await;
    let metrics = PoolsMetrics::install_with_tenant_labels(&pools, 2).expect("first observer");
    let mut registry = Registry::default();
    metrics.register(&mut registry);
    let receipt = pools
        .install(installation(
            &provider("web"),
            0,
            b"k",
            tcp_config("web", &["127.0.0.1:9".to_owned()]),
        ))
        .await
        .expect("install");
    (pools, registry, receipt)
}

fn scrape(registry: &Registry) -> Exposition {
    let mut text = String::new();
    prometheus_client::encoding::text::encode(&mut text, registry).expect("encode");
    Exposition::parse(&text)
}

#[tokio::test(start_paused = true)]
async fn a_known_workload_is_exposed_exactly() {
    let limits = Limits {
        running_requests: 1,
        running_per_tenant: 1,
        running_per_provider: 1,
        queue_age: Duration::from_millis(250),
        ..Limits::DEFAULT
    };
    let (pools, registry, receipt) = observed(limits).await;

    // Four grants: acme twice, globex, then initech past the label bound.
    for (session, tenant) in ["acme", "acme", "globex", "initech"].iter().enumerate() {
        drop(running(&pools, &receipt, tenant, session as u64).await);
    }
    // One request holds the only running slot; the next waits out its
    // queue age (250 ms on the paused clock).
    let held = running(&pools, &receipt, "acme", 10).await;
    let waiting = support::request(&pools, support::plan("globex", 11), &receipt, b"");
    let refused = bounded("admission", pools.admit(waiting)).await.err();
    assert_eq!(refused.map(|e| e.code()), Some("timeout"));
    support::quiescent(&pools).await;
    assert_eq!(
        pools.snapshot().pending_requests,
        0,
        "the timed-out waiter's cancel reached the scheduler"
    );

    let e = scrape(&registry);
    for (family, kind) in [
        ("provider_pools_configured_epochs", "gauge"),
        ("provider_pools_running_requests", "gauge"),
        ("provider_pools_connections", "gauge"),
        ("provider_pools_connection_waiters", "gauge"),
        ("provider_pools_control", "gauge"),
        ("provider_pools_metadata_bytes", "gauge"),
        ("provider_pools_admissions", "counter"),
        ("provider_pools_admission_wait_seconds", "histogram"),
        ("provider_pools_tenant_served", "counter"),
        ("provider_pools_tenant_served_share", "gauge"),
    ] {
        assert_eq!(
            e.types.get(family).map(String::as_str),
            Some(kind),
            "{family}"
        );
    }

    assert_eq!(e.value("provider_pools_configured_epochs"), 1.0);
    assert_eq!(e.value("provider_pools_running_requests"), 1.0);
    assert_eq!(e.value("provider_pools_pending_requests"), 0.0);
    assert_eq!(e.value("provider_pools_control{state=\"running\"}"), 1.0);
    assert_eq!(e.value("provider_pools_control{state=\"completed\"}"), 0.0);
    assert_eq!(e.value("provider_pools_connections{state=\"active\"}"), 0.0);
    assert_eq!(e.value("provider_pools_connection_waiters"), 0.0);

    assert_eq!(
        e.keys("provider_pools_admissions_total"),
        [
            "provider_pools_admissions_total{outcome=\"admitted\"}",
            "provider_pools_admissions_total{outcome=\"timeout\"}",
        ]
    );
    assert_eq!(
        e.value("provider_pools_admissions_total{outcome=\"admitted\"}"),
        5.0
    );
    assert_eq!(
        e.value("provider_pools_admissions_total{outcome=\"timeout\"}"),
        1.0
    );

    let wait = "provider_pools_admission_wait_seconds";
    assert_eq!(
        e.value(&format!("{wait}_count{{outcome=\"admitted\"}}")),
        5.0
    );
    assert_eq!(e.value(&format!("{wait}_sum{{outcome=\"admitted\"}}")), 0.0);
    assert_eq!(
        e.value(&format!("{wait}_count{{outcome=\"timeout\"}}")),
        1.0
    );
    assert_eq!(e.value(&format!("{wait}_sum{{outcome=\"timeout\"}}")), 0.25);
    assert_eq!(
        e.value(&format!(
            "{wait}_bucket{{le=\"0.1024\",outcome=\"timeout\"}}"
        )),
        0.0
    );
    assert_eq!(
        e.value(&format!(
            "{wait}_bucket{{le=\"0.4096\",outcome=\"timeout\"}}"
        )),
        1.0
    );

    assert_eq!(
        e.keys("provider_pools_tenant_served_total"),
        [
            "provider_pools_tenant_served_total{tenant=\"_other\"}",
            "provider_pools_tenant_served_total{tenant=\"acme\"}",
            "provider_pools_tenant_served_total{tenant=\"globex\"}",
        ],
        "two tenant labels, then _other"
    );
    assert_eq!(
        e.value("provider_pools_tenant_served_total{tenant=\"acme\"}"),
        3.0
    );
    assert_eq!(
        e.value("provider_pools_tenant_served_total{tenant=\"globex\"}"),
        1.0
    );
    assert_eq!(
        e.value("provider_pools_tenant_served_total{tenant=\"_other\"}"),
        1.0
    );
    assert_eq!(
        e.value("provider_pools_tenant_served_share{tenant=\"acme\"}"),
        0.6
    );
    assert_eq!(
        e.value("provider_pools_tenant_served_share{tenant=\"globex\"}"),
        0.2
    );
    assert_eq!(
        e.value("provider_pools_tenant_served_share{tenant=\"_other\"}"),
        0.2
    );

    drop(held);
    let report = pools
        .shutdown(tokio::time::Instant::now() + Duration::from_secs(5))
        .await;
    assert!(report.is_clean(), "{report:?}");
    let e = scrape(&registry);
    assert_eq!(e.value("provider_pools_control{state=\"completed\"}"), 1.0);
    assert_eq!(e.value("provider_pools_running_requests"), 0.0);
}

#[tokio::test]
async fn a_registry_takes_one_observer() {
    let pools = start(Limits::DEFAULT).await;
    let _metrics = PoolsMetrics::install(&pools).expect("first observer");
    assert_eq!(
        PoolsMetrics::install(&pools).err(),
        Some(MetricsError::ObserverTaken)
    );
}

#[tokio::test(start_paused = true)]
async fn who_holds_the_pool_now_is_exposed_per_tenant_and_per_provider() {
    let limits = Limits {
        running_per_tenant: 2,
        ..Limits::DEFAULT
    };
    let (pools, registry, receipt) = observed(limits).await;
    // acme runs 2 and waits for a third; globex and initech run one each.
    let mut held = Vec::new();
    for (session, tenant) in ["acme", "acme", "globex", "initech"].iter().enumerate() {
        held.push(running(&pools, &receipt, tenant, session as u64).await);
    }
    let admitting = pools.clone();
    let third = support::request(&pools, support::plan("acme", 9), &receipt, b"");
    let mut waiting = Box::pin(async move { admitting.admit(third).await });
    let polled = std::future::poll_fn(|cx| {
        std::task::Poll::Ready(std::future::Future::poll(waiting.as_mut(), cx).is_pending())
    })
    .await;
    assert!(polled, "acme's third request waits at its share of 2");

    let e = scrape(&registry);
    for family in [
        "provider_pools_tenant_running_requests",
        "provider_pools_tenant_pending_requests",
        "provider_pools_provider_running_requests",
        "provider_pools_provider_pending_requests",
    ] {
        assert_eq!(
            e.types.get(family).map(String::as_str),
            Some("gauge"),
            "{family}"
        );
    }
    // Two labels: the most loaded tenants (acme 3, then globex before
    // initech by id); initech is summed under _other.
    let running_of = |t: &str| {
        e.value(&format!(
            "provider_pools_tenant_running_requests{{tenant=\"{t}\"}}"
        ))
    };
    let pending_of = |t: &str| {
        e.value(&format!(
            "provider_pools_tenant_pending_requests{{tenant=\"{t}\"}}"
        ))
    };
    assert_eq!(
        e.keys("provider_pools_tenant_running_requests"),
        [
            "provider_pools_tenant_running_requests{tenant=\"_other\"}",
            "provider_pools_tenant_running_requests{tenant=\"acme\"}",
            "provider_pools_tenant_running_requests{tenant=\"globex\"}",
        ]
    );
    assert_eq!(
        (
            running_of("acme"),
            running_of("globex"),
            running_of("_other")
        ),
        (2.0, 1.0, 1.0)
    );
    assert_eq!(
        (
            pending_of("acme"),
            pending_of("globex"),
            pending_of("_other")
        ),
        (1.0, 0.0, 0.0)
    );
    assert_eq!(
        e.value("provider_pools_provider_running_requests{provider=\"web\"}"),
        4.0
    );
    assert_eq!(
        e.value("provider_pools_provider_pending_requests{provider=\"web\"}"),
        1.0
    );
    // Every class is labelled; these plans are all interactive.
    let class = |family: &str, class: &str| e.value(&format!("{family}{{class=\"{class}\"}}"));
    for (name, running, pending) in [
        ("system", 0.0, 0.0),
        ("interactive", 4.0, 1.0),
        ("batch", 0.0, 0.0),
    ] {
        assert_eq!(
            (
                class("provider_pools_class_running_requests", name),
                class("provider_pools_class_pending_requests", name)
            ),
            (running, pending),
            "class {name}"
        );
    }
    // The snapshot stays aggregate and agrees.
    assert_eq!(e.value("provider_pools_running_requests"), 4.0);
    assert_eq!(e.value("provider_pools_pending_requests"), 1.0);

    drop(waiting);
    drop(held);
    support::quiescent(&pools).await;
    assert!(
        pools.snapshot().running_requests == 0 && pools.snapshot().pending_requests == 0,
        "every request released"
    );
    let e = scrape(&registry);
    assert!(
        e.keys("provider_pools_tenant_running_requests{").is_empty(),
        "nobody holds anything"
    );
    assert!(e
        .keys("provider_pools_provider_pending_requests{")
        .is_empty());
}

#[tokio::test(start_paused = true)]
async fn a_providers_rate_its_tokens_and_its_refusals_are_exposed() {
    let (pools, registry, receipt) = observed(Limits::DEFAULT).await;
    let rate = provider_pools::RateLimit::new(10, Duration::from_secs(1), 3);
    pools
        .configure_provider_rate(&receipt.provider, rate)
        .expect("a first rate");
    let held = running(&pools, &receipt, "acme", 1).await;
    let e = scrape(&registry);
    for family in [
        "provider_pools_provider_rate_per_second",
        "provider_pools_provider_rate_tokens",
    ] {
        assert_eq!(
            e.types.get(family).map(String::as_str),
            Some("gauge"),
            "{family}"
        );
    }
    assert_eq!(
        e.value("provider_pools_provider_rate_per_second{provider=\"web\"}"),
        10.0
    );
    assert_eq!(
        e.value("provider_pools_provider_rate_tokens{provider=\"web\"}"),
        2.0,
        "one of the burst of 3 spent"
    );
    // Two more spend the burst; a request due within 50 ms cannot wait
    // for the next token (100 ms) and is refused at once.
    let more = [
        running(&pools, &receipt, "acme", 2).await,
        running(&pools, &receipt, "acme", 3).await,
    ];
    let soon = tokio::time::Instant::now() + Duration::from_millis(50);
    let plan = support::plan_until("acme", 4, soon, soon);
    let refused = pools
        .admit(support::request(&pools, plan, &receipt, b""))
        .await;
    assert_eq!(refused.err().map(|e| e.code()), Some("rate_limited"));
    let e = scrape(&registry);
    assert_eq!(
        e.value("provider_pools_admissions_total{outcome=\"rate_limited\"}"),
        1.0
    );
    assert_eq!(
        e.value("provider_pools_provider_rate_tokens{provider=\"web\"}"),
        0.0
    );
    drop((held, more));
}
