//! Connections over real loopback sockets: reuse of one parked socket, EOF
//! at the server when the pool destroys it, cancelled activations never
//! parking, the node-wide limit, a tenant's share, and retirement. A full
//! client's waits are in `connection_waits.rs`.

mod support;

use provider_pools::{ConnectError, Limits, ProviderPools};
use support::{bounded, installation, provider, running, start, tcp_config, TcpDialer};
use tokio::io::AsyncReadExt;
use tokio::net::TcpListener;
use tokio::sync::mpsc;

/// A loopback origin that reports each accepted connection's peer port and
/// each EOF it reads.
struct Origin {
    target: String,
    accepted: mpsc::Receiver<u16>,
    eof: mpsc::Receiver<u16>,
}

async fn origin() -> Origin {
    let listener = TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind loopback");
    let target = listener.local_addr().expect("local addr").to_string();
    let (accepted_tx, accepted) = mpsc::channel(64);
    let (eof_tx, eof) = mpsc::channel(64);
    support::task(async move {
        while let Ok((mut socket, peer)) = listener.accept().await {
            let _ = accepted_tx.send(peer.port()).await;
            let eof_tx = eof_tx.clone();
            support::task(async move {
                let mut buf = [0u8; 64];
                while let Ok(n) = socket.read(&mut buf).await {
                    if n == 0 {
                        let _ = eof_tx.send(peer.port()).await;
                        return;
                    }
                }
            });
        }
    });
    Origin {
        target,
        accepted,
        eof,
    }
}

async fn pools_for(
    origin: &Origin,
    limits: Limits,
) -> (ProviderPools, provider_pools::InstallReceipt) {
    let pools = start(limits).await;
    let receipt = pools
        .install(installation(
            &provider("web"),
            0,
            b"k",
            tcp_config("web", std::slice::from_ref(&origin.target)),
        ))
        .await
        .expect("install");
    (pools, receipt)
}

#[tokio::test]
async fn sequential_checkouts_reuse_one_socket_and_destruction_sends_eof() {
    let mut origin = origin().await;
    let (pools, receipt) = pools_for(&origin, Limits::DEFAULT).await;
    let dialer = TcpDialer::default();

    let first = running(&pools, &receipt, "t", 1).await;
    let conn = pools
        .reserve_connection(&first, &dialer)
        .await
        .expect("dialed");
    assert!(!conn.is_reused());
    let port = conn.get().local_addr().expect("local addr").port();
    assert_eq!(bounded("accept", origin.accepted.recv()).await, Some(port));
    conn.park();
    drop(first);

    let second = running(&pools, &receipt, "t", 2).await;
    let conn = pools
        .reserve_connection(&second, &dialer)
        .await
        .expect("reused");
    assert!(conn.is_reused());
    assert_eq!(
        conn.get().local_addr().expect("local addr").port(),
        port,
        "same socket"
    );
    assert_eq!(dialer.dials.load(std::sync::atomic::Ordering::SeqCst), 1);

    drop(conn);
    assert_eq!(
        bounded("EOF at the origin", origin.eof.recv()).await,
        Some(port)
    );
    drop(second);
    let snapshot = pools.snapshot();
    assert_eq!(snapshot.connections, Default::default(), "{snapshot:?}");
}

#[tokio::test]
async fn a_cancelled_activation_destroys_its_connection() {
    let mut origin = origin().await;
    let (pools, receipt) = pools_for(&origin, Limits::DEFAULT).await;
    let dialer = TcpDialer::default();
    let request = running(&pools, &receipt, "t", 1).await;
    let conn = pools
        .reserve_connection(&request, &dialer)
        .await
        .expect("dialed");
    let port = conn.get().local_addr().expect("local addr").port();
    assert_eq!(pools.snapshot().connections.active, 1);

    // The activation is cancelled: its future, and the connection, dropped.
    drop(conn);
    drop(request);
    assert_eq!(bounded("EOF", origin.eof.recv()).await, Some(port));
    assert_eq!(pools.snapshot().connections, Default::default());

    let again = running(&pools, &receipt, "t", 2).await;
    let conn = pools
        .reserve_connection(&again, &dialer)
        .await
        .expect("dialed anew");
    assert!(!conn.is_reused(), "nothing was parked");
}

