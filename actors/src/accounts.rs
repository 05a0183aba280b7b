//! The node-wide accounts of one registry generation: the budgets several
//! owners charge, the tenants' shares of them, the gauges an operator reads,
//! the control state, the limits in force (with the lowerable queue and idle
//! ages), and the one sequence that orders grants and dispatches.
//!
//! Invariants:
//! - Budgets are charged before the resource they pay for exists and released
//!   only by dropping the charge after the resource is destroyed.
//! - Gauges are observations, moved by whatever owns the counted thing at the
//!   time of the change: an actor (registry, workers, cleanup, epoch), the
//!   admission core under its current owner, a dial permit. Each change
//!   moves a gauge once; nothing decides admission from a gauge.
//! - Checked-out connections are not a gauge: each epoch counts its own
//!   ([`CheckedOutCount`]), and a snapshot sums the live epochs' counts, so a
//!   checkout touches nothing node-wide.
//! - The control state only moves forward: running → retiring → completed,
//!   or to failed from anywhere but completed.
//! - The limits in force are written by the registry actor alone.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

mod checked_out;

pub(crate) use checked_out::{CheckedOutCount, CheckedOutCounts};

use crate::budget::Budget;
use crate::limits::Limits;
use crate::snapshot::{ConnectionCounts, ControlState, Snapshot};
use crate::sync::{AtomicU32, AtomicU64, AtomicU8, Ordering};
use crate::tenants::TenantShares;

/// Counts reported by the actor that owns each resource.
#[derive(Debug, Default)]
pub(crate) struct Gauges {
    pub(crate) configured_epochs: AtomicU32,
    pub(crate) connections_connecting: AtomicU32,
    /// Callers the epoch actors keep waiting for a connection.
    pub(crate) connections_waiting: AtomicU32,
    pub(crate) pending_requests: AtomicU32,
    pub(crate) running_requests: AtomicU32,
    pub(crate) workers: AtomicU32,
    /// Connection drivers not yet joined.
    pub(crate) drivers: AtomicU32,
    pub(crate) cleanup_jobs: AtomicU32,
    pub(crate) failed_cleanup: AtomicU32,
}

/// Budgets and gauges of one registry generation.
#[derive(Debug)]
pub(crate) struct Accounts {
    /// Retained epochs (current and draining), against `retained_configurations`.
    pub(crate) retained: Arc<Budget>,
    /// Configured clients of every retained epoch, against `configured_clients`.
    pub(crate) clients: Arc<Budget>,
    /// Accounted registry metadata bytes, against `metadata_bytes`.
    pub(crate) metadata: Arc<Budget>,
    /// Each tenant's share of the metadata and of the admission path.
    pub(crate) tenants: TenantShares,
    /// Every connection, dialing, active or idle, against `connections`.
    pub(crate) connections: Arc<Budget>,
    /// Parked connections, against `idle_connections`.
    pub(crate) idle: Arc<Budget>,
    pub(crate) gauges: Gauges,
    /// Each live epoch's checked-out connections, summed for the active and
    /// retired counts.
    pub(crate) checked_out: CheckedOutCounts,
    control: AtomicU8,
    /// The queue age for future admissions, in nanoseconds (lowerable).
    queue_age: AtomicU64,
    /// The idle age for idle reuse, in nanoseconds (lowerable).
    idle_age: AtomicU64,
    /// One sequence for grants and dispatches: a call is fresh for a grant
    /// when its number is higher.
    sequence: AtomicU64,
    /// The limits in force: the startup limits, then each accepted
    /// lowering (written by the registry actor alone, read by anyone).
    in_force: Mutex<Limits>,
}

const RUNNING: u8 = 0;
const RETIRING: u8 = 1;
const COMPLETED: u8 = 2;
const FAILED: u8 = 3;

