//! Provider jobs, connection drivers, trusted operator work, and graceful
//! connection cleanup.

use std::future::Future;

use crate::admission::RunningRequest;
use crate::cleanup::{Cleanup, CleanupError, CleanupFailed, CleanupRefused, CleanupTicket};
use crate::epoch::connection::{DialError, DialErrorKind, DialTarget, PooledConnection};
use crate::provider_pools::ProviderPools;
use crate::workers::{JobError, JobHandle};

impl ProviderPools {
    /// Runs a provider job on one of the `provider_workers` slots (a
    /// connection's driver is no provider job: see
    /// [`spawn_driver`](Self::spawn_driver)).
    ///
    /// The worker slot and the job's metadata are reserved before `make` is
    /// called; the job's charges return only after it has been joined. A
    /// job that should keep an activation moves its `RunningRequest` in.
    ///
    /// # Cancel safety
    ///
    /// Once accepted the job runs to completion; dropping the returned
    /// handle neither aborts it nor releases its slot.
    ///
    /// # Errors
    ///
    /// [`JobError::Capacity`] at once when no slot or metadata is free,
    /// [`JobError::Busy`], and [`JobError::Closed`] after retirement.
    ///
    /// # Examples
    ///
    /// ```
    /// use provider_pools_actors::{
    ///     BrokerGeneration, JobError, Limits, PoolsConfig, ProviderPools,
    /// };
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let config = PoolsConfig {
    ///     limits: Limits {
    ///         provider_workers: 1,
    ///         workers_per_tenant: 1,
    ///         ..Limits::DEFAULT
    ///     },
    ///     ..PoolsConfig::new(tokio::runtime::Handle::current(), BrokerGeneration::new())
    /// };
    /// let pools = ProviderPools::start(config).await?;
    ///
    /// let (release, released) = tokio::sync::oneshot::channel::<()>();
    /// let job = pools.spawn(|| async move { released.await.is_ok() }).await?;
    /// // The only slot is taken: a second job is refused at once, not queued.
    /// let refused = pools.spawn(|| async {}).await;
    /// assert!(matches!(refused, Err(JobError::Capacity { .. })));
    ///
    /// release.send(()).expect("the job is waiting");
    /// assert!(job.join().await?);
    /// # Ok(())
    /// # }
    /// ```
    pub async fn spawn<F, Fut>(&self, make: F) -> Result<JobHandle<Fut::Output>, JobError>
    where
        F: FnOnce() -> Fut + Send + 'static,
        Fut: Future + Send + 'static,
        Fut::Output: Send + 'static,
    {
        if !self.is_open() {
            return Err(JobError::Closed);
        }
        self.inner.workers.spawn(make).await
    }

    /// Runs the driver `make` builds: the task that runs the connection
    /// `target`'s dial is opening (hyper's connection future, a client's
    /// tasks), for as long as that connection lives. `make` is called in
    /// the driver's own task, as [`spawn`](Self::spawn)'s is, so the
    /// driver's future is built where it runs.
    ///
    /// A driver is a job of its own class: it takes no `provider_workers`
    /// slot (those bound [`spawn`](Self::spawn) and
    /// [`spawn_blocking`](Self::spawn_blocking) work only). It holds its
    /// connection's charges instead, shared with the connection: drivers
    /// are bounded by the connection limits, one per dial, and the
    /// connection's charges return only once the connection is destroyed
    /// *and* its driver has been joined. Shutdown waits for every driver,
    /// and [`Snapshot::drivers`](crate::Snapshot::drivers) counts them.
    ///
    /// The driver must end once its connection is dropped (when its
    /// sender, or whatever it waits on, goes), and at once when the dial
    /// gives up before handing the connection over.
    ///
    /// # Cancel safety
    ///
    /// Once accepted the driver runs to completion; dropping the returned
    /// handle neither aborts it nor releases its charges. Dropped before it
    /// is accepted, the driver never runs.
    ///
    /// # Errors
    ///
    /// A [`DialError`] for the dial to return: [`DialErrorKind::Saturated`]
    /// when no metadata is free or the worker pool's mailbox stays full
    /// until the dial's deadline; [`DialErrorKind::Other`] after
    /// retirement, for a target with no seat (a dial the pools did not
    /// start, see [`DialTarget::new`]), or when this dial already started
    /// its driver.
    pub async fn spawn_driver<F, Fut>(
        &self,
        target: &DialTarget<'_>,
        make: F,
    ) -> Result<JobHandle<()>, DialError>
    where
        F: FnOnce() -> Fut + Send + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        if !self.is_open() {
            return Err(DialError::new(
                DialErrorKind::Other,
                "no connection driver: the pools are retired",
            ));
        }
        let Some((charges, deadline)) = target.take_driver_seat() else {
            return Err(DialError::new(
                DialErrorKind::Other,
                "no connection driver: the dial has no seat for one, or used it",
            ));
        };
        self.inner
            .workers
            .spawn_driver(make, charges, deadline)
            .await
            .map_err(|e| {
                let kind = match e {
                    JobError::Capacity { .. } | JobError::Busy => DialErrorKind::Saturated,
                    JobError::Closed | JobError::Panicked => DialErrorKind::Other,
                };
                DialError::new(kind, format!("no connection driver: {e}"))
            })
    }

