//! An adapter panics inside its epoch actor; the registry restarts the actor
//! under its [`RestartPolicy`]; the run continues; the final report is clean.
//!
//! The only adapter code an epoch actor runs is a parked connection's `Drop`
//! (a dialer runs in the caller's task, a job on a worker slot, where a panic
//! is contained as `JobError::Panicked`). This adapter speaks a line protocol
//! to an upper-casing loopback server (`shared/line_server.rs`) and has a
//! deliberate bug: a connection that carried the line `boom` panics when it
//! is destroyed. The chosen request sends `boom`; its connection is parked;
//! once it outlives `idle_age` the epoch actor's reclaim scan destroys it and
//! the actor panics. The registry, its supervisor, starts a new epoch actor
//! with the same configuration and charges; later requests dial afresh.
//!
//! The process exits non-zero unless exactly one restart happened, every
//! request before and after it succeeded, the provider stayed published, and
//! the shutdown report is clean. The panic's message on stderr is expected.
//!
//! Run with `cargo run --example supervised_restart`.

#[path = "common/line_server.rs"]
mod line_server;

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use provider_pools::{
    AdmitRequest, Authority, BrokerGeneration, Bytes, Credential, DialError, DialErrorKind,
    DialTarget, Dialer, Epoch, ExecutionPlan, InstallReceipt, Installation, LedgerId, Limits,
    OriginKind, OriginSlot, PolicyTable, PoolsConfig, ProviderConfig, ProviderId, ProviderPools,
    RestartPolicy, ServiceName, SessionId, TenantId,
};
use ractor::ActorId;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufStream};
use tokio::net::TcpStream;
use tokio::time::{timeout_at, Instant};

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// Every bounded wait of the example.
const WAIT: Duration = Duration::from_secs(5);
/// Idle connections expire quickly, so the reclaim scan (every second)
/// reaches the poisoned one within about a second.
const IDLE_AGE: Duration = Duration::from_millis(200);
/// The line that poisons a connection.
const POISON: &str = "boom";

/// Set by the poisoned connection's destructor just before it panics.
static PANICKED: AtomicBool = AtomicBool::new(false);

/// One line-protocol connection; `poisoned` once it carried [`POISON`].
struct LineConn {
    stream: BufStream<TcpStream>,
    poisoned: bool,
}

impl Drop for LineConn {
    fn drop(&mut self) {
        // The deliberate adapter bug. Never panic while already unwinding.
        if self.poisoned && !std::thread::panicking() {
            PANICKED.store(true, Ordering::SeqCst);
            panic!("adapter bug: a connection that carried {POISON:?} panics when destroyed");
        }
    }
}

#[derive(Clone)]
struct LineDialer;

impl Dialer for LineDialer {
    type Conn = LineConn;

    async fn dial(&self, target: DialTarget<'_>) -> Result<LineConn, DialError> {
        let stream = TcpStream::connect(target.target)
            .await
            .map_err(|e| DialError::new(DialErrorKind::Refused, e.to_string()))?;
        Ok(LineConn {
            stream: BufStream::new(stream),
            poisoned: false,
        })
    }
}

/// What one request did.
struct Answer {
    line: String,
    reused: bool,
}

/// One request for `tenant`: admitted, dispatched, one line exchanged on a
/// pooled connection, which is parked after a whole answer.
async fn request(
    pools: &ProviderPools,
    receipt: &InstallReceipt,
    policy: &PolicyTable,
    session: u64,
    line: &str,
) -> Result<Answer, BoxError> {
    let far = Instant::now() + WAIT;
    let tenant = TenantId::new("tenant")?;
    let plan = ExecutionPlan::seal(tenant, SessionId::new(session), LedgerId::new(1), far, far);
    let input = pools.stage_input(&plan, Bytes::from(format!("{line}\n")))?;
    let ready = pools
        .admit(AdmitRequest {
            plan,
            provider: receipt.provider.clone(),
            slot: receipt
                .slot(OriginSlot::new(0))
                .ok_or("slot 0 is configured")?,
            kind: OriginKind::Custom,
            input,
        })
        .await?;
    let call = pools.dispatch(policy, ready.plan(), ready.provider())?;
    let running = ready.start(call)?;
    let mut conn = pools.reserve_connection(&running, &LineDialer).await?;
    let reused = conn.is_reused();
    let mut answer = String::new();
    timeout_at(running.deadline(), async {
        let conn = conn.get_mut();
        conn.poisoned |= line == POISON;
        conn.stream.write_all(running.input().bytes()).await?;
        conn.stream.flush().await?;
        (&mut conn.stream).take(1024).read_line(&mut answer).await
    })
    .await??;
    if answer.pop() != Some('\n') {
        return Err(format!("truncated answer {answer:?}").into());
    }
    conn.park();
    let answer = running.stage_output(Bytes::from(answer))?;
    Ok(Answer {
        line: String::from_utf8_lossy(answer.bytes()).into_owned(),
        reused,
    })
}

