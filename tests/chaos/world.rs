//! One seed's world: the registry, the seeded stream, the calls and jobs
//! in flight, the limits in force, and the steps that drive them.

use std::sync::Arc;

use provider_pools::{
    BrokerGeneration, InstallError, InstallReceipt, JobError, Limits, PoolsConfig, ProviderPools,
};
use tokio::task::JoinHandle;

use crate::call::{self, Ctx, Tally};
use crate::faults::{self, Switch};
use crate::limits;
use crate::pace::Pace;
use crate::quiet::Quiet;
use crate::script::Script;
use crate::support::rng::Rng;
use crate::support::{http_config, installation, provider, task};

/// Steps per seed.
const STEPS: usize = 40;

/// Steps per seed: [`STEPS`], or `CHAOS_STEPS` for longer scenarios.
fn steps() -> usize {
    std::env::var("CHAOS_STEPS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(STEPS)
}

/// Where a seed runs.
#[derive(Debug, Clone)]
pub(crate) enum Mode {
    /// One thread and a paused clock: a seed replays identically.
    Paused,
    /// The workers of a multi-thread runtime and the real clock.
    Threads(Arc<Quiet>),
}

impl Mode {
    pub(crate) fn pace(&self) -> Pace {
        match self {
            Self::Paused => Pace::Paused,
            Self::Threads(_) => Pace::Real,
        }
    }
}

#[derive(Debug, Clone, Copy)]
enum Step {
    Call,
    Advance,
    Install,
    StaleInstall,
    Abort,
    Job,
    Lower,
    Kill,
    Yield,
}

const STEPS_WEIGHTED: [(Step, u64); 9] = [
    (Step::Call, 30),
    (Step::Advance, 14),
    (Step::Install, 5),
    (Step::StaleInstall, 2),
    (Step::Abort, 6),
    (Step::Job, 6),
    (Step::Lower, 4),
    (Step::Kill, 3),
    (Step::Yield, 5),
];

pub(crate) struct World {
    pub(crate) pools: ProviderPools,
    pub(crate) rng: Rng,
    pub(crate) ctx: Ctx,
    /// The epoch the registry has installed for each provider (zero: none).
    pub(crate) installed: [u64; 2],
    pub(crate) receipts: [Option<InstallReceipt>; 2],
    pub(crate) calls: Vec<JoinHandle<()>>,
    /// Aborted calls: on real threads one ends only when a worker next
    /// runs it, so the run-out waits for these too.
    pub(crate) aborted: Vec<JoinHandle<()>>,
    pub(crate) jobs: Vec<JoinHandle<()>>,
    /// The limits in force: the startup limits, then each accepted lowering.
    pub(crate) limits: Limits,
    pub(crate) trace: Vec<String>,
    pub(crate) sessions: u64,
    pub(crate) mode: Mode,
}

/// Lets every ready task run without moving the paused clock.
pub(crate) async fn let_tasks_run() {
    for _ in 0..64 {
        tokio::task::yield_now().await;
    }
}

impl World {
    pub(crate) async fn new(seed: u64, mode: Mode) -> Self {
        let pace = mode.pace();
        let config = PoolsConfig {
            limits: limits::startup(pace),
            restart: limits::restart(pace),
            ..PoolsConfig::new(tokio::runtime::Handle::current(), BrokerGeneration::new())
        };
        let pools = ProviderPools::start(config).await.expect("registry starts");
        let ctx = Ctx {
            pools: pools.clone(),
            switch: Switch::new(),
            tally: Arc::new(Tally::default()),
            pace,
        };
        Self {
            pools,
            rng: Rng::new(seed),
            ctx,
            installed: [0; 2],
            receipts: [None, None],
            calls: Vec::new(),
            aborted: Vec::new(),
            jobs: Vec::new(),
            limits: limits::startup(pace),
            trace: Vec::new(),
            sessions: 0,
            mode,
        }
    }

    pub(crate) async fn run(&mut self) -> Result<(), String> {
        for p in 0..2 {
            self.install(p).await?;
        }
        for _ in 0..steps() {
            let weights = STEPS_WEIGHTED.map(|(_, w)| w);
            let step = STEPS_WEIGHTED[self.rng.weighted(&weights)].0;
            let what = self.step(step).await?;
            self.observe(what).await?;
        }
        self.run_out().await
    }

    async fn step(&mut self, step: Step) -> Result<String, String> {
        Ok(match step {
            Step::Call => {
                self.sessions += 1;
                let script = Script::draw(&mut self.rng, self.sessions);
                let what = format!("call {script:?}");
                if let Some(receipt) = self.receipts[script.provider].clone() {
                    let run = call::run(self.ctx.clone(), receipt, script);
                    self.calls.push(task(run));
                }
                what
            }
            Step::Advance => {
                let ms = self.rng.below(2_500);
                self.mode.pace().pass(ms).await;
                format!("advance {ms} ms")
            }
            Step::Install => {
                let p = self.rng.index(2);
                self.install(p).await?
            }
            Step::StaleInstall => {
                let p = self.rng.index(2);
                self.stale_install(p).await?
            }
            Step::Abort => {
                self.calls.retain(|call| !call.is_finished());
                if self.calls.is_empty() {
                    return Ok("abort (none running)".into());
                }
                let i = self.rng.index(self.calls.len());
                let call = self.calls.swap_remove(i);
                call.abort();
                self.aborted.push(call);
                self.ctx.switch.fired("call aborted");
                format!("abort call {i}")
            }
            Step::Job => self.job().await,
            Step::Lower => self.lower().await,
            Step::Kill => {
                let controls = self.pools.control_cells().map(|cell| cell.get_id());
                let mut epochs: Vec<_> = self
                    .pools
                    .registry_cell()
                    .get_children()
                    .into_iter()
                    .filter(|cell| !controls.contains(&cell.get_id()))
                    .collect();
                // Children come unordered; ids grow with spawn order.
                epochs.sort_by_key(|cell| cell.get_id());
                if epochs.is_empty() {
                    return Ok("kill (no epoch actor)".into());
                }
                let i = self.rng.index(epochs.len());
                epochs[i].kill();
                self.ctx.switch.fired("epoch actor killed");
                format!("kill epoch actor {i} of {}", epochs.len())
            }
            Step::Yield => "yield".into(),
        })
    }

    /// Installs or rotates provider `p`, naming the installed epoch. A
    /// refusal must be a capacity or busy answer, never an epoch mismatch.
    async fn install(&mut self, p: usize) -> Result<String, String> {
        let name = format!("p{p}");
        let credential: Vec<u8> = (0..1 + self.rng.index(200))
            .map(|_| self.rng.below(256) as u8)
            .collect();
        let expected = self.installed[p];
        let installed = self
            .pools
            .install(installation(
                &provider(&name),
                expected,
                &credential,
                http_config(&name, 2),
            ))
            .await;
        match installed {
            Ok(receipt) => {
                let what = if expected == 0 { "install" } else { "rotation" };
                self.ctx.switch.fired(what);
                self.installed[p] = receipt.epoch.get();
                self.receipts[p] = Some(receipt);
                Ok(format!("install {name} over {expected}: ok"))
            }
            Err(e @ (InstallError::Capacity(_) | InstallError::Busy)) => {
                self.ctx.switch.fired("rotation refused (capacity, busy)");
                Ok(format!("install {name} over {expected}: {e}"))
            }
            Err(e) => Err(format!(
                "install {name} over epoch {expected} refused: {e:?}"
            )),
        }
    }

    /// A rotation naming a stale epoch is refused and changes nothing.
    async fn stale_install(&mut self, p: usize) -> Result<String, String> {
        let name = format!("p{p}");
        let before = self.pools.describe(&provider(&name));
        let stale = self.installed[p] + 1 + self.rng.below(2);
        let refused = self
            .pools
            .install(installation(
                &provider(&name),
                stale,
                b"stale",
                http_config(&name, 2),
            ))
            .await;
        match refused {
            Err(InstallError::EpochMismatch { installed, .. })
                if installed.get() == self.installed[p] => {}
            other => return Err(format!("stale install of {name} at {stale}: {other:?}")),
        }
        let after = self.pools.describe(&provider(&name));
        let epoch = |d: &Option<provider_pools::ProviderDescriptor>| d.as_ref().map(|d| d.epoch);
        if epoch(&before) != epoch(&after) {
            return Err(format!(
                "a refused install moved {name}: {before:?} -> {after:?}"
            ));
        }
        self.ctx.switch.fired("stale rotation refused");
        Ok(format!("stale install {name} at {stale}: refused"))
    }

    /// A provider job: quick, slow, panicking or never ending (until
    /// faults stop); its waiter is dropped or joins it.
    async fn job(&mut self) -> String {
        let (fault, wait) = (self.rng.weighted(&[3, 3, 2, 1]), self.rng.chance(50));
        let ms = self.rng.below(3_000);
        let (switch, tally) = (Arc::clone(&self.ctx.switch), Arc::clone(&self.ctx.tally));
        let pace = self.mode.pace();
        let spawned = self
            .pools
            .spawn(move || async move {
                let _running = call::Held::new(&tally, |t| &t.jobs);
                match fault {
                    0 => {}
                    1 => pace.sleep(ms).await,
                    2 => {
                        switch.fired("panic: provider job");
                        panic!("{} a provider job panicked", faults::PANIC)
                    }
                    _ => switch.never().await,
                }
            })
            .await;
        let what = format!(
            "job fault {fault} wait {wait}: {:?}",
            spawned.as_ref().err()
        );
        if let (Ok(job), true) = (spawned, wait) {
            self.jobs.push(task(async move {
                let joined = job.join().await;
                if fault == 2 {
                    assert_eq!(joined.err(), Some(JobError::Panicked));
                }
            }));
        }
        what
    }
}
