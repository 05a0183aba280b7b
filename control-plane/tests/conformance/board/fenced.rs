//! The fenced-record cases of the board suite.

use provider_pools_control_plane::{FencedRecord, LeaseGrant, LeaseKey, LeaseName, ServiceGroup};

use super::super::cases::{expire, global, node};
use super::{acquired, assert_lease_lost, record, BoardBackend};

pub async fn the_holder_writes_a_fenced_record_with_its_token(backend: &impl BoardBackend) {
    let board = backend.board();
    let key = global("planner");
    let grant = acquired(backend, &key, "node-a").await;
    board
        .write_fenced(grant.clone(), b"plan-1".to_vec())
        .await
        .expect("written by the holder");
    board
        .write_fenced(grant.clone(), b"plan-2".to_vec())
        .await
        .expect("written again");
    assert_eq!(
        record(&*board, &key).await,
        Some(FencedRecord {
            token: grant.token,
            value: b"plan-2".to_vec()
        })
    );
    // Another lease's record, even one of the same name, is distinct.
    let service_key = LeaseKey::Service(ServiceGroup::new("planner").expect("valid"));
    assert_eq!(record(&*board, &service_key).await, None);
}

pub async fn a_stale_token_cannot_write_and_the_record_is_unchanged(backend: &impl BoardBackend) {
    let board = backend.board();
    let key = global("planner");
    let first = acquired(backend, &key, "node-a").await;
    board
        .write_fenced(first.clone(), b"by a".to_vec())
        .await
        .expect("written by a");
    board.release(first.clone()).await.expect("released");
    let second = acquired(backend, &key, "node-b").await;
    assert!(second.token > first.token, "{second:?} after {first:?}");
    board
        .write_fenced(second.clone(), b"by b".to_vec())
        .await
        .expect("written by b");
    assert_lease_lost(
        board.write_fenced(first.clone(), b"stale".to_vec()).await,
        "a write with a's stale token",
    );
    let wrong_token = LeaseGrant {
        token: first.token,
        ..second.clone()
    };
    assert_lease_lost(
        board.write_fenced(wrong_token, b"stale".to_vec()).await,
        "b's write with a's token",
    );
    assert_eq!(
        record(&*board, &key).await,
        Some(FencedRecord {
            token: second.token,
            value: b"by b".to_vec()
        })
    );
}

pub async fn another_holder_with_the_right_token_cannot_write(backend: &impl BoardBackend) {
    let board = backend.board();
    let key = global("planner");
    let grant = acquired(backend, &key, "node-a").await;
    let forged = LeaseGrant {
        holder: node("node-b"),
        ..grant.clone()
    };
    assert_lease_lost(
        board.write_fenced(forged, b"forged".to_vec()).await,
        "a write naming another holder",
    );
    assert_eq!(record(&*board, &key).await, None);
}

pub async fn a_fenced_write_after_expiry_is_lost_and_the_record_is_kept(
    backend: &impl BoardBackend,
) {
    let board = backend.board();
    let key = LeaseKey::Global(LeaseName::new("planner").expect("valid"));
    let grant = acquired(backend, &key, "node-a").await;
    board
        .write_fenced(grant.clone(), b"before".to_vec())
        .await
        .expect("written while held");
    expire(backend, "the lease", || {
        let board = board.clone();
        let key = key.clone();
        async move {
            let state = board.read_lease(key).await.expect("read");
            state.is_some_and(|state| state.holder.is_none())
        }
    })
    .await;
    assert_lease_lost(
        board.write_fenced(grant.clone(), b"after".to_vec()).await,
        "a write after expiry",
    );
    assert_eq!(
        record(&*board, &key).await,
        Some(FencedRecord {
            token: grant.token,
            value: b"before".to_vec()
        })
    );
}

pub async fn a_fenced_record_survives_release(backend: &impl BoardBackend) {
    let board = backend.board();
    let key = global("planner");
    let grant = acquired(backend, &key, "node-a").await;
    board
        .write_fenced(grant.clone(), b"decided".to_vec())
        .await
        .expect("written");
    board.release(grant.clone()).await.expect("released");
    let expected = Some(FencedRecord {
        token: grant.token,
        value: b"decided".to_vec(),
    });
    assert_eq!(record(&*board, &key).await, expected);
    // The next holder reads what the last one decided.
    let next = acquired(backend, &key, "node-b").await;
    assert_eq!(record(&*backend.board(), &next.key).await, expected);
}

pub async fn a_never_written_record_reads_as_none(backend: &impl BoardBackend) {
    let board = backend.board();
    assert_eq!(record(&*board, &global("never")).await, None);
    let key = global("held");
    let _grant = acquired(backend, &key, "node-a").await;
    assert_eq!(record(&*board, &key).await, None);
}
