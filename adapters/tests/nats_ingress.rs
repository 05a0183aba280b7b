//! Ingress from a real JetStream consumer: a flood of inbound events for
//! several tenants — one of them at many times the others — never passes
//! the pending and running limits, and no event is acknowledged unless it
//! was handled, or lost.

mod support;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_nats::jetstream::consumer;
use bytes::Bytes;
use provider_pools_actors::{IngressRequest, InstallReceipt, Limits, OriginKind, ProviderPools};
use provider_pools_adapters::nats::{
    ingress_step, Acknowledgement, ConsumerName, FetchedMessage, Handling, IngressConsumer,
    IngressHost, IngressRoute, NatsDialer, NatsLimits,
};
use provider_pools_test_peers::Nats;
use support::nats::{admin, assert_clean, install, prepare};
use support::{bounded, plan, running_as, start, task, AllowAll};

/// Events per tenant: `flood` at seven times each of the others.
const EVENTS: [(&str, usize); 4] = [("flood", 1_400), ("t1", 200), ("t2", 200), ("t3", 200)];
const TOTAL: usize = 2_000;

/// The handler's side of the test: who is handling what right now, and
/// everything ever handled.
#[derive(Default)]
struct Host {
    receipt: Mutex<Option<InstallReceipt>>,
    /// Events being handled now, per tenant, and the most ever at once.
    now: Mutex<HashMap<String, (u32, u32)>>,
    /// Every handled event's payload, by stream sequence (its session).
    handled: Mutex<BTreeMap<u64, Bytes>>,
    handling: AtomicU32,
}

impl IngressHost for Host {
    type Error = ();

    fn route(&self, message: &FetchedMessage) -> Option<IngressRoute> {
        let tenant = message.subject().strip_prefix("ev.in.")?;
        let receipt = self.receipt.lock().expect("receipt").clone()?;
        Some(IngressRoute {
            plan: plan(tenant, message.delivery().stream_sequence),
            provider: receipt.provider.clone(),
            slot: receipt.slots[0],
        })
    }

    async fn handle(&self, event: &IngressRequest) -> Result<(), ()> {
        let tenant = event.plan().tenant().as_str().to_owned();
        {
            let mut now = self.now.lock().expect("counts");
            let (current, most) = now.entry(tenant.clone()).or_default();
            *current += 1;
            *most = (*most).max(*current);
        }
        self.handling.fetch_add(1, Ordering::SeqCst);
        // Long enough for the other events of a batch to queue behind.
        tokio::time::sleep(Duration::from_millis(1)).await;
        self.handled
            .lock()
            .expect("handled")
            .insert(event.plan().session().get(), event.payload().clone());
        self.handling.fetch_sub(1, Ordering::SeqCst);
        self.now
            .lock()
            .expect("counts")
            .entry(tenant)
            .or_default()
            .0 -= 1;
        Ok(())
    }
}

/// The most the pools' snapshot ever showed, sampled every millisecond.
#[derive(Default)]
struct Peaks {
    pending: AtomicU32,
    running: AtomicU32,
}

fn sample(pools: ProviderPools, peaks: Arc<Peaks>) -> tokio::task::JoinHandle<()> {
    task(async move {
        let mut tick = tokio::time::interval(Duration::from_millis(1));
        loop {
            tick.tick().await;
            let snapshot = pools.snapshot();
            peaks
                .pending
                .fetch_max(snapshot.pending_requests, Ordering::SeqCst);
            peaks
                .running
                .fetch_max(snapshot.running_requests, Ordering::SeqCst);
        }
    })
}

