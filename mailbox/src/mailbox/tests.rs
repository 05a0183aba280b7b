use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use ractor::{Actor, ActorProcessingErr, ActorRef, RpcReplyPort};
use tokio::sync::oneshot;

use super::*;

/// A test actor that can be held inside `handle` and counts releases.
struct Gate;

enum GateMsg {
    /// Signals `entered`, then stays in `handle` until `open` fires.
    Hold {
        entered: oneshot::Sender<()>,
        open: oneshot::Receiver<()>,
    },
    Noop,
    Release,
    Count(RpcReplyPort<usize>),
}

impl Actor for Gate {
    type Msg = Envelope<GateMsg>;
    type State = usize;
    type Arguments = ();

    async fn pre_start(&self, _: ActorRef<Self::Msg>, _: ()) -> Result<usize, ActorProcessingErr> {
        Ok(0)
    }

    async fn handle(
        &self,
        _: ActorRef<Self::Msg>,
        msg: Self::Msg,
        releases: &mut usize,
    ) -> Result<(), ActorProcessingErr> {
        match msg.open() {
            GateMsg::Hold { entered, open } => {
                let _ = entered.send(());
                let _ = open.await;
            }
            GateMsg::Noop => {}
            GateMsg::Release => *releases += 1,
            GateMsg::Count(reply) => {
                let _ = reply.send(*releases);
            }
        }
        Ok(())
    }
}

/// A grant that owns the room for its own release message.
struct Grant {
    slot: Option<ReleaseSlot<GateMsg>>,
    failures: Arc<AtomicUsize>,
}

impl Drop for Grant {
    fn drop(&mut self) {
        if let Some(slot) = self.slot.take() {
            if slot.send(GateMsg::Release).is_err() {
                self.failures.fetch_add(1, Ordering::SeqCst);
            }
        }
    }
}

async fn start_gate(bound: MailboxBound) -> Mailbox<GateMsg> {
    let slots = MailboxSlots::new(bound);
    let (actor, _join) = Actor::spawn(None, Gate, ())
        .await
        .expect("gate actor starts");
    slots.attach(actor)
}

/// Holds the actor inside `handle`; returns the sender that lets it go.
async fn hold(mailbox: &Mailbox<GateMsg>) -> oneshot::Sender<()> {
    let (entered_tx, entered_rx) = oneshot::channel();
    let (open_tx, open_rx) = oneshot::channel();
    mailbox
        .try_send(GateMsg::Hold {
            entered: entered_tx,
            open: open_rx,
        })
        .map_err(|_| "hold message refused")
        .expect("an empty mailbox takes the hold message");
    tokio::time::timeout(Duration::from_secs(5), entered_rx)
        .await
        .expect("gate entered handle within 5 s")
        .expect("gate signalled");
    open_tx
}

async fn count(mailbox: &Mailbox<GateMsg>) -> usize {
    let (tx, rx) = oneshot::channel();
    let deadline = Instant::now() + Duration::from_secs(5);
    mailbox
        .send_within(GateMsg::Count(tx.into()), deadline)
        .await
        .map_err(|_| "count refused")
        .expect("count queued within 5 s");
    tokio::time::timeout(Duration::from_secs(5), rx)
        .await
        .expect("count answered within 5 s")
        .expect("gate replied")
}

#[tokio::test]
async fn full_mailbox_answers_busy_at_once() {
    let mailbox = start_gate(MailboxBound {
        messages: 4,
        releases: 0,
    })
    .await;
    let open = hold(&mailbox).await;
    for i in 0..4 {
        assert!(mailbox.try_send(GateMsg::Noop).is_ok(), "message {i} fits");
    }
    assert!(matches!(
        mailbox.try_send(GateMsg::Noop),
        Err(MailboxError::Busy(GateMsg::Noop))
    ));
    let deadline = Instant::now() + Duration::from_millis(20);
    assert!(matches!(
        mailbox.send_within(GateMsg::Noop, deadline).await,
        Err(MailboxError::Timeout(GateMsg::Noop))
    ));
    open.send(()).expect("gate still holding");
    assert_eq!(count(&mailbox).await, 0);
    assert!(
        mailbox.try_send(GateMsg::Noop).is_ok(),
        "drained mailbox takes messages"
    );
}

#[tokio::test]
async fn releases_are_delivered_while_the_mailbox_is_full() {
    const GRANTS: usize = 1_000;
    let mailbox = start_gate(MailboxBound {
        messages: 4,
        releases: GRANTS,
    })
    .await;
    let failures = Arc::new(AtomicUsize::new(0));
    let grants: Vec<Grant> = (0..GRANTS)
        .map(|_| Grant {
            slot: Some(mailbox.reserve_release().expect("release slot per grant")),
            failures: Arc::clone(&failures),
        })
        .collect();
    assert!(
        mailbox.reserve_release().is_none(),
        "release pool is bounded by the number of grants"
    );

    let open = hold(&mailbox).await;
    while mailbox.try_send(GateMsg::Noop).is_ok() {}
    assert!(matches!(
        mailbox.try_send(GateMsg::Noop),
        Err(MailboxError::Busy(_))
    ));

    drop(grants);
    assert_eq!(failures.load(Ordering::SeqCst), 0, "no release was refused");

    open.send(()).expect("gate still holding");
    assert_eq!(count(&mailbox).await, GRANTS);
    assert!(
        mailbox.reserve_release().is_some(),
        "delivered releases return their slots"
    );
}

#[tokio::test]
async fn sending_to_a_stopped_actor_is_closed() {
    let mailbox = start_gate(MailboxBound {
        messages: 1,
        releases: 1,
    })
    .await;
    let slot = mailbox.reserve_release().expect("one release slot");
    mailbox
        .actor()
        .stop_and_wait(None, Some(Duration::from_secs(5)))
        .await
        .expect("gate stops");
    assert!(matches!(
        mailbox.try_send(GateMsg::Noop),
        Err(MailboxError::Closed)
    ));
    assert_eq!(slot.send(GateMsg::Release), Err(ActorGone));
}

#[tokio::test]
async fn a_tick_is_delivered_past_a_full_mailbox_and_holds_no_slot() {
    let mailbox = start_gate(MailboxBound {
        messages: 1,
        releases: 0,
    })
    .await;
    let open = hold(&mailbox).await;
    assert!(mailbox.try_send(GateMsg::Noop).is_ok(), "the only slot");
    assert!(matches!(
        mailbox.try_send(GateMsg::Noop),
        Err(MailboxError::Busy(GateMsg::Noop))
    ));
    mailbox
        .actor()
        .send_message(Envelope::tick(GateMsg::Release))
        .map_err(|_| "tick refused")
        .expect("a tick needs no slot");
    let opened = mailbox.opened();
    open.send(()).expect("gate still holding");
    let deadline = Instant::now() + Duration::from_secs(5);
    let (tx, rx) = oneshot::channel();
    mailbox
        .send_within(GateMsg::Count(tx.into()), deadline)
        .await
        .map_err(|_| "count refused")
        .expect("count queued once the queued message returns its slot");
    let releases = tokio::time::timeout(Duration::from_secs(5), rx)
        .await
        .expect("count answered within 5 s")
        .expect("gate replied");
    assert_eq!(releases, 1, "the tick was opened");
    assert_eq!(
        mailbox.opened(),
        opened.wrapping_add(2),
        "only the queued message and the count returned slots, not the tick"
    );
}