impl Accounts {
    pub(crate) fn new(limits: &Limits) -> Arc<Self> {
        Arc::new(Self {
            retained: Budget::new("retained_configurations", limits.retained_configurations),
            clients: Budget::new("configured_clients", limits.configured_clients),
            metadata: Budget::new("metadata_bytes", limits.metadata_bytes),
            tenants: TenantShares::new(limits),
            connections: Budget::new("connections", limits.connections),
            idle: Budget::new("idle_connections", limits.idle_connections),
            gauges: Gauges::default(),
            checked_out: CheckedOutCounts::default(),
            control: AtomicU8::new(RUNNING),
            queue_age: AtomicU64::new(nanos(limits.queue_age)),
            idle_age: AtomicU64::new(nanos(limits.idle_age)),
            sequence: AtomicU64::new(0),
            in_force: Mutex::new(*limits),
        })
    }

    /// The limits in force now.
    pub(crate) fn limits_in_force(&self) -> Limits {
        // A poisoned lock still holds a whole `Limits` (it is `Copy`).
        *self.in_force.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Records an accepted lowering (the registry actor, once it applied it).
    pub(crate) fn set_limits_in_force(&self, limits: Limits) {
        *self.in_force.lock().unwrap_or_else(PoisonError::into_inner) = limits;
    }

    pub(crate) fn control(&self) -> ControlState {
        match self.control.load(Ordering::Acquire) {
            RUNNING => ControlState::Running,
            RETIRING => ControlState::Retiring,
            COMPLETED => ControlState::Completed,
            _ => ControlState::Failed,
        }
    }

    /// True once `retire`, `shutdown` or a control failure closed admission.
    pub(crate) fn is_closed(&self) -> bool {
        self.control.load(Ordering::Acquire) != RUNNING
    }

    /// Closes admission; returns false if it was already closed.
    pub(crate) fn close(&self) -> bool {
        self.control
            .compare_exchange(RUNNING, RETIRING, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
    }

    /// Records a completed shutdown.
    pub(crate) fn complete(&self) -> bool {
        self.control
            .compare_exchange(RETIRING, COMPLETED, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
    }

    /// Records a control failure: admission closes, and no report can be
    /// clean. A completed shutdown stays completed.
    pub(crate) fn fail(&self) {
        let _ = self
            .control
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |state| {
                (state != COMPLETED).then_some(FAILED)
            });
    }

    /// The queue age for admissions starting now.
    pub(crate) fn queue_age(&self) -> Duration {
        Duration::from_nanos(self.queue_age.load(Ordering::Acquire))
    }

    pub(crate) fn set_queue_age(&self, age: Duration) {
        self.queue_age.store(nanos(age), Ordering::Release);
    }

    /// The idle age for reuse decisions taken now.
    pub(crate) fn idle_age(&self) -> Duration {
        Duration::from_nanos(self.idle_age.load(Ordering::Acquire))
    }

    pub(crate) fn set_idle_age(&self, age: Duration) {
        self.idle_age.store(nanos(age), Ordering::Release);
    }

    /// The next number in the grant and dispatch sequence.
    pub(crate) fn next_sequence(&self) -> u64 {
        self.sequence.fetch_add(1, Ordering::AcqRel) + 1
    }

    pub(crate) fn snapshot(&self) -> Snapshot {
        let g = &self.gauges;
        let read = |gauge: &AtomicU32| gauge.load(Ordering::Acquire);
        let (active, retired) = self.checked_out.totals();
        Snapshot {
            configured_epochs: read(&g.configured_epochs),
            retained_epochs: self.retained.used(),
            clients: self.clients.used(),
            connections: ConnectionCounts {
                active,
                idle: self.idle.used(),
                connecting: read(&g.connections_connecting),
                retired,
                waiting: read(&g.connections_waiting),
            },
            pending_requests: read(&g.pending_requests),
            running_requests: read(&g.running_requests),
            workers: read(&g.workers),
            drivers: read(&g.drivers),
            cleanup_jobs: read(&g.cleanup_jobs),
            failed_cleanup: read(&g.failed_cleanup),
            metadata_bytes: self.metadata.used(),
            control: self.control(),
        }
    }
}

fn nanos(age: Duration) -> u64 {
    u64::try_from(age.as_nanos()).unwrap_or(u64::MAX)
}
