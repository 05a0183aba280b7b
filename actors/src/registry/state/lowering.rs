//! Live lowering (`ProviderPools::lower_limits`): all or nothing, in two
//! steps. Every field first goes to the lower of the limits in force and
//! the requested ones — each step that can refuse (budgets, worker and
//! cleanup pools, shares), the scheduler last — and a refusal puts back
//! everything set; only once all passed are the raises applied, which
//! nothing refuses. So a refused call never lets a reservation through at a
//! limit it would have raised, and no limit ever goes below use.

use std::sync::Arc;

use tokio::sync::oneshot;
use tokio::time::Instant;

use super::{State, SCHEDULER_WAIT};
use crate::budget::Budget;
use crate::error::LowerError;
use crate::limits::{LimitField, Limits};
use crate::scheduler;

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
    /// cleanup pools, tenant shares) to `target`, then gives the scheduler
    /// the ceilings of `scheduler`, if any; on a refusal, puts back
    /// everything it set.
    async fn set_owned(
        &mut self,
        target: &Limits,
        scheduler: Option<&Limits>,
    ) -> Result<(), LowerError> {
        let mut budgets: Vec<(LimitField, &Arc<Budget>, u32)> = vec![
            (
                LimitField::RetainedConfigurations,
                &self.ledger.retained,
                target.retained_configurations,
            ),
            (
                LimitField::ConfiguredClients,
                &self.ledger.clients,
                target.configured_clients,
            ),
            (
                LimitField::MetadataBytes,
                &self.ledger.metadata,
                target.metadata_bytes,
            ),
            (
                LimitField::Connections,
                &self.ledger.connections,
                target.connections,
            ),
            (
                LimitField::IdleConnections,
                &self.ledger.idle,
                target.idle_connections,
            ),
        ];
        budgets.extend(self.providers.values().map(|p| {
            (
                LimitField::ClientsPerProvider,
                &p.clients,
                target.clients_per_provider,
            )
        }));
        budgets.extend(self.epochs.values().flat_map(|record| {
            record.published.all_client_connections().map(|budget| {
                (
                    LimitField::ConnectionsPerClient,
                    budget,
                    target.connections_per_client,
                )
            })
        }));
        let mut lowered_so_far = Vec::with_capacity(budgets.len());
        let mut refusal = None;
        for (field, budget, requested) in budgets {
            let previous = budget.limit();
            match budget.set_limit(requested) {
                Ok(()) => lowered_so_far.push((budget, previous)),
                Err(in_use) => {
                    refusal = Some(LowerError::InUse {
                        field,
                        used: in_use.used,
                        requested,
                    });
                    break;
                }
            }
        }
        let pools = [
            (
                LimitField::ProviderWorkers,
                target.provider_workers,
                self.limits.provider_workers,
            ),
            (
                LimitField::CleanupJobs,
                target.cleanup_jobs,
                self.limits.cleanup_jobs,
            ),
        ];
        let mut pools_lowered = 0;
        for (field, requested, _) in pools {
            if refusal.is_some() {
                break;
            }
            let result = match field {
                LimitField::ProviderWorkers => self.workers.set_limit(requested),
                _ => self.cleanup.set_limit(requested),
            };
            match result {
                Ok(()) => pools_lowered += 1,
                Err(in_use) => {
                    refusal = Some(LowerError::InUse {
                        field,
                        used: in_use.used,
                        requested,
                    })
                }
            }
        }
        let mut shares_lowered = None;
        let client_shares: Vec<&crate::tenants::ShareTable> = self
            .epochs
            .values()
            .flat_map(|record| record.published.all_client_tenants())
            .collect();
        let mut client_shares_lowered = Vec::new();
        if refusal.is_none() {
            let share = target.connections_share();
            for table in &client_shares {
                match table.set_share(share, true) {
                    Ok(previous) => client_shares_lowered.push((*table, previous)),
                    Err(in_use) => {
                        refusal = Some(LowerError::InUse {
                            field: LimitField::ConnectionsPerTenant,
                            used: in_use.used,
                            requested: share,
                        });
                        break;
                    }
                }
            }
        }
        if refusal.is_none() {
            let shares = &self.ledger.tenants;
            match shares.lower(crate::tenants::Lowered::of(target)) {
                Ok(previous) => shares_lowered = Some(previous),
                Err(in_use) => {
                    refusal = Some(LowerError::InUse {
                        field: LimitField::MetadataPerTenant,
                        used: in_use.used,
                        requested: target.metadata_per_tenant,
                    })
                }
            }
        }
        if let (None, Some(ceilings)) = (&refusal, scheduler) {
            refusal = self.lower_scheduler(ceilings).await.err();
        }
        if let Some(refusal) = refusal {
            if let Some(previous) = shares_lowered {
                self.ledger.tenants.restore(previous);
            }
            for (table, previous) in client_shares_lowered {
                let _ = table.set_share(previous, false);
            }
            for (budget, previous) in lowered_so_far {
                // Restoring a higher limit cannot fail.
                let _ = budget.set_limit(previous);
            }
            for (field, _, previous) in pools.into_iter().take(pools_lowered) {
                let _ = match field {
                    LimitField::ProviderWorkers => self.workers.set_limit(previous),
                    _ => self.cleanup.set_limit(previous),
                };
            }
            return Err(refusal);
        }
        Ok(())
    }

    async fn lower_scheduler(&self, lowered: &Limits) -> Result<(), LowerError> {
        let (reply, answer) = oneshot::channel();
        let msg = scheduler::Msg::SetCeilings {
            ceilings: scheduler::ceilings(lowered),
            reply: reply.into(),
        };
        let deadline = Instant::now() + SCHEDULER_WAIT;
        self.scheduler
            .send_within(msg, deadline)
            .await
            .map_err(|_| LowerError::Busy)?;
        match tokio::time::timeout_at(deadline, answer).await {
            Ok(Ok(Ok(()))) => Ok(()),
            Ok(Ok(Err(in_use))) => Err(LowerError::InUse {
                field: in_use.field,
                used: in_use.used,
                requested: in_use.requested,
            }),
            Ok(Err(_)) | Err(_) => Err(LowerError::Busy),
        }
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
