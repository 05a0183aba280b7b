//! The worker pool's mailbox as `mailbox_bound` sizes it: a burst of job
//! requests for every worker, beyond the 64 messages kept for control, is
//! taken before the actor reads any; only the next is refused, as busy.

use tokio::sync::oneshot;

use super::{capacity, fixture};
use crate::mailbox::MailboxError;
use crate::workers::testing::within;
use crate::workers::{JobError, JobHolds, JobKind, Msg, Work};

/// A job request for a blocking job that does nothing.
fn request() -> (Msg, oneshot::Receiver<Result<u64, JobError>>) {
    let (reply, answer) = oneshot::channel();
    let msg = Msg::Spawn {
        kind: JobKind::Blocking,
        work: Work::Blocking(Box::new(|| ())),
        holds: JobHolds::Nothing,
        reply,
    };
    (msg, answer)
}

#[tokio::test]
async fn a_burst_of_64_plus_provider_workers_requests_is_taken_and_the_next_refused_busy() {
    const WORKERS: u32 = 3;
    let f = fixture(WORKERS).await;
    // No await in the burst: the actor, on this test's one thread, reads
    // none of it before the last request is sent.
    let mut answers = Vec::new();
    for n in 0..64 + WORKERS {
        let (msg, answer) = request();
        assert!(
            f.pool.mailbox().try_send(msg).is_ok(),
            "request {n} of {} fits the mailbox",
            64 + WORKERS
        );
        answers.push(answer);
    }
    let (msg, _answer) = request();
    assert!(
        matches!(f.pool.mailbox().try_send(msg), Err(MailboxError::Busy(_))),
        "the request past the bound is refused busy"
    );

    // Every request taken is answered: one job per worker (none can end
    // before the burst is read: its finish notice queues behind it), the
    // rest refused for capacity.
    let mut accepted = 0;
    for answer in answers {
        match within("a request's answer", answer).await {
            Ok(Ok(_id)) => accepted += 1,
            Ok(Err(refused)) => {
                assert_eq!(refused, capacity("provider_workers", WORKERS, WORKERS));
            }
            Err(_) => panic!("a request taken by the mailbox went unanswered"),
        }
    }
    assert_eq!(accepted, WORKERS, "one job per worker");
    f.idle().await;
}
