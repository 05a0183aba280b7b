//! The two owned tokens a request holds in the scheduler: its place in line
//! while it waits ([`Waiting`]), and its running grant once admitted
//! ([`RunningGrant`]). Dropping either gives back what it holds, through the
//! admission core, without a message.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use crate::scheduler::cell::{Cell, Left};
use crate::scheduler::core::Core;
use crate::scheduler::queue::RunningKey;
use crate::scheduler::Ended;

/// A queued request's place in line: a future of its answer.
///
/// # Cancel safety
///
/// Dropping it before it completes removes the waiter (refunding its queue
/// slot) or, if it was granted meanwhile, returns the grant's capacity.
#[must_use = "dropping a waiter cancels the queued request"]
pub(crate) struct Waiting {
    cell: Arc<Cell>,
    /// Moved into the grant once granted: an answered waiter has nothing
    /// left to give back.
    core: Option<Arc<Core>>,
}

impl Waiting {
    pub(crate) fn new(cell: Arc<Cell>, core: Arc<Core>) -> Self {
        Self {
            cell,
            core: Some(core),
        }
    }
}

impl Future for Waiting {
    type Output = Result<RunningGrant, Ended>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        let answer = std::task::ready!(this.cell.poll_answer(cx));
        Poll::Ready(answer.and_then(|running| match this.core.take() {
            Some(core) => Ok(RunningGrant::new(running, core)),
            // Polled again after its grant: the answer was read.
            None => Err(Ended::Closed),
        }))
    }
}

impl Drop for Waiting {
    fn drop(&mut self) {
        let left = self.cell.leave();
        // Without its core the waiter read its grant, so left nothing.
        let Some(core) = &self.core else { return };
        match left {
            Left::Queued => core.cancel(Arc::clone(&self.cell)),
            Left::Holding(running) => core.release(running),
            Left::Nothing => {}
        }
    }
}

impl fmt::Debug for Waiting {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Waiting")
            .field("waiting", &self.cell.is_waiting())
            .finish()
    }
}

/// Running capacity granted to one request: counted against its tenant,
/// its logical provider and the total until dropped.
#[must_use = "dropping a running grant returns its capacity at once"]
pub(crate) struct RunningGrant {
    running: RunningKey,
    core: Arc<Core>,
}

impl RunningGrant {
    pub(crate) fn new(running: RunningKey, core: Arc<Core>) -> Self {
        Self { running, core }
    }
}

impl RunningGrant {
    /// False when the expiring provider share this grant was made under
    /// has lapsed with more running than its fallback allows (see
    /// [`crate::RunningRequest::check_share`]). Takes the queue's lock only
    /// once the share's grant-time expiry has passed.
    pub(crate) fn share_holds(&self) -> bool {
        self.running.share_surely_holds() || !self.core.share_lapsed(&self.running)
    }

    /// The registry's accounts, which the granted request charges.
    pub(crate) fn accounts(&self) -> &Arc<crate::accounts::Accounts> {
        self.core.accounts()
    }
}

impl Drop for RunningGrant {
    fn drop(&mut self) {
        self.core.release(self.running);
    }
}

impl fmt::Debug for RunningGrant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RunningGrant")
            .field("running", &self.running)
            .finish()
    }
}
