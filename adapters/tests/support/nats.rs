//! NATS test set-up: provider `bus` with slot 0 on a real nats-server
//! (installed and run through the shared helpers of `support`), the test's
//! own admin client, and the stream, consumer and bucket the tests use.
//!
//! Stream `EV` takes `ev.>`; its durable pull consumer `work` acks
//! explicitly with a 30 s ack wait; bucket `cfg` is a key-value bucket.

use std::time::Duration;

use async_nats::jetstream::{self, consumer, kv, stream};
use provider_pools_actors::{
    InstallReceipt, OriginKind, ProviderConfig, ProviderPools, RunningRequest, Snapshot,
};

/// The settings of provider `bus`: prefix `ev`, stream `EV`, bucket `cfg`.
pub(crate) const SETTINGS: &[(&str, &str)] = &[
    ("subject_prefix", "ev"),
    ("stream", "EV"),
    ("kv_bucket", "cfg"),
];

/// Provider `bus`'s configuration: slot 0 at `target`.
pub(crate) fn config(target: &str, settings: &[(&str, &str)]) -> ProviderConfig {
    super::provider_config("bus", OriginKind::Nats, target, settings)
}

/// Installs provider `bus` over epoch `expected` with `credential`.
pub(crate) async fn install_over(
    pools: &ProviderPools,
    target: &str,
    settings: &[(&str, &str)],
    credential: &[u8],
    expected: u64,
) -> InstallReceipt {
    let config = config(target, settings);
    super::install_provider(
        pools,
        "bus",
        "nats://bus.example",
        config,
        credential,
        expected,
    )
    .await
}

/// Installs provider `bus` (epoch 1) with [`SETTINGS`] and `credential`.
pub(crate) async fn install(
    pools: &ProviderPools,
    target: &str,
    credential: &[u8],
) -> InstallReceipt {
    install_over(pools, target, SETTINGS, credential, 0).await
}

/// A running request of tenant `t` on `bus`'s slot 0.
pub(crate) async fn running(
    pools: &ProviderPools,
    receipt: &InstallReceipt,
    session: u64,
) -> RunningRequest {
    super::running_as(pools, receipt, "t", session, OriginKind::Nats).await
}

/// The test's own client (not pooled), connected with `options`.
pub(crate) async fn admin_with(
    url: &str,
    options: async_nats::ConnectOptions,
) -> jetstream::Context {
    let client = super::bounded("the admin client connects", options.connect(url))
        .await
        .expect("admin connects");
    jetstream::new(client)
}

/// The test's own client, without authentication.
pub(crate) async fn admin(url: &str) -> jetstream::Context {
    admin_with(url, async_nats::ConnectOptions::new()).await
}

/// Creates stream `EV` (`ev.>`), its consumer `work` and bucket `cfg`.
pub(crate) async fn prepare(js: &jetstream::Context) {
    super::bounded("stream, consumer and bucket are created", async {
        let stream = js
            .create_stream(stream::Config {
                name: "EV".to_owned(),
                subjects: vec!["ev.>".to_owned()],
                ..Default::default()
            })
            .await
            .expect("stream");
        stream
            .create_consumer(consumer::pull::Config {
                durable_name: Some("work".to_owned()),
                ack_policy: consumer::AckPolicy::Explicit,
                ack_wait: Duration::from_secs(30),
                ..Default::default()
            })
            .await
            .expect("consumer");
        js.create_key_value(kv::Config {
            bucket: "cfg".to_owned(),
            ..Default::default()
        })
        .await
        .expect("bucket");
    })
    .await;
}

/// What consumer `name` of `EV` still has to deliver and to see acked.
pub(crate) async fn outstanding(js: &jetstream::Context, name: &str) -> (u64, usize) {
    let mut consumer: consumer::PullConsumer = js
        .get_consumer_from_stream(name, "EV")
        .await
        .expect("consumer");
    let info = consumer.info().await.expect("consumer info");
    (info.num_pending, info.num_ack_pending)
}

/// Asserts a shutdown report is clean and all zero.
pub(crate) fn assert_clean(report: &Snapshot) {
    assert!(report.is_clean(), "{report:?}");
    assert_eq!(report.connections, Default::default(), "{report:?}");
    assert_eq!(
        (
            report.pending_requests,
            report.running_requests,
            report.workers,
            report.cleanup_jobs,
            report.failed_cleanup,
            report.metadata_bytes,
        ),
        (0, 0, 0, 0, 0, 0),
        "{report:?}"
    );
}
