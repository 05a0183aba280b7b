//! Leaving the cluster: drop every share and say so, wait until it
//! drained and no table counts this node, then resign and deregister.

use std::sync::PoisonError;
use std::time::Duration;

use provider_pools_control_plane::ControlPlane;
use tokio::time::Instant;

use super::Runner;

impl Runner {
    /// Drops every share and says so; once what ran above the floors
    /// drained and the tables give this node no bound (so its departure
    /// reserves nothing), or `drain` passed, resigns and deregisters —
    /// the latter only if drained.
    pub(super) async fn leave(&mut self, drain: Duration) {
        self.leaving = true;
        let deadline = Instant::now() + drain;
        loop {
            for at in 0..self.providers.len() {
                self.lead(at).await;
                self.follow(at).await;
            }
            self.publish();
            if self.released() || Instant::now() >= deadline {
                break;
            }
            tokio::time::sleep(self.config.period.min(Duration::from_millis(50))).await;
        }
        for tracked in &mut self.providers {
            if let Some(guard) = tracked.guard.take() {
                let _ = self.board.release(guard.grant().clone()).await;
            }
        }
        let drained = self.providers.iter().all(|p| p.holding.in_force == 0);
        let left = drained && self.board.deregister(self.presence.clone()).await.is_ok();
        self.registered &= !left;
        self.publish();
        self.status
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .left = left;
    }

    /// True when nothing runs above the floors and no table still counts
    /// a bound for this incarnation.
    fn released(&self) -> bool {
        self.providers.iter().all(|tracked| {
            let bound = tracked
                .table
                .as_ref()
                .and_then(|table| table.rows.get(&self.config.node))
                .filter(|row| row.incarnation == self.incarnation)
                .map_or(0, |row| row.bound);
            tracked.holding.in_force == 0 && bound == 0
        })
    }
}
