//! The epoch actor: the runtime owner of one (provider, epoch) — its dial
//! gates, backoff, the callers waiting for a connection, and the upkeep of
//! its idle connections.
//!
//! Spawned linked to the registry when an epoch is installed; its immutable
//! installation is the [`PublishedEpoch`] it shares with the directory. It
//! stays alive after retirement until the registry, told by the drain notice
//! that the last lease is gone, stops it. Adapter code never runs here
//! except a connection's `Drop` when an idle one is destroyed.
//!
//! The idle connections are kept in the epoch's per-client stash
//! (`epoch::idle`): a request's task takes a fresh one, and parks one, there
//! directly, while nobody waits on the client; it sends `Checkout` only when
//! none is idle or callers wait. This actor empties the stash on retirement
//! and on restart, reclaims expired entries in bounded scans, and serves the
//! callers waiting on a client (behind its dial, or while it is at
//! `connections_per_client`) by tenant rotation.
//!
//! Its messages are the module's [`Msg`], defined at the module's root with
//! the [`Checkout`](crate::epoch::Checkout) answer they carry.
//!
//! Mailbox: `64 + running_requests` message slots (one checkout per running
//! request, plus reclaim scans); release slots: the registry's `Retire`,
//! one per possible connection of the epoch (its dial outcome), and one per
//! client (its `Wake`), i.e. `1 + connections + clients` (startup).

use std::sync::Arc;

use ractor::{Actor, ActorProcessingErr, ActorRef};

use crate::accounts::Accounts;
use crate::epoch::published::PublishedEpoch;
use crate::epoch::state::Clients;
use crate::epoch::waiters::Waiter;
use crate::epoch::Msg;
use crate::limits::{DialBackoff, Limits};
use crate::mailbox::{Envelope, Mailbox, MailboxBound, MailboxSlots};

pub(super) fn bound(limits: &Limits, clients: usize) -> MailboxBound {
    MailboxBound {
        // Every running request may have one checkout in flight.
        messages: 64 + limits.running_requests as usize,
        releases: 1 + limits.connections as usize + clients,
    }
}

pub(super) struct EpochActor;

pub(super) struct EpochArgs {
    pub(crate) published: Arc<PublishedEpoch>,
    pub(crate) accounts: Arc<Accounts>,
    pub(crate) backoff: DialBackoff,
    pub(crate) slots: MailboxSlots,
}

pub(crate) struct State {
    mailbox: Mailbox<Msg>,
    clients: Clients,
}

impl Actor for EpochActor {
    type Msg = Envelope<Msg>;
    type State = State;
    type Arguments = EpochArgs;

    async fn pre_start(
        &self,
        myself: ActorRef<Self::Msg>,
        args: EpochArgs,
    ) -> Result<State, ActorProcessingErr> {
        let EpochArgs {
            published,
            accounts,
            backoff,
            slots,
        } = args;
        let mailbox = slots.attach(myself);
        let clients = Clients::new(&mailbox, published, accounts, backoff);
        Ok(State { mailbox, clients })
    }

    async fn handle(
        &self,
        _myself: ActorRef<Self::Msg>,
        msg: Self::Msg,
        state: &mut State,
    ) -> Result<(), ActorProcessingErr> {
        let State { mailbox, clients } = state;
        match msg.open() {
            Msg::Retire => clients.retire(),
            Msg::Checkout {
                client,
                tenant,
                type_id,
                reply,
            } => clients.checkout(
                mailbox,
                client,
                Waiter {
                    tenant,
                    type_id,
                    reply,
                },
            ),
            Msg::DialDone {
                client,
                dial,
                outcome,
                at,
                span,
            } => clients.dial_done(mailbox, client, dial, outcome, at, &span),
            Msg::Wake { client } => clients.wake(mailbox, client),
            Msg::Reclaim { bound, reply } => {
                let touched = clients.reclaim(bound);
                if let Some(reply) = reply {
                    let _ = reply.send(touched);
                }
            }
            #[cfg(feature = "testing")]
            Msg::Probe { reply } => {
                let _ = reply.send(());
            }
        }
        Ok(())
    }
}
