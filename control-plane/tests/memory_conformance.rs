//! The conformance suite and its board part against the in-memory client,
//! on a manual clock: expiry is the clock advanced, never a sleep.

mod conformance;

use std::sync::Arc;
use std::time::Duration;

use conformance::board::BoardBackend;
use conformance::Backend;
use provider_pools_control_plane::clock::ManualClock;
use provider_pools_control_plane::{Board, BoxFuture, ControlPlane, MemoryClient, StoreLimits};

struct MemoryBackend {
    clock: ManualClock,
    client: Arc<MemoryClient>,
}

impl MemoryBackend {
    fn new() -> Self {
        let clock = ManualClock::starting_at(1_000);
        let client = Arc::new(MemoryClient::with_clock(
            StoreLimits::MEMORY,
            Arc::new(clock.clone()),
        ));
        Self { clock, client }
    }
}

impl Backend for MemoryBackend {
    fn client(&self) -> Arc<dyn ControlPlane> {
        self.client.clone()
    }

    fn ttl(&self) -> Duration {
        Duration::from_secs(1)
    }

    fn elapse(&self, by: Duration) -> BoxFuture<'_, ()> {
        self.clock
            .advance_ms(u64::try_from(by.as_millis()).expect("short"));
        Box::pin(async {})
    }

    fn expiry_slack(&self) -> Duration {
        Duration::ZERO
    }
}

impl BoardBackend for MemoryBackend {
    fn board(&self) -> Arc<dyn Board> {
        self.client.clone()
    }
}

conformance_suite!(async { MemoryBackend::new() });
board_suite!(async { MemoryBackend::new() });
