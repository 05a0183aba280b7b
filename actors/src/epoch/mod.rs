//! Epochs: one immutable installation of a logical provider, its configured
//! clients, the leases that keep it alive, and the actor that owns its
//! runtime state.
//!
//! Invariants:
//! - An epoch is immutable once installed; rotation installs a new one.
//! - A retired epoch keeps every reservation until its last lease is gone.

pub(crate) mod actor;
mod adapter_state;
pub(crate) mod connection;
mod handle;
pub(crate) mod idle;
mod lease;
pub(crate) mod notice;
pub(crate) mod published;
pub(crate) mod state;
mod tally;
pub(crate) mod waiters;

#[cfg(feature = "testing")]
pub(crate) use handle::EpochProber;
pub(crate) use handle::{request_checkout, EpochHandle};
pub(crate) use published::DrainNotice;
pub use published::{ClientId, ClientLease, TypedSlot};
