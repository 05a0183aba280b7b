//! The board part of the conformance suite: one behaviour of the `Board`
//! contract (see `provider_pools_control_plane::board`) per case, for the
//! backends that implement it.
//!
//! A backend test file implements [`BoardBackend`] beside [`Backend`] and
//! expands [`board_suite!`](crate::board_suite) with the same expression as
//! the main suite.

use std::sync::Arc;

use provider_pools_control_plane::{
    Board, ControlPlaneError, FencedRecord, LeaseGrant, LeaseKey, Post, PresenceKey, TopicName,
};

use super::cases::{node, registration, request, service};
use super::Backend;

pub mod fenced;
pub mod posts;

/// A backend whose clients also implement [`Board`].
pub trait BoardBackend: Backend {
    /// A client of this backend with its board; like
    /// [`Backend::client`], several share one store.
    fn board(&self) -> Arc<dyn Board>;
}

/// Expands one `#[tokio::test]` per board case against the backend
/// `$make` builds, in a module `board_cases`.
#[macro_export]
macro_rules! board_suite {
    ($make:expr) => {
        mod board_cases {
            use super::*;

            $crate::board_suite!(@cases $make; posts;
                posts_are_read_back_ordered_by_node,
                a_second_post_replaces_the_first,
                posts_are_scoped_to_their_service_and_topic,
                a_post_without_a_registration_is_refused,
                a_post_goes_with_its_deregistration,
                a_post_goes_when_its_registration_expires,
                a_post_survives_heartbeats_past_its_ttl,
                a_post_goes_when_its_registration_is_replaced,
                an_oversize_value_is_refused_and_the_largest_is_kept,
            );
            $crate::board_suite!(@cases $make; fenced;
                the_holder_writes_a_fenced_record_with_its_token,
                a_stale_token_cannot_write_and_the_record_is_unchanged,
                another_holder_with_the_right_token_cannot_write,
                a_fenced_write_after_expiry_is_lost_and_the_record_is_kept,
                a_fenced_record_survives_release,
                a_never_written_record_reads_as_none,
            );
        }
    };
    (@cases $make:expr; $module:ident; $($case:ident,)*) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $case() {
                let backend = $make.await;
                conformance::board::$module::$case(&backend).await;
            }
        )*
    };
}

pub fn topic(name: &str) -> TopicName {
    TopicName::new(name).expect("valid topic")
}

pub fn instance(service_name: &str, node_name: &str) -> PresenceKey {
    PresenceKey {
        service: service(service_name),
        node: node(node_name),
    }
}

pub fn post(node_name: &str, value: &[u8]) -> Post {
    Post {
        node: node(node_name),
        value: value.to_vec(),
    }
}

/// Registers `service_name/node_name` and posts `value` on `topic_name`.
pub async fn register_and_post(
    backend: &impl BoardBackend,
    board: &dyn Board,
    (service_name, node_name): (&str, &str),
    topic_name: &str,
    value: &[u8],
) {
    board
        .register(registration(backend, service_name, node_name))
        .await
        .expect("registered");
    board
        .post(
            instance(service_name, node_name),
            topic(topic_name),
            value.to_vec(),
        )
        .await
        .expect("posted");
}

pub async fn posts(board: &dyn Board, service_name: &str, topic_name: &str) -> Vec<Post> {
    board
        .read_posts(service(service_name), topic(topic_name))
        .await
        .expect("read")
}

pub async fn acquired(backend: &impl BoardBackend, key: &LeaseKey, holder: &str) -> LeaseGrant {
    backend
        .board()
        .acquire(request(backend, key, holder))
        .await
        .expect("acquired")
}

pub async fn record(board: &dyn Board, key: &LeaseKey) -> Option<FencedRecord> {
    board.read_fenced(key.clone()).await.expect("read")
}

pub fn assert_lease_lost(result: Result<(), ControlPlaneError>, what: &str) {
    match result {
        Err(ControlPlaneError::LeaseLost) => {}
        other => panic!("{what}: expected LeaseLost, got {other:?}"),
    }
}
