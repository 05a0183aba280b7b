//! Inbound events: finite `IngressRequest` ownership under the same tenant
//! limits as outbound calls.

mod support;

use provider_pools::{
    AdmitError, Bytes, IngressEvent, LimitField, Limits, OriginKind, PolicyTable,
};
use support::{allow_all, eventually, plan, running, task, with_alpha};

fn event(
    receipt: &provider_pools::InstallReceipt,
    tenant: &str,
    payload: &'static [u8],
) -> IngressEvent {
    IngressEvent {
        plan: plan(tenant, 7),
        provider: receipt.provider.clone(),
        slot: receipt.slots[0],
        kind: OriginKind::Http,
        payload: Bytes::from_static(payload),
    }
}

#[tokio::test(start_paused = true)]
async fn an_inbound_event_holds_running_capacity_and_its_payload_until_dropped() {
    let (pools, _, receipt) = with_alpha(Limits::DEFAULT, 1).await;
    let idle_metadata = pools.snapshot().metadata_bytes;

    let inbound = pools
        .ingress(&allow_all(), event(&receipt, "t", b"event-1"))
        .await
        .expect("admitted");
    assert_eq!(inbound.payload().as_ref(), b"event-1");
    assert_eq!(inbound.plan().tenant().as_str(), "t");
    let held = pools.snapshot();
    assert_eq!((held.pending_requests, held.running_requests), (0, 1));
    assert!(
        held.metadata_bytes >= idle_metadata + 7,
        "the payload is charged: {} then {}",
        idle_metadata,
        held.metadata_bytes
    );

    drop(inbound);
    support::quiescent(&pools).await;
    assert_eq!(
        pools.snapshot().running_requests,
        0,
        "the running slot returns"
    );
    assert_eq!(pools.snapshot().metadata_bytes, idle_metadata);
}

#[tokio::test]
async fn inbound_and_outbound_share_the_tenant_running_ceiling() {
    let limits = Limits {
        running_per_tenant: 1,
        ..Limits::DEFAULT
    };
    let (pools, _, receipt) = with_alpha(limits, 1).await;
    let outbound = running(&pools, &receipt, "t", 1).await;

    let waiting = {
        let (pools, event) = (pools.clone(), event(&receipt, "t", b"in"));
        task(async move { pools.ingress(&allow_all(), event).await })
    };
    eventually("the inbound event queues behind the outbound call", || {
        pools.snapshot().pending_requests == 1
    })
    .await;
    assert_eq!(pools.snapshot().running_requests, 1);

    drop(outbound);
    let inbound = waiting
        .await
        .expect("task")
        .expect("admitted once the outbound call ended");
    let snapshot = pools.snapshot();
    assert_eq!(
        (snapshot.pending_requests, snapshot.running_requests),
        (0, 1)
    );
    drop(inbound);
}

#[tokio::test(start_paused = true)]
async fn a_refused_event_holds_nothing() {
    let limits = Limits {
        running_requests: 1,
        running_per_tenant: 1,
        running_per_provider: 1,
        pending_requests: 1,
        requests_per_tenant: 1,
        requests_per_provider: 1,
        ..Limits::DEFAULT
    };
    let (pools, _, receipt) = with_alpha(limits, 1).await;
    let first = pools
        .ingress(&allow_all(), event(&receipt, "a", b"1"))
        .await
        .expect("runs");
    let second = {
        let (pools, event) = (pools.clone(), event(&receipt, "b", b"2"));
        task(async move { pools.ingress(&allow_all(), event).await })
    };
    eventually("the second event waits", || {
        pools.snapshot().pending_requests == 1
    })
    .await;
    let before = pools.snapshot().metadata_bytes;

    let refused = pools
        .ingress(&allow_all(), event(&receipt, "c", b"3"))
        .await;
    match refused {
        Err(AdmitError::Capacity { resource, .. }) => assert!(
            [LimitField::PendingRequests, LimitField::RequestsPerProvider]
                .map(LimitField::name)
                .contains(&resource),
            "refused by {resource}, not a pending bound"
        ),
        other => panic!("expected a full queue, got {other:?}"),
    }
    assert_eq!(
        pools.snapshot().metadata_bytes,
        before,
        "a refused event keeps no charge"
    );

    drop(first);
    drop(second.await.expect("task").expect("runs next"));
    support::quiescent(&pools).await;
    assert_eq!(
        pools.snapshot().running_requests,
        0,
        "every running slot returns"
    );
}

#[tokio::test(start_paused = true)]
async fn a_denied_event_holds_nothing() {
    let (pools, _, receipt) = with_alpha(Limits::DEFAULT, 1).await;
    let before = pools.snapshot();
    let nobody = PolicyTable::new();

    let denied = pools.ingress(&nobody, event(&receipt, "t", b"x")).await;
    assert!(
        matches!(denied, Err(AdmitError::Revoked(_))),
        "got {denied:?}"
    );
    support::quiescent(&pools).await;
    assert_eq!(
        pools.snapshot().running_requests,
        0,
        "the granted slot returns"
    );
    let after = pools.snapshot();
    assert_eq!(
        (
            after.running_requests,
            after.pending_requests,
            after.metadata_bytes
        ),
        (0, 0, before.metadata_bytes)
    );
}
