//! Graceful connection cleanup on its own slots: it progresses while every
//! worker is blocked, destroys before it releases, and a failed or delayed
//! close keeps its connection owned and charged.

mod support;

use provider_pools::{Cleanup, CloseFailure, DialError, DialErrorKind, DialTarget, Dialer, Limits};
use support::{bounded, eventually, http_config, installation, provider, running, start};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::oneshot;

/// A real TCP connection whose close shuts its write half down.
struct Graceful(tokio::net::TcpStream);

impl Cleanup for Graceful {
    async fn close(mut self) -> Result<(), CloseFailure<Self>> {
        match self.0.shutdown().await {
            Ok(()) => Ok(()),
            Err(e) => Err(CloseFailure::new(self, e.to_string())),
        }
    }
}

#[derive(Clone)]
struct GracefulDialer;

impl Dialer for GracefulDialer {
    type Conn = Graceful;

    async fn dial(&self, target: DialTarget<'_>) -> Result<Graceful, DialError> {
        tokio::net::TcpStream::connect(target.target)
            .await
            .map(Graceful)
            .map_err(|e| DialError::new(DialErrorKind::Refused, e.to_string()))
    }
}

/// A connection whose close fails, or waits until released.
enum Stubborn {
    Fails,
    Waits(oneshot::Receiver<()>),
}

impl Cleanup for Stubborn {
    async fn close(self) -> Result<(), CloseFailure<Self>> {
        match self {
            Stubborn::Fails => Err(CloseFailure::new(Stubborn::Fails, "close refused")),
            Stubborn::Waits(release) => {
                let _ = release.await;
                Ok(())
            }
        }
    }
}

#[derive(Clone)]
struct StubbornDialer(std::sync::Arc<std::sync::Mutex<Option<oneshot::Receiver<()>>>>);

impl Dialer for StubbornDialer {
    type Conn = Stubborn;

    async fn dial(&self, _: DialTarget<'_>) -> Result<Stubborn, DialError> {
        let waits = self.0.lock().expect("dialer").take();
        Ok(waits.map_or(Stubborn::Fails, Stubborn::Waits))
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cleanup_progresses_while_every_worker_is_blocked() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let target = listener.local_addr().expect("addr").to_string();
    let limits = Limits {
        provider_workers: 2,
        ..Limits::DEFAULT
    };
    let pools = start(limits).await;
    let receipt = pools
        .install(installation(
            &provider("web"),
            0,
            b"k",
            support::tcp_config("web", &[target]),
        ))
        .await
        .expect("install");

    let gate = support::Gate::default();
    let mut held = Vec::new();
    for _ in 0..2 {
        let gate = gate.waiter();
        held.push(
            pools
                .spawn_blocking(move || gate.wait())
                .await
                .expect("worker"),
        );
    }
    assert!(
        pools.spawn(|| async {}).await.is_err(),
        "every worker is taken"
    );

    let request = running(&pools, &receipt, "t", 1).await;
    let conn = pools
        .reserve_connection(&request, &GracefulDialer)
        .await
        .expect("dialed");
    let (mut server_side, _) = bounded("accept", listener.accept()).await.expect("accept");
    drop(request);
    let ticket = pools
        .close_connection(conn)
        .map_err(|r| r.error)
        .expect("a cleanup slot");
    bounded("cleanup", ticket.outcome())
        .await
        .map_err(|f| f.reason().to_string())
        .expect("closed");
    let mut buf = [0u8; 8];
    assert_eq!(
        bounded("EOF", server_side.read(&mut buf))
            .await
            .expect("read"),
        0
    );
    eventually("the connection's charges are released", || {
        pools.snapshot().connections == Default::default()
    })
    .await;
    gate.open();
}

#[tokio::test]
async fn a_failed_close_keeps_the_connection_owned_and_charged() {
    let pools = start(Limits::DEFAULT).await;
    let receipt = pools
        .install(installation(&provider("p"), 0, b"k", http_config("p", 1)))
        .await
        .expect("install");
    let request = running(&pools, &receipt, "t", 1).await;
    let conn = pools
        .reserve_connection(
            &request,
            &StubbornDialer(std::sync::Arc::new(std::sync::Mutex::new(None))),
        )
        .await
        .expect("dialed");
    drop(request);
    let ticket = pools
        .close_connection(conn)
        .map_err(|r| r.error)
        .expect("slot");
    let failed = bounded("cleanup", ticket.outcome())
        .await
        .expect_err("the close fails");
    assert_eq!(failed.reason(), "close refused");
    let snapshot = pools.snapshot();
    assert_eq!(snapshot.failed_cleanup, 1);
    assert_eq!(
        snapshot.connections.active, 1,
        "no refund for a failed close"
    );
    assert_eq!(snapshot.running_requests, 1, "the activation is still held");

    // Explicit recovery: trying again fails again and still refunds nothing.
    let again = pools
        .retry_close(failed)
        .map_err(|(_, error)| error)
        .expect("a cleanup slot");
    let failed = bounded("second cleanup", again.outcome())
        .await
        .expect_err("still refused");
    assert_eq!(pools.snapshot().connections.active, 1);

    drop(failed); // explicit destruction
    eventually("destroyed, then released", || {
        let s = pools.snapshot();
        s.failed_cleanup == 0 && s.connections.active == 0 && s.running_requests == 0
    })
    .await;
}

#[tokio::test]
async fn a_delayed_cleanup_keeps_its_charges_until_it_finishes() {
    let pools = start(Limits::DEFAULT).await;
    let receipt = pools
        .install(installation(&provider("p"), 0, b"k", http_config("p", 1)))
        .await
        .expect("install");
    let (release, waits) = oneshot::channel();
    let request = running(&pools, &receipt, "t", 1).await;
    let conn = pools
        .reserve_connection(
            &request,
            &StubbornDialer(std::sync::Arc::new(std::sync::Mutex::new(Some(waits)))),
        )
        .await
        .expect("dialed");
    drop(request);
    let ticket = pools
        .close_connection(conn)
        .map_err(|r| r.error)
        .expect("slot");
    eventually("the cleanup runs", || pools.snapshot().cleanup_jobs == 1).await;
    let snapshot = pools.snapshot();
    assert_eq!(
        (snapshot.cleanup_jobs, snapshot.connections.active),
        (1, 1),
        "a delayed close keeps its slot and its connection charge"
    );
    release.send(()).expect("cleanup waiting");
    assert!(bounded("cleanup", ticket.outcome()).await.is_ok());
    eventually("released after the close", || {
        let s = pools.snapshot();
        s.cleanup_jobs == 0 && s.connections.active == 0
    })
    .await;
}

#[tokio::test(start_paused = true)]
async fn a_failed_close_nobody_waits_for_is_destroyed_by_shutdown() {
    let pools = start(Limits::DEFAULT).await;
    let receipt = pools
        .install(installation(&provider("p"), 0, b"k", http_config("p", 1)))
        .await
        .expect("install");
    let request = running(&pools, &receipt, "t", 1).await;
    let conn = pools
        .reserve_connection(
            &request,
            &StubbornDialer(std::sync::Arc::new(std::sync::Mutex::new(None))),
        )
        .await
        .expect("dialed");
    drop(request);
    let ticket = pools
        .close_connection(conn)
        .map_err(|r| r.error)
        .expect("slot");
    drop(ticket);
    eventually("the cleanup actor keeps the failure", || {
        pools.snapshot().failed_cleanup == 1
    })
    .await;
    let snapshot = pools.snapshot();
    assert_eq!(
        (snapshot.connections.active, snapshot.running_requests),
        (1, 1),
        "the kept failure stays charged: {snapshot:?}"
    );

    // The kept connection still holds its request, and so its epoch:
    // shutdown must destroy it rather than wait for the epoch to drain.
    let report = pools.shutdown(support::deadline()).await;
    assert!(report.is_clean(), "{report:?}");
}

/// A connection whose close fails and whose destructor panics.
struct Cursed;

impl Drop for Cursed {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            panic!("adapter bug: destructor panicked");
        }
    }
}

