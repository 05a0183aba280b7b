//! The lifecycle of Vault connections against a real OpenBao dev server:
//! a call dropped or timed out mid-exchange destroys its connection, whose
//! socket is closed before the driver job owning it returns its worker
//! slot; a rotation sends the new token while calls of the old epoch
//! finish, proven by revoking the old token. A relay in front of the
//! server holds its answers, so a call stays mid-exchange while a test
//! acts.

mod support;

use std::time::Duration;

use provider_pools_actors::{ConnectionCounts, Limits, ProviderPools};
use provider_pools_adapters::http_origin::HttpDialer;
use provider_pools_adapters::vault::{self, SecretPath, VaultError, VaultLimits};
use support::relay::Relay;
use support::sockets;
use support::vault::{data, install, kv_token, revoke, running, running_until, start_bao, ROOT};
use support::{bounded, deadline, eventually, start, task};

fn path(text: &str) -> SecretPath {
    SecretPath::parse(text).expect("valid path")
}

async fn assert_clean_shutdown(pools: &ProviderPools) {
    let report = pools.shutdown(deadline()).await;
    assert!(report.is_clean(), "shutdown leaves {report:?}");
    assert_eq!(report.connections, ConnectionCounts::default());
    assert_eq!(
        (report.workers, report.drivers, report.metadata_bytes),
        (0, 0, 0)
    );
}

/// The relay's only client socket, seen open in this process, with its
/// connection and the driver that owns it charged.
fn the_open_socket(pools: &ProviderPools, relay: &Relay) -> u64 {
    let clients = relay.clients();
    assert_eq!(clients.len(), 1, "one socket: {clients:?}");
    let socket = sockets::inode(clients[0], relay.addr()).expect("the client's socket is listed");
    assert!(sockets::process_holds(socket), "the socket is open");
    let snapshot = pools.snapshot();
    assert_eq!(snapshot.connections.active, 1, "{snapshot:?}");
    assert_eq!(
        (snapshot.drivers, snapshot.workers),
        (1, 0),
        "the driver runs, on no worker slot: {snapshot:?}"
    );
    socket
}

