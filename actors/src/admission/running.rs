//! [`RunningRequest`]: the running owner that travels with the I/O
//! operation.

use std::fmt;
use std::sync::Arc;

use bytes::Bytes;
use tokio::time::Instant;

use crate::admission::{AdmitError, HeldMetadata, OutputBuffer, StagedInput, StagedOutput};
use crate::epoch::connection::{ConnectError, Holdings, RequestHold};
use crate::epoch::published::PublishedEpoch;
use crate::epoch::ClientLease;
use crate::plan::ExecutionPlan;
use crate::scheduler::RunningGrant;
use crate::tenants::SharedCharge;

/// A started request. Cheap to clone: every clone — the I/O operation, a
/// response stream, a staged result — keeps the request's running capacity,
/// its client lease and its activation until the last one is dropped.
#[derive(Clone)]
pub struct RunningRequest(Arc<Running>);

struct Running {
    // Field order is drop order: the running capacity goes back to the
    // scheduler before the lease may let the epoch drain.
    grant: RunningGrant,
    lease: ClientLease,
    plan: ExecutionPlan,
    input: StagedInput,
    _charge: SharedCharge,
    deadline: Instant,
}

impl Holdings for Running {
    fn epoch(&self) -> &Arc<PublishedEpoch> {
        self.lease.epoch_entry().0
    }
}

impl RunningRequest {
    /// A hold on this request's holdings, for a connection, dial or stream
    /// that serves it.
    pub(crate) fn hold(&self) -> RequestHold {
        RequestHold::new(self.0.clone())
    }

    /// The running owner of what a started request holds.
    pub(crate) fn new(
        grant: RunningGrant,
        lease: ClientLease,
        plan: ExecutionPlan,
        input: StagedInput,
        charge: SharedCharge,
        deadline: Instant,
    ) -> Self {
        Self(Arc::new(Running {
            grant,
            lease,
            plan,
            input,
            _charge: charge,
            deadline,
        }))
    }

    /// The plan of the activation this request runs for.
    pub fn plan(&self) -> &ExecutionPlan {
        &self.0.plan
    }

    /// The leased client the request runs on.
    pub fn client(&self) -> &ClientLease {
        &self.0.lease
    }

    /// The staged input.
    pub fn input(&self) -> &StagedInput {
        &self.0.input
    }

    /// Confirms that the share this request was admitted under still
    /// holds, the last step before any byte of it is sent:
    /// [`ProviderPools::reserve_connection`](crate::ProviderPools::reserve_connection)
    /// calls it on the connection it hands out, so adapters on pooled
    /// connections need not.
    ///
    /// Only a provider share with an expiry
    /// ([`ProviderPools::set_provider_running_until`](crate::ProviderPools::set_provider_running_until),
    /// a cluster node's share) can lapse. A request granted under it
    /// before the expiry, and started after it (its process was stopped in
    /// between, or its node lost contact), would overlap a share the
    /// cluster gave elsewhere: it is refused while the provider runs more
    /// than the fallback. Before the grant-time expiry this reads no shared
    /// state; after it, the admission queue's lock.
    ///
    /// A check, not a fence: a process stopped between this check and its
    /// write still sends late. What is left open is the few instructions
    /// between the two, not the whole time from admission to the send.
    ///
    /// # Errors
    ///
    /// [`ConnectError::ShareLapsed`] naming the provider.
    pub fn check_share(&self) -> Result<(), ConnectError> {
        if self.0.grant.share_holds() {
            Ok(())
        } else {
            Err(ConnectError::ShareLapsed {
                provider: self.0.lease.provider().clone(),
            })
        }
    }

    /// The absolute deadline fixed at admission; no stage resets it.
    pub fn deadline(&self) -> Instant {
        self.0.deadline
    }

    /// Charges `bytes` to the tenant's metadata share and to the node's
    /// metadata budget, and ties them to this request: the result keeps the
    /// running capacity until it is dropped.
    ///
    /// # Errors
    ///
    /// [`AdmitError::Capacity`] naming `metadata_per_tenant` when the
    /// tenant's share has no room (nothing shared was taken), or
    /// `metadata_bytes` when the node's budget has none.
    pub fn stage_output(&self, bytes: Bytes) -> Result<StagedOutput, AdmitError> {
        let len = u32::try_from(bytes.len()).unwrap_or(u32::MAX);
        let accounts = self.0.grant.accounts();
        let charge =
            accounts
                .tenants
                .charge_metadata(self.0.plan.tenant(), &accounts.metadata, len)?;
        Ok(StagedOutput::new(bytes, charge, self.clone()))
    }

    /// Charges `len` bytes the adapter holds for this request outside a
    /// staged buffer (a response head, say) to the tenant's metadata share
    /// and the node's metadata budget, as [`Self::stage_output`] does,
    /// until the charge is dropped; the charge does not keep the request
    /// running.
    ///
    /// # Errors
    ///
    /// As [`Self::stage_output`].
    pub fn hold_metadata(&self, len: usize) -> Result<HeldMetadata, AdmitError> {
        let amount = u32::try_from(len).unwrap_or(u32::MAX);
        let accounts = self.0.grant.accounts();
        let charge =
            accounts
                .tenants
                .charge_metadata(self.0.plan.tenant(), &accounts.metadata, amount)?;
        Ok(HeldMetadata::new(len, charge))
    }
}

impl RunningRequest {
    /// An empty result buffer of this request: bytes read in pieces are
    /// charged to its tenant's metadata share and the node's metadata
    /// budget before each piece is kept (see
    /// [`OutputBuffer::extend`]), and [`OutputBuffer::finish`] makes them a
    /// [`StagedOutput`].
    pub fn output_buffer(&self) -> OutputBuffer {
        OutputBuffer::new(Arc::clone(self.0.grant.accounts()), self.clone())
    }
}

impl fmt::Debug for RunningRequest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RunningRequest")
            .field("plan", &self.0.plan)
            .field("client", &self.0.lease)
            .field("input", &self.0.input)
            .finish_non_exhaustive()
    }
}
