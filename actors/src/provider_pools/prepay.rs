//! Prepaid metadata: bytes an adapter charges to the node's accounted
//! metadata budget before it builds what they pay for — for example a local
//! secret reload's candidate material, source buffer and cache entry, paid
//! before the file is read.
//!
//! Invariants:
//! - The charge is taken before anything it pays for exists, or refused at
//!   once; nothing waits for room.
//! - It returns to the budget only when the [`Prepaid`] (and each part split
//!   from it) is dropped; its owner drops it after destroying what it paid
//!   for.
//! - Nothing is prepaid once admission is closed.

use std::fmt;

use crate::admission::AdmitError;
use crate::budget::Charge;
use crate::provider_pools::ProviderPools;

/// Bytes reserved on the node's accounted metadata budget, ahead of the
/// buffers and records they pay for. Counted in [`Snapshot::metadata_bytes`]
/// while held.
///
/// [`Snapshot::metadata_bytes`]: crate::Snapshot::metadata_bytes
#[must_use = "dropping a prepaid charge returns its bytes at once"]
pub struct Prepaid {
    charge: Charge,
}

impl Prepaid {
    /// The bytes this charge holds.
    pub fn amount(&self) -> u32 {
        self.charge.amount()
    }

    /// Moves `amount` bytes out of this charge into a new one, so that part
    /// of a prepayment can follow what it paid for (a cache entry, say)
    /// while the rest returns with a scratch buffer.
    ///
    /// Returns `None`, leaving `self` unchanged, if `amount` exceeds what
    /// this charge holds.
    ///
    /// # Examples
    ///
    /// ```
    /// use provider_pools_actors::{BrokerGeneration, PoolsConfig, ProviderPools};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let config = PoolsConfig::new(tokio::runtime::Handle::current(), BrokerGeneration::new());
    /// let pools = ProviderPools::start(config).await.expect("registry");
    /// let mut scratch = pools.prepay(100).expect("room for 100 bytes");
    /// let kept = scratch.split(40).expect("40 of 100");
    /// drop(scratch); // the scratch buffer is gone: 60 bytes return
    /// assert_eq!(pools.snapshot().metadata_bytes, 40);
    /// drop(kept);
    /// assert_eq!(pools.snapshot().metadata_bytes, 0);
    /// # }
    /// ```
    pub fn split(&mut self, amount: u32) -> Option<Prepaid> {
        self.charge.split(amount).map(|charge| Prepaid { charge })
    }
}

impl fmt::Debug for Prepaid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Prepaid")
            .field("bytes", &self.amount())
            .finish()
    }
}

impl ProviderPools {
    /// Charges `bytes` to the node's accounted metadata budget before the
    /// caller builds what they pay for, and hands the charge over as an
    /// owned [`Prepaid`].
    ///
    /// This is for trusted adapter code that must pay for buffers or records
    /// outside a request — a local secret reload prepays its candidate
    /// material, source buffer and cache entry before it reads the file
    /// through [`ProviderPools::control_blocking`]. A request's own bytes go
    /// through [`ProviderPools::stage_input`] and
    /// [`RunningRequest::stage_output`](crate::RunningRequest::stage_output).
    ///
    /// # Errors
    ///
    /// [`AdmitError::Capacity`] naming `metadata_bytes` when the budget has
    /// no room (nothing is reserved then), and [`AdmitError::Closed`] once
    /// the pools are retired, shut down or lost their control owner.
    pub fn prepay(&self, bytes: u32) -> Result<Prepaid, AdmitError> {
        if !self.is_open() {
            return Err(AdmitError::Closed);
        }
        let charge = self.inner.accounts.metadata.try_reserve(bytes)?;
        Ok(Prepaid { charge })
    }
}
