//! What the admission core's unit tests and loom models share: a stand-in
//! for the scheduler actor and the admits they make. On `crate::sync`'s
//! atomics, so the same stand-in runs under loom and without it.

use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use super::core::Core;
use super::{AdmitReply, RunningGrant, Waiting};
use crate::identity::{ProviderId, TenantId};
use crate::mailbox::{Stopped, WakeTarget};
use crate::priority::Priority;
use crate::sync::{AtomicBool, AtomicUsize, Ordering};

/// The actor: counts the wake-ups sent and served; refuses them once
/// stopped. At most one may wait unserved (the core's `nudged` flag).
#[derive(Default)]
pub(super) struct StandIn {
    sent: AtomicUsize,
    served: AtomicUsize,
    pub(super) stopped: AtomicBool,
}

impl WakeTarget for StandIn {
    fn stopping(&self) -> bool {
        self.stopped.load(Ordering::SeqCst)
    }

    fn wake(&self) -> Result<(), Stopped> {
        if self.stopping() {
            return Err(Stopped);
        }
        let sent = self.sent.fetch_add(1, Ordering::SeqCst);
        let served = self.served.load(Ordering::SeqCst);
        assert_eq!(sent, served, "two wake-ups waiting in the actor's mailbox");
        Ok(())
    }
}

impl StandIn {
    /// Wake-ups sent so far.
    pub(super) fn wakes(&self) -> usize {
        self.sent.load(Ordering::SeqCst)
    }

    /// Serves the waiting wake-up, if any, as the actor's `handle` does,
    /// until none waits.
    pub(super) fn serve(&self, core: &Core) {
        while self.served.load(Ordering::SeqCst) < self.sent.load(Ordering::SeqCst) {
            self.served.fetch_add(1, Ordering::SeqCst);
            core.woken();
            core.run_handed();
        }
    }
}

/// `core` with a stand-in actor attached.
pub(super) fn attached(core: Core) -> (Arc<Core>, Arc<StandIn>) {
    let core = Arc::new(core);
    let actor = Arc::new(StandIn::default());
    core.attach(Arc::clone(&actor));
    (core, actor)
}

pub(super) fn tenant(name: &str) -> TenantId {
    TenantId::new(name).expect("a valid tenant")
}

pub(super) fn provider() -> ProviderId {
    ProviderId::new("p").expect("a valid provider")
}

/// An admit of `tenant` to the one provider, waiting a minute at most.
pub(super) fn admit(core: &Arc<Core>, name: &str) -> AdmitReply {
    core.admit(
        &tenant(name),
        provider(),
        Priority::default(),
        Instant::now() + Duration::from_secs(60),
    )
}

pub(super) fn granted(admission: AdmitReply) -> RunningGrant {
    match admission {
        AdmitReply::Granted(grant) => grant,
        other => panic!("expected a grant on the caller's task, got {other:?}"),
    }
}

pub(super) fn waiting(admission: AdmitReply) -> Waiting {
    match admission {
        AdmitReply::Waiting(waiting) => waiting,
        other => panic!("expected a place in line, got {other:?}"),
    }
}
