//! The engine's phases on a paused clock: queued, granted, started,
//! dialing, connected and cleanup. Each builds the caller's future, drives
//! it into its phase, resolves (or not) what it waits on as the behaviour
//! says, drops it, and checks what returns.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use provider_pools::{ConnectError, DialErrorKind, InstallReceipt, ProviderPools, Snapshot};

use crate::mem::MemDialer;
use crate::support::{admitted, allow_all, http_config, installation, plan, provider, request};
use crate::{
    drive, gate, let_tasks_run, returns_to, shuts_down_clean, within_limits, Behaviour, Call,
    Outcome, Resolve, LIMITS, SLOW,
};

/// Fresh pools with one provider installed, and the snapshot then.
async fn fixture() -> (ProviderPools, InstallReceipt, Snapshot) {
    let pools = crate::support::start(LIMITS).await;
    let receipt = pools
        .install(installation(&provider("p"), 0, b"k", http_config("p", 1)))
        .await
        .expect("install");
    let baseline = pools.snapshot();
    (pools, receipt, baseline)
}

async fn running(
    pools: &ProviderPools,
    receipt: &InstallReceipt,
    session: u64,
) -> provider_pools::RunningRequest {
    crate::support::running(pools, receipt, "t", session).await
}

/// Checks the limits at the drop instant and drops `call`: a dependency
/// that completes at the drop instant is answered first (its answer ready,
/// never observed); any other is handed back, still pending.
async fn drop_call(
    pools: &ProviderPools,
    call: Call,
    resolve: Resolve,
    behaviour: Behaviour,
) -> Result<Option<Resolve>, String> {
    let pending = if behaviour.at_drop() {
        resolve.answer(!behaviour.fails());
        let_tasks_run().await;
        None
    } else {
        Some(resolve)
    };
    within_limits(&pools.snapshot(), "at the drop instant")?;
    drop(call);
    Ok(pending)
}

/// A slow dependency completes now, `SLOW` after the drop; a `never` one
/// stays pending.
async fn later(behaviour: Behaviour, pending: Option<Resolve>) -> Option<Resolve> {
    match (behaviour, pending) {
        (Behaviour::Slow | Behaviour::SlowError, Some(resolve)) => {
            tokio::time::advance(SLOW).await;
            resolve.answer(behaviour == Behaviour::Slow);
            let_tasks_run().await;
            None
        }
        (_, pending) => pending,
    }
}

/// Nothing is refunded while the work that outlives the caller runs.
async fn still_holds(pools: &ProviderPools, at_drop: &Snapshot) -> Outcome {
    let_tasks_run().await;
    let now = pools.snapshot();
    if now == *at_drop {
        Ok(())
    } else {
        Err(format!(
            "refunded while its work runs:\n at the drop {at_drop:?}\n now         {now:?}"
        ))
    }
}

/// A `never` dependency that the pools still wait for: shutdown reports
/// what remains instead of claiming it; once released, shutdown is clean.
async fn never_then_released(
    pools: &ProviderPools,
    pending: Option<Resolve>,
    remains: impl Fn(&Snapshot) -> bool,
) -> Outcome {
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(1);
    let report = pools.shutdown(deadline).await;
    if report.is_clean() || !remains(&report) {
        return Err(format!("shutdown claimed work still running: {report:?}"));
    }
    if let Some(resolve) = pending {
        resolve.answer(true);
    }
    shuts_down_clean(pools).await
}

pub(crate) async fn queued(behaviour: Behaviour) -> Outcome {
    let (pools, receipt, baseline) = fixture().await;
    let holder = admitted(&pools, request(&pools, plan("holder", 0), &receipt, b"h")).await;
    let before = pools.snapshot();
    let mut call: Call = Box::pin({
        let (pools, receipt) = (pools.clone(), receipt.clone());
        async move {
            let waiter = request(&pools, plan("t", 1), &receipt, b"x");
            let _ = pools.admit(waiter).await;
        }
    });
    drive(&pools, &mut call, "queued", |s| s.pending_requests == 1).await?;
    // The dependency is the holder's release; an error is the queue
    // deadline passing.
    let holder = match behaviour {
        Behaviour::Ok => {
            drop(holder);
            let_tasks_run().await;
            None
        }
        Behaviour::Error => {
            tokio::time::advance(LIMITS.queue_age).await;
            let_tasks_run().await;
            Some(holder)
        }
        _ => Some(holder),
    };
    within_limits(&pools.snapshot(), "at the drop instant")?;
    drop(call);
    if let Some(holder) = holder {
        returns_to(&pools, &before, "after the drop, the holder still running").await?;
        match behaviour {
            Behaviour::Slow => tokio::time::advance(SLOW).await,
            Behaviour::SlowError => tokio::time::advance(LIMITS.queue_age).await,
            _ => {}
        }
        drop(holder);
    }
    returns_to(&pools, &baseline, "once quiet").await?;
    shuts_down_clean(&pools).await
}

