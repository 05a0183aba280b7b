//! [`PoolReady`]: capacity granted, execution not yet permitted.

use std::fmt;

use tokio::time::Instant;

use crate::admission::running::RunningRequest;
use crate::admission::{AdmitError, CallMismatch, StagedInput};
use crate::dispatch::ProviderCall;
use crate::epoch::ClientLease;
use crate::identity::{Epoch, ProviderId};
use crate::plan::ExecutionPlan;
use crate::scheduler::RunningGrant;
use crate::tenants::SharedCharge;

/// Capacity granted to one request. It becomes a running request only with
/// a [`ProviderCall`] from a fresh dispatch; dropping it returns the
/// capacity.
#[must_use = "dropping a PoolReady returns its capacity"]
pub struct PoolReady {
    pub(crate) grant: RunningGrant,
    pub(crate) lease: ClientLease,
    pub(crate) plan: ExecutionPlan,
    pub(crate) input: StagedInput,
    pub(crate) charge: SharedCharge,
    pub(crate) deadline: Instant,
    pub(crate) generation: u64,
    pub(crate) granted: u64,
}

impl PoolReady {
    /// The plan the request was admitted under.
    pub fn plan(&self) -> &ExecutionPlan {
        &self.plan
    }

    /// The logical provider.
    pub fn provider(&self) -> &ProviderId {
        self.lease.provider()
    }

    /// The epoch whose client was granted.
    pub fn epoch(&self) -> Epoch {
        self.lease.epoch()
    }

    /// The request's absolute deadline, fixed at admission.
    pub fn deadline(&self) -> Instant {
        self.deadline
    }

    /// The staged input.
    pub fn input(&self) -> &StagedInput {
        &self.input
    }

    /// Starts the request with an accepted call.
    ///
    /// The call must come from a dispatch made after this grant, for the
    /// same session, ledger, provider and epoch; the epoch must still be
    /// current and the deadline not passed. On any refusal the capacity is
    /// returned.
    ///
    /// # Errors
    ///
    /// [`AdmitError::Timeout`] past the deadline, [`AdmitError::Retired`]
    /// when the granted epoch was retired, [`AdmitError::Mismatch`] naming
    /// what differs.
    pub fn start(self, call: ProviderCall) -> Result<RunningRequest, AdmitError> {
        if Instant::now() >= self.deadline {
            return Err(AdmitError::Timeout);
        }
        let mismatch = if call.generation != self.generation {
            Some(CallMismatch::Registry)
        } else if call.session != self.plan.session() {
            Some(CallMismatch::Session)
        } else if call.ledger != self.plan.ledger() {
            Some(CallMismatch::Ledger)
        } else if call.provider != *self.lease.provider() {
            Some(CallMismatch::Provider)
        } else if call.sequence <= self.granted {
            Some(CallMismatch::Stale)
        } else {
            None
        };
        if let Some(what) = mismatch {
            return Err(AdmitError::Mismatch { what });
        }
        if call.epoch != self.lease.epoch() || self.lease.is_retired() {
            return Err(AdmitError::Retired {
                provider: call.provider,
            });
        }
        let PoolReady {
            grant,
            lease,
            plan,
            input,
            charge,
            deadline,
            generation: _,
            granted: _,
        } = self;
        Ok(RunningRequest::new(
            grant, lease, plan, input, charge, deadline,
        ))
    }
}

impl fmt::Debug for PoolReady {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PoolReady")
            .field("plan", &self.plan)
            .field("client", &self.lease)
            .field("input", &self.input)
            .finish_non_exhaustive()
    }
}
