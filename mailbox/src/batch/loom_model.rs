//! Model checks (loom) of the batched mailbox's `scheduled` flag: pushes
//! racing the actor's drain, and a release racing the actor's stop. The
//! real [`Shared::push`] and [`BatchInbox::drain`] run with the real slot
//! pools; the actor is a stand-in that counts the [`Wake`]s waiting for
//! it, and the FIFO is the real tokio channel (not instrumented by loom:
//! the models take its operations as atomic, and explore every
//! interleaving of the flag around them). [`DRAIN_LIMIT`] is two under
//! loom, so three envelopes can cut a drain short.

use std::sync::Arc;

use loom::future::block_on;
use loom::sync::atomic::{AtomicBool, AtomicUsize, Ordering::SeqCst};
use loom::thread;

use super::{batch, BatchInbox, DRAIN_LIMIT};
use crate::envelope::Envelope;
use crate::fifo::{Shared, Stopped, WakeTarget};
use crate::mailbox::{MailboxBound, MailboxSlots};

/// The actor: the Wakes waiting in its mailbox, and whether it stopped.
#[derive(Default)]
struct StandIn {
    waiting: AtomicUsize,
    stopping: AtomicBool,
}

impl WakeTarget for StandIn {
    fn stopping(&self) -> bool {
        self.stopping.load(SeqCst)
    }

    fn wake(&self) -> Result<(), Stopped> {
        if self.stopping() {
            return Err(Stopped);
        }
        let before = self.waiting.fetch_add(1, SeqCst);
        assert_eq!(before, 0, "two Wakes waiting in the actor's mailbox");
        Ok(())
    }
}

impl StandIn {
    /// Takes the waiting Wake, if any.
    fn receive(&self) -> bool {
        self.waiting
            .fetch_update(SeqCst, SeqCst, |n| n.checked_sub(1))
            .is_ok()
    }
}

type Route = Shared<u32, Arc<StandIn>>;

/// A batched mailbox of `messages` message slots and `releases` release
/// slots, its sending half bound to a stand-in actor.
fn mailbox(
    messages: usize,
    releases: usize,
) -> (MailboxSlots, Arc<Route>, BatchInbox<u32>, Arc<StandIn>) {
    let (slots, inbox) = batch::<u32>(MailboxBound { messages, releases });
    let actor = Arc::new(StandIn::default());
    let shared = Arc::new(Shared {
        queue: slots.queue.clone(),
        scheduled: Arc::clone(&slots.scheduled),
        actor: Arc::clone(&actor),
    });
    (slots.slots, shared, inbox, actor)
}

/// What `Mailbox::try_send` does on the batched route: a message slot,
/// then the push.
fn send(slots: &MailboxSlots, route: &Route, msg: u32) -> Result<(), Stopped> {
    let (slot, msg) = slots.try_message(msg).expect("a free message slot");
    route.push(Envelope {
        slot: Some(slot),
        msg,
    })
}

/// The actor serving one waiting Wake, if there is one.
fn serve(actor: &Arc<StandIn>, inbox: &mut BatchInbox<u32>, opened: &mut Vec<u32>) -> bool {
    if !actor.receive() {
        return false;
    }
    block_on(inbox.drain(actor, |msg| opened.push(msg)));
    true
}

/// The actor serves every Wake left once the senders are done; what it
/// has not opened then was lost.
fn serve_all(actor: &Arc<StandIn>, inbox: &mut BatchInbox<u32>, opened: &mut Vec<u32>) {
    while serve(actor, inbox, opened) {}
}

#[test]
fn a_push_racing_the_drain_is_opened_exactly_once() {
    assert_eq!(DRAIN_LIMIT, 2);
    crate::sync::model(
        "a_push_racing_the_drain_is_opened_exactly_once",
        None,
        || {
            let (slots, route, mut inbox, actor) = mailbox(2, 0);
            send(&slots, &route, 1).expect("running");
            let pusher = {
                let (slots, route) = (slots.clone(), Arc::clone(&route));
                thread::spawn(move || send(&slots, &route, 2).expect("running"))
            };
            // The actor takes the first Wake and drains while the second
            // push races it.
            let mut opened = Vec::new();
            assert!(
                serve(&actor, &mut inbox, &mut opened),
                "a Wake for the first push"
            );
            pusher.join().expect("pusher");
            serve_all(&actor, &mut inbox, &mut opened);
            opened.sort_unstable();
            assert_eq!(opened, [1, 2], "each message opened once, none left behind");
            assert_eq!(slots.messages.free(), 2, "every message slot returned once");
        },
    );
}

#[test]
fn two_pushes_racing_the_drain_are_opened_exactly_once() {
    crate::sync::model(
        "two_pushes_racing_the_drain_are_opened_exactly_once",
        Some(3),
        || {
            let (slots, route, mut inbox, actor) = mailbox(3, 0);
            send(&slots, &route, 1).expect("running");
            let pushers: Vec<_> = [2, 3]
                .into_iter()
                .map(|msg| {
                    let (slots, route) = (slots.clone(), Arc::clone(&route));
                    thread::spawn(move || send(&slots, &route, msg).expect("running"))
                })
                .collect();
            let mut opened = Vec::new();
            assert!(
                serve(&actor, &mut inbox, &mut opened),
                "a Wake for the first push"
            );
            for pusher in pushers {
                pusher.join().expect("pusher");
            }
            serve_all(&actor, &mut inbox, &mut opened);
            opened.sort_unstable();
            assert_eq!(
                opened,
                [1, 2, 3],
                "each message opened once, none left behind"
            );
            assert_eq!(slots.messages.free(), 3, "every message slot returned once");
        },
    );
}

#[test]
fn a_release_racing_the_actors_stop_returns_its_slot_once() {
    crate::sync::model(
        "a_release_racing_the_actors_stop_returns_its_slot_once",
        None,
        || {
            let (slots, route, inbox, actor) = mailbox(1, 1);
            let release = slots.try_release().expect("the only release slot");
            let releaser = {
                let route = Arc::clone(&route);
                // What `ReleaseSlot::send` does on the batched route.
                thread::spawn(move || {
                    route.push(Envelope {
                        slot: Some(release),
                        msg: 7,
                    })
                })
            };
            // The stop: the actor takes no more messages, then its inbox
            // (with whatever it did not drain) is dropped.
            actor.stopping.store(true, SeqCst);
            drop(inbox);
            let sent = releaser.join().expect("releaser");
            assert_eq!(
                slots.releases.free(),
                1,
                "the release slot came back exactly once (sent: {sent:?})"
            );
            assert!(actor.waiting.load(SeqCst) <= 1);
            drop(route);
            assert_eq!(slots.releases.free(), 1);
        },
    );
}
