//! The limit check run after every step of the property test.
//!
//! The snapshot is aggregate, but the harness knows whose each held handle
//! is: the tenant and provider of every waiting admission and granted
//! request, and the client (provider and epoch) of every checked-out
//! connection. So besides the snapshot's totals it checks every count it
//! can attribute against the limit in force for it, and that the engine
//! counts at least what the harness holds.
//!
//! What the harness holds is a lower bound of what the engine counts: a
//! waiting admission is queued (its future was polled and has not
//! finished), a granted request holds its running capacity until its last
//! handle (the `PoolReady`, every `RunningRequest` clone, every connection
//! of it) is dropped, and a checked-out connection holds its client's and
//! its tenant's charges. Handles the harness gave away (a failed close, a
//! parked connection) are not counted. So a harness count over a limit is
//! an engine count over it.
//!
//! Limits in force: the startup limits until a lowering succeeds, then the
//! lowered ones, for every count at once. A lowering is all or nothing and
//! is refused while any use is above a lowered value (registry
//! `lower_limits`, the scheduler's `set_ceilings`); the tenants' request
//! shares lower without refusing, but the scheduler's pending bounds behind
//! them do refuse. So work held from before a lowering is within it, and new
//! work must be too.

use std::collections::HashMap;
use std::hash::Hash;

use provider_pools::{Limits, Snapshot};

/// Whose a granted request is: the tenant and provider of the op that
/// queued it, and the epoch of the client it was granted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct Owner {
    pub(crate) tenant: usize,
    pub(crate) provider: usize,
    pub(crate) epoch: u64,
}

/// What the harness holds, attributed.
#[derive(Debug, Default)]
pub(crate) struct Held {
    /// Admissions still waiting for their answer: (tenant, provider).
    pub(crate) waiting: Vec<(usize, usize)>,
    /// One entry per granted request some handle still holds.
    pub(crate) running: Vec<Owner>,
    /// One entry per checked-out connection, by the request it serves.
    pub(crate) conns: Vec<Owner>,
}

fn counts<K: Eq + Hash>(keys: impl Iterator<Item = K>) -> HashMap<K, u32> {
    let mut counts = HashMap::new();
    for key in keys {
        *counts.entry(key).or_default() += 1;
    }
    counts
}

/// The largest count over `keys`' groups, with its key, or `None` if empty.
fn most<K: Eq + Hash + std::fmt::Debug>(keys: impl Iterator<Item = K>) -> Option<(String, u32)> {
    counts(keys)
        .into_iter()
        .max_by_key(|(_, n)| *n)
        .map(|(key, n)| (format!("{key:?}"), n))
}

/// Every count the snapshot and the harness show, against `limits` (the
/// limits in force).
pub(crate) fn within_limits(s: &Snapshot, limits: &Limits, held: &Held) -> Result<(), String> {
    let c = s.connections;
    let totals = [
        (
            "retained",
            s.retained_epochs,
            limits.retained_configurations,
        ),
        ("clients", s.clients, limits.configured_clients),
        ("pending", s.pending_requests, limits.pending_requests),
        ("running", s.running_requests, limits.running_requests),
        (
            "connections",
            c.active + c.idle + c.connecting + c.retired,
            limits.connections,
        ),
        ("idle", c.idle, limits.idle_connections),
        ("metadata", s.metadata_bytes, limits.metadata_bytes),
        ("workers", s.workers, limits.provider_workers),
        ("cleanup", s.cleanup_jobs, limits.cleanup_jobs),
    ];
    for (what, used, limit) in totals {
        if used > limit {
            return Err(format!("{what} {used} > {limit}: {s:?}"));
        }
    }
    let len = |items: usize| u32::try_from(items).unwrap_or(u32::MAX);
    let engine_counts_what_is_held = [
        (
            "waiting admissions",
            len(held.waiting.len()),
            s.pending_requests,
        ),
        (
            "granted requests",
            len(held.running.len()),
            s.running_requests,
        ),
        (
            "checked-out connections",
            len(held.conns.len()),
            c.active + c.retired,
        ),
    ];
    for (what, holding, counted) in engine_counts_what_is_held {
        if holding > counted {
            return Err(format!(
                "the harness holds {holding} {what}, the engine counts {counted}: {s:?}"
            ));
        }
    }
    let share = limits.connections_share();
    let attributed = [
        (
            "waiting of one tenant",
            most(held.waiting.iter().map(|(tenant, _)| tenant)),
            limits.requests_per_tenant,
        ),
        (
            "waiting on one provider",
            most(held.waiting.iter().map(|(_, provider)| provider)),
            limits.requests_per_provider,
        ),
        (
            "running of one tenant",
            most(held.running.iter().map(|o| o.tenant)),
            limits.running_per_tenant,
        ),
        (
            "running on one provider",
            most(held.running.iter().map(|o| o.provider)),
            limits.running_per_provider,
        ),
        (
            "connections of one client (provider, epoch)",
            most(held.conns.iter().map(|o| (o.provider, o.epoch))),
            limits.connections_per_client,
        ),
        (
            "connections of one tenant on one client (provider, epoch, tenant)",
            most(held.conns.iter().map(|o| (o.provider, o.epoch, o.tenant))),
            share,
        ),
    ];
    for (what, most, limit) in attributed {
        if let Some((key, used)) = most.filter(|(_, used)| *used > limit) {
            return Err(format!("{what} {key}: {used} > {limit}; {held:?}; {s:?}"));
        }
    }
    Ok(())
}
