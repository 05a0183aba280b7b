//! The post cases of the board suite.

use provider_pools_control_plane::{ControlPlaneError, FencedRecord, MAX_BOARD_VALUE_BYTES};

use super::super::cases::{expire, global, registration};
use super::{acquired, instance, post, posts, record, register_and_post, topic, BoardBackend};

pub async fn posts_are_read_back_ordered_by_node(backend: &impl BoardBackend) {
    let board = backend.board();
    for name in ["node-c", "node-a", "node-b"] {
        register_and_post(
            backend,
            &*board,
            ("billing", name),
            "demand",
            name.as_bytes(),
        )
        .await;
    }
    assert_eq!(
        posts(&*board, "billing", "demand").await,
        [
            post("node-a", b"node-a"),
            post("node-b", b"node-b"),
            post("node-c", b"node-c")
        ]
    );
}

pub async fn a_second_post_replaces_the_first(backend: &impl BoardBackend) {
    let board = backend.board();
    register_and_post(backend, &*board, ("billing", "node-a"), "demand", b"first").await;
    board
        .post(
            instance("billing", "node-a"),
            topic("demand"),
            b"second".to_vec(),
        )
        .await
        .expect("posted again");
    assert_eq!(
        posts(&*board, "billing", "demand").await,
        [post("node-a", b"second")]
    );
}

pub async fn posts_are_scoped_to_their_service_and_topic(backend: &impl BoardBackend) {
    let board = backend.board();
    register_and_post(backend, &*board, ("bill", "node-a"), "dem", b"bill/dem").await;
    for other_topic in ["demand", "de"] {
        board
            .post(
                instance("bill", "node-a"),
                topic(other_topic),
                other_topic.as_bytes().to_vec(),
            )
            .await
            .expect("posted");
    }
    register_and_post(
        backend,
        &*board,
        ("billing", "node-b"),
        "dem",
        b"billing/dem",
    )
    .await;
    assert_eq!(
        posts(&*board, "bill", "dem").await,
        [post("node-a", b"bill/dem")]
    );
    assert_eq!(
        posts(&*board, "bill", "demand").await,
        [post("node-a", b"demand")]
    );
    assert_eq!(
        posts(&*board, "billing", "dem").await,
        [post("node-b", b"billing/dem")]
    );
    assert!(posts(&*board, "billing", "demand").await.is_empty());
    assert!(posts(&*board, "bil", "dem").await.is_empty());
}

pub async fn a_post_without_a_registration_is_refused(backend: &impl BoardBackend) {
    let board = backend.board();
    refused_unregistered(&*board, b"7", "not registered").await;
    // Another instance of the service registered changes nothing.
    board
        .register(registration(backend, "billing", "node-b"))
        .await
        .expect("registered");
    refused_unregistered(&*board, b"7", "still not registered").await;
    assert!(posts(&*board, "billing", "demand").await.is_empty());
}

pub async fn a_post_goes_with_its_deregistration(backend: &impl BoardBackend) {
    let board = backend.board();
    register_and_post(backend, &*board, ("billing", "node-a"), "demand", b"a").await;
    register_and_post(backend, &*board, ("billing", "node-b"), "demand", b"b").await;
    board
        .deregister(instance("billing", "node-a"))
        .await
        .expect("deregistered");
    assert_eq!(
        posts(&*board, "billing", "demand").await,
        [post("node-b", b"b")]
    );
    refused_unregistered(&*board, b"a", "deregistered").await;
}

pub async fn a_post_goes_when_its_registration_expires(backend: &impl BoardBackend) {
    let board = backend.board();
    register_and_post(backend, &*board, ("billing", "node-a"), "demand", b"a").await;
    expire(backend, "the post of an expired registration", || {
        let board = board.clone();
        async move { posts(&*board, "billing", "demand").await.is_empty() }
    })
    .await;
    refused_unregistered(&*board, b"a", "expired").await;
}

pub async fn a_post_survives_heartbeats_past_its_ttl(backend: &impl BoardBackend) {
    let board = backend.board();
    register_and_post(backend, &*board, ("billing", "node-a"), "demand", b"a").await;
    // Three half-ttl steps, each ending in a heartbeat: 1.5 ttl in all.
    for _ in 0..3 {
        backend.elapse(backend.ttl() / 2).await;
        board
            .heartbeat(instance("billing", "node-a"))
            .await
            .expect("heartbeat of a live registration");
    }
    assert_eq!(
        posts(&*board, "billing", "demand").await,
        [post("node-a", b"a")]
    );
}

pub async fn a_post_goes_when_its_registration_is_replaced(backend: &impl BoardBackend) {
    let board = backend.board();
    register_and_post(backend, &*board, ("billing", "node-a"), "demand", b"old").await;
    board
        .register(registration(backend, "billing", "node-a"))
        .await
        .expect("registered again");
    assert!(
        posts(&*board, "billing", "demand").await.is_empty(),
        "a replaced registration's post is listed"
    );
    board
        .post(
            instance("billing", "node-a"),
            topic("demand"),
            b"new".to_vec(),
        )
        .await
        .expect("re-posted under the new registration");
    assert_eq!(
        posts(&*board, "billing", "demand").await,
        [post("node-a", b"new")]
    );
}

pub async fn an_oversize_value_is_refused_and_the_largest_is_kept(backend: &impl BoardBackend) {
    let board = backend.board();
    let largest = vec![0xa5; MAX_BOARD_VALUE_BYTES];
    register_and_post(backend, &*board, ("billing", "node-a"), "demand", &largest).await;
    let error = board
        .post(
            instance("billing", "node-a"),
            topic("demand"),
            vec![0; MAX_BOARD_VALUE_BYTES + 1],
        )
        .await
        .expect_err("oversize post");
    assert!(
        matches!(
            error,
            ControlPlaneError::LimitExceeded {
                limit: "board value"
            }
        ),
        "{error:?}"
    );
    assert_eq!(
        posts(&*board, "billing", "demand").await,
        [post("node-a", &largest)]
    );

    let key = global("planner");
    let grant = acquired(backend, &key, "node-a").await;
    board
        .write_fenced(grant.clone(), largest.clone())
        .await
        .expect("the largest record");
    let error = board
        .write_fenced(grant.clone(), vec![0; MAX_BOARD_VALUE_BYTES + 1])
        .await
        .expect_err("oversize record");
    assert!(
        matches!(
            error,
            ControlPlaneError::LimitExceeded {
                limit: "board value"
            }
        ),
        "{error:?}"
    );
    assert_eq!(
        record(&*board, &key).await,
        Some(FencedRecord {
            token: grant.token,
            value: largest
        })
    );
}

/// A post by `node-a` of `billing` on `demand` is refused
/// `NotRegistered` (`why` names the case).
async fn refused_unregistered(
    board: &dyn provider_pools_control_plane::Board,
    value: &[u8],
    why: &str,
) {
    let error = board
        .post(
            instance("billing", "node-a"),
            topic("demand"),
            value.to_vec(),
        )
        .await
        .expect_err(why);
    assert!(
        matches!(error, ControlPlaneError::NotRegistered),
        "{why}: {error:?}"
    );
}