    /// Runs blocking provider work on one of the same worker slots.
    ///
    /// # Cancel safety
    ///
    /// As [`ProviderPools::spawn`]: blocking work is never aborted.
    ///
    /// # Errors
    ///
    /// As [`ProviderPools::spawn`].
    pub async fn spawn_blocking<F, T>(&self, job: F) -> Result<JobHandle<T>, JobError>
    where
        F: FnOnce() -> T + Send + 'static,
        T: Send + 'static,
    {
        if !self.is_open() {
            return Err(JobError::Closed);
        }
        self.inner.workers.spawn_blocking(job).await
    }

    /// Runs blocking work for `running`'s request (a file-system call, say)
    /// on one of the same worker slots, charged first to the request's
    /// tenant's `workers_per_tenant` share, so one tenant's slow jobs never
    /// hold every worker.
    ///
    /// # Cancel safety
    ///
    /// As [`ProviderPools::spawn`]: blocking work is never aborted, and the
    /// tenant's share stays charged until the job is joined.
    ///
    /// # Errors
    ///
    /// [`JobError::Capacity`] naming `workers_per_tenant` when the tenant's
    /// share is taken (nothing shared was), and as [`ProviderPools::spawn`].
    pub async fn spawn_blocking_for<F, T>(
        &self,
        running: &RunningRequest,
        job: F,
    ) -> Result<JobHandle<T>, JobError>
    where
        F: FnOnce() -> T + Send + 'static,
        T: Send + 'static,
    {
        if !self.is_open() {
            return Err(JobError::Closed);
        }
        let share = self
            .inner
            .accounts
            .tenants
            .worker(running.plan().tenant())?;
        self.inner.workers.spawn_blocking_shared(job, share).await
    }

    /// Runs explicit trusted operator work (for example a protected secret
    /// reload) on the same worker slots. It constructs no guest authority.
    ///
    /// # Cancel safety
    ///
    /// An abandoned waiter keeps the job's charges until the job is joined.
    ///
    /// # Errors
    ///
    /// As [`ProviderPools::spawn`].
    pub async fn control_blocking<F, T>(&self, job: F) -> Result<JobHandle<T>, JobError>
    where
        F: FnOnce() -> T + Send + 'static,
        T: Send + 'static,
    {
        if !self.is_open() {
            return Err(JobError::Closed);
        }
        self.inner.workers.control_blocking(job).await
    }

    /// Closes a connection gracefully on a cleanup slot — separate from the
    /// worker slots, so saturated workers never block it.
    ///
    /// A successful close destroys the connection, then returns its charges
    /// and activation. A failed close hands the connection back, still owned
    /// and still charged, through the ticket: recover it, resubmit it, or
    /// drop it to destroy it. Nothing is refunded for a failed close.
    ///
    /// # Errors
    ///
    /// [`CleanupRefused`] with the connection and its charges untouched when
    /// every cleanup slot is taken or the pools are shut down.
    pub fn close_connection<T: Cleanup>(
        &self,
        conn: PooledConnection<T>,
    ) -> Result<CleanupTicket<T>, CleanupRefused<T>> {
        let (resource, charge) = conn.into_cleanup();
        if self.registry_lost() {
            return Err(CleanupRefused {
                resource,
                charge,
                error: CleanupError::Closed,
            });
        }
        self.inner.cleanup.submit(resource, charge)
    }

    /// Tries a failed close again, explicitly: the connection and its
    /// charges go back onto a cleanup slot.
    ///
    /// # Errors
    ///
    /// The failure, untouched, with why it was refused (no free cleanup
    /// slot, or shut down).
    pub fn retry_close<T: Cleanup>(
        &self,
        failed: CleanupFailed<T>,
    ) -> Result<CleanupTicket<T>, (CleanupFailed<T>, CleanupError)> {
        self.inner.cleanup.resubmit(failed)
    }
}
