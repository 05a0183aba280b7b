//! Supervised restart: an epoch actor that panics is restarted with the
//! same configuration within its restart budget, keeping every charge
//! exactly once; past the budget its provider is retired. Paused clock.
//!
//! The panic is real adapter code running inside the epoch actor: a parked
//! connection whose `Drop` panics when the actor destroys it on expiry.

mod support;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use provider_pools::{
    AdmitError, BrokerGeneration, ControlState, DialError, DialTarget, Dialer, Limits, PoolsConfig,
    ProviderPools, RestartPolicy,
};
use support::{http_config, installation, provider, running};

/// A connection whose destruction panics.
struct Bomb;

impl Drop for Bomb {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            panic!("adapter bug: connection destructor panicked");
        }
    }
}

#[derive(Default, Clone)]
struct BombDialer {
    dials: std::sync::Arc<AtomicUsize>,
}

impl Dialer for BombDialer {
    type Conn = Bomb;

    async fn dial(&self, _: DialTarget<'_>) -> Result<Bomb, DialError> {
        self.dials.fetch_add(1, Ordering::SeqCst);
        Ok(Bomb)
    }
}

async fn let_tasks_run() {
    for _ in 0..200 {
        tokio::task::yield_now().await;
    }
}

async fn pools_with(policy: RestartPolicy) -> (ProviderPools, provider_pools::InstallReceipt) {
    let config = PoolsConfig {
        restart: policy,
        ..PoolsConfig::new(tokio::runtime::Handle::current(), BrokerGeneration::new())
    };
    let pools = ProviderPools::start(config).await.expect("registry");
    let receipt = pools
        .install(installation(
            &provider("bomb"),
            0,
            b"k",
            http_config("bomb", 1),
        ))
        .await
        .expect("install");
    (pools, receipt)
}

/// Parks one bomb, lets it expire: the epoch actor panics destroying it.
async fn crash_epoch_actor(
    pools: &ProviderPools,
    receipt: &provider_pools::InstallReceipt,
    session: u64,
) {
    let dialer = BombDialer::default();
    let request = running(pools, receipt, "t", session).await;
    pools
        .reserve_connection(&request, &dialer)
        .await
        .expect("dial")
        .park();
    drop(request);
    let_tasks_run().await;
    assert_eq!(pools.snapshot().connections.idle, 1);
    tokio::time::advance(Limits::DEFAULT.idle_age + Duration::from_secs(1)).await;
    let_tasks_run().await;
}

/// Kills the epoch actors (not waiting for them to stop); returns their ids.
fn kill_epoch_actors(pools: &ProviderPools) -> Vec<ractor::ActorId> {
    let actors = epoch_actors(pools);
    (pools.registry_cell().get_children().into_iter())
        .filter(|cell| actors.contains(&cell.get_id()))
        .for_each(|cell| cell.kill());
    actors
}

fn epoch_actors(pools: &ProviderPools) -> Vec<ractor::ActorId> {
    let controls = pools.control_cells().map(|cell| cell.get_id());
    pools
        .registry_cell()
        .get_children()
        .iter()
        .map(|c| c.get_id())
        .filter(|id| !controls.contains(id))
        .collect()
}

#[tokio::test(start_paused = true)]
async fn a_panicking_epoch_actor_is_restarted_with_its_charges_intact() {
    let (pools, receipt) = pools_with(RestartPolicy::default()).await;
    let before = pools.snapshot();
    let first_actor = epoch_actors(&pools);

    crash_epoch_actor(&pools, &receipt, 1).await;

    let after = pools.snapshot();
    let second_actor = epoch_actors(&pools);
    assert_eq!(second_actor.len(), 1, "one epoch actor again");
    assert_ne!(first_actor, second_actor, "a new actor took over");
    assert_eq!(after.control, ControlState::Running);
    assert_eq!(
        (after.retained_epochs, after.clients, after.metadata_bytes),
        (
            before.retained_epochs,
            before.clients,
            before.metadata_bytes
        ),
        "the epoch's reservations were neither lost nor released"
    );
    assert_eq!(
        after.connections,
        Default::default(),
        "the destroyed bomb released once"
    );

    // The restarted actor serves the same epoch.
    let request = running(&pools, &receipt, "t", 2).await;
    let conn = pools
        .reserve_connection(&request, &Plain)
        .await
        .expect("the restarted epoch dials");
    assert_eq!(pools.snapshot().connections.active, 1);
    drop(conn);
    assert_eq!(pools.snapshot().connections, Default::default());
}

/// A harmless connection, for after the crash.
#[derive(Clone)]
struct Plain;

impl Dialer for Plain {
    type Conn = ();

