//! Live lowering (`ProviderPools::lower_limits`): all or nothing, in two
//! steps. Every field first goes to the lower of the limits in force and
//! the requested ones — each step that can refuse (budgets, worker and
//! cleanup slots, shares), the scheduler last — and a refusal puts back
//! everything set; only once all passed are the raises applied, which
//! nothing refuses. So a refused call never lets a reservation through at a
//! limit it would have raised, and no limit ever goes below use.
//!
//! The steps write what they changed into a [`Lowering`], a transaction
//! guard that puts every change back, newest first, when it is dropped
//! without [`Lowering::commit`].

use std::sync::Arc;

use tokio::time::Instant;

use super::{State, SCHEDULER_WAIT};
use crate::budget::Budget;
use crate::error::LowerError;
use crate::limits::{LimitField, Limits};
use crate::scheduler::{self, CeilingsRefused};
use crate::tenants::{Lowered, ShareTable};

impl State {
    /// Lowers limits, all or nothing; see `ProviderPools::lower_limits`.
    pub(crate) async fn lower_limits(&mut self, lowered: Limits) -> Result<(), LowerError> {
        if self.ledger.is_closed() {
            return Err(LowerError::Closed);
        }
        // Until every check passed, what the registry sets itself only goes
        // down: a limit raised back towards its startup value while the
        // scheduler is asked would let reservations through that a refusal
        // could not take back.
        self.set_owned(&floor(&self.limits, &lowered), Some(&lowered))
            .await?;
        // Every check passed: the raises, which nothing refuses.
        let _ = self.set_owned(&lowered, None).await;
        self.ledger.set_queue_age(lowered.queue_age);
        self.ledger.set_idle_age(lowered.idle_age);
        self.limits = lowered;
        tracing::info!(?lowered, "limits lowered");
        Ok(())
    }

    /// Sets the limits the registry keeps itself (budgets, worker and
    /// cleanup slots, tenant shares) to `target`, then gives the scheduler
    /// the ceilings of `scheduler`, if any; on a refusal, puts back
    /// everything it set.
    async fn set_owned(
        &self,
        target: &Limits,
        scheduler: Option<&Limits>,
    ) -> Result<(), LowerError> {
        let mut lowering = Lowering::default();
        self.lower_budgets(&mut lowering, target)?;
        self.lower_slots(&mut lowering, target)?;
        self.lower_shares(&mut lowering, target)?;
        if let Some(ceilings) = scheduler {
            self.lower_scheduler(ceilings).await?;
        }
        lowering.commit();
        Ok(())
    }

    /// The node's budgets, each provider's clients and each client's
    /// connections.
    fn lower_budgets<'a>(
        &'a self,
        lowering: &mut Lowering<'a>,
        target: &Limits,
    ) -> Result<(), LowerError> {
        let ledger = &self.ledger;
        let node = [
            (
                LimitField::RetainedConfigurations,
                &ledger.retained,
                target.retained_configurations,
            ),
            (
                LimitField::ConfiguredClients,
                &ledger.clients,
                target.configured_clients,
            ),
            (
                LimitField::MetadataBytes,
                &ledger.metadata,
                target.metadata_bytes,
            ),
            (
                LimitField::Connections,
                &ledger.connections,
                target.connections,
            ),
            (
                LimitField::IdleConnections,
                &ledger.idle,
                target.idle_connections,
            ),
        ];
        let providers = self.providers.values().map(|p| {
            (
                LimitField::ClientsPerProvider,
                &p.clients,
                target.clients_per_provider,
            )
        });
        let clients = self.epochs.values().flat_map(|record| {
            record.published.all_client_connections().map(|budget| {
                (
                    LimitField::ConnectionsPerClient,
                    budget,
                    target.connections_per_client,
                )
            })
        });
        for (field, budget, requested) in node.into_iter().chain(providers).chain(clients) {
            let previous = budget.limit();
            budget
                .set_limit(requested)
                .map_err(|in_use| refused(field, in_use.used, requested))?;
            lowering.push(Undo::Budget(budget, previous));
        }
        Ok(())
    }

    /// The worker pool's and the cleanup actor's slots.
    fn lower_slots<'a>(
        &'a self,
        lowering: &mut Lowering<'a>,
        target: &Limits,
    ) -> Result<(), LowerError> {
        let (field, requested) = (LimitField::ProviderWorkers, target.provider_workers);
        self.workers
            .set_limit(requested)
            .map_err(|in_use| refused(field, in_use.used, requested))?;
        lowering.push(Undo::Workers(self, self.limits.provider_workers));
        let (field, requested) = (LimitField::CleanupJobs, target.cleanup_jobs);
        self.cleanup
            .set_limit(requested)
            .map_err(|in_use| refused(field, in_use.used, requested))?;
        lowering.push(Undo::Cleanup(self, self.limits.cleanup_jobs));
        Ok(())
    }

    /// Each client's share per tenant, then the node's tenant shares.
    fn lower_shares<'a>(
        &'a self,
        lowering: &mut Lowering<'a>,
        target: &Limits,
    ) -> Result<(), LowerError> {
        let share = target.connections_share();
        let tables = self
            .epochs
            .values()
            .flat_map(|record| record.published.all_client_tenants());
        for table in tables {
            let previous = table
                .set_share(share, true)
                .map_err(|in_use| refused(LimitField::ConnectionsPerTenant, in_use.used, share))?;
            lowering.push(Undo::ClientShare(table, previous));
        }
        let previous = self
            .ledger
            .tenants
            .lower(Lowered::of(target))
            .map_err(|in_use| {
                let requested = target.metadata_per_tenant;
                refused(LimitField::MetadataPerTenant, in_use.used, requested)
            })?;
        lowering.push(Undo::TenantShares(self, previous));
        Ok(())
    }

    async fn lower_scheduler(&self, lowered: &Limits) -> Result<(), LowerError> {
        let deadline = Instant::now() + SCHEDULER_WAIT;
        let ceilings = scheduler::ceilings(lowered);
        match self.scheduler.set_ceilings(ceilings, deadline).await {
            Ok(()) => Ok(()),
            Err(CeilingsRefused::InUse(in_use)) => Err(LowerError::InUse {
                field: in_use.field,
                used: in_use.used,
                requested: in_use.requested,
            }),
            Err(CeilingsRefused::Unanswered) => Err(LowerError::Busy),
        }
    }
}

