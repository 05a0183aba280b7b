mod burst;
mod idle_waiters;
mod shutdown;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use ractor::ActorRef;
use tokio::sync::oneshot;

use provider_pools_test_peers::eventually;

use super::testing::{deadline, host, within, Gate};
use super::*;
use crate::accounts::Accounts;

struct Fixture {
    pool: WorkerPool,
    accounts: Arc<Accounts>,
    host: ActorRef<()>,
}

async fn fixture(provider_workers: u32) -> Fixture {
    let limits = Limits {
        provider_workers,
        ..Limits::DEFAULT
    };
    let accounts = Accounts::new(&limits);
    let host = host().await;
    let pool = WorkerPool::spawn_linked(
        &limits,
        Arc::clone(&accounts),
        tokio::runtime::Handle::current(),
        host.get_cell(),
    )
    .await
    .expect("worker pool starts");
    Fixture {
        pool,
        accounts,
        host,
    }
}

impl Fixture {
    fn gauge(&self) -> u32 {
        self.accounts.gauges.workers.load(Ordering::Acquire)
    }

    async fn counts(&self) -> JobCounts {
        self.pool.counts(deadline()).await.expect("counts answered")
    }

    async fn idle(&self) {
        self.pool
            .when_idle(deadline())
            .await
            .expect("pool goes idle");
    }

    /// Starts a blocking job held on a gate; returns once the job runs.
    async fn hold(&self) -> (Gate, JobHandle<()>) {
        let (gate, held, started) = Gate::new();
        let job = self.pool.spawn_blocking(move || held.wait()).await;
        let job = job.expect("a free worker takes the held job");
        within("the held job starts", started)
            .await
            .expect("started");
        (gate, job)
    }
}

async fn outcome<T>(job: JobHandle<T>) -> Result<T, JobError> {
    within("the job's result", job.join()).await
}

fn capacity(resource: &'static str, used: u32, limit: u32) -> JobError {
    JobError::Capacity {
        resource,
        used,
        limit,
    }
}

/// A real blocking job whose handle is dropped keeps its worker: nothing is
/// aborted and nothing is refunded until the job has returned and been
/// joined.
#[tokio::test]
async fn a_dropped_handle_neither_aborts_nor_refunds_a_blocking_job() {
    let f = fixture(1).await;
    let (gate, held, started) = Gate::new();
    let finished = Arc::new(AtomicBool::new(false));
    let done = Arc::clone(&finished);
    let handle = f
        .pool
        .spawn_blocking(move || {
            held.wait();
            done.store(true, Ordering::SeqCst);
        })
        .await
        .expect("a free worker takes the job");
    within("the job starts", started).await.expect("started");
    drop(handle);

    assert_eq!(f.counts().await.blocking, 1);
    assert_eq!(f.gauge(), 1);
    let refused = f.pool.spawn_blocking(|| ()).await.expect_err("no worker");
    assert_eq!(refused, capacity("provider_workers", 1, 1));
    assert_eq!(f.gauge(), 1, "a refusal changes nothing");

    gate.open();
    eventually("the released job is joined", || f.gauge() == 0).await;
    assert!(finished.load(Ordering::SeqCst), "the job ran to its end");
    let next = f.pool.spawn_blocking(|| 7).await.expect("the slot is free");
    assert_eq!(outcome(next).await, Ok(7));
}

/// A panicking provider job answers `Panicked`, releases its slot after the
/// join, and leaves the pool working — blocking, async, and a constructor
/// that panics before building its future.
#[tokio::test]
async fn a_panicking_job_answers_panicked_and_poisons_nothing() {
    let f = fixture(1).await;

    let job = f
        .pool
        .spawn_blocking(|| -> u8 { panic!("provider failure") });
    let job = job.await.expect("accepted");
    assert_eq!(outcome(job).await, Err(JobError::Panicked));
    f.idle().await;
    assert_eq!((f.gauge(), f.accounts.metadata.used()), (0, 0));
    let next = f.pool.spawn_blocking(|| 5).await.expect("slot released");
    assert_eq!(outcome(next).await, Ok(5));
    // The result can arrive before the join that frees the slot.
    f.idle().await;

    let job = f.pool.spawn(|| async { panic!("provider failure") });
    let job: JobHandle<u8> = job.await.expect("accepted");
    assert_eq!(outcome(job).await, Err(JobError::Panicked));
    f.idle().await;
    let next = f.pool.spawn(|| async { 6 }).await.expect("slot released");
    assert_eq!(outcome(next).await, Ok(6));
    f.idle().await;

    let job = f
        .pool
        .spawn(|| -> std::future::Ready<u8> { panic!("constructor failure") });
    let job = job.await.expect("accepted");
    assert_eq!(outcome(job).await, Err(JobError::Panicked));
    f.idle().await;
    assert_eq!((f.gauge(), f.accounts.metadata.used()), (0, 0));
    let next = f.pool.spawn(|| async { 8 }).await.expect("slot released");
    assert_eq!(outcome(next).await, Ok(8));
}