impl Cleanup for Cursed {
    async fn close(self) -> Result<(), CloseFailure<Self>> {
        Err(CloseFailure::new(self, "close refused"))
    }
}

#[derive(Clone)]
struct CursedDialer;

impl Dialer for CursedDialer {
    type Conn = Cursed;

    async fn dial(&self, _: DialTarget<'_>) -> Result<Cursed, DialError> {
        Ok(Cursed)
    }
}

#[tokio::test(start_paused = true)]
async fn shutdown_destroys_a_kept_failure_whose_destructor_panics() {
    let pools = start(Limits::DEFAULT).await;
    let receipt = pools
        .install(installation(&provider("p"), 0, b"k", http_config("p", 1)))
        .await
        .expect("install");
    let request = running(&pools, &receipt, "t", 1).await;
    let conn = pools
        .reserve_connection(&request, &CursedDialer)
        .await
        .expect("dialed");
    drop(request);
    let ticket = pools
        .close_connection(conn)
        .map_err(|r| r.error)
        .expect("slot");
    drop(ticket);
    eventually("the cleanup actor keeps the failure", || {
        pools.snapshot().failed_cleanup == 1
    })
    .await;
    let report = pools.shutdown(support::deadline()).await;
    assert!(report.is_clean(), "{report:?}");
}

/// `cleanup_jobs` above `provider_workers`: every one of the cleanup slots
/// runs at once, and only the next close is refused — the cleanup owner is
/// sized by its own limit, not by the workers'.
#[tokio::test]
async fn cleanups_run_up_to_cleanup_jobs_when_it_differs_from_provider_workers() {
    const JOBS: u32 = 4;
    let limits = Limits {
        provider_workers: 2,
        cleanup_jobs: JOBS,
        ..Limits::DEFAULT
    };
    let pools = start(limits).await;
    let receipt = pools
        .install(installation(&provider("p"), 0, b"k", http_config("p", 1)))
        .await
        .expect("install");
    let mut releases = Vec::new();
    let mut tickets = Vec::new();
    for n in 0..=JOBS {
        let (release, waits) = oneshot::channel();
        releases.push(release);
        let dialer = StubbornDialer(std::sync::Arc::new(std::sync::Mutex::new(Some(waits))));
        // One tenant per connection: each within its own share.
        let request = running(&pools, &receipt, &format!("t{n}"), u64::from(n)).await;
        let conn = bounded("a dial", pools.reserve_connection(&request, &dialer))
            .await
            .expect("dialed");
        drop(request);
        match pools.close_connection(conn) {
            Ok(ticket) => tickets.push(ticket),
            Err(refused) => {
                assert_eq!(
                    n, JOBS,
                    "refused before cleanup_jobs was full: {}",
                    refused.error
                );
                assert_eq!(refused.error.code(), "capacity", "{}", refused.error);
            }
        }
    }
    assert_eq!(
        tickets.len() as u32,
        JOBS,
        "the close past cleanup_jobs is refused"
    );
    eventually("every cleanup slot runs at once", || {
        pools.snapshot().cleanup_jobs == JOBS
    })
    .await;
    for release in releases {
        let _ = release.send(());
    }
    for ticket in tickets {
        assert!(bounded("a cleanup", ticket.outcome()).await.is_ok());
    }
    eventually("every slot returned", || pools.snapshot().cleanup_jobs == 0).await;
}