    async fn dial(&self, _: DialTarget<'_>) -> Result<(), DialError> {
        Ok(())
    }
}

#[tokio::test(start_paused = true)]
async fn past_its_restart_budget_the_provider_is_retired() {
    let policy = RestartPolicy {
        max_restarts: 2,
        window: Duration::from_secs(3_600),
    };
    let (pools, receipt) = pools_with(policy).await;
    for session in 0..3 {
        crash_epoch_actor(&pools, &receipt, session).await;
    }
    assert!(pools.describe(&provider("bomb")).is_none(), "unpublished");
    let refused = pools
        .admit(support::request(
            &pools,
            support::plan("t", 9),
            &receipt,
            b"x",
        ))
        .await;
    assert_eq!(
        refused.err(),
        Some(AdmitError::Unavailable {
            provider: provider("bomb")
        })
    );
    support::quiescent(&pools).await;
    assert_eq!(
        pools.snapshot().retained_epochs,
        0,
        "the retired epoch drains and is released"
    );
    assert_eq!(
        pools.snapshot().control,
        ControlState::Running,
        "an epoch is not a control owner"
    );
}

#[tokio::test(start_paused = true)]
async fn a_killed_epoch_actor_is_restarted_and_its_idle_connections_cannot_fail_the_registry() {
    let (pools, receipt) = pools_with(RestartPolicy::default()).await;
    let before = pools.snapshot();
    let request = running(&pools, &receipt, "t", 1).await;
    pools
        .reserve_connection(&request, &BombDialer::default())
        .await
        .expect("dial")
        .park();
    drop(request);
    let_tasks_run().await;
    assert_eq!(pools.snapshot().connections.idle, 1);

    // Killed, the actor's state — the parked bomb with it — is handed to
    // its supervisor; destroying it there must not take the registry down.
    let first_actor = kill_epoch_actors(&pools);
    let_tasks_run().await;

    let after = pools.snapshot();
    assert_eq!(after.control, ControlState::Running, "{after:?}");
    let second_actor = epoch_actors(&pools);
    assert_eq!(second_actor.len(), 1, "one epoch actor again");
    assert_ne!(first_actor, second_actor, "a new actor took over");
    assert_eq!(
        (after.retained_epochs, after.clients, after.metadata_bytes),
        (
            before.retained_epochs,
            before.clients,
            before.metadata_bytes
        ),
        "the epoch's reservations were neither lost nor released"
    );
    assert_eq!(
        after.connections,
        Default::default(),
        "the destroyed bomb released once"
    );
    let request = running(&pools, &receipt, "t", 2).await;
    let conn = pools
        .reserve_connection(&request, &Plain)
        .await
        .expect("the restarted epoch dials");
    drop(conn);
    drop(request);
    let report = pools.shutdown(support::deadline()).await;
    assert!(report.is_clean(), "{report:?}");
}

/// The epoch actor is killed just as a checkout asks it for a connection:
/// the checkout, which found the actor stopping or stopped, waits for the
/// registry to restart it and is served by the successor.
#[tokio::test(start_paused = true)]
async fn a_checkout_meeting_a_killed_epoch_actor_is_served_by_its_successor() {
    let (pools, receipt) = pools_with(RestartPolicy::default()).await;
    let request = running(&pools, &receipt, "t", 1).await;
    let first_actor = kill_epoch_actors(&pools);

    let started = tokio::time::Instant::now();
    let conn = pools
        .reserve_connection(&request, &Plain)
        .await
        .expect("the successor dials");
    assert_eq!(started.elapsed(), Duration::ZERO, "no timer was waited on");
    assert_ne!(epoch_actors(&pools), first_actor, "a new actor served it");
    drop(conn);
    drop(request);
    let report = pools.shutdown(support::deadline()).await;
    assert!(report.is_clean(), "{report:?}");
}

/// Past its restart budget, an epoch actor has no successor: a checkout of
/// a request still running on the epoch is refused as closed at once, not
/// at its deadline.
#[tokio::test(start_paused = true)]
async fn with_no_successor_a_checkout_is_refused_at_once() {
    let policy = RestartPolicy {
        max_restarts: 0,
        window: Duration::from_secs(3_600),
    };
    let (pools, receipt) = pools_with(policy).await;
    let request = running(&pools, &receipt, "t", 9).await;
    crash_epoch_actor(&pools, &receipt, 1).await;
    assert!(pools.describe(&provider("bomb")).is_none(), "unpublished");

    let started = tokio::time::Instant::now();
    let refused = pools.reserve_connection(&request, &Plain).await;
    assert!(
        matches!(refused, Err(provider_pools::ConnectError::Closed)),
        "{refused:?}"
    );
    assert_eq!(started.elapsed(), Duration::ZERO, "refused at once");
}
