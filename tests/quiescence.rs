//! `ProviderPools::wait_quiescent`: the quiescence check the tests await instead
//! of polling. It waits for a real cascade through two actors and a
//! supervision event, and the cascade has not happened before it.

mod support;

use provider_pools::testing::NotQuiescent;
use provider_pools::{Limits, OriginKind};
use support::{http_config, installation, provider, quiescent, start};

/// The registry's children that are epoch actors.
fn epoch_actors(pools: &provider_pools::ProviderPools) -> usize {
    let controls = pools.control_cells().map(|cell| cell.get_id());
    pools
        .registry_cell()
        .get_children()
        .iter()
        .filter(|child| !controls.contains(&child.get_id()))
        .count()
}

#[tokio::test(start_paused = true)]
async fn a_dropped_lease_of_a_retired_epoch_is_released_once_quiescent() {
    let pools = start(Limits::DEFAULT).await;
    let p = provider("alpha");
    let first = pools
        .install(installation(&p, 0, b"k", http_config("alpha", 1)))
        .await
        .expect("install");
    let old_lease = pools
        .client(&p, &first.slots[0], OriginKind::Http)
        .expect("lease on epoch 1");
    pools
        .install(installation(&p, 1, b"k2", http_config("alpha", 1)))
        .await
        .expect("rotate");
    quiescent(&pools).await;
    assert_eq!(pools.snapshot().retained_epochs, 2, "epoch 1 is leased");
    assert_eq!(quiescent(&pools).await, 1, "idle: one clean round");
    assert_eq!(epoch_actors(&pools), 2);

    // The drop sends the registry the epoch's drain notice; the registry
    // stops the epoch actor and releases the record only when the actor's
    // termination reaches it. Nothing of that has run yet: the test's
    // runtime has one thread and the test has not yielded.
    drop(old_lease);
    assert_eq!(
        (pools.snapshot().retained_epochs, epoch_actors(&pools)),
        (2, 2),
        "the cascade goes through the actors, not the drop"
    );

    let rounds = quiescent(&pools).await;
    assert!(
        rounds >= 2,
        "the first round saw the registry busy ({rounds})"
    );
    let snapshot = pools.snapshot();
    assert_eq!(
        (
            snapshot.retained_epochs,
            snapshot.clients,
            epoch_actors(&pools)
        ),
        (1, 1, 1),
        "drained, stopped and released"
    );
}

#[tokio::test(start_paused = true)]
async fn an_engine_that_cannot_answer_by_the_deadline_is_not_quiescent() {
    let pools = start(Limits::DEFAULT).await;
    let now = tokio::time::Instant::now();
    assert_eq!(
        pools.wait_quiescent(now).await,
        Err(NotQuiescent { rounds: 1 }),
        "no probe is answered by a deadline already due"
    );
    quiescent(&pools).await;
}

#[tokio::test(start_paused = true)]
async fn a_shut_down_engine_is_quiescent() {
    let pools = start(Limits::DEFAULT).await;
    let report = pools.shutdown(support::deadline()).await;
    assert!(report.is_clean(), "{report:?}");
    quiescent(&pools).await;
}