/// A constructor that records that it was called.
fn make(called: &Arc<AtomicBool>) -> impl FnOnce() -> std::future::Ready<()> + Send + 'static {
    let flag = Arc::clone(called);
    move || {
        flag.store(true, Ordering::SeqCst);
        std::future::ready(())
    }
}

/// With no free worker the constructor is never called; with one, it is.
#[tokio::test]
async fn the_constructor_runs_only_after_a_worker_is_reserved() {
    let f = fixture(1).await;
    let (gate, _holder) = f.hold().await;
    let called = Arc::new(AtomicBool::new(false));
    let refused = f.pool.spawn(make(&called)).await.expect_err("no worker");
    assert_eq!(refused, capacity("provider_workers", 1, 1));
    assert!(!called.load(Ordering::SeqCst), "make was never called");

    gate.open();
    f.idle().await;
    let job = f.pool.spawn(make(&called)).await.expect("accepted");
    assert_eq!(outcome(job).await, Ok(()));
    assert!(
        called.load(Ordering::SeqCst),
        "make ran after the reservation"
    );
}

/// Control work takes the same worker slots as blocking work, and an
/// abandoned control job keeps its worker and metadata until it is joined.
#[tokio::test]
async fn control_blocking_shares_the_slots_and_keeps_its_charge() {
    let f = fixture(2).await;
    let (blocking_gate, _blocking) = f.hold().await;
    let (control_gate, held, started) = Gate::new();
    let control = f.pool.control_blocking(move || held.wait()).await;
    let control = control.expect("control work takes the second worker");
    within("control starts", started).await.expect("started");
    drop(control);

    let counts = f.counts().await;
    let by_kind = (counts.blocking, counts.control, counts.running());
    assert_eq!(by_kind, (1, 1, 2));
    let full = capacity("provider_workers", 2, 2);
    assert_eq!(
        f.pool.control_blocking(|| ()).await.expect_err("full"),
        full
    );
    assert_eq!(f.pool.spawn_blocking(|| ()).await.expect_err("full"), full);
    assert_eq!(f.accounts.metadata.used(), 2 * JOB_OVERHEAD);

    control_gate.open();
    eventually("the control job is joined", || f.gauge() == 1).await;
    let counts = f.counts().await;
    assert_eq!((counts.blocking, counts.control), (1, 0));
    assert_eq!(f.accounts.metadata.used(), JOB_OVERHEAD);

    blocking_gate.open();
    f.idle().await;
    assert_eq!((f.gauge(), f.accounts.metadata.used()), (0, 0));
}

/// `WhenIdle` is answered only once the held job has been released and
/// joined, and at once when nothing runs.
#[tokio::test]
async fn when_idle_answers_only_after_the_held_job_is_joined() {
    let f = fixture(1).await;
    f.idle().await;

    let (gate, _job) = f.hold().await;
    let (reply, mut idle) = oneshot::channel();
    let queued = f.pool.mailbox().try_send(Msg::WhenIdle { reply });
    assert!(queued.is_ok(), "room in the mailbox");
    // Mailboxes are FIFO: once `Counts` is answered, `WhenIdle` was handled.
    assert_eq!(f.counts().await.running(), 1);
    assert!(idle.try_recv().is_err(), "not idle while the job is held");

    gate.open();
    let answer = within("idle after the release", &mut idle).await;
    assert_eq!(answer, Ok(Ok(())));
    let after = (f.gauge(), f.accounts.metadata.used());
    assert_eq!(after, (0, 0), "released before answering");
}

