//! What an operator reads of a registry: the snapshot of every count, the
//! pending and running requests per tenant and provider, and the sink
//! that hears every admission (`snapshot`, `usage`, `observe_admissions`).

use std::sync::Arc;

use crate::observe::AdmissionObserver;
use crate::priority::Priority;
use crate::provider_pools::ProviderPools;
use crate::snapshot::{ControlState, Held, Snapshot, Usage};

impl ProviderPools {
    /// Aggregate counts of everything the pools own.
    ///
    /// # Examples
    ///
    /// ```
    /// use provider_pools_actors::{BrokerGeneration, ControlState, PoolsConfig, ProviderPools};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let config = PoolsConfig::new(tokio::runtime::Handle::current(), BrokerGeneration::new());
    /// let pools = ProviderPools::start(config).await?;
    ///
    /// let snapshot = pools.snapshot();
    /// assert_eq!(snapshot.control, ControlState::Running);
    /// assert!(snapshot.owns_nothing());
    ///
    /// pools.retire().await;
    /// assert_eq!(pools.snapshot().control, ControlState::Retiring);
    /// # Ok(())
    /// # }
    /// ```
    pub fn snapshot(&self) -> Snapshot {
        let mut snapshot = self.inner.accounts.snapshot();
        if self.registry_lost() {
            snapshot.control = ControlState::Failed;
        }
        snapshot
    }

    /// Every tenant's, every provider's and every priority class's queued
    /// and running requests now: the per-key view behind per-tenant
    /// gauges. It reads the admission queue under its lock in O(tenants +
    /// providers with live work), so it suits a scrape, not every request.
    /// Tenants and providers with nothing queued or running are absent;
    /// every class is present.
    pub fn usage(&self) -> Usage {
        let usage = self.inner.queue.usage();
        let held = |(pending, running)| Held { pending, running };
        Usage {
            tenants: (usage.tenants.into_iter())
                .map(|(tenant, pending, running)| (tenant, held((pending, running))))
                .collect(),
            providers: (usage.providers.into_iter())
                .map(|(provider, pending, running)| (provider, held((pending, running))))
                .collect(),
            classes: (Priority::ALL.into_iter())
                .zip(usage.classes.map(held))
                .collect(),
        }
    }

    /// Installs the sink that hears every admission's outcome and wait
    /// from now on (a metrics exporter). One per registry: returns false,
    /// installing nothing, when one is installed already.
    pub fn observe_admissions(&self, observer: Arc<dyn AdmissionObserver>) -> bool {
        self.inner.observer.set(observer)
    }
}
