//! The cleanup pool's mailbox bound as `cleanup_jobs` sizes it
//! (`cleanup::mailbox_bound`: two release slots per job, its `Run` and its
//! `Finished`; this test kills the mutant of that arithmetic the rest of
//! the suite let survive, RELIABILITY.md "Mutation testing"): a burst of
//! `cleanup_jobs` closes, submitted before the cleanup actor takes any of
//! them, is taken whole, and only the next is refused, for capacity.
//!
//! Paused clock, no I/O: the closes are submitted in one synchronous loop,
//! so the burst reaches the mailbox before the actor runs.

mod support;

use provider_pools::{Cleanup, CloseFailure, DialError, DialTarget, Dialer, Limits};
use support::{bounded, http_config, installation, provider, running, start};

/// A connection whose close succeeds at once.
struct Quiet;

impl Cleanup for Quiet {
    async fn close(self) -> Result<(), CloseFailure<Self>> {
        Ok(())
    }
}

#[derive(Clone)]
struct QuietDialer;

impl Dialer for QuietDialer {
    type Conn = Quiet;

    async fn dial(&self, _: DialTarget<'_>) -> Result<Quiet, DialError> {
        Ok(Quiet)
    }
}

#[tokio::test(start_paused = true)]
async fn a_burst_of_cleanup_jobs_closes_is_taken_whole_and_only_the_next_refused() {
    const JOBS: u32 = 4;
    let pools = start(Limits {
        cleanup_jobs: JOBS,
        ..Limits::DEFAULT
    })
    .await;
    let receipt = pools
        .install(installation(&provider("p"), 0, b"k", http_config("p", 1)))
        .await
        .expect("install");
    let mut conns = Vec::new();
    for n in 0..=JOBS {
        // One tenant per connection: each within its own share.
        let request = running(&pools, &receipt, &format!("t{n}"), u64::from(n)).await;
        let conn = bounded("a dial", pools.reserve_connection(&request, &QuietDialer))
            .await
            .expect("dialed");
        drop(request);
        conns.push(conn);
    }
    // No await between the closes: the cleanup actor takes none of them
    // before the last is submitted.
    let mut tickets = Vec::new();
    let mut refused = Vec::new();
    for (n, conn) in conns.into_iter().enumerate() {
        match pools.close_connection(conn) {
            Ok(ticket) => tickets.push(ticket),
            Err(refusal) => refused.push((n, refusal.error.code())),
        }
    }
    assert_eq!(
        refused,
        [(JOBS as usize, "capacity")],
        "every cleanup slot is taken, then the next close is refused for capacity"
    );
    for ticket in tickets {
        assert!(bounded("a cleanup", ticket.outcome()).await.is_ok());
    }
    support::quiesce().await;
    assert_eq!(pools.snapshot().cleanup_jobs, 0, "every slot returned");
}