/// Each job charges its metadata until it is joined; an exhausted metadata
/// budget refuses the job naming the budget, with no worker taken.
#[tokio::test]
async fn metadata_is_charged_per_job_and_returned_after_the_join() {
    let f = fixture(4).await;
    assert_eq!(f.accounts.metadata.used(), 0);
    let (first_gate, _first) = f.hold().await;
    let (second_gate, _second) = f.hold().await;
    assert_eq!(f.accounts.metadata.used(), 2 * JOB_OVERHEAD);

    let limit = 2 * JOB_OVERHEAD;
    f.accounts.metadata.set_limit(limit).expect("limit at use");
    let refused = f.pool.spawn_blocking(|| ()).await.expect_err("no metadata");
    assert_eq!(refused, capacity("metadata_bytes", limit, limit));
    assert_eq!(f.counts().await.running(), 2, "no worker taken");

    first_gate.open();
    let one_left = || f.accounts.metadata.used() == JOB_OVERHEAD;
    eventually("one job joined", one_left).await;
    second_gate.open();
    f.idle().await;
    assert_eq!(f.accounts.metadata.used(), 0);
}

/// After close, jobs are refused `Closed` without running; accepted work
/// runs on to its end.
#[tokio::test]
async fn close_refuses_new_jobs_and_lets_accepted_ones_finish() {
    let f = fixture(2).await;
    let (gate, accepted) = f.hold().await;
    f.pool.close();
    let called = Arc::new(AtomicBool::new(false));
    let refused = f.pool.spawn(make(&called)).await.expect_err("closed");
    assert_eq!(refused, JobError::Closed);
    assert!(!called.load(Ordering::SeqCst));

    gate.open();
    assert_eq!(outcome(accepted).await, Ok(()));
    f.idle().await;
}

/// A worker-pool actor killed while a job runs refunds nothing early: its
/// reaper keeps the job's charges until the job has been joined.
#[tokio::test]
async fn a_killed_pool_keeps_charges_until_the_join() {
    let f = fixture(1).await;
    let (gate, _job) = f.hold().await;
    f.pool.cell().kill();
    let stopped = || f.pool.cell().get_status() == ractor::ActorStatus::Stopped;
    eventually("the actor stops", stopped).await;
    let refused = f.pool.spawn_blocking(|| ()).await.expect_err("gone");
    assert_eq!(refused, JobError::Closed);
    assert_eq!(
        f.accounts.metadata.used(),
        JOB_OVERHEAD,
        "held by the reaper"
    );

    gate.open();
    let refunded = || f.accounts.metadata.used() == 0;
    eventually("the reaper releases after the join", refunded).await;
}

/// The worker slots can be lowered, never below use, and never above the
/// startup limit that sized the release slots.
#[tokio::test]
async fn worker_slots_lower_but_never_below_use() {
    let f = fixture(2).await;
    let (gate, _job) = f.hold().await;
    let in_use = f.pool.set_limit(0).expect_err("one worker in use");
    let refusal = (in_use.resource, in_use.used, in_use.requested);
    assert_eq!(refusal, ("provider_workers", 1, 0));
    f.pool.set_limit(1).expect("one in use, one allowed");
    let refused = f.pool.spawn_blocking(|| ()).await.expect_err("lowered");
    assert_eq!(refused, capacity("provider_workers", 1, 1));

    f.pool.set_limit(100).expect("taken as the startup limit");
    let (second_gate, _second) = f.hold().await;
    let refused = f.pool.spawn_blocking(|| ()).await.expect_err("at startup");
    assert_eq!(refused, capacity("provider_workers", 2, 2));
    gate.open();
    second_gate.open();
    f.idle().await;
}

#[tokio::test]
async fn the_pool_is_linked_to_its_supervisor_and_codes_are_stable() {
    let f = fixture(1).await;
    let children = f.host.get_children();
    assert!(children
        .iter()
        .any(|c| c.get_id() == f.pool.cell().get_id()));
    let codes = [
        capacity("provider_workers", 1, 1).code(),
        JobError::Busy.code(),
        JobError::Closed.code(),
        JobError::Panicked.code(),
    ];
    assert_eq!(codes, ["capacity", "busy", "closed", "panicked"]);
    assert_eq!(
        capacity("provider_workers", 1, 1).to_string(),
        "capacity exhausted: provider_workers has 1 of 1 in use"
    );
}
