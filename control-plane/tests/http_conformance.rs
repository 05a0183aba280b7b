//! The conformance suite against the HTTP client, over real loopback
//! sockets to a reference server that answers from an in-memory store on a
//! manual clock.

mod conformance;
#[path = "http_support/mod.rs"]
mod support;

use std::sync::Arc;
use std::time::Duration;

use conformance::Backend;
use provider_pools_control_plane::clock::ManualClock;
use provider_pools_control_plane::v1::HttpClientConfig;
use provider_pools_control_plane::{BoxFuture, ControlPlane, MemoryClient, StoreLimits};
use support::server::{serve, Served};

struct HttpBackend {
    clock: ManualClock,
    served: Served,
}

impl HttpBackend {
    async fn start() -> Self {
        let clock = ManualClock::starting_at(1_000);
        let store = Arc::new(MemoryClient::with_clock(
            StoreLimits::MEMORY,
            Arc::new(clock.clone()),
        ));
        let served = serve(store).await;
        Self { clock, served }
    }
}

impl Backend for HttpBackend {
    /// A new client (its own queue and worker) of the one server.
    fn client(&self) -> Arc<dyn ControlPlane> {
        support::client_over(
            HttpClientConfig::new(&self.served.base),
            support::transport(),
        )
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

conformance_suite!(async { HttpBackend::start().await });