/// The registry's children that are epoch actors (not its control actors).
fn epoch_actors(pools: &ProviderPools) -> Vec<ActorId> {
    let controls = pools.control_cells().map(|cell| cell.get_id());
    let mut ids: Vec<ActorId> = pools
        .registry_cell()
        .get_children()
        .iter()
        .map(|cell| cell.get_id())
        .filter(|id| !controls.contains(id))
        .collect();
    ids.sort();
    ids
}

/// Sends `lines` one after another; fails on the first failed request or
/// wrong answer. Returns how many connections were reused.
async fn serve_all(
    pools: &ProviderPools,
    receipt: &InstallReceipt,
    policy: &PolicyTable,
    first_session: u64,
    lines: &[&str],
) -> Result<usize, BoxError> {
    let mut reused = 0;
    for (session, line) in (first_session..).zip(lines) {
        let answer = request(pools, receipt, policy, session, line)
            .await
            .map_err(|e| format!("request {session} ({line:?}) failed: {e}"))?;
        println!(
            "request {session}: {line:?} -> {:?} (connection reused: {})",
            answer.line, answer.reused
        );
        if answer.line != line.to_uppercase() {
            return Err(format!("request {session}: wrong answer {:?}", answer.line).into());
        }
        reused += usize::from(answer.reused);
    }
    Ok(reused)
}

/// Starts the pools with a short `idle_age` and the restart policy, and
/// installs the line provider on the example's server.
async fn start() -> Result<(ProviderPools, InstallReceipt, PolicyTable), BoxError> {
    let (origin, _accepted) = line_server::start().await?;
    let policy_restart = RestartPolicy {
        max_restarts: 2,
        window: Duration::from_secs(60),
    };
    let config = PoolsConfig {
        limits: Limits {
            idle_age: IDLE_AGE,
            ..Limits::DEFAULT
        },
        restart: policy_restart,
        ..PoolsConfig::new(tokio::runtime::Handle::current(), BrokerGeneration::new())
    };
    let pools = ProviderPools::start(config).await?;
    let provider = ProviderId::new("upper")?;
    let receipt = pools
        .install(Installation {
            provider: provider.clone(),
            authority: Authority::new("https://upper.example")?,
            expected: Epoch::new(0),
            credential: Credential::from_slice(b"unused")?,
            config: ProviderConfig::new(ServiceName::new("upper/v1")?).with_origin(
                OriginSlot::new(0),
                OriginKind::Custom,
                origin,
            ),
        })
        .await?;
    let policy = PolicyTable::new();
    policy.allow(TenantId::new("tenant")?, provider);
    println!("restart policy: {policy_restart:?}; idle_age {IDLE_AGE:?}");
    Ok((pools, receipt, policy))
}

async fn run() -> Result<(), BoxError> {
    // One line for the expected panic instead of the default report (and a
    // backtrace when RUST_BACKTRACE is set).
    std::panic::set_hook(Box::new(|info| {
        eprintln!("panic (the adapter's bug): {info}")
    }));
    let (pools, receipt, policy) = start().await?;
    let provider = receipt.provider.clone();

    let before = epoch_actors(&pools);
    println!("epoch actor before: {before:?}");
    let reused_before = serve_all(&pools, &receipt, &policy, 1, &["one", "two", POISON]).await?;
    println!("before the panic: 3 requests served ({reused_before} on a reused connection)");

    // The poisoned connection is parked; the reclaim scan destroys it once
    // it has been idle for `idle_age`, and the epoch actor panics.
    let deadline = Instant::now() + WAIT;
    let after = loop {
        let now = epoch_actors(&pools);
        // One epoch actor again, and not the one that panicked.
        if PANICKED.load(Ordering::SeqCst) && now.len() == before.len() && now != before {
            break now;
        }
        if Instant::now() >= deadline {
            return Err(format!("no epoch restart within {WAIT:?} (actors now {now:?})").into());
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    };
    println!("the epoch actor panicked destroying the poisoned connection; restarted as {after:?}");
    let descriptor = pools
        .describe(&provider)
        .ok_or("the provider was retired instead of restarted")?;
    if descriptor.epoch != receipt.epoch {
        return Err("the restarted actor serves another epoch".into());
    }
    println!(
        "provider {} still published at epoch {}; {:?}",
        descriptor.provider,
        descriptor.epoch,
        pools.snapshot()
    );

    let later = ["three", "four", "five", "six"];
    let reused_after = serve_all(&pools, &receipt, &policy, 4, &later).await?;
    println!(
        "after the restart: {} requests served ({reused_after} on a reused connection)",
        later.len()
    );
    if epoch_actors(&pools) != after {
        return Err("the epoch actor restarted more than once".into());
    }

    let report = pools.shutdown(Instant::now() + WAIT).await;
    println!("shutdown report: {report:?}");
    if !report.is_clean() {
        return Err("shutdown not clean".into());
    }
    Ok(())
}

#[tokio::main]
async fn main() -> std::process::ExitCode {
    match run().await {
        Ok(()) => {
            println!("one restart, the run continued, clean shutdown");
            std::process::ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("supervised_restart failed: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}
