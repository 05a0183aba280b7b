//! The limits a seed starts with, scaled to its pace, and the step that
//! lowers them mid-load.

use std::time::Duration;

use provider_pools::{Limits, RestartPolicy};

use crate::pace::Pace;
use crate::world::World;

/// The startup limits in scenario time: small, so every bound is reached.
pub(crate) const LIMITS: Limits = Limits {
    retained_configurations: 4,
    configured_clients: 8,
    clients_per_provider: 4,
    connections: 6,
    connections_per_client: 3,
    connections_per_tenant: 2,
    idle_connections: 3,
    pending_requests: 8,
    running_requests: 6,
    requests_per_tenant: 4,
    requests_per_provider: 6,
    running_per_tenant: 3,
    running_per_provider: 4,
    provider_workers: 4,
    cleanup_jobs: 2,
    metadata_bytes: 24 * 1024,
    metadata_per_tenant: 12 * 1024,
    private_config_bytes: 1024,
    queue_age: Duration::from_secs(2),
    idle_age: Duration::from_secs(5),
    ..Limits::DEFAULT
};

/// [`LIMITS`] with every duration at `pace` (the paused clock keeps them).
pub(crate) fn startup(pace: Pace) -> Limits {
    Limits {
        queue_age: pace.of(LIMITS.queue_age),
        idle_age: pace.of(LIMITS.idle_age),
        dial_backoff_initial: pace.of(LIMITS.dial_backoff_initial),
        dial_backoff_max: pace.of(LIMITS.dial_backoff_max),
        ..LIMITS
    }
}

/// The registry's default restart policy, its window at `pace`.
pub(crate) fn restart(pace: Pace) -> RestartPolicy {
    let policy = RestartPolicy::default();
    RestartPolicy {
        window: pace.of(policy.window),
        ..policy
    }
}

impl World {
    /// Lowers limits at random (never above the limits in force, which
    /// `lower_limits` refuses); an accepted lowering becomes the limits in
    /// force.
    pub(crate) async fn lower(&mut self) -> String {
        let (r, pace, now) = (&mut self.rng, self.mode.pace(), self.limits);
        let mut pick = |max: u32| 1 + r.below(u64::from(max)) as u32;
        let running = pick(now.running_requests);
        let pending = pick(now.pending_requests);
        let connections = pick(now.connections);
        let per_client = pick(now.connections_per_client).min(connections);
        let metadata = now.metadata_bytes / 2 + pick(now.metadata_bytes / 2);
        let lowered = Limits {
            running_requests: running,
            running_per_tenant: pick(now.running_per_tenant).min(running),
            running_per_provider: pick(now.running_per_provider).min(running),
            pending_requests: pending,
            requests_per_tenant: pick(now.requests_per_tenant).min(pending),
            requests_per_provider: pick(now.requests_per_provider).min(pending),
            connections,
            connections_per_client: per_client,
            connections_per_tenant: pick(now.connections_per_tenant).min(per_client),
            idle_connections: pick(now.idle_connections).min(connections),
            provider_workers: pick(now.provider_workers),
            cleanup_jobs: pick(now.cleanup_jobs),
            metadata_bytes: metadata,
            metadata_per_tenant: pick(now.metadata_per_tenant).min(metadata),
            idle_age: pace.ms(u64::from(pick(5_000))).min(now.idle_age),
            queue_age: pace.ms(u64::from(pick(2_000))).min(now.queue_age),
            ..now
        };
        match self.pools.lower_limits(lowered).await {
            Ok(()) => {
                self.ctx.switch.fired("limits lowered");
                self.limits = lowered;
                format!("lower to {lowered:?}: ok")
            }
            Err(e) => {
                self.ctx.switch.fired("lowering refused (in use)");
                format!("lower: {e}")
            }
        }
    }
}
