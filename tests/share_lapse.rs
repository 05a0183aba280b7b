//! A request admitted under an expiring provider share
//! (`ProviderPools::set_provider_running_until`, a cluster node's share)
//! and not yet sent when the share lapsed is not started while the
//! provider runs more than the fallback: `reserve_connection` refuses it
//! with `ConnectError::ShareLapsed` and parks the connection it found. A
//! share renewed before it lapsed holds; one given again after the lapse
//! covers earlier requests only up to its ceiling; what fits goes out.
//! Paused clock, a dialer that connects at once.

mod support;

use std::time::Duration;

use provider_pools::{ConnectError, Limits, ProviderPools, RunningRequest};
use support::{bounded, quiesce, running, with_mem, CountedDialer};
use tokio::time::Instant;

const SHARE: Duration = Duration::from_millis(100);

/// Reserves a connection for `request` and parks it again at once.
async fn send(
    pools: &ProviderPools,
    request: &RunningRequest,
    dialer: &CountedDialer,
) -> Result<(), ConnectError> {
    let conn = bounded("a connection", pools.reserve_connection(request, dialer)).await?;
    conn.park();
    Ok(())
}

#[tokio::test(start_paused = true)]
async fn requests_admitted_under_a_lapsed_share_are_not_sent_above_the_fallback() {
    let (pools, receipt) = with_mem(Limits::DEFAULT).await;
    let provider = receipt.provider.clone();
    let dialer = CountedDialer::default();
    pools
        .set_provider_running_until(&provider, 3, Instant::now() + SHARE, 1)
        .expect("3 until the expiry, then 1");
    let a = running(&pools, &receipt, "a", 1).await;
    let b = running(&pools, &receipt, "b", 1).await;
    let c = running(&pools, &receipt, "c", 1).await;
    send(&pools, &a, &dialer)
        .await
        .expect("before the expiry the share holds");
    // As if the process was stopped past the expiry with three admitted.
    tokio::time::advance(SHARE).await;
    for (name, request) in [("b", &b), ("c", &c)] {
        let refused = send(&pools, request, &dialer).await;
        assert!(
            matches!(&refused, Err(ConnectError::ShareLapsed { provider: p }) if *p == provider),
            "{name}: 3 run above the fallback of 1: {refused:?}"
        );
        assert_eq!(refused.map_err(|e| e.code()), Err("share_lapsed"));
    }
    assert_eq!(
        pools.snapshot().connections.idle,
        1,
        "the one connection, found and parked again by each refusal"
    );
    drop((b, c));
    quiesce().await;
    send(&pools, &a, &dialer)
        .await
        .expect("alone, a fits the fallback of 1");
}

#[tokio::test(start_paused = true)]
async fn a_share_renewed_before_the_send_holds_past_its_first_expiry() {
    let (pools, receipt) = with_mem(Limits::DEFAULT).await;
    let provider = receipt.provider.clone();
    let dialer = CountedDialer::default();
    pools
        .set_provider_running_until(&provider, 2, Instant::now() + SHARE, 0)
        .expect("2 until the expiry, then 0");
    let a = running(&pools, &receipt, "a", 1).await;
    let b = running(&pools, &receipt, "b", 1).await;
    pools
        .set_provider_running_until(&provider, 2, Instant::now() + 3 * SHARE, 0)
        .expect("renewed before the first expiry");
    tokio::time::advance(2 * SHARE).await;
    send(&pools, &a, &dialer)
        .await
        .expect("past the grant's expiry, the renewed share holds");
    send(&pools, &b, &dialer)
        .await
        .expect("and holds for every request under it");
}

#[tokio::test(start_paused = true)]
async fn a_share_given_again_after_it_lapsed_covers_earlier_requests_only_up_to_its_ceiling() {
    let (pools, receipt) = with_mem(Limits::DEFAULT).await;
    let provider = receipt.provider.clone();
    let dialer = CountedDialer::default();
    pools
        .set_provider_running_until(&provider, 3, Instant::now() + SHARE, 0)
        .expect("3 until the expiry, then 0");
    let a = running(&pools, &receipt, "a", 1).await;
    let b = running(&pools, &receipt, "b", 1).await;
    let c = running(&pools, &receipt, "c", 1).await;
    tokio::time::advance(2 * SHARE).await;
    // Contact regained after the lapse: a new share of 1, a new run.
    pools
        .set_provider_running_until(&provider, 1, Instant::now() + SHARE, 0)
        .expect("1 until the new expiry");
    for (name, request) in [("b", &b), ("c", &c)] {
        let refused = send(&pools, request, &dialer).await;
        assert!(
            matches!(&refused, Err(ConnectError::ShareLapsed { .. })),
            "{name}: admitted under the lapsed share, 3 run above the new 1: {refused:?}"
        );
    }
    drop((b, c));
    quiesce().await;
    send(&pools, &a, &dialer)
        .await
        .expect("alone, a fits the new share of 1");
}

#[tokio::test(start_paused = true)]
async fn a_request_admitted_under_the_fallback_is_sent() {
    let (pools, receipt) = with_mem(Limits::DEFAULT).await;
    let provider = receipt.provider.clone();
    let dialer = CountedDialer::default();
    pools
        .set_provider_running_until(&provider, 3, Instant::now(), 1)
        .expect("expired at once: 1");
    let a = running(&pools, &receipt, "a", 1).await;
    tokio::time::advance(SHARE).await;
    send(&pools, &a, &dialer)
        .await
        .expect("granted within the fallback, it is sent");
}

#[tokio::test(start_paused = true)]
async fn a_ceiling_without_expiry_never_lapses() {
    let (pools, receipt) = with_mem(Limits::DEFAULT).await;
    let provider = receipt.provider.clone();
    let dialer = CountedDialer::default();
    pools
        .set_provider_running(&provider, Some(2))
        .expect("2, no expiry");
    let a = running(&pools, &receipt, "a", 1).await;
    let b = running(&pools, &receipt, "b", 1).await;
    tokio::time::advance(10 * SHARE).await;
    send(&pools, &a, &dialer).await.expect("no share to lapse");
    send(&pools, &b, &dialer).await.expect("no share to lapse");
}
