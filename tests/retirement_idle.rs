//! A retired epoch keeps no idle connection: the moment a rotation retires
//! it, its parked connections are destroyed (then their charges released),
//! even while a lease still retains the epoch for work it accepted — not
//! only when that work ends and the epoch is dropped.
//!
//! Paused clock, no I/O: the old epoch's connection is a value that counts
//! its destruction; the wait after the rotation is far below the idle age.

mod support;

use std::sync::atomic::Ordering;

use provider_pools::Limits;
use support::{bounded, http_config, installation, provider, running, with_mem, CountedDialer};

#[tokio::test(start_paused = true)]
async fn rotation_destroys_the_old_epochs_idle_connections_while_a_lease_retains_it() {
    let dialer = CountedDialer::default();
    let (pools, receipt) = with_mem(Limits::DEFAULT).await;
    // `request` holds a lease on epoch 1 until the end of the test.
    let request = running(&pools, &receipt, "t", 1).await;
    let conn = bounded("a dial", pools.reserve_connection(&request, &dialer))
        .await
        .expect("dialed");
    conn.park();
    assert_eq!(pools.snapshot().connections.idle, 1, "parked on epoch 1");

    pools
        .install(installation(
            &provider("mem"),
            1,
            b"k2",
            http_config("mem", 1),
        ))
        .await
        .expect("rotation to epoch 2");
    support::quiesce().await;
    let snapshot = pools.snapshot();
    assert_eq!(snapshot.retained_epochs, 2, "the lease retains epoch 1");
    assert_eq!(
        (
            dialer.destroyed.load(Ordering::SeqCst),
            snapshot.connections.idle
        ),
        (1, 0),
        "epoch 1's parked connection is destroyed at its retirement"
    );

    drop(request);
    let report = pools.shutdown(support::deadline()).await;
    assert!(report.is_clean(), "{report:?}");
}
