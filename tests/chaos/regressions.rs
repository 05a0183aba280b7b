//! Engine bugs the chaos suite found, each kept as a deterministic test
//! named for the bug.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use provider_pools::{
    BrokerGeneration, Bytes, DialError, DialTarget, Dialer, LimitField, Limits, LimitsError,
    LowerError, PoolsConfig, ProviderPools, RestartPolicy,
};

use crate::support::{http_config, installation, plan, provider, quiesce, running, task};

/// Opens unit connections at once.
#[derive(Clone, Copy)]
struct Unit;

impl Dialer for Unit {
    type Conn = ();

    async fn dial(&self, _: DialTarget<'_>) -> Result<(), DialError> {
        Ok(())
    }
}

/// Found on four worker threads (seed 19, `connections_per_client` 1): a
/// caller waiting for a connection of a full client was still counted in
/// the `waiting` gauge after its epoch actor stopped for good — its reply
/// dropped with the actor, but only a restarted actor reset the count — so
/// a shutdown with nothing left owned was never clean. The reproduction
/// stops the actor past its restart budget (zero restarts).
#[tokio::test(start_paused = true)]
async fn a_caller_waiting_on_an_epoch_actor_that_stops_for_good_is_no_longer_counted() {
    let config = PoolsConfig {
        limits: Limits {
            connections_per_client: 1,
            connections_per_tenant: 1,
            ..Limits::DEFAULT
        },
        restart: RestartPolicy {
            max_restarts: 0,
            window: Duration::from_secs(3_600),
        },
        ..PoolsConfig::new(tokio::runtime::Handle::current(), BrokerGeneration::new())
    };
    let pools = ProviderPools::start(config).await.expect("registry starts");
    let receipt = pools
        .install(installation(&provider("p"), 0, b"k", http_config("p", 1)))
        .await
        .expect("install");
    let first = running(&pools, &receipt, "a", 1).await;
    let held = pools
        .reserve_connection(&first, &Unit)
        .await
        .expect("the client has room");
    let second = running(&pools, &receipt, "b", 2).await;
    let asker = pools.clone();
    let waiting = task(async move {
        let answer = asker.reserve_connection(&second, &Unit).await.map(drop);
        (second, answer)
    });
    quiesce().await;
    assert_eq!(pools.snapshot().connections.waiting, 1, "b waits");

    let controls = pools.control_cells().map(|cell| cell.get_id());
    let epochs: Vec<_> = pools
        .registry_cell()
        .get_children()
        .into_iter()
        .filter(|cell| !controls.contains(&cell.get_id()))
        .collect();
    assert_eq!(epochs.len(), 1, "one epoch actor");
    epochs[0].kill();
    quiesce().await;
    let (second, answer) = waiting.await.expect("the waiter's task");
    assert!(answer.is_err(), "the stopped actor's waiter is refused");
    assert!(
        pools.describe(&provider("p")).is_none(),
        "retired, not restarted"
    );
    assert_eq!(
        pools.snapshot().connections.waiting,
        0,
        "nobody waits once the actor is gone"
    );

    drop((held, first, second));
    let report = pools
        .shutdown(tokio::time::Instant::now() + Duration::from_secs(60))
        .await;
    assert!(report.is_clean(), "nothing left owned: {report:?}");
}

/// Found on four worker threads (seed 11), when `lower_limits` could raise
/// a limit back towards its startup value: it set every budget before it
/// asked the scheduler; when the scheduler refused, reservations taken
/// meanwhile at the raised limit stayed, and the budget could not be put
/// back (`connections` 3 in use over the 2 in force). A lowering now never
/// raises a limit, so the raise is refused before anything is set. The
/// reproduction asks to raise `metadata_bytes` in a lowering the scheduler
/// would refuse too, while a task keeps trying to stage an input that fits
/// only the raised limit.
#[tokio::test(start_paused = true)]
async fn a_refused_lowering_lets_nothing_through_at_a_limit_it_would_have_raised() {
    let startup = Limits {
        metadata_bytes: 64 * 1024,
        metadata_per_tenant: 64 * 1024,
        private_config_bytes: 1024,
        ..Limits::DEFAULT
    };
    let pools = crate::support::start(startup).await;
    let receipt = pools
        .install(installation(&provider("p"), 0, b"k", http_config("p", 1)))
        .await
        .expect("install");
    let _held = (
        running(&pools, &receipt, "a", 1).await,
        running(&pools, &receipt, "a", 2).await,
    );
    let cap = pools.snapshot().metadata_bytes + 1_000;
    let capped = Limits {
        metadata_bytes: cap,
        metadata_per_tenant: cap,
        ..startup
    };
    pools
        .lower_limits(capped)
        .await
        .expect("the cap is above the use");

    let stop = Arc::new(AtomicBool::new(false));
    let (stager, stopped) = (pools.clone(), Arc::clone(&stop));
    let staging = task(async move {
        while !stopped.load(Ordering::SeqCst) {
            let input = Bytes::from(vec![0u8; 2_000]);
            if let Ok(staged) = stager.stage_input(&plan("b", 9), input) {
                return Some(staged);
            }
            tokio::task::yield_now().await;
        }
        None
    });
    let refused = pools
        .lower_limits(Limits {
            running_requests: 1,
            running_per_tenant: 1,
            running_per_provider: 1,
            ..startup
        })
        .await;
    stop.store(true, Ordering::SeqCst);
    assert!(
        matches!(
            refused,
            Err(LowerError::Limits(LimitsError::Raised {
                field: LimitField::MetadataBytes | LimitField::MetadataPerTenant,
                ..
            }))
        ),
        "the raise is refused first: {refused:?}"
    );
    let staged = staging.await.expect("the staging task");
    assert!(
        staged.is_none(),
        "an input beyond the cap in force was staged while the lowering was refused"
    );
    assert!(pools.snapshot().metadata_bytes <= cap);
    let input = Bytes::from(vec![0u8; 2_000]);
    assert!(
        pools.stage_input(&plan("b", 10), input).is_err(),
        "the cap is still in force"
    );
}
