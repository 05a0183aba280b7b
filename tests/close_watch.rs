//! Closure notices through the public API, without an adapter: a notifier
//! that fires while its connection is checked out again evicts no other
//! parked connection, and the holder sees the connection closed. (A parked
//! connection whose notice fires is destroyed at once: `tests/idle.rs`.)
//!
//! Paused clock, no I/O.

mod support;

use std::sync::atomic::Ordering;

use provider_pools::{close_watch, Limits, PooledConnection, ProviderPools};
use support::{bounded, running, with_mem, Counted, CountedDialer};

/// Installs one provider with one origin and dials one connection for
/// tenant `t`; the request that dialed it is done.
async fn one_connection(
    dialer: &CountedDialer,
) -> (
    ProviderPools,
    provider_pools::InstallReceipt,
    PooledConnection<Counted>,
) {
    let (pools, receipt) = with_mem(Limits::DEFAULT).await;
    let request = running(&pools, &receipt, "t", 1).await;
    let conn = bounded("a dial", pools.reserve_connection(&request, dialer))
        .await
        .expect("dialed");
    drop(request);
    (pools, receipt, conn)
}

/// A notice fired while its connection is checked out again touches no
/// other parked connection, and the checked-out one is never parked
/// closed: its holder sees `is_closed` and destroys it.
#[tokio::test(start_paused = true)]
async fn a_notice_for_a_checked_out_connection_evicts_no_other_parked_connection() {
    let dialer = CountedDialer::default();
    let (pools, receipt, first) = one_connection(&dialer).await;
    let (watch, notifier) = close_watch();
    first.park_watched(&watch);

    // Checked out again (reused), then a second connection parked beside
    // it with a watch of its own.
    let request = running(&pools, &receipt, "t", 2).await;
    let first = bounded("a checkout", pools.reserve_connection(&request, &dialer))
        .await
        .expect("reused");
    assert!(first.is_reused());
    let second = bounded("a dial", pools.reserve_connection(&request, &dialer))
        .await
        .expect("dialed");
    assert!(!second.is_reused());
    let (other_watch, _other_notifier) = close_watch();
    second.park_watched(&other_watch);

    notifier.closed();
    assert_eq!(
        (
            pools.snapshot().connections.idle,
            dialer.destroyed.load(Ordering::SeqCst)
        ),
        (1, 0),
        "the other parked connection stays; the checked-out one is its holder's"
    );
    assert!(watch.is_closed(), "its holder can see the peer closed it");
    drop(first);
    drop(request);
    support::quiesce().await;
    assert_eq!(dialer.destroyed.load(Ordering::SeqCst), 1);
    let report = pools.shutdown(support::deadline()).await;
    assert!(report.is_clean(), "{report:?}");
}