/// One change a lowering made, with what it replaced.
enum Undo<'a> {
    Budget(&'a Arc<Budget>, u32),
    Workers(&'a State, u32),
    Cleanup(&'a State, u32),
    ClientShare(&'a ShareTable, u32),
    TenantShares(&'a State, Lowered),
}

/// The changes of one lowering in progress: dropped without
/// [`Self::commit`], it puts each back, newest first. Putting back raises
/// a limit to what it was, which cannot be refused.
#[derive(Default)]
struct Lowering<'a> {
    done: Vec<Undo<'a>>,
}

impl<'a> Lowering<'a> {
    fn push(&mut self, undo: Undo<'a>) {
        self.done.push(undo);
    }

    /// Keeps every change.
    fn commit(mut self) {
        self.done.clear();
    }
}

impl Drop for Lowering<'_> {
    fn drop(&mut self) {
        while let Some(undo) = self.done.pop() {
            let _ = match undo {
                Undo::Budget(budget, previous) => budget.set_limit(previous),
                Undo::Workers(state, previous) => state.workers.set_limit(previous),
                Undo::Cleanup(state, previous) => state.cleanup.set_limit(previous),
                Undo::ClientShare(table, previous) => table.set_share(previous, false).map(drop),
                Undo::TenantShares(state, previous) => {
                    state.ledger.tenants.restore(previous);
                    Ok(())
                }
            };
        }
    }
}

/// The refusal of `field`: `used` is in use, above `requested`.
fn refused(field: LimitField, used: u32, requested: u32) -> LowerError {
    LowerError::InUse {
        field,
        used,
        requested,
    }
}

/// `a` and `b`, field by field, the lower of each limit the registry sets
/// itself ([`State::set_owned`]); the rest as in `b`.
fn floor(a: &Limits, b: &Limits) -> Limits {
    Limits {
        retained_configurations: a.retained_configurations.min(b.retained_configurations),
        configured_clients: a.configured_clients.min(b.configured_clients),
        clients_per_provider: a.clients_per_provider.min(b.clients_per_provider),
        connections: a.connections.min(b.connections),
        connections_per_client: a.connections_per_client.min(b.connections_per_client),
        connections_per_tenant: a.connections_per_tenant.min(b.connections_per_tenant),
        idle_connections: a.idle_connections.min(b.idle_connections),
        requests_per_tenant: a.requests_per_tenant.min(b.requests_per_tenant),
        provider_workers: a.provider_workers.min(b.provider_workers),
        workers_per_tenant: a.workers_per_tenant.min(b.workers_per_tenant),
        cleanup_jobs: a.cleanup_jobs.min(b.cleanup_jobs),
        metadata_bytes: a.metadata_bytes.min(b.metadata_bytes),
        metadata_per_tenant: a.metadata_per_tenant.min(b.metadata_per_tenant),
        ..*b
    }
}
