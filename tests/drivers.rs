//! Connection drivers (`ProviderPools::spawn_driver`): a job of their own
//! class that holds its connection's charges and no provider worker slot
//! (decision record 0063).
//!
//! The dialer here starts a driver that outlives its connection until the
//! test opens a gate, so each test can look at the pools while a driver
//! runs on after its connection was destroyed.

mod support;

use std::sync::Arc;

use provider_pools::{
    ConnectError, DialError, DialErrorKind, DialTarget, Dialer, Limits, ProviderPools,
};
use support::{bounded, eventually, installation, provider, running_on, start};
use tokio::sync::{oneshot, Semaphore};

/// A connection whose driver waits for it to be dropped.
struct Sock {
    _alive: oneshot::Sender<()>,
}

/// Dials [`Sock`]s whose driver, once its connection is gone, waits for
/// one permit of `gate` before it ends.
#[derive(Clone)]
struct Lingering {
    pools: ProviderPools,
    gate: Arc<Semaphore>,
    /// Drivers each dial tries to start (a second one is refused).
    drivers: usize,
}

impl Lingering {
    fn new(pools: &ProviderPools) -> Self {
        Self {
            pools: pools.clone(),
            gate: Arc::new(Semaphore::new(0)),
            drivers: 1,
        }
    }

    /// Lets one driver whose connection is gone end.
    fn release_one(&self) {
        self.gate.add_permits(1);
    }
}

impl Dialer for Lingering {
    type Conn = Sock;

    async fn dial(&self, target: DialTarget<'_>) -> Result<Sock, DialError> {
        let (alive, dropped) = oneshot::channel::<()>();
        let gate = Arc::clone(&self.gate);
        let mut driver = Some(move || async move {
            let _ = dropped.await;
            let _ = gate.acquire().await.map(|permit| permit.forget());
        });
        for _ in 0..self.drivers {
            match driver.take() {
                Some(driver) => drop(self.pools.spawn_driver(&target, driver).await?),
                None => drop(self.pools.spawn_driver(&target, || async {}).await?),
            }
        }
        Ok(Sock { _alive: alive })
    }
}

/// A registry with provider `two` on two origins (two clients).
async fn two_clients(limits: Limits) -> (ProviderPools, provider_pools::InstallReceipt) {
    let pools = start(limits).await;
    let receipt = pools
        .install(installation(
            &provider("two"),
            0,
            b"k",
            support::http_config("two", 2),
        ))
        .await
        .expect("installs");
    (pools, receipt)
}

/// One connection node-wide, on either of two clients.
const ONE_CONNECTION: Limits = Limits {
    connections: 1,
    connections_per_client: 1,
    connections_per_tenant: 1,
    idle_connections: 1,
    ..Limits::DEFAULT
};

#[tokio::test]
async fn a_connections_charge_returns_only_after_its_driver_has_ended() {
    let (pools, receipt) = two_clients(ONE_CONNECTION).await;
    let dialer = Lingering::new(&pools);

    let first = running_on(&pools, &receipt, 0, "a", 1).await;
    let conn = pools
        .reserve_connection(&first, &dialer)
        .await
        .expect("the only connection");
    assert_eq!(pools.snapshot().drivers, 1);
    drop(conn);
    drop(first);
    let snapshot = pools.snapshot();
    assert_eq!(snapshot.connections.active, 0, "{snapshot:?}");
    assert_eq!(snapshot.drivers, 1, "the driver runs on: {snapshot:?}");

    // The destroyed connection's driver still holds the node's only
    // connection charge: another client's dial is refused at once.
    let second = running_on(&pools, &receipt, 1, "b", 2).await;
    let refused = pools.reserve_connection(&second, &dialer).await;
    assert!(
        matches!(
            &refused,
            Err(ConnectError::Capacity {
                resource: "connections",
                used: 1,
                limit: 1
            })
        ),
        "{:?}",
        refused.as_ref().map(drop)
    );

    dialer.release_one();
    eventually("the driver is joined", || pools.snapshot().drivers == 0).await;
    let conn = pools
        .reserve_connection(&second, &dialer)
        .await
        .expect("the charge came back with the driver's join");
    drop(conn);
    dialer.release_one();
    drop(second);
    let report = bounded("shutdown", pools.shutdown(support::deadline())).await;
    assert!(report.is_clean(), "{report:?}");
}

