//! Accounted buffers: request input and result bytes charged to their
//! tenant's metadata share and the node's metadata budget for as long as
//! anyone holds them.
//!
//! Invariants:
//! - The charge is taken before the buffer is retained and returned only when
//!   the last holder drops it — cancelling a request does not refund bytes
//!   still held elsewhere.
//! - A result holds its request's running owner: a delayed consumer keeps the
//!   tenant's and provider's running capacity until it lets go.

use std::fmt;
use std::sync::Arc;

use bytes::Bytes;

use crate::admission::running::RunningRequest;
use crate::budget::Budget;
use crate::identity::TenantId;
use crate::tenants::SharedCharge;

struct Staged {
    bytes: Bytes,
    _charge: SharedCharge,
}

/// Request input, staged and charged before a request is queued.
///
/// Cheap to clone; the charge is returned when the last clone is dropped.
#[derive(Clone)]
pub struct StagedInput(Arc<Input>);

struct Input {
    bytes: Bytes,
    charge: SharedCharge,
    /// The tenant whose metadata share `charge` is on.
    tenant: TenantId,
}

impl StagedInput {
    pub(crate) fn new(bytes: Bytes, charge: SharedCharge, tenant: TenantId) -> Self {
        Self(Arc::new(Input {
            bytes,
            charge,
            tenant,
        }))
    }

    /// The input bytes.
    pub fn bytes(&self) -> &Bytes {
        &self.0.bytes
    }

    /// Their length.
    pub fn len(&self) -> usize {
        self.0.bytes.len()
    }

    /// True when there is no input.
    pub fn is_empty(&self) -> bool {
        self.0.bytes.is_empty()
    }

    /// `tenant`'s metadata share this input is charged to, when it was
    /// staged for `tenant` against the node budget `shared`: a further
    /// charge of the same tenant's metadata needs no lookup.
    pub(crate) fn metadata_share(
        &self,
        tenant: &TenantId,
        shared: &Arc<Budget>,
    ) -> Option<&Arc<Budget>> {
        if self.0.tenant != *tenant {
            return None;
        }
        self.0.charge.tenant_budget_beside(shared)
    }
}

impl fmt::Debug for StagedInput {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StagedInput")
            .field("len", &self.len())
            .finish()
    }
}

/// Result bytes of a running request, charged and holding the request's
/// running owner until dropped.
pub struct StagedOutput {
    staged: Staged,
    _owner: RunningRequest,
}

impl StagedOutput {
    pub(crate) fn new(bytes: Bytes, charge: SharedCharge, owner: RunningRequest) -> Self {
        Self {
            staged: Staged {
                bytes,
                _charge: charge,
            },
            _owner: owner,
        }
    }

    /// The result bytes.
    pub fn bytes(&self) -> &Bytes {
        &self.staged.bytes
    }
}

impl AsRef<[u8]> for StagedOutput {
    fn as_ref(&self) -> &[u8] {
        &self.staged.bytes
    }
}

impl fmt::Debug for StagedOutput {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StagedOutput")
            .field("len", &self.staged.bytes.len())
            .finish()
    }
}

/// Bytes a running request's adapter holds outside any staged buffer —
/// a response head, say — charged to the tenant's metadata share and the
/// node's metadata budget while it is held. Unlike a [`StagedOutput`] it
/// does not hold the request's running owner: what holds the bytes (a
/// response, a stream) decides how long the request runs.
#[must_use = "dropping the charge returns its bytes at once"]
pub struct HeldMetadata {
    len: usize,
    _charge: SharedCharge,
}

impl HeldMetadata {
    pub(crate) fn new(len: usize, charge: SharedCharge) -> Self {
        Self {
            len,
            _charge: charge,
        }
    }

    /// The bytes charged.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True when nothing is charged.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

impl fmt::Debug for HeldMetadata {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HeldMetadata")
            .field("len", &self.len)
            .finish()
    }
}
