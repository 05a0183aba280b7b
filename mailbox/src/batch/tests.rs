use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use ractor::{Actor, ActorProcessingErr, ActorRef, RpcReplyPort};
use tokio::sync::oneshot;

use super::*;
use crate::mailbox::ActorGone;

/// A batched test actor that records what it drains, and can be held
/// before a drain.
struct Batcher;

enum TestMsg {
    /// Signals `entered` at the end of this drain, then waits for `open`
    /// before the next one.
    Hold {
        entered: oneshot::Sender<()>,
        open: oneshot::Receiver<()>,
    },
    Record(usize, usize),
    Release,
    Log(RpcReplyPort<(Vec<(usize, usize)>, usize)>),
}

struct Recorder {
    inbox: BatchInbox<TestMsg>,
    log: Vec<(usize, usize)>,
    releases: usize,
    held: Option<(oneshot::Sender<()>, oneshot::Receiver<()>)>,
}

impl Actor for Batcher {
    type Msg = Wake;
    type State = Recorder;
    type Arguments = BatchInbox<TestMsg>;

    async fn pre_start(
        &self,
        _: ActorRef<Wake>,
        inbox: BatchInbox<TestMsg>,
    ) -> Result<Recorder, ActorProcessingErr> {
        Ok(Recorder {
            inbox,
            log: Vec::new(),
            releases: 0,
            held: None,
        })
    }

    async fn handle(
        &self,
        myself: ActorRef<Wake>,
        Wake: Wake,
        r: &mut Recorder,
    ) -> Result<(), ActorProcessingErr> {
        let Recorder {
            inbox,
            log,
            releases,
            held,
        } = r;
        inbox
            .drain(&myself, |msg| match msg {
                TestMsg::Hold { entered, open } => *held = Some((entered, open)),
                TestMsg::Record(sender, n) => log.push((sender, n)),
                TestMsg::Release => *releases += 1,
                TestMsg::Log(reply) => {
                    let _ = reply.send((log.clone(), *releases));
                }
            })
            .await;
        if let Some((entered, open)) = held.take() {
            let _ = entered.send(());
            let _ = open.await;
        }
        Ok(())
    }
}

async fn start(bound: MailboxBound) -> BatchMailbox<TestMsg> {
    let (slots, inbox) = batch(bound);
    let (actor, _join) = Actor::spawn(None, Batcher, inbox)
        .await
        .expect("batcher starts");
    slots.attach(actor)
}

/// Holds the actor between two drains; returns the sender that lets it go.
async fn hold(mailbox: &BatchMailbox<TestMsg>) -> oneshot::Sender<()> {
    let (entered, entered_rx) = oneshot::channel();
    let (open_tx, open) = oneshot::channel();
    mailbox
        .try_send(TestMsg::Hold { entered, open })
        .map_err(|_| "hold refused")
        .expect("an empty mailbox takes the hold message");
    tokio::time::timeout(Duration::from_secs(5), entered_rx)
        .await
        .expect("held within 5 s")
        .expect("batcher signalled");
    open_tx
}

async fn log(mailbox: &BatchMailbox<TestMsg>) -> (Vec<(usize, usize)>, usize) {
    let (tx, rx) = oneshot::channel();
    let deadline = Instant::now() + Duration::from_secs(5);
    mailbox
        .send_within(TestMsg::Log(tx.into()), deadline)
        .await
        .map_err(|_| "log refused")
        .expect("log queued within 5 s");
    tokio::time::timeout(Duration::from_secs(5), rx)
        .await
        .expect("log answered within 5 s")
        .expect("batcher replied")
}

#[tokio::test]
async fn full_batch_mailbox_answers_busy_at_once_and_drains_past_the_limit() {
    let messages = 3 * DRAIN_LIMIT;
    let mailbox = start(MailboxBound {
        messages,
        releases: 0,
    })
    .await;
    let open = hold(&mailbox).await;
    for n in 0..messages {
        assert!(mailbox.try_send(TestMsg::Record(0, n)).is_ok(), "{n} fits");
    }
    assert!(matches!(
        mailbox.try_send(TestMsg::Record(0, messages)),
        Err(MailboxError::Busy(TestMsg::Record(0, _)))
    ));
    let deadline = Instant::now() + Duration::from_millis(20);
    assert!(matches!(
        mailbox.send_within(TestMsg::Release, deadline).await,
        Err(MailboxError::Timeout(TestMsg::Release))
    ));
    open.send(()).expect("batcher still holding");
    let (log, _) = log(&mailbox).await;
    let expected: Vec<_> = (0..messages).map(|n| (0, n)).collect();
    assert_eq!(log, expected, "every envelope, in order, across drains");
}

#[tokio::test]
async fn releases_are_delivered_while_the_batch_mailbox_is_full() {
    const GRANTS: usize = 1_000;
    let mailbox = start(MailboxBound {
        messages: 4,
        releases: GRANTS,
    })
    .await;
    let slots: Vec<_> = (0..GRANTS)
        .map(|_| mailbox.reserve_release().expect("release slot per grant"))
        .collect();
    assert!(
        mailbox.reserve_release().is_none(),
        "release pool is bounded"
    );
    let open = hold(&mailbox).await;
    while mailbox.try_send(TestMsg::Record(0, 0)).is_ok() {}
    for slot in slots {
        assert_eq!(slot.send(TestMsg::Release), Ok(()), "never refused");
    }
    open.send(()).expect("batcher still holding");
    assert_eq!(log(&mailbox).await.1, GRANTS);
    assert!(
        mailbox.reserve_release().is_some(),
        "delivered releases return their slots"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_senders_lose_nothing_and_keep_their_order() {
    const SENDERS: usize = 8;
    const EACH: usize = 5_000;
    let mailbox = start(MailboxBound {
        messages: 64,
        releases: 0,
    })
    .await;
    let sent = Arc::new(AtomicUsize::new(0));
    let mut senders = Vec::new();
    for sender in 0..SENDERS {
        let (mailbox, sent) = (mailbox.clone(), Arc::clone(&sent));
        // A test driver: it keeps every handle.
        #[allow(clippy::disallowed_methods)]
        senders.push(tokio::spawn(async move {
            for n in 0..EACH {
                let deadline = Instant::now() + Duration::from_secs(5);
                let queued = mailbox.send_within(TestMsg::Record(sender, n), deadline);
                assert!(queued.await.is_ok(), "sender {sender} message {n} queued");
                sent.fetch_add(1, Ordering::Relaxed);
            }
        }));
    }
    for sender in senders {
        sender.await.expect("sender finished");
    }
    let (log, _) = log(&mailbox).await;
    assert_eq!(log.len(), SENDERS * EACH, "every message was drained");
    let mut next = [0; SENDERS];
    for (sender, n) in log {
        assert_eq!(n, next[sender], "sender {sender}'s messages in order");
        next[sender] += 1;
    }
}

#[tokio::test]
async fn sending_to_a_stopped_batch_actor_is_closed() {
    let mailbox = start(MailboxBound {
        messages: 1,
        releases: 1,
    })
    .await;
    let slot = mailbox.reserve_release().expect("one release slot");
    mailbox
        .actor()
        .stop_and_wait(None, Some(Duration::from_secs(5)))
        .await
        .expect("batcher stops");
    assert!(matches!(
        mailbox.try_send(TestMsg::Release),
        Err(MailboxError::Closed)
    ));
    assert_eq!(slot.send(TestMsg::Release), Err(ActorGone));
}
