//! Admission: what a request holds from the moment it is queued until its
//! last result is dropped.
//!
//! ```text
//! stage_input ──► admit ──(queued)──► PoolReady ──start(ProviderCall)──► RunningRequest
//!   charge           queue slot          running grant                     grant + lease
//!   metadata         + request charge    + client lease                    + input + outputs
//! ```
//!
//! Invariants:
//! - Queue and metadata space are reserved before anything is staged, and a
//!   full queue refuses at once.
//! - A request's deadline is fixed at admission: the queue age (as it was
//!   then), narrowed by the Store and I/O deadlines; no stage resets it.
//! - Capacity is returned only when its last owner is dropped: a cancelled
//!   waiter returns its queue slot, a dropped `PoolReady` or the last clone
//!   of a `RunningRequest` its running capacity.

mod error;
mod ingress;
mod output;
mod ready;
mod running;
mod staged;

pub use error::{AdmitError, CallMismatch};
pub use ingress::{IngressEvent, IngressRequest};
pub use output::OutputBuffer;
pub use ready::PoolReady;
pub use running::RunningRequest;
pub use staged::{HeldMetadata, StagedInput, StagedOutput};

use crate::epoch::TypedSlot;
use crate::identity::{OriginKind, ProviderId};
use crate::plan::ExecutionPlan;

/// Fixed metadata bytes charged per admitted request, beside its input.
pub(crate) const REQUEST_OVERHEAD: u32 = 256;

/// One request to admit.
#[derive(Debug, Clone)]
pub struct AdmitRequest {
    /// The sealed plan: tenant, session, ledger and deadlines.
    pub plan: ExecutionPlan,
    /// The logical provider.
    pub provider: ProviderId,
    /// The origin slot, from the trusted adapter's install receipt.
    pub slot: TypedSlot,
    /// The protocol the adapter speaks.
    pub kind: OriginKind,
    /// The staged input (see `ProviderPools::stage_input`).
    pub input: StagedInput,
}
