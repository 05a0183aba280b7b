//! The registry actor: one per broker generation, the supervisor of every
//! epoch actor and the fence under which installations are published.
//!
//! Installation, in order: check the expected epoch; validate the public
//! configuration and the credential's size; reserve the retained
//! configuration, the provider's and the node's clients, the metadata bytes
//! and the epoch's drain-notice slot; spawn the epoch actor linked to the
//! registry; publish atomically, retiring the old epoch first. Any refusal
//! before publish drops what was reserved and leaves the old epoch in place.
//!
//! The registry also spawns the scheduler, linked to itself: the scheduler
//! is a control owner, and its loss closes admission and fails the report.
//!
//! Shutdown order: close admission (the accounts), answer queued waiters
//! `Closed`, unpublish and retire every epoch, stop each epoch actor when its
//! drain notice arrives, release its charges when the actor has terminated;
//! once no epoch is retained, confirm that the scheduler owns no request and
//! that the worker and cleanup actors run nothing, stop those three, then
//! complete the accounts and stop.
//!
//! Files: `actor.rs` (the loop), `handle.rs` (the only builder of its
//! messages), `state.rs` (the records) and one file per operation under
//! `state/`: `install.rs`, `lowering.rs`, `supervision.rs`, `shutdown.rs`.
//!
//! Mailbox: 64 message slots; one release slot per retained configuration
//! (the startup limit), held by each epoch for its drain notice.

mod actor;
mod directory;
mod handle;
mod state;

use ractor::RpcReplyPort;

pub(crate) use actor::Controls;
pub(crate) use directory::Directory;
pub(crate) use handle::{RegistryHandle, RegistrySpec};

use crate::error::{InstallError, LowerError};
use crate::identity::InstanceId;
use crate::install::{InstallReceipt, Installation};
use crate::limits::Limits;
use crate::mailbox::MailboxBound;

/// How often the control owner scans for expired idle connections.
pub(crate) const RECLAIM_PERIOD: std::time::Duration = std::time::Duration::from_secs(1);
/// Most idle entries one epoch's scan touches per tick.
pub(crate) const RECLAIM_BOUND: usize = 64;

/// The registry's mailbox bound for a given retained-configuration limit.
fn mailbox_bound(retained_configurations: u32) -> MailboxBound {
    MailboxBound {
        messages: 64,
        releases: retained_configurations as usize,
    }
}

/// Messages of the registry actor.
enum Msg {
    /// Install or replace a provider's epoch.
    Install {
        installation: Box<Installation>,
        reply: RpcReplyPort<Result<InstallReceipt, InstallError>>,
    },
    /// A retired epoch's last lease is gone (sent on its reserved slot).
    EpochDrained { instance: InstanceId },
    /// Close admission and retire every epoch.
    Retire { reply: RpcReplyPort<()> },
    /// Retire, then answer once every epoch and request has been released.
    Shutdown { reply: RpcReplyPort<()> },
    /// The control owner's one periodic duty: bounded idle-reclaim scans.
    ReclaimTick,
    /// The worker and cleanup pools may have become idle: re-check
    /// shutdown.
    ControlIdle,
    /// Lower limits, all or nothing.
    LowerLimits {
        limits: Limits,
        reply: RpcReplyPort<Result<(), LowerError>>,
    },
    /// A quiescence probe (`ProviderPools::wait_quiescent`): answer at once with a
    /// prober for every epoch actor believed running. Its answer says that
    /// every message queued before it has been handled; it changes nothing,
    /// not even the shutdown check that follows other messages.
    #[cfg(feature = "testing")]
    Probe {
        reply: tokio::sync::oneshot::Sender<Vec<crate::epoch::EpochProber>>,
    },
}
