//! Live lowering (`ProviderPools::lower_limits`). `lower_limits` never
//! raises a limit: every field must be at most the limit in force, so a
//! later lowering never undoes an earlier one (checked here, where
//! lowerings are serialised). It never goes below use and is all or
//! nothing: every step only lowers; each step that can refuse (budgets, worker and
//! cleanup slots, shares), the scheduler last, and a refusal puts back
//! everything set. So a refused call changes no limit, and no limit ever
//! goes below use.
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
        if self.accounts.is_closed() {
            return Err(LowerError::Closed);
        }
        // Nothing is raised: a limit raised while the scheduler is asked
        // would let reservations through that a refusal could not take back.
        self.limits.check_lowering(&lowered)?;
        self.set_owned(&lowered).await?;
        self.accounts.set_queue_age(lowered.queue_age);
        self.accounts.set_idle_age(lowered.idle_age);
        self.limits = lowered;
        self.accounts.set_limits_in_force(lowered);
        tracing::info!(?lowered, "limits lowered");
        Ok(())
    }

    /// Sets the limits the registry keeps itself (budgets, worker and
    /// cleanup slots, tenant shares) to `target`, then gives the scheduler
    /// its ceilings; on a refusal, puts back everything it set.
    async fn set_owned(&self, target: &Limits) -> Result<(), LowerError> {
        let mut lowering = Lowering::default();
        self.lower_budgets(&mut lowering, target)?;
        self.lower_slots(&mut lowering, target)?;
        self.lower_shares(&mut lowering, target)?;
        self.lower_scheduler(target).await?;
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
        let accounts = &self.accounts;
        let node = [
            (
                LimitField::RetainedConfigurations,
                &accounts.retained,
                target.retained_configurations,
            ),
            (
                LimitField::ConfiguredClients,
                &accounts.clients,
                target.configured_clients,
            ),
            (
                LimitField::MetadataBytes,
                &accounts.metadata,
                target.metadata_bytes,
            ),
            (
                LimitField::Connections,
                &accounts.connections,
                target.connections,
            ),
            (
                LimitField::IdleConnections,
                &accounts.idle,
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
            .accounts
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
                    state.accounts.tenants.restore(previous);
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
