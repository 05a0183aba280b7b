//! One conformance suite for every backend of the `ControlPlane` trait.
//!
//! A backend test file provides a [`Backend`] and expands
//! [`conformance_suite!`] with an async expression that makes one:
//!
//! ```ignore
//! mod conformance;
//! conformance::conformance_suite!(async { MemoryBackend::new() });
//! ```
//!
//! A backend that also implements `Board` implements
//! [`board::BoardBackend`] and expands [`board_suite!`] the same way.
//!
//! Each case starts a fresh backend and asserts one behaviour of the
//! trait's contract (see `provider_pools_control_plane::client`). Time is
//! the backend's: a manual clock it advances, or real time for a real
//! server, where expiry is awaited with a bounded poll.

#![allow(dead_code, unreachable_pub)]

pub mod board;
pub mod cases;

use std::sync::Arc;
use std::time::Duration;

use provider_pools_control_plane::{BoxFuture, ControlPlane};

/// One backend under test.
pub trait Backend: Send + Sync + 'static {
    /// A client of this backend. Several calls may return clients that
    /// share one store (two nodes of one deployment).
    fn client(&self) -> Arc<dyn ControlPlane>;

    /// A short time to live the backend honours (etcd: whole seconds).
    fn ttl(&self) -> Duration;

    /// Makes `by` pass on the clock the backend expires by.
    fn elapse(&self, by: Duration) -> BoxFuture<'_, ()>;

    /// How long after a time to live ran out expiry may still be pending
    /// (zero for a manual clock).
    fn expiry_slack(&self) -> Duration;
}

/// Expands one `#[tokio::test]` per case against the backend `$make`
/// builds.
#[macro_export]
macro_rules! conformance_suite {
    ($make:expr) => {
        $crate::conformance_suite!(@cases $make;
            registration_is_discovered_ordered_by_node,
            discovery_is_scoped_to_its_service,
            registering_again_replaces_the_instance,
            a_heartbeat_extends_a_live_registration,
            a_registration_expires_without_heartbeat,
            deregistering_removes_and_is_idempotent,
            a_first_acquisition_grants_a_positive_token,
            a_held_lease_is_refused_to_another_node_naming_the_holder,
            the_live_holder_reacquires_with_the_same_token,
            renewal_keeps_the_token_and_extends_the_lease,
            renewal_with_a_wrong_token_or_holder_is_lost,
            release_frees_the_lease_and_keeps_its_token,
            release_by_a_non_holder_is_lost,
            tokens_strictly_increase_across_release_and_expiry,
            an_expired_lease_cannot_be_renewed,
            a_never_acquired_lease_reads_as_none,
            global_and_service_leases_are_distinct,
            two_clients_share_one_store,
        );
    };
    (@cases $make:expr; $($case:ident,)*) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $case() {
                let backend = $make.await;
                conformance::cases::$case(&backend).await;
            }
        )*
    };
}