async fn publish_flood(js: &async_nats::jetstream::Context) -> BTreeMap<u64, Bytes> {
    let mut acks = Vec::with_capacity(TOTAL);
    for (tenant, count) in EVENTS {
        for n in 0..count {
            let payload = Bytes::from(format!("{tenant}:{n}"));
            let ack = js
                .publish(format!("ev.in.{tenant}"), payload.clone())
                .await
                .expect("publish");
            acks.push((ack, payload));
        }
    }
    let mut stored = BTreeMap::new();
    for (ack, payload) in acks {
        let ack = ack.await.expect("stored");
        stored.insert(ack.sequence, payload);
    }
    stored
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flood_of_inbound_events_stays_within_the_limits_and_loses_nothing() {
    let peer = Nats::start();
    let url = format!("nats://{}", peer.addr());
    let js = admin(&url).await;
    prepare(&js).await;
    js.get_stream("EV")
        .await
        .expect("stream")
        .create_consumer(consumer::pull::Config {
            durable_name: Some("inbound".to_owned()),
            filter_subject: "ev.in.>".to_owned(),
            ack_policy: consumer::AckPolicy::Explicit,
            ack_wait: Duration::from_secs(30),
            ..Default::default()
        })
        .await
        .expect("consumer");
    let published = bounded("2,000 events are stored", publish_flood(&js)).await;
    assert_eq!(published.len(), TOTAL);

    // The consumer's own request is one more running owner (tenant `source`).
    let limits = Limits {
        pending_requests: 12,
        requests_per_tenant: 3,
        requests_per_provider: 12,
        running_requests: 9,
        running_per_tenant: 2,
        running_per_provider: 9,
        ..Limits::DEFAULT
    };
    let pools = start(limits).await;
    let receipt = install(&pools, &url, b"").await;
    let dialer = NatsDialer::new(pools.clone());
    let host = Host::default();
    *host.receipt.lock().expect("receipt") = Some(receipt.clone());
    let peaks = Arc::new(Peaks::default());
    let sampler = sample(pools.clone(), Arc::clone(&peaks));
    let inbound = IngressConsumer {
        consumer: ConsumerName::parse("inbound").expect("name"),
        max_messages: 16,
        expires: Duration::from_millis(200),
        retry_delay: Duration::from_millis(20),
        limits: NatsLimits::default(),
    };

    let mut acked: BTreeMap<u64, usize> = BTreeMap::new();
    let mut refused = 0usize;
    let mut turns = 0u64;
    bounded_long("every event is acknowledged", async {
        while acked.len() < TOTAL {
            turns += 1;
            let source = running_as(&pools, &receipt, "source", turns, OriginKind::Nats).await;
            let step = ingress_step(&pools, &source, &dialer, &AllowAll, &host, &inbound);
            assert_send(&step);
            let outcomes = step.await.expect("a turn");
            drop(source);
            for outcome in outcomes {
                let sequence = outcome.delivery.stream_sequence;
                match (&outcome.handling, &outcome.acknowledgement) {
                    (Handling::Handled, Ok(Acknowledgement::Acked)) => {
                        *acked.entry(sequence).or_default() += 1;
                    }
                    (Handling::Refused(_), Ok(Acknowledgement::Naked)) => refused += 1,
                    (handling, acknowledgement) => {
                        panic!("event {sequence}: {handling:?} then {acknowledgement:?}")
                    }
                }
            }
        }
    })
    .await;
    sampler.abort();

    let handled = host.handled.lock().expect("handled").clone();
    assert_eq!(handled, published, "every published event was handled");
    for sequence in acked.keys() {
        assert!(
            handled.contains_key(sequence),
            "event {sequence} acked unhandled"
        );
    }
    assert_eq!(
        acked.keys().copied().collect::<BTreeSet<_>>(),
        published.keys().copied().collect::<BTreeSet<_>>(),
        "every event was acknowledged"
    );
    assert!(refused > 0, "the flood met the pending limits");
    let most = host.now.lock().expect("counts").clone();
    for (tenant, (now, most)) in &most {
        assert_eq!(*now, 0, "{tenant} still handling");
        assert!(
            *most <= limits.running_per_tenant,
            "{tenant} ran {most} events at once"
        );
    }
    assert_eq!(
        most["flood"].1, limits.running_per_tenant,
        "the flood used its share"
    );
    assert!(peaks.running.load(Ordering::SeqCst) <= limits.running_requests);
    assert!(peaks.pending.load(Ordering::SeqCst) <= limits.pending_requests);
    assert!(peaks.pending.load(Ordering::SeqCst) > 0, "events queued");
    assert_eq!(
        support::nats::outstanding(&js, "inbound").await,
        (0, 0),
        "the consumer has nothing left to deliver or see acknowledged"
    );
    eprintln!(
        "{TOTAL} events in {turns} turns, {refused} refusals; peaks: running {}, pending {}",
        peaks.running.load(Ordering::SeqCst),
        peaks.pending.load(Ordering::SeqCst)
    );

    let report = bounded("shutdown", pools.shutdown(support::deadline())).await;
    assert_clean(&report);
}

fn assert_send<T: Send>(_: &T) {}

/// Like `bounded`, for the whole flood (a minute at most).
async fn bounded_long<T>(what: &str, future: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(60), future)
        .await
        .unwrap_or_else(|_| panic!("timed out after 60 s: {what}"))
}