pub(crate) async fn granted(behaviour: Behaviour) -> Outcome {
    let (pools, receipt, baseline) = fixture().await;
    let (resolve, wait) = gate();
    let entered = Arc::new(AtomicBool::new(false));
    let mut call: Call = Box::pin({
        let (pools, receipt, entered) = (pools.clone(), receipt.clone(), Arc::clone(&entered));
        async move {
            let ready = admitted(&pools, request(&pools, plan("t", 1), &receipt, b"x")).await;
            entered.store(true, Ordering::SeqCst);
            // The runtime decides asynchronously whether to dispatch.
            if wait.outcome().await {
                let call = pools
                    .dispatch(&allow_all(), ready.plan(), ready.provider())
                    .expect("dispatch");
                let _running = ready.start(call).expect("start");
            }
        }
    });
    drive(&pools, &mut call, "granted", |s| {
        s.running_requests == 1 && entered.load(Ordering::SeqCst)
    })
    .await?;
    let pending = drop_call(&pools, call, resolve, behaviour).await?;
    returns_to(&pools, &baseline, "after the drop").await?;
    let _never = later(behaviour, pending).await;
    returns_to(&pools, &baseline, "once quiet").await?;
    shuts_down_clean(&pools).await
}

pub(crate) async fn started(behaviour: Behaviour) -> Outcome {
    let (pools, receipt, baseline) = fixture().await;
    let (resolve, wait) = gate();
    let mut call: Call = Box::pin({
        let (pools, receipt) = (pools.clone(), receipt.clone());
        async move {
            let running = running(&pools, &receipt, 1).await;
            let held = running.clone();
            let job = pools
                .spawn(move || async move {
                    let _held = held;
                    assert!(wait.outcome().await, "sweep: the provider job failed");
                })
                .await
                .expect("a free worker");
            let _ = job.join().await;
        }
    });
    drive(&pools, &mut call, "started", |s| {
        s.running_requests == 1 && s.workers == 1
    })
    .await?;
    let pending = drop_call(&pools, call, resolve, behaviour).await?;
    if behaviour.at_drop() {
        returns_to(&pools, &baseline, "once quiet").await?;
        return shuts_down_clean(&pools).await;
    }
    let at_drop = pools.snapshot();
    still_holds(&pools, &at_drop).await?;
    let pending = later(behaviour, pending).await;
    if behaviour == Behaviour::Never {
        return never_then_released(&pools, pending, |r| {
            r.workers == 1 && r.running_requests == 1
        })
        .await;
    }
    returns_to(&pools, &baseline, "after the job ended").await?;
    shuts_down_clean(&pools).await
}

pub(crate) async fn dialing(behaviour: Behaviour) -> Outcome {
    let (pools, receipt, baseline) = fixture().await;
    let (resolve, wait) = gate();
    let dialer = Arc::new(MemDialer::dial_waits(wait));
    let mut call: Call = Box::pin({
        let (pools, receipt, dialer) = (pools.clone(), receipt.clone(), Arc::clone(&dialer));
        async move {
            let running = running(&pools, &receipt, 1).await;
            let _ = pools.reserve_connection(&running, &*dialer).await;
        }
    });
    drive(&pools, &mut call, "dialing", |s| {
        s.connections.connecting == 1
    })
    .await?;
    let pending = drop_call(&pools, call, resolve, behaviour).await?;
    let_tasks_run().await;
    // A dial belongs to the client: the dropped call cancels nothing, and
    // the dial keeps its charges and the activation until it ends.
    if pending.is_some() {
        let now = pools.snapshot();
        if now.connections.connecting != 1 || now.running_requests != 1 {
            return Err(format!("the dial ended with its caller: {now:?}"));
        }
    }
    let pending = later(behaviour, pending).await;
    let failed = match behaviour {
        // It fails at its own deadline, the queue age in force when it
        // started, as a real timeout.
        Behaviour::Never => {
            tokio::time::advance(crate::LIMITS.queue_age).await;
            let_tasks_run().await;
            Some(DialErrorKind::Timeout)
        }
        _ if behaviour.fails() => Some(DialErrorKind::Refused),
        _ => None,
    };
    let next = running(&pools, &receipt, 2).await;
    let answer = pools.reserve_connection(&next, &*dialer).await;
    match (failed, answer) {
        // A success was parked for the client, charged, and is reused.
        (None, Ok(conn)) if conn.is_reused() => drop(conn),
        // A failure backs off as what it was.
        (Some(expected), Err(ConnectError::Unavailable { kind, .. })) if kind == expected => {}
        (expected, answer) => {
            return Err(format!(
                "after a dropped call's dial ({expected:?} expected): {answer:?}"
            ))
        }
    }
    drop(next);
    drop(pending);
    returns_to(&pools, &baseline, "after the dial ended").await?;
    let opened = usize::from(failed.is_none());
    if dialer.destroyed() != opened {
        return Err(format!(
            "{} connections destroyed, {opened} opened",
            dialer.destroyed()
        ));
    }
    shuts_down_clean(&pools).await
}

