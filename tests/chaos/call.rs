//! One chaos call: a request's whole life — stage, admit, dispatch, start,
//! work, connect, hold, and end — as its [`Script`] says. Every fault and
//! every drop point was drawn from the seed before the call started, so
//! the call itself consumes no randomness and replays identically.
//!
//! What the call holds is counted in a [`Tally`]: the engine's snapshot
//! must never count less than the harness holds (a release delivered twice
//! would make it), and both must reach zero.

use std::future::Future;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::task::Poll;

use provider_pools::{
    AdmitRequest, Bytes, InstallReceipt, OriginKind, PooledConnection, ProviderPools,
};

use crate::faults::{ChaosConn, ChaosDialer, Switch, PANIC};
use crate::pace::Pace;
use crate::script::{Cancel, End, Failed, Script, Work};
use crate::support::{allow_all, plan};

/// What the harness holds right now, by kind.
#[derive(Debug, Default)]
pub(crate) struct Tally {
    /// Granted requests (`PoolReady` or `RunningRequest`) a call holds.
    pub(crate) requests: AtomicU32,
    /// Checked-out connections a call or a job holds.
    pub(crate) conns: AtomicU32,
    /// Failed closes a call holds.
    pub(crate) failed: AtomicU32,
    /// Job bodies running now.
    pub(crate) jobs: AtomicU32,
}

impl Tally {
    pub(crate) fn get(counter: &AtomicU32) -> u32 {
        counter.load(Ordering::SeqCst)
    }

    pub(crate) fn is_zero(&self) -> bool {
        [&self.requests, &self.conns, &self.failed, &self.jobs]
            .iter()
            .all(|c| Self::get(c) == 0)
    }
}

/// One unit counted in a [`Tally`] while alive.
pub(crate) struct Held {
    tally: Arc<Tally>,
    which: fn(&Tally) -> &AtomicU32,
}

impl Held {
    pub(crate) fn new(tally: &Arc<Tally>, which: fn(&Tally) -> &AtomicU32) -> Self {
        which(tally).fetch_add(1, Ordering::SeqCst);
        Self {
            tally: Arc::clone(tally),
            which,
        }
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        (self.which)(&self.tally).fetch_sub(1, Ordering::SeqCst);
    }
}

/// A value and its count; the count goes first, so the harness never holds
/// more than the engine has counted.
struct Tracked<T> {
    held: Held,
    value: T,
}

/// What every call shares.
#[derive(Clone)]
pub(crate) struct Ctx {
    pub(crate) pools: ProviderPools,
    pub(crate) switch: Arc<Switch>,
    pub(crate) tally: Arc<Tally>,
    /// How the scenario's durations pass.
    pub(crate) pace: Pace,
}

/// Runs `script` against `receipt`'s provider, dropped where it says.
pub(crate) async fn run(ctx: Ctx, receipt: InstallReceipt, script: Script) {
    let (cancel, switch, pace) = (script.cancel, Arc::clone(&ctx.switch), ctx.pace);
    let call = lifecycle(ctx, receipt, script);
    let finished = match cancel {
        Cancel::Never => {
            call.await;
            true
        }
        Cancel::After(ms) => {
            tokio::select! {
                biased;
                () = call => true,
                () = pace.sleep(ms) => false,
            }
        }
        Cancel::Polls(n) => polled(call, n).await,
    };
    if !finished {
        switch.fired("call dropped mid-flight");
    }
}

/// Polls `future` at most `n` times, then drops it; true if it finished.
async fn polled(future: impl Future<Output = ()>, n: u32) -> bool {
    let mut future = std::pin::pin!(future);
    let mut left = n;
    std::future::poll_fn(|cx| {
        if left == 0 {
            return Poll::Ready(false);
        }
        left -= 1;
        future.as_mut().poll(cx).map(|()| true)
    })
    .await
}

