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
//! Mailbox: `64 + running_requests` message slots (one checkout per running
//! request, plus reclaim scans); release slots: the registry's `Retire`,
//! one per possible connection of the epoch (its dial outcome), and one per
//! client (its `Wake`), i.e. `1 + connections + clients` (startup).

use std::any::TypeId;
use std::sync::Arc;

use ractor::{Actor, ActorCell, ActorProcessingErr, ActorRef, RpcReplyPort};
use tokio::sync::oneshot;

use crate::connection::DialOutcome;
use crate::epoch::pool::{Checkout, Pools};
use crate::epoch::published::PublishedEpoch;
use crate::epoch::waiters::Waiter;
use crate::identity::TenantId;
use crate::ledger::Ledger;
use crate::limits::{DialBackoff, Limits};
use crate::mailbox::{Envelope, Mailbox, MailboxBound, MailboxSlots, ReleaseSlot};

fn bound(limits: &Limits, clients: usize) -> MailboxBound {
    MailboxBound {
        // Every running request may have one checkout in flight.
        messages: 64 + limits.running_requests as usize,
        releases: 1 + limits.connections as usize + clients,
    }
}

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
}

pub(crate) struct EpochActor;

pub(crate) struct EpochArgs {
    pub(crate) published: Arc<PublishedEpoch>,
    pub(crate) ledger: Arc<Ledger>,
    pub(crate) backoff: DialBackoff,
    pub(crate) slots: MailboxSlots,
}

pub(crate) struct State {
    mailbox: Mailbox<Msg>,
    pools: Pools,
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
        let mailbox = args.slots.attach(myself);
        let pools = Pools::new(&mailbox, args.published, args.ledger, args.backoff);
        Ok(State { mailbox, pools })
    }

    async fn handle(
        &self,
        _myself: ActorRef<Self::Msg>,
        msg: Self::Msg,
        state: &mut State,
    ) -> Result<(), ActorProcessingErr> {
        let State { mailbox, pools } = state;
        match msg.open() {
            Msg::Retire => pools.retire(),
            Msg::Checkout {
                client,
                tenant,
                type_id,
                reply,
            } => pools.checkout(
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
            } => pools.dial_done(mailbox, client, dial, outcome, at, &span),
            Msg::Wake { client } => pools.wake(mailbox, client),
            Msg::Reclaim { bound, reply } => {
                let touched = pools.reclaim(bound);
                if let Some(reply) = reply {
                    let _ = reply.send(touched);
                }
            }
        }
        Ok(())
    }
}

/// The registry's hold on one epoch actor.
#[derive(Debug)]
pub(crate) struct EpochHandle {
    mailbox: Mailbox<Msg>,
    retire_slot: Option<ReleaseSlot<Msg>>,
}

impl EpochHandle {
    /// Spawns the actor for `published`, linked to `supervisor`, and records
    /// its mailbox in `published`.
    pub(crate) async fn spawn(
        published: Arc<PublishedEpoch>,
        ledger: Arc<Ledger>,
        limits: &Limits,
        supervisor: ActorCell,
    ) -> Result<Self, ractor::SpawnErr> {
        let slots = MailboxSlots::new(bound(limits, published.client_count()));
        let args = EpochArgs {
            published: Arc::clone(&published),
            ledger,
            backoff: limits.dial_backoff(),
            slots: slots.clone(),
        };
        let (actor, _join) = Actor::spawn_linked(None, EpochActor, args, supervisor).await?;
        let mailbox = slots.attach(actor);
        published.set_actor(mailbox.clone());
        let retire_slot = mailbox.reserve_release();
        Ok(Self {
            mailbox,
            retire_slot,
        })
    }

    pub(crate) fn cell(&self) -> ActorCell {
        self.mailbox.actor().get_cell()
    }

    pub(crate) fn mailbox(&self) -> &Mailbox<Msg> {
        &self.mailbox
    }

    /// Tells the actor it is retired; its slot was reserved at spawn.
    pub(crate) fn retire(&mut self) {
        if let Some(slot) = self.retire_slot.take() {
            // A stopped epoch actor has nothing left to retire.
            let _ = slot.send(Msg::Retire);
        }
    }

    pub(crate) fn stop(&self) {
        self.mailbox.actor().stop(Some("drained".into()));
    }
}
