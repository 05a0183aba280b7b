//! Retirement and shutdown: close admission, retire every epoch, then wait
//! for the jobs, the cleanups and the registry in named phases.

use std::time::Duration;

use tokio::time::Instant;
use tracing::Instrument;

use crate::observe::spans;
use crate::provider_pools::ProviderPools;
use crate::snapshot::Snapshot;
use crate::workers::WaitError;

/// How long `retire` waits for room in the registry's mailbox and for its
/// answer.
const CONTROL_WAIT: Duration = Duration::from_secs(5);

impl ProviderPools {
    /// Closes admission at once and retires every installed epoch; work
    /// already accepted finishes on its epoch.
    ///
    /// # Cancel safety
    ///
    /// Admission is closed on the first poll; dropping the future later may
    /// leave epochs unretired until the next `retire` or `shutdown`.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// use provider_pools_actors::{BrokerGeneration, JobError, PoolsConfig, ProviderPools};
    /// use tokio::time::Instant;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let config = PoolsConfig::new(tokio::runtime::Handle::current(), BrokerGeneration::new());
    /// let pools = ProviderPools::start(config).await?;
    /// let accepted = pools.spawn(|| async { 40 + 2 }).await?;
    ///
    /// pools.retire().await;
    /// // New work is refused; accepted work still finishes.
    /// assert!(matches!(
    ///     pools.spawn(|| async {}).await,
    ///     Err(JobError::Closed)
    /// ));
    /// assert_eq!(accepted.join().await?, 42);
    /// let report = pools.shutdown(Instant::now() + Duration::from_secs(5)).await;
    /// assert!(report.is_clean(), "{report:?}");
    /// # Ok(())
    /// # }
    /// ```
    pub async fn retire(&self) {
        self.inner.accounts.close();
        self.inner
            .registry
            .retire(Instant::now() + CONTROL_WAIT)
            .await;
    }

    /// Retires, then waits until `deadline` for every retained epoch, request,
    /// provider job and cleanup to be really released — jobs joined, never
    /// aborted — and returns what remains.
    ///
    /// The returned snapshot is clean only if everything was released and
    /// the registry completed; on timeout it reports what is still owned,
    /// and a later call may still complete.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: dropping the future stops only the waiting; admission
    /// stays closed and the drain goes on.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// use provider_pools_actors::{BrokerGeneration, ControlState, PoolsConfig, ProviderPools};
    /// use tokio::time::Instant;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let config = PoolsConfig::new(tokio::runtime::Handle::current(), BrokerGeneration::new());
    /// let pools = ProviderPools::start(config).await?;
    /// // A job still running when shutdown begins is joined, never aborted.
    /// let _job = pools
    ///     .spawn(|| tokio::time::sleep(Duration::from_millis(10)))
    ///     .await?;
    ///
    /// let report = pools.shutdown(Instant::now() + Duration::from_secs(5)).await;
    /// assert!(report.is_clean(), "{report:?}");
    /// assert_eq!(report.control, ControlState::Completed);
    /// assert_eq!(report.workers, 0);
    /// # Ok(())
    /// # }
    /// ```
    pub async fn shutdown(&self, deadline: Instant) -> Snapshot {
        let span = tracing::info_span!(spans::SHUTDOWN, outcome = tracing::field::Empty);
        self.drain_in_phases(deadline)
            .instrument(span.clone())
            .await;
        let report = self.snapshot();
        span.record(
            "outcome",
            if report.is_clean() {
                "clean"
            } else {
                "unclean"
            },
        );
        report
    }

    /// The shutdown's phases, each in its own `pools.shutdown.phase` span.
    async fn drain_in_phases(&self, deadline: Instant) {
        let retire = phase_span("retire");
        self.inner.accounts.close();
        self.inner.workers.close();
        let done = self
            .inner
            .registry
            .shutdown(deadline)
            .instrument(retire.clone())
            .await;
        phase_end(retire, if done.is_some() { "done" } else { "closed" });
        let Some(done) = done else {
            return;
        };
        // Jobs may still hand resources to cleanup until they are joined.
        let workers = phase_span("workers");
        let workers_idle = self
            .inner
            .workers
            .when_idle(deadline)
            .instrument(workers.clone())
            .await;
        phase_end(workers, wait_outcome(&workers_idle));
        let workers_idle = workers_idle.is_ok();
        if workers_idle {
            let cleanup = phase_span("cleanup");
            self.inner.cleanup.close();
            let cleanup_idle = self
                .inner
                .cleanup
                .when_idle(deadline)
                .instrument(cleanup.clone())
                .await;
            phase_end(cleanup, wait_outcome(&cleanup_idle));
            if cleanup_idle.is_ok() {
                self.inner.registry.control_idle(deadline).await;
            }
        }
        let registry = phase_span("registry");
        let stopped = async {
            let answered = tokio::time::timeout_at(deadline, done).await.is_ok();
            self.inner.registry.stopped(deadline).await;
            answered
        }
        .instrument(registry.clone())
        .await;
        phase_end(registry, if stopped { "done" } else { "timeout" });
    }
}

/// The span of one shutdown phase (`pools.shutdown.phase`).
fn phase_span(phase: &'static str) -> tracing::Span {
    tracing::info_span!(
        spans::SHUTDOWN_PHASE,
        phase,
        outcome = tracing::field::Empty
    )
}

/// A pool wait's phase outcome: `stopped` when the pool actor had already
/// stopped (the registry stops it once nothing is left).
fn wait_outcome(waited: &Result<(), WaitError>) -> &'static str {
    match waited {
        Ok(()) => "done",
        Err(WaitError::Timeout) => "timeout",
        Err(WaitError::Busy) => "busy",
        Err(WaitError::Closed) => "stopped",
    }
}

/// Records a phase's outcome and closes its span.
fn phase_end(span: tracing::Span, outcome: &'static str) {
    span.record("outcome", outcome);
}
