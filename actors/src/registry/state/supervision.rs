//! Supervision: a child of the registry stopped. A control actor lost
//! outside shutdown closes admission; an epoch actor that failed before
//! its epoch drained is restarted with the same configuration within the
//! restart policy, and past it its provider is retired. Checkouts that met
//! the stopped actor wait for its successor, and hear at once when none
//! will follow.

use std::sync::Arc;

use ractor::{ActorCell, ActorId};
use tokio::time::Instant;

use super::State;
use crate::epoch::EpochHandle;
use crate::identity::ProviderId;

impl State {
    /// A child actor terminated or failed: the scheduler (a control owner)
    /// or an epoch actor. An epoch actor that failed before draining is
    /// restarted with its same configuration within the restart policy;
    /// past it, its provider is retired. Its record — and every charge —
    /// stays until its leases drain.
    pub(crate) async fn child_stopped(
        &mut self,
        myself: &ActorCell,
        actor: ActorId,
        failure: Option<String>,
    ) {
        let control = [
            ("scheduler", self.scheduler.cell().get_id()),
            ("worker pool", self.workers.cell().get_id()),
            ("cleanup", self.cleanup.cell().get_id()),
        ];
        if let Some((name, _)) = control.iter().find(|(_, id)| *id == actor) {
            if !self.scheduler_stopping {
                tracing::error!(actor = name, reason = ?failure, "control actor lost; admission closed");
                self.accounts.fail();
            }
            return;
        }
        let Some(instance) = self.by_actor.remove(&actor) else {
            return;
        };
        let Some(record) = self.epochs.get_mut(&instance) else {
            return;
        };
        record.actor_stopped = true;
        // Else a drained actor's (or one past its restart budget) would
        // stay in the `waiting` gauge: no actor of the epoch sets it again.
        record.published.forget_waiters();
        if record.drained {
            self.collect(instance);
            return;
        }
        let (provider, epoch) = (record.published.provider.clone(), record.published.epoch);
        let reason = failure.as_deref().unwrap_or("stopped before draining");
        if record.restarts.try_restart(&self.restart, Instant::now()) {
            let respawned = EpochHandle::spawn(
                Arc::clone(&record.published),
                Arc::clone(&self.accounts),
                &self.limits,
                myself.clone(),
            )
            .await;
            match respawned {
                Ok(mut handle) => {
                    tracing::warn!(%provider, %epoch, reason, "epoch actor restarted");
                    if record.published.is_retired() {
                        handle.retire();
                    }
                    self.by_actor.insert(handle.cell().get_id(), instance);
                    record.handle = handle;
                    record.actor_stopped = false;
                    return;
                }
                Err(err) => tracing::error!(%provider, %epoch, %err, "epoch restart failed"),
            }
        }
        tracing::error!(%provider, %epoch, reason, "epoch actor past its restart budget; provider retired");
        record.published.no_successor();
        self.retire_provider(&provider);
    }

    /// Unpublishes `provider`: its current epoch retires and drains.
    fn retire_provider(&mut self, provider: &ProviderId) {
        if let Some(epoch) = self.directory.unpublish(provider) {
            if let Some(record) = self.epochs.get_mut(&epoch.instance) {
                record.handle.retire();
            }
        }
        self.refresh_configured();
    }
}
