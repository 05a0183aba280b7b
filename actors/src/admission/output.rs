//! [`OutputBuffer`]: result bytes read in pieces, charged before each piece
//! is kept.
//!
//! Invariants:
//! - The charge always covers the buffer's whole allocation (its capacity,
//!   not only its length): it is taken before the buffer grows, so the
//!   bytes a request holds never exceed what it was charged.
//! - The buffer grows as bytes arrive (the first piece exactly, then
//!   doubling while the budget has room, else exactly what is needed);
//!   nothing is allocated for announced bytes that have not arrived.
//! - A piece that cannot be charged is refused whole, nothing of it kept;
//!   the buffer and its charge are returned together when it is dropped.

use std::fmt;
use std::sync::Arc;

use bytes::Bytes;

use crate::accounts::Accounts;
use crate::admission::{AdmitError, RunningRequest, StagedOutput};
use crate::budget::Charge;
use crate::tenants::SharedCharge;

/// A request's result bytes, growing as they are read, charged to its
/// tenant's metadata share and the node's metadata budget before each
/// growth; [`OutputBuffer::finish`] turns it into a [`StagedOutput`].
pub struct OutputBuffer {
    bytes: Vec<u8>,
    /// The tenant's part and the node's part of the charge, equal amounts.
    tenant: Charge,
    charge: Charge,
    accounts: Arc<Accounts>,
    owner: RunningRequest,
}

impl OutputBuffer {
    pub(crate) fn new(accounts: Arc<Accounts>, owner: RunningRequest) -> Self {
        Self {
            bytes: Vec::new(),
            tenant: Charge::empty(),
            charge: Charge::empty(),
            accounts,
            owner,
        }
    }

    /// Bytes kept so far.
    pub fn len(&self) -> usize {
        self.bytes.len()
    }

    /// True when nothing was kept yet.
    pub fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }

    /// Bytes charged so far (the buffer's allocation).
    pub fn charged(&self) -> usize {
        self.charge.amount() as usize
    }

    /// Appends `piece` once its bytes are charged.
    ///
    /// # Errors
    ///
    /// [`AdmitError::Capacity`] when the tenant's metadata share
    /// (`metadata_per_tenant`) or the node's budget has no room for it; nothing of `piece` is kept and the buffer is unchanged.
    pub fn extend(&mut self, piece: &[u8]) -> Result<(), AdmitError> {
        let needed = self.bytes.len().saturating_add(piece.len());
        if needed > self.bytes.capacity() {
            self.grow(needed)?;
        }
        self.bytes.extend_from_slice(piece);
        Ok(())
    }

    /// Grows the allocation to at least `needed`, charging the growth
    /// first: doubled when the budget has room, else exactly `needed`.
    fn grow(&mut self, needed: usize) -> Result<(), AdmitError> {
        let capacity = self.bytes.capacity();
        // The first piece is kept exactly: a body that arrives in one
        // frame is charged its length, not a rounded-up allocation.
        let doubled = capacity.saturating_mul(2).max(needed);
        // Over `u32::MAX` bytes no budget has room: the reservation fails.
        let amount = |target: usize| u32::try_from(target - capacity).unwrap_or(u32::MAX);
        let tenant = self.owner.plan().tenant();
        let (shares, node) = (&self.accounts.tenants, &self.accounts.metadata);
        let (target, (own, more)) = match shares.metadata_parts(tenant, node, amount(doubled)) {
            Ok(parts) => (doubled, parts),
            Err(_) => (needed, shares.metadata_parts(tenant, node, amount(needed))?),
        };
        self.bytes.reserve_exact(target - self.bytes.len());
        self.tenant.absorb(own);
        self.charge.absorb(more);
        Ok(())
    }

    /// The kept bytes, charged (their allocation's charge) and holding the
    /// request's running owner until dropped.
    pub fn finish(self) -> StagedOutput {
        let charge = SharedCharge::new(self.tenant, self.charge);
        StagedOutput::new(Bytes::from(self.bytes), charge, self.owner)
    }
}

impl fmt::Debug for OutputBuffer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OutputBuffer")
            .field("len", &self.bytes.len())
            .field("charged", &self.charge.amount())
            .finish()
    }
}