#[tokio::test(start_paused = true)]
async fn shutdown_waits_for_every_driver() {
    let (pools, receipt) = two_clients(ONE_CONNECTION).await;
    let dialer = Lingering::new(&pools);
    let first = running_on(&pools, &receipt, 0, "a", 1).await;
    drop(
        pools
            .reserve_connection(&first, &dialer)
            .await
            .expect("a connection"),
    );
    drop(first);

    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(60);
    let shutdown = {
        let pools = pools.clone();
        support::task(async move { pools.shutdown(deadline).await })
    };
    // Everything but the driver drains; the clock only moves once every
    // task waits, so 30 s later the shutdown is still waiting for it.
    tokio::time::sleep(std::time::Duration::from_secs(30)).await;
    assert!(
        !shutdown.is_finished(),
        "shutdown ended with a driver running"
    );
    let snapshot = pools.snapshot();
    assert_eq!(snapshot.drivers, 1, "{snapshot:?}");
    assert!(!snapshot.is_clean(), "{snapshot:?}");

    dialer.release_one();
    let report = shutdown.await.expect("the shutdown task");
    assert!(report.is_clean(), "{report:?}");
    assert_eq!(report.drivers, 0);
}

#[tokio::test]
async fn a_driver_takes_no_provider_worker_slot() {
    let limits = Limits {
        provider_workers: 1,
        workers_per_tenant: 1,
        ..Limits::DEFAULT
    };
    let (pools, receipt) = two_clients(limits).await;
    let (release, released) = oneshot::channel::<()>();
    let job = pools
        .spawn(move || async move {
            let _ = released.await;
        })
        .await
        .expect("the only worker slot");
    let dialer = Lingering::new(&pools);

    // Eight connections (every one of the client's), each with its driver,
    // while the only worker slot is taken.
    let mut held = Vec::new();
    for session in 1..=8 {
        let tenant = format!("t{}", session % 2);
        let running = running_on(&pools, &receipt, 0, &tenant, session).await;
        let conn = pools
            .reserve_connection(&running, &dialer)
            .await
            .expect("a driver needs no worker slot");
        held.push((conn, running));
    }
    let snapshot = pools.snapshot();
    assert_eq!((snapshot.workers, snapshot.drivers), (1, 8), "{snapshot:?}");

    release.send(()).expect("the job waits");
    bounded("the job", job.join()).await.expect("joined");
    drop(held);
    for _ in 0..8 {
        dialer.release_one();
    }
    let report = bounded("shutdown", pools.shutdown(support::deadline())).await;
    assert!(report.is_clean(), "{report:?}");
}

#[tokio::test]
async fn a_dial_starts_at_most_one_driver() {
    let (pools, receipt) = two_clients(Limits::DEFAULT).await;
    let dialer = Lingering {
        drivers: 2,
        ..Lingering::new(&pools)
    };
    // The first driver's connection is never made; let it end then.
    dialer.release_one();
    let running = running_on(&pools, &receipt, 0, "a", 1).await;
    let refused = pools.reserve_connection(&running, &dialer).await;
    let Err(ConnectError::Dial(e)) = &refused else {
        panic!(
            "a second driver was started: {:?}",
            refused.as_ref().map(drop)
        );
    };
    assert_eq!(e.kind, DialErrorKind::Other);
    assert!(e.message.contains("used it"), "{e}");
    eventually("the first driver is joined", || {
        pools.snapshot().drivers == 0
    })
    .await;
    drop(running);
    let report = bounded("shutdown", pools.shutdown(support::deadline())).await;
    assert!(report.is_clean(), "{report:?}");
}

#[tokio::test]
async fn a_target_built_outside_the_pools_has_no_seat_for_a_driver() {
    let pools = start(Limits::DEFAULT).await;
    let settings = std::collections::BTreeMap::new();
    let credential = provider_pools::Credential::new(b"k".to_vec()).expect("credential");
    let target = DialTarget::new("127.0.0.1:9", &settings, &credential);
    let refused = pools.spawn_driver(&target, || async {}).await;
    let Err(e) = refused else {
        panic!("a driver started without a dial");
    };
    assert_eq!(e.kind, DialErrorKind::Other);
    assert_eq!(pools.snapshot().drivers, 0);
}