pub(crate) async fn connected(behaviour: Behaviour) -> Outcome {
    let (pools, receipt, baseline) = fixture().await;
    let (resolve, wait) = gate();
    let dialer = Arc::new(MemDialer::conn_waits(wait));
    let mut call: Call = Box::pin({
        let (pools, receipt, dialer) = (pools.clone(), receipt.clone(), Arc::clone(&dialer));
        async move {
            let running = running(&pools, &receipt, 1).await;
            let Ok(mut conn) = pools.reserve_connection(&running, &*dialer).await else {
                return;
            };
            let exchange = conn.get_mut().gate.take().expect("a gated exchange");
            if exchange.outcome().await {
                conn.park();
            }
        }
    });
    drive(&pools, &mut call, "connected", |s| {
        s.connections.active == 1
    })
    .await?;
    let pending = drop_call(&pools, call, resolve, behaviour).await?;
    returns_to(&pools, &baseline, "after the drop").await?;
    if dialer.destroyed() != 1 {
        return Err("the dropped call's connection was not destroyed once".into());
    }
    let _never = later(behaviour, pending).await;
    returns_to(&pools, &baseline, "once quiet").await?;
    shuts_down_clean(&pools).await
}

pub(crate) async fn cleanup(behaviour: Behaviour) -> Outcome {
    let (pools, receipt, baseline) = fixture().await;
    let (resolve, wait) = gate();
    let dialer = Arc::new(MemDialer::conn_waits(wait));
    let mut call: Call = Box::pin({
        let (pools, receipt, dialer) = (pools.clone(), receipt.clone(), Arc::clone(&dialer));
        async move {
            let running = running(&pools, &receipt, 1).await;
            let Ok(conn) = pools.reserve_connection(&running, &*dialer).await else {
                return;
            };
            drop(running);
            let Ok(ticket) = pools.close_connection(conn) else {
                return;
            };
            let _ = ticket.outcome().await;
        }
    });
    drive(&pools, &mut call, "cleaning up", |s| s.cleanup_jobs == 1).await?;
    let pending = drop_call(&pools, call, resolve, behaviour).await?;
    if behaviour.at_drop() {
        // Closed, or failed and handed to the dropped ticket: destroyed.
        returns_to(&pools, &baseline, "once quiet").await?;
        return shuts_down_clean(&pools).await;
    }
    let at_drop = pools.snapshot();
    still_holds(&pools, &at_drop).await?;
    let pending = later(behaviour, pending).await;
    match behaviour {
        Behaviour::Never => {
            return never_then_released(&pools, pending, |r| {
                r.cleanup_jobs == 1 && r.running_requests == 1
            })
            .await;
        }
        Behaviour::SlowError => {
            // A failure nobody waits for stays owned and charged, in the
            // cleanup actor, until shutdown destroys it.
            let kept = Snapshot {
                cleanup_jobs: 0,
                failed_cleanup: 1,
                ..at_drop
            };
            returns_to(&pools, &kept, "after the close failed").await?;
            shuts_down_clean(&pools).await?;
        }
        _ => {
            returns_to(&pools, &baseline, "after the close").await?;
            shuts_down_clean(&pools).await?;
        }
    }
    if dialer.destroyed() != 1 {
        return Err("the connection was not destroyed once".into());
    }
    Ok(())
}
