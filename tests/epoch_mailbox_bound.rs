//! The epoch actor's mailbox bound as the startup limits size it
//! (`epoch::actor::bound`: every running request may have one checkout in
//! flight, beyond 64 for the registry's messages; this test kills the
//! mutant of that arithmetic the rest of the suite let survive,
//! RELIABILITY.md "Mutation testing"): a burst of `64 + running_requests`
//! checkouts, sent before the epoch actor reads any, is taken; the next is
//! refused busy at once.
//!
//! Paused clock, no I/O: each `reserve_connection` is polled once by hand
//! (which sends its checkout) and then held unpolled, so the burst reaches
//! the mailbox before the actor runs.

mod support;

use std::future::Future;
use std::pin::Pin;
use std::task::Poll;

use provider_pools::{ConnectError, DialError, DialTarget, Dialer, Limits, PooledConnection};
use support::{running, with_mem};

/// A dialer whose dials never finish: no checkout in the burst is answered
/// by a connection while the test looks.
#[derive(Clone)]
struct Never;

impl Dialer for Never {
    type Conn = ();

    async fn dial(&self, _: DialTarget<'_>) -> Result<(), DialError> {
        std::future::pending().await
    }
}

type Reserve<'a> = Pin<Box<dyn Future<Output = Result<PooledConnection<()>, ConnectError>> + 'a>>;

#[tokio::test(start_paused = true)]
async fn a_burst_of_64_plus_running_requests_checkouts_is_taken_and_the_next_refused_busy() {
    const RUNNING: u32 = 1;
    const BURST: u32 = 64 + RUNNING;
    let (pools, receipt) = with_mem(Limits {
        running_requests: RUNNING,
        running_per_tenant: RUNNING,
        running_per_provider: RUNNING,
        // Room for every checkout of the burst in the tenant's share of the
        // client, so each reaches the epoch actor.
        connections_per_client: 2 * BURST,
        connections_per_tenant: 2 * BURST,
        ..Limits::DEFAULT
    })
    .await;
    let request = running(&pools, &receipt, "t", 1).await;

    let mut held: Vec<Reserve<'_>> = Vec::new();
    for n in 0..=BURST {
        let mut reserve: Reserve<'_> = Box::pin(pools.reserve_connection(&request, &Never));
        let polled = std::future::poll_fn(|cx| Poll::Ready(reserve.as_mut().poll(cx))).await;
        match polled {
            Poll::Pending => held.push(reserve),
            Poll::Ready(answer) => {
                assert_eq!(
                    (n, answer.map(|_| ()).map_err(|e| e.code())),
                    (BURST, Err("busy")),
                    "only the checkout past the burst is answered at once, busy"
                );
            }
        }
    }
    assert_eq!(
        held.len(),
        BURST as usize,
        "every checkout of the burst was taken"
    );

    drop(held);
    drop(request);
    let report = pools.shutdown(support::deadline()).await;
    assert!(report.is_clean(), "{report:?}");
}
