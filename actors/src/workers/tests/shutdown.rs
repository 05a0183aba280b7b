//! A job whose runtime shuts down before it finishes answers `Closed`, not
//! `Panicked`: the waiter learns the job never completed, and that no
//! provider code failed.

use crate::accounts::Accounts;
use crate::limits::Limits;
use crate::workers::testing::{host, within};
use crate::workers::{JobError, WorkerPool};

#[tokio::test]
async fn a_job_its_runtime_drops_unfinished_answers_closed() {
    let limits = Limits {
        provider_workers: 1,
        ..Limits::DEFAULT
    };
    // The pool and its jobs on a runtime of their own, which the test
    // shuts down under a running job.
    let jobs = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("the jobs' runtime");
    let host = host().await;
    let pool = WorkerPool::spawn_linked(
        &limits,
        Accounts::new(&limits),
        jobs.handle().clone(),
        host.get_cell(),
    )
    .await
    .expect("worker pool starts");
    let (started_tx, started) = tokio::sync::oneshot::channel();
    let job = pool
        .spawn(move || async move {
            let _ = started_tx.send(());
            std::future::pending::<()>().await;
        })
        .await
        .expect("a free worker takes the job");
    within("the job starts", started)
        .await
        .expect("the job runs");

    jobs.shutdown_background();
    assert_eq!(
        within("the job's answer", job.join()).await,
        Err(JobError::Closed),
        "a job dropped unfinished by its runtime is closed, not panicked"
    );
}
