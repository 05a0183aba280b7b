//! Epochs: one immutable installation of a logical provider, its configured
//! clients, the leases that keep it alive, and the actor that owns its
//! runtime state.
//!
//! The epoch actor's messages ([`Msg`]) and the answer to a checkout
//! ([`Checkout`]) are defined here, at the root, as every actor's messages
//! are: the files below share them — the actor's loop and state, its
//! handle, the dial permit and the client's wait notice that report to it,
//! the published epoch that holds its mailbox — and none of them owns them.
//!
//! Files, lowest first: the parts the published epoch is made of
//! (`lease.rs`, `tally.rs`, `adapter_state.rs`, `notice.rs`, `charges.rs`,
//! `watch.rs`, `idle.rs`, `mux_table.rs`); `published.rs`, which holds
//! them; `connection/`, built on the published epoch; then `waiters.rs`,
//! `state.rs`, `actor.rs` and `handle.rs`. A file names only files before
//! it. See docs/decisions/0105-the-epoch-is-layered.md.
//!
//! Invariants:
//! - An epoch is immutable once installed; rotation installs a new one.
//! - A retired epoch keeps every reservation until its last lease is gone.

mod actor;
mod adapter_state;
mod charges;
pub(crate) mod connection;
mod handle;
pub(crate) mod idle;
mod lease;
mod mux_table;
pub(crate) mod notice;
pub(crate) mod published;
mod state;
mod tally;
pub(crate) mod waiters;
pub(crate) mod watch;

#[cfg(feature = "testing")]
pub(crate) use handle::EpochProber;
pub(crate) use handle::{request_checkout, EpochHandle};
pub(crate) use published::DrainNotice;
pub use published::{ClientId, ClientLease, TypedSlot};

use std::any::TypeId;

use ractor::RpcReplyPort;
use tokio::sync::oneshot;

use crate::identity::TenantId;
use connection::{ConnectError, DialOutcome, DialPermit};
use idle::IdleConn;

/// Messages of the epoch actor.
pub(crate) enum Msg {
    /// The registry published a successor or retired the pools: destroy idle
    /// connections and park no more; accepted work finishes on this epoch.
    Retire,
    /// A running request of `tenant` asks for a connection of `client`.
    Checkout {
        client: usize,
        tenant: TenantId,
        type_id: TypeId,
        reply: oneshot::Sender<Checkout>,
    },
    /// A dial of `client` ended at `at` (sent on the permit's reserved slot);
    /// backoff counts from the failure, not from when the actor hears of it.
    DialDone {
        client: usize,
        /// The permit's id: only the dial holding the client's gate opens it.
        dial: u64,
        outcome: DialOutcome,
        at: tokio::time::Instant,
        /// The dial's span (`pools.dial`), for the backoff fields.
        span: tracing::Span,
    },
    /// A connection of `client` was parked or destroyed while callers
    /// waited on it (sent on the client's reserved slot: never lost).
    Wake { client: usize },
    /// Destroy expired idle connections, touching at most `bound`; answers
    /// how many were touched.
    Reclaim {
        bound: usize,
        reply: Option<RpcReplyPort<usize>>,
    },
    /// A quiescence probe (`ProviderPools::wait_quiescent`): answer at once. Its
    /// answer says that every message queued before it has been handled.
    #[cfg(feature = "testing")]
    Probe { reply: oneshot::Sender<()> },
}

/// The answer to a checkout.
pub(crate) enum Checkout {
    /// A parked connection of the requested type.
    Idle(IdleConn),
    /// Nothing idle: the caller dials.
    Dial(DialPermit),
    /// Refused at once.
    Refused(ConnectError),
}