/// Routes tenants `t*` only, and fails the first delivery of `t1:fails`.
struct Picky {
    receipt: InstallReceipt,
    failed_once: AtomicU32,
    handled: Mutex<Vec<Bytes>>,
}

impl IngressHost for Picky {
    type Error = &'static str;

    fn route(&self, message: &FetchedMessage) -> Option<IngressRoute> {
        let tenant = message.subject().strip_prefix("ev.in.")?;
        tenant.starts_with('t').then(|| IngressRoute {
            plan: plan(tenant, message.delivery().stream_sequence),
            provider: self.receipt.provider.clone(),
            slot: self.receipt.slots[0],
        })
    }

    async fn handle(&self, event: &IngressRequest) -> Result<(), &'static str> {
        if event.payload().as_ref() == b"t1:fails"
            && self.failed_once.fetch_add(1, Ordering::SeqCst) == 0
        {
            return Err("the first attempt fails");
        }
        self.handled
            .lock()
            .expect("handled")
            .push(event.payload().clone());
        Ok(())
    }
}

#[tokio::test]
async fn unroutable_events_are_terminated_and_failed_ones_come_back() {
    let peer = Nats::start();
    let url = format!("nats://{}", peer.addr());
    let js = admin(&url).await;
    prepare(&js).await;
    js.get_stream("EV")
        .await
        .expect("stream")
        .create_consumer(consumer::pull::Config {
            durable_name: Some("inbound".to_owned()),
            filter_subject: "ev.in.>".to_owned(),
            ack_policy: consumer::AckPolicy::Explicit,
            ..Default::default()
        })
        .await
        .expect("consumer");
    for (subject, payload) in [
        ("ev.in.t1", "t1:ok"),
        ("ev.in.nobody", "nobody:x"),
        ("ev.in.t1", "t1:fails"),
    ] {
        js.publish(subject, Bytes::from(payload))
            .await
            .expect("publish")
            .await
            .expect("stored");
    }
    let pools = start(Limits::DEFAULT).await;
    let receipt = install(&pools, &url, b"").await;
    let dialer = NatsDialer::new(pools.clone());
    let host = Picky {
        receipt: receipt.clone(),
        failed_once: AtomicU32::new(0),
        handled: Mutex::new(Vec::new()),
    };
    let inbound = IngressConsumer {
        consumer: ConsumerName::parse("inbound").expect("name"),
        max_messages: 8,
        expires: Duration::from_millis(300),
        retry_delay: Duration::from_millis(10),
        limits: NatsLimits::default(),
    };

    let source = running_as(&pools, &receipt, "source", 1, OriginKind::Nats).await;
    let mut first = bounded(
        "the first turn",
        ingress_step(&pools, &source, &dialer, &AllowAll, &host, &inbound),
    )
    .await
    .expect("a turn");
    drop(source);
    first.sort_by_key(|o| o.delivery.stream_sequence);
    let seen: Vec<_> = first
        .iter()
        .map(|o| match (&o.handling, &o.acknowledgement) {
            (Handling::Handled, Ok(s)) => ("handled", *s),
            (Handling::Unroutable, Ok(s)) => ("unroutable", *s),
            (Handling::Failed(_), Ok(s)) => ("failed", *s),
            (handling, acknowledgement) => panic!("{handling:?} then {acknowledgement:?}"),
        })
        .collect();
    assert_eq!(
        seen,
        [
            ("handled", Acknowledgement::Acked),
            ("unroutable", Acknowledgement::Termed),
            ("failed", Acknowledgement::Naked),
        ]
    );

    let source = running_as(&pools, &receipt, "source", 2, OriginKind::Nats).await;
    let second = bounded(
        "the second turn",
        ingress_step(&pools, &source, &dialer, &AllowAll, &host, &inbound),
    )
    .await
    .expect("a turn");
    drop(source);
    assert_eq!(
        second.len(),
        1,
        "only the failed event comes back: {second:?}"
    );
    assert!(matches!(second[0].handling, Handling::Handled));
    assert!(matches!(
        second[0].acknowledgement,
        Ok(Acknowledgement::Acked)
    ));
    assert_eq!(second[0].delivery.stream_sequence, 3);
    assert_eq!(second[0].delivery.delivered, 2);
    assert_eq!(
        *host.handled.lock().expect("handled"),
        [Bytes::from("t1:ok"), Bytes::from("t1:fails")]
    );
    assert_eq!(support::nats::outstanding(&js, "inbound").await, (0, 0));

    let report = bounded("shutdown", pools.shutdown(support::deadline())).await;
    assert_clean(&report);
}