/// Waits until every charge is back, checking on each snapshot that the
/// driver was joined only after `socket` was closed (no descriptor of this
/// process refers to it any more). The snapshot is taken before the socket
/// is looked up, so a joined driver seen with the socket still held would
/// be a refund before destruction.
async fn every_charge_returns_after_the_socket_closes(pools: &ProviderPools, socket: u64) {
    eventually("every charge to return", || {
        let snapshot = pools.snapshot();
        if snapshot.drivers == 0 {
            assert!(
                !sockets::process_holds(socket),
                "the driver was joined while its socket was open: {snapshot:?}"
            );
        }
        snapshot.drivers == 0
            && snapshot.connections == ConnectionCounts::default()
            && snapshot.running_requests == 0
    })
    .await;
    assert!(!sockets::process_holds(socket), "the socket is closed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropping_a_call_mid_exchange_closes_its_socket_and_returns_its_charges() {
    let bao = start_bao().await;
    let mut relay = Relay::start(bao.addr()).await;
    let pools = start(Limits::DEFAULT).await;
    let receipt = install(&pools, &relay.target, &[], ROOT.as_bytes(), 0).await;
    let dialer = std::sync::Arc::new(HttpDialer::new(pools.clone()));
    let limits = VaultLimits::default();
    let db = path("app/db");
    let request = running(&pools, &receipt, 1).await;
    vault::write(
        &pools,
        &request,
        &dialer,
        &db,
        data(&[("k", "v")]),
        None,
        limits,
    )
    .await
    .expect("write");
    drop(request);
    eventually("the connection is parked", || {
        pools.snapshot().connections.idle == 1
    })
    .await;

    // The next read reuses the parked connection; the server answers it,
    // and the relay holds the answer: the call is mid-exchange.
    relay.hold();
    let call = {
        let (pools, dialer, db) = (pools.clone(), dialer.clone(), db.clone());
        let request = running(&pools, &receipt, 2).await;
        task(async move { vault::read(&pools, &request, &dialer, &db, limits).await })
    };
    relay.answer_held().await;
    let socket = the_open_socket(&pools, &relay);
    assert_eq!(pools.snapshot().running_requests, 1);
    assert!(relay.no_close_pending(), "the relay saw no close");

    call.abort();
    assert!(bounded("the call to end", call)
        .await
        .expect_err("aborted")
        .is_cancelled());
    // The connection is destroyed: its driver closes the socket and only
    // then returns its worker slot; the connection charges and the
    // request's running slot return too, and the relay reads EOF.
    every_charge_returns_after_the_socket_closes(&pools, socket).await;
    relay.client_closed().await;
    eventually("the relay's sockets to close", || relay.open() == 0).await;
    assert_eq!(dialer.dials(), 1, "nothing was retried");
    relay.release();
    assert_clean_shutdown(&pools).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deadline_mid_exchange_times_out_and_destroys_the_connection() {
    let bao = start_bao().await;
    let mut relay = Relay::start(bao.addr()).await;
    let pools = start(Limits::DEFAULT).await;
    let receipt = install(&pools, &relay.target, &[], ROOT.as_bytes(), 0).await;
    let dialer = HttpDialer::new(pools.clone());
    let limits = VaultLimits::default();
    let db = path("app/db");
    let request = running(&pools, &receipt, 1).await;
    vault::write(
        &pools,
        &request,
        &dialer,
        &db,
        data(&[("k", "v")]),
        None,
        limits,
    )
    .await
    .expect("write");
    drop(request);

    eventually("the connection is parked", || {
        pools.snapshot().connections.idle == 1
    })
    .await;
    let socket = sockets::inode(relay.clients()[0], relay.addr()).expect("the parked socket");

    relay.hold();
    let soon = tokio::time::Instant::now() + Duration::from_millis(300);
    let request = running_until(&pools, &receipt, 2, soon).await;
    let err = bounded(
        "the deadline",
        vault::read(&pools, &request, &dialer, &db, limits),
    )
    .await
    .expect_err("held past the deadline");
    assert!(matches!(err, VaultError::Timeout), "{err:?}");
    assert_eq!(err.code(), "timeout");
    drop(request);
    every_charge_returns_after_the_socket_closes(&pools, socket).await;
    relay.client_closed().await;
    relay.release();
    assert_clean_shutdown(&pools).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rotation_sends_the_new_token_while_calls_of_the_old_epoch_finish() {
    const IN_FLIGHT: u64 = 3;
    let bao = start_bao().await;
    let mut relay = Relay::start(bao.addr()).await;
    let old_token = kv_token(bao.addr()).await;
    let new_token = kv_token(bao.addr()).await;
    let pools = start(Limits::DEFAULT).await;
    let first = install(&pools, &relay.target, &[], old_token.as_bytes(), 0).await;
    let dialer = std::sync::Arc::new(HttpDialer::new(pools.clone()));
    let limits = VaultLimits::default();
    let db = path("app/db");
    let setup = running(&pools, &first, 1).await;
    vault::write(
        &pools,
        &setup,
        &dialer,
        &db,
        data(&[("user", "alice")]),
        None,
        limits,
    )
    .await
    .expect("write with the first token");

    // Load on epoch 1: requests admitted before the rotation; the first
    // one's read is mid-exchange (the relay holds its answer) when it comes.
    let mut old_requests = Vec::new();
    for session in 0..IN_FLIGHT {
        old_requests.push(running(&pools, &first, 10 + session).await);
    }
    relay.hold();
    let held = {
        let (pools, dialer, db) = (pools.clone(), dialer.clone(), db.clone());
        let request = old_requests[0].clone();
        task(async move { vault::read(&pools, &request, &dialer, &db, limits).await })
    };
    relay.answer_held().await;

    let second = install(&pools, &relay.target, &[], new_token.as_bytes(), 1).await;
    assert_eq!(second.epoch.get(), 2);
    relay.release();
    let secret = bounded("the held old-epoch call", held)
        .await
        .expect("task")
        .expect("the old-epoch read finishes after the rotation");
    assert_eq!(secret.to_map().expect("object"), data(&[("user", "alice")]));
    // The other old-epoch requests run their calls now, concurrently.
    let calls: Vec<_> = old_requests[1..]
        .iter()
        .map(|request| {
            let (pools, dialer, db, request) =
                (pools.clone(), dialer.clone(), db.clone(), request.clone());
            task(async move { vault::read(&pools, &request, &dialer, &db, limits).await })
        })
        .collect();
    for call in calls {
        let secret = bounded("an old-epoch call", call)
            .await
            .expect("task")
            .expect("an old-epoch read after the rotation");
        assert_eq!(secret.metadata.version, 1);
    }
    drop(secret);

    // Revoke the old token: new calls still succeed, so they send the new
    // token; a call still running on the old epoch is refused by the server,
    // so the old epoch really sends the old token.
    revoke(bao.addr(), &old_token).await;
    let fresh = running(&pools, &second, 20).await;
    assert_eq!(fresh.client().epoch().get(), 2);
    vault::write(
        &pools,
        &fresh,
        &dialer,
        &db,
        data(&[("user", "bob")]),
        Some(1),
        limits,
    )
    .await
    .expect("the new token writes");
    let secret = vault::read(&pools, &fresh, &dialer, &db, limits)
        .await
        .expect("the new token reads");
    assert_eq!(secret.metadata.version, 2);
    let err = vault::read(&pools, &old_requests[0], &dialer, &db, limits)
        .await
        .expect_err("the old token is revoked");
    assert!(matches!(err, VaultError::Denied), "{err:?}");

    // Once its last request is gone, the old epoch drains.
    assert_eq!(pools.snapshot().retained_epochs, 2);
    drop((old_requests, setup));
    support::quiescent(&pools).await;
    assert_eq!(pools.snapshot().retained_epochs, 1, "the old epoch drains");
    drop((secret, fresh));
    assert_clean_shutdown(&pools).await;
}