#[tokio::test]
async fn the_node_wide_connection_limit_refuses_at_once() {
    let origin = origin().await;
    let limits = Limits {
        connections: 1,
        connections_per_client: 1,
        idle_connections: 1,
        ..Limits::DEFAULT
    };
    let (pools, receipt) = pools_for(&origin, limits).await;
    let other = pools
        .install(installation(
            &provider("web2"),
            0,
            b"k",
            tcp_config("web2", std::slice::from_ref(&origin.target)),
        ))
        .await
        .expect("install a second provider");
    let dialer = TcpDialer::default();
    let first = running(&pools, &receipt, "a", 1).await;
    let _held = pools
        .reserve_connection(&first, &dialer)
        .await
        .expect("dialed");
    // Another provider's client has room; the node has none, and no release
    // of one client is promised to another: refused without waiting.
    let second = running(&pools, &other, "b", 2).await;
    let refused = bounded(
        "an immediate refusal",
        pools.reserve_connection(&second, &dialer),
    )
    .await;
    assert_eq!(
        refused.err(),
        Some(ConnectError::Capacity {
            resource: "connections",
            used: 1,
            limit: 1
        })
    );
}

#[tokio::test]
async fn a_retired_epoch_never_refills_the_idle_pool() {
    let mut origin = origin().await;
    let (pools, receipt) = pools_for(&origin, Limits::DEFAULT).await;
    let dialer = TcpDialer::default();
    let request = running(&pools, &receipt, "t", 1).await;
    let conn = pools
        .reserve_connection(&request, &dialer)
        .await
        .expect("dialed");
    let port = conn.get().local_addr().expect("local addr").port();
    pools
        .install(installation(
            &provider("web"),
            1,
            b"k2",
            tcp_config("web", std::slice::from_ref(&origin.target)),
        ))
        .await
        .expect("rotate");
    assert_eq!(
        pools.snapshot().connections.retired,
        1,
        "the old epoch's connection counts as retired"
    );
    conn.park();
    assert_eq!(
        bounded("EOF", origin.eof.recv()).await,
        Some(port),
        "destroyed, not parked"
    );
    assert_eq!(pools.snapshot().connections.idle, 0);
    drop(request);
}

#[tokio::test]
async fn a_retired_registry_opens_no_connection() {
    let origin = origin().await;
    let (pools, receipt) = pools_for(&origin, Limits::DEFAULT).await;
    let request = running(&pools, &receipt, "t", 1).await;
    pools.retire().await;
    assert_eq!(
        pools
            .reserve_connection(&request, &TcpDialer::default())
            .await
            .err(),
        Some(ConnectError::Closed)
    );
}

#[tokio::test]
async fn a_tenant_at_its_share_of_a_client_waits_for_its_own_connections_only() {
    let origin = origin().await;
    let (pools, receipt) = pools_for(&origin, Limits::DEFAULT).await;
    let dialer = std::sync::Arc::new(TcpDialer::default());
    let share = Limits::DEFAULT.connections_per_tenant;
    let mut held = Vec::new();
    for session in 0..share {
        let request = running(&pools, &receipt, "hog", u64::from(session)).await;
        let conn = pools
            .reserve_connection(&request, &*dialer)
            .await
            .expect("within the share");
        held.push(conn);
    }
    let before = pools.snapshot();
    // One more for the hog waits for one of its own, and times out at its
    // deadline having taken nothing shared.
    let soon = tokio::time::Instant::now() + std::time::Duration::from_millis(100);
    let late = support::running_until(&pools, &receipt, "hog", 100, soon).await;
    assert_eq!(
        pools.reserve_connection(&late, &*dialer).await.err(),
        Some(ConnectError::Timeout)
    );
    assert_eq!(
        pools.snapshot().connections,
        before.connections,
        "nothing shared taken"
    );
    // Another tenant dials at once: the client still has room.
    let other = running(&pools, &receipt, "other", 101).await;
    let theirs = bounded(
        "another tenant's dial",
        pools.reserve_connection(&other, &*dialer),
    )
    .await;
    assert!(theirs.is_ok(), "{theirs:?}");
    // A waiting hog request gets the connection the hog parks next: idle,
    // it was no tenant's, and parking freed the hog's share.
    let waiter = running(&pools, &receipt, "hog", 102).await;
    let (pools2, dialer2) = (pools.clone(), std::sync::Arc::clone(&dialer));
    let waiting = support::task(async move {
        let conn = pools2.reserve_connection(&waiter, &*dialer2).await;
        conn.map(|c| c.is_reused())
    });
    tokio::task::yield_now().await;
    held.pop().expect("one held").park();
    let reused = bounded("the waiter to get the parked connection", waiting)
        .await
        .expect("waiter task");
    assert_eq!(reused, Ok(true));
}
