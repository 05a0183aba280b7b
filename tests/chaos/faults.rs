//! The faults a chaos run injects through the adapter traits: a dialer, a
//! connection and its graceful close, each doing what the seed chose; and
//! the switch that ends every fault once the run stops injecting them.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use provider_pools::{Cleanup, CloseFailure, DialError, DialErrorKind, DialTarget, Dialer};
use tokio::sync::watch;

use crate::pace::Pace;

/// The message every injected panic starts with; the panic hook keeps
/// them out of the test output.
pub(crate) const PANIC: &str = "chaos fault:";

/// Whether faults are still injected. Never-completing waits end, and
/// connection destructors stop panicking, once the run switches them off.
#[derive(Debug)]
pub(crate) struct Switch {
    armed: AtomicBool,
    stop: watch::Sender<bool>,
    /// How often each fault fired, for the run's report.
    fired: Mutex<BTreeMap<&'static str, u64>>,
}

impl Switch {
    pub(crate) fn new() -> Arc<Self> {
        Arc::new(Self {
            armed: AtomicBool::new(true),
            stop: watch::channel(false).0,
            fired: Mutex::new(BTreeMap::new()),
        })
    }

    /// Counts one firing of `what`.
    pub(crate) fn fired(&self, what: &'static str) {
        *self.fired.lock().expect("counts").entry(what).or_default() += 1;
    }

    pub(crate) fn counts(&self) -> BTreeMap<&'static str, u64> {
        self.fired.lock().expect("counts").clone()
    }

    pub(crate) fn armed(&self) -> bool {
        self.armed.load(Ordering::SeqCst)
    }

    /// Ends every fault: bombs are defused and every `never` wait returns.
    pub(crate) fn stop(&self) {
        self.armed.store(false, Ordering::SeqCst);
        self.stop.send_replace(true);
    }

    /// Waits until the faults stop: "never completes" for as long as the
    /// run injects faults.
    pub(crate) async fn never(&self) {
        let mut stopped = self.stop.subscribe();
        let _ = stopped.wait_for(|stopped| *stopped).await;
    }
}

/// What one dial does.
#[derive(Debug, Clone, Copy)]
pub(crate) enum DialFault {
    Ok,
    Slow(u64),
    Fail(DialErrorKind),
    /// Waits until faults stop, then fails.
    Never,
    Panic,
}

/// What one graceful close does.
#[derive(Debug, Clone, Copy)]
pub(crate) enum CloseFault {
    Ok,
    Slow(u64),
    Fail,
    /// Waits until faults stop, then succeeds.
    Never,
    Panic,
}

/// An in-memory connection. A bomb's destructor panics while faults are
/// armed: adapter code panicking wherever the connection is destroyed —
/// the caller's task, a cleanup task, or the epoch actor (expiry, a full
/// idle pool, retirement), which the registry then restarts.
#[derive(Debug)]
pub(crate) struct ChaosConn {
    pub(crate) close: CloseFault,
    bomb: Option<Arc<Switch>>,
    switch: Arc<Switch>,
    pace: Pace,
}

impl Drop for ChaosConn {
    fn drop(&mut self) {
        let armed = self.bomb.as_ref().is_some_and(|switch| switch.armed());
        if armed && !std::thread::panicking() {
            if let Some(switch) = &self.bomb {
                switch.fired("panic: connection destructor");
            }
            panic!("{PANIC} a connection destructor panicked");
        }
    }
}

impl Cleanup for ChaosConn {
    async fn close(self) -> Result<(), CloseFailure<Self>> {
        self.switch.fired(match self.close {
            CloseFault::Ok => "close: ok",
            CloseFault::Slow(_) => "close: slow",
            CloseFault::Fail => "close: fails",
            CloseFault::Never => "close: never (until faults stop)",
            CloseFault::Panic => "panic: close",
        });
        match self.close {
            CloseFault::Ok => Ok(()),
            CloseFault::Slow(ms) => {
                self.pace.sleep(ms).await;
                Ok(())
            }
            CloseFault::Fail => Err(CloseFailure::new(self, "refused by chaos")),
            CloseFault::Never => {
                self.switch.never().await;
                Ok(())
            }
            CloseFault::Panic => panic!("{PANIC} a close panicked"),
        }
    }
}

/// Dials as its fault says; a successful dial opens a [`ChaosConn`].
#[derive(Debug, Clone)]
pub(crate) struct ChaosDialer {
    pub(crate) fault: DialFault,
    pub(crate) bomb: bool,
    pub(crate) switch: Arc<Switch>,
    pub(crate) pace: Pace,
}

impl ChaosDialer {
    fn open(&self) -> ChaosConn {
        ChaosConn {
            close: CloseFault::Ok,
            bomb: self.bomb.then(|| Arc::clone(&self.switch)),
            switch: Arc::clone(&self.switch),
            pace: self.pace,
        }
    }
}

impl Dialer for ChaosDialer {
    type Conn = ChaosConn;

    async fn dial(&self, _: DialTarget<'_>) -> Result<ChaosConn, DialError> {
        self.switch.fired(match self.fault {
            DialFault::Ok => "dial: ok",
            DialFault::Slow(_) => "dial: slow",
            DialFault::Fail(_) => "dial: fails",
            DialFault::Never => "dial: never (until faults stop)",
            DialFault::Panic => "panic: dial",
        });
        match self.fault {
            DialFault::Ok => Ok(self.open()),
            DialFault::Slow(ms) => {
                self.pace.sleep(ms).await;
                Ok(self.open())
            }
            DialFault::Fail(kind) => Err(DialError::new(kind, "refused by chaos")),
            DialFault::Never => {
                self.switch.never().await;
                Err(DialError::new(DialErrorKind::Timeout, "never answered"))
            }
            DialFault::Panic => panic!("{PANIC} a dial panicked"),
        }
    }
}