async fn lifecycle(ctx: Ctx, receipt: InstallReceipt, script: Script) {
    let Ctx { pools, switch, .. } = &ctx;
    let plan = plan(&format!("t{}", script.tenant), script.session);
    let Ok(input) = pools.stage_input(&plan, Bytes::from(vec![0u8; script.input])) else {
        return;
    };
    let admit = AdmitRequest {
        plan,
        provider: receipt.provider.clone(),
        slot: receipt.slots[script.slot % receipt.slots.len()],
        kind: OriginKind::Http,
        input,
    };
    let Ok(ready) = pools.admit(admit).await else {
        return;
    };
    let ready = Tracked {
        held: Held::new(&ctx.tally, |t| &t.requests),
        value: ready,
    };
    switch.fired("call granted");
    perform(&ctx, script.granted, ()).await;
    let Ok(call) = pools.dispatch(&allow_all(), ready.value.plan(), ready.value.provider()) else {
        return;
    };
    let Tracked { held, value } = ready;
    let Ok(running) = value.start(call) else {
        return;
    };
    let running = Tracked {
        held,
        value: running,
    };
    let _output = script
        .output
        .map(|len| running.value.stage_output(Bytes::from(vec![1u8; len])).ok());
    perform(&ctx, script.running, running.value.clone()).await;

    let dialer = ChaosDialer {
        fault: script.dial,
        bomb: script.bomb,
        switch: Arc::clone(switch),
        pace: ctx.pace,
    };
    let Ok(conn) = pools.reserve_connection(&running.value, &dialer).await else {
        return;
    };
    let conn = Tracked {
        held: Held::new(&ctx.tally, |t| &t.conns),
        value: conn,
    };
    ctx.pace.sleep(script.hold).await;
    finish(&ctx, conn, script.end).await;
}

/// Runs a piece of request work that keeps `owner` (a request, or nothing)
/// alive while it runs.
async fn perform<O: Send + 'static>(ctx: &Ctx, work: Work, owner: O) {
    match work {
        Work::None => {}
        Work::Sleep(ms) => ctx.pace.sleep(ms).await,
        Work::Panic => {
            ctx.switch.fired("panic: request work");
            panic!("{PANIC} request work panicked")
        }
        Work::Job { ms, panic } => {
            let (tally, switch, pace) = (Arc::clone(&ctx.tally), Arc::clone(&ctx.switch), ctx.pace);
            let job = ctx
                .pools
                .spawn(move || async move {
                    let _running = Held::new(&tally, |t| &t.jobs);
                    let _owner = owner;
                    pace.sleep(ms).await;
                    if panic {
                        switch.fired("panic: provider job");
                        panic!("{PANIC} a provider job panicked");
                    }
                })
                .await;
            if let Ok(job) = job {
                let joined = job.join().await;
                if panic {
                    assert!(
                        matches!(joined, Err(provider_pools::JobError::Panicked)),
                        "a panicking job answers Panicked, got {joined:?}"
                    );
                }
            }
        }
    }
}

async fn finish(ctx: &Ctx, conn: Tracked<PooledConnection<ChaosConn>>, end: End) {
    let Tracked { held, mut value } = conn;
    match end {
        End::Park => {
            drop(held);
            value.park();
        }
        End::Drop => {
            drop(held);
            drop(value);
        }
        End::Panic => {
            ctx.switch.fired("panic: request work holding a connection");
            panic!("{PANIC} request work panicked holding a connection")
        }
        End::Job { ms, panic } => {
            let conn = Tracked { held, value };
            perform(ctx, Work::Job { ms, panic }, conn).await;
        }
        End::Close {
            fault,
            wait,
            failed,
        } => {
            value.get_mut().close = fault;
            drop(held);
            close(ctx, value, wait, failed).await;
        }
    }
}

async fn close(ctx: &Ctx, conn: PooledConnection<ChaosConn>, wait: bool, failed: Failed) {
    let pools = &ctx.pools;
    let ticket = match pools.close_connection(conn) {
        Ok(ticket) => ticket,
        // Refused at once: the resource, then its charge, dropped here.
        Err(refused) => return drop(refused),
    };
    if !wait {
        return;
    }
    let Err(failure) = ticket.outcome().await else {
        return;
    };
    let failure = Tracked {
        held: Held::new(&ctx.tally, |t| &t.failed),
        value: failure,
    };
    match failed {
        Failed::Drop => drop(failure),
        Failed::Keep(ms) => {
            ctx.pace.sleep(ms).await;
            drop(failure);
        }
        Failed::Retry => {
            let Tracked { held, value } = failure;
            drop(held);
            match pools.retry_close(value) {
                Ok(ticket) => {
                    let _ = ticket.outcome().await;
                }
                Err((failure, _)) => drop(failure),
            }
        }
    }
}
