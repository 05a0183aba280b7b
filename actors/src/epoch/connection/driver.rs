//! [`DriverSeat`]: the room one dial has for its connection's driver.
//!
//! A connection whose protocol needs a task to run it (HTTP/1.1's and
//! HTTP/2's connection futures, a NATS client's tasks) gets that task from
//! its dial, through `ProviderPools::spawn_driver`. The driver runs on the
//! worker pool as a job of its own class: it takes no `provider_workers`
//! slot; it holds its connection's charges instead, shared with the
//! connection. So drivers are bounded by the connection limits, and a
//! connection's charges return only once the connection is destroyed and
//! its driver joined.
//!
//! Invariants:
//! - One seat per dial, one driver per seat: a second start finds the seat
//!   empty and is refused.
//! - The seat holds a share of the dial's connection charges from before
//!   the dial starts; a seat left unused gives that share back when the
//!   dial's task ends.
//! - A driver waits for the worker pool's mailbox no longer than its dial's
//!   deadline.

use std::fmt;
use std::sync::{Mutex, PoisonError};

use tokio::time::Instant;

/// The room one dial has for its connection's driver: a share of the
/// dial's connection charges and the dial's deadline.
pub(crate) struct DriverSeat {
    charges: Mutex<Option<Box<dyn Send>>>,
    deadline: Instant,
}

impl DriverSeat {
    pub(crate) fn new(charges: Box<dyn Send>, deadline: Instant) -> Self {
        Self {
            charges: Mutex::new(Some(charges)),
            deadline,
        }
    }

    /// The charges for the driver and the dial's deadline; `None` once a
    /// driver took them.
    pub(crate) fn take(&self) -> Option<(Box<dyn Send>, Instant)> {
        let charges = self
            .charges
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()?;
        Some((charges, self.deadline))
    }
}

impl fmt::Debug for DriverSeat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DriverSeat")
            .field("deadline", &self.deadline)
            .finish_non_exhaustive()
    }
}
