//! The neighbourhood of the noisy-neighbour suite: one registry with default
//! limits, an HTTP provider on a real loopback origin and a blob provider on
//! a temporary root, shared by a VICTIM tenant and an ATTACKER tenant.
//!
//! The victim's workload is what a well-behaved guest does: four submitters,
//! each alternating a small buffered GET with a blob put and get, every call
//! with its own 5 s deadline. The suite asserts that it succeeds every time,
//! whatever the attacker does; its latencies are printed for RELIABILITY.md.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use provider_pools_actors::{
    ExecutionPlan, InstallReceipt, Limits, OriginKind, ProviderPools, RunningRequest,
};
use provider_pools_adapters::blob::{self, BlobKey, BlobLimits};
use provider_pools_adapters::http_origin::{self, BodyLimits, HttpDialer};

use crate::support::origin::Origin;
use crate::support::{self, get, plan_until, AllowAll};

/// Each victim call's own deadline.
pub(crate) const VICTIM_DEADLINE: Duration = Duration::from_secs(5);
/// Victim submitters, as in the report that filed the issue.
pub(crate) const SUBMITTERS: usize = 4;

pub(crate) struct Neighbourhood {
    pub(crate) pools: ProviderPools,
    pub(crate) web: InstallReceipt,
    pub(crate) files: InstallReceipt,
    pub(crate) dialer: HttpDialer,
    /// Kept alive for the registry's whole life.
    _origin: Origin,
    /// Holds the blob root; `root/file.txt` is a regular file.
    _dir: tempfile::TempDir,
}

/// What the victim saw.
#[derive(Debug, Default)]
pub(crate) struct Outcome {
    pub(crate) ok: usize,
    pub(crate) failures: Vec<String>,
    pub(crate) micros: Vec<u64>,
}

impl Outcome {
    /// `p`-th percentile latency in microseconds (0 when empty).
    pub(crate) fn percentile(&self, p: f64) -> u64 {
        let mut sorted = self.micros.clone();
        sorted.sort_unstable();
        let at = ((sorted.len() as f64 - 1.0) * p).round() as usize;
        sorted.get(at).copied().unwrap_or(0)
    }
}

impl Neighbourhood {
    pub(crate) async fn new() -> Self {
        let origin = Origin::start().await;
        let pools = support::start(Limits::DEFAULT).await;
        let web = support::install(&pools, &origin.target, &[], b"k").await;
        let dir = tempfile::tempdir().expect("temp dir");
        let root = dir.path().join("root");
        std::fs::create_dir(&root).expect("blob root");
        std::fs::write(root.join("file.txt"), b"a file").expect("file.txt");
        let config =
            support::provider_config("files", OriginKind::Blob, &root.display().to_string(), &[]);
        let files = support::install_provider(&pools, "files", "file:local", config, b"", 0).await;
        let dialer = HttpDialer::new(pools.clone());
        Self {
            pools,
            web,
            files,
            dialer,
            _origin: origin,
            _dir: dir,
        }
    }

    /// Admits, dispatches and starts one call of `plan` on `receipt`.
    pub(crate) async fn start(
        &self,
        receipt: &InstallReceipt,
        kind: OriginKind,
        plan: ExecutionPlan,
    ) -> Result<RunningRequest, String> {
        let input = self
            .pools
            .stage_input(&plan, Bytes::new())
            .map_err(|e| format!("stage: {e}"))?;
        let ready = self
            .pools
            .admit(provider_pools_actors::AdmitRequest {
                plan,
                provider: receipt.provider.clone(),
                slot: receipt.slots[0],
                kind,
                input,
            })
            .await
            .map_err(|e| format!("admit: {e}"))?;
        let call = self
            .pools
            .dispatch(&AllowAll, ready.plan(), ready.provider())
            .map_err(|e| format!("dispatch: {e}"))?;
        ready.start(call).map_err(|e| format!("start: {e}"))
    }

    /// One victim round: a GET on even rounds, a put then a get on odd ones.
    async fn victim_call(&self, submitter: usize, round: usize) -> Result<(), String> {
        let deadline = tokio::time::Instant::now() + VICTIM_DEADLINE;
        let session = (submitter * 100_000 + round) as u64;
        let plan = plan_until("victim", session, deadline);
        if round.is_multiple_of(2) {
            let running = self.start(&self.web, OriginKind::Http, plan).await?;
            let response = http_origin::call(
                &self.pools,
                &running,
                &self.dialer,
                get("/ok"),
                BodyLimits::default(),
            )
            .await
            .map_err(|e| format!("get: {e}"))?;
            return match response.body.bytes().as_ref() {
                b"hello" => Ok(()),
                other => Err(format!("get answered {other:?}")),
            };
        }
        let key =
            BlobKey::parse(&format!("victim/{submitter}-{round}")).map_err(|e| e.to_string())?;
        let body = Bytes::from(format!("round {round}"));
        let running = self.start(&self.files, OriginKind::Blob, plan).await?;
        blob::put(
            &self.pools,
            &running,
            &key,
            body.clone(),
            BlobLimits::default(),
        )
        .await
        .map_err(|e| format!("put: {e}"))?;
        let mut reader = blob::get(&self.pools, &running, &key, BlobLimits::default())
            .await
            .map_err(|e| format!("get blob: {e}"))?;
        let mut read = Vec::new();
        while let Some(chunk) = reader.next_chunk().await {
            read.extend_from_slice(chunk.map_err(|e| format!("read blob: {e}"))?.bytes());
        }
        match read == body {
            true => Ok(()),
            false => Err(format!("blob read back {} bytes", read.len())),
        }
    }

    /// The victim's workload: [`SUBMITTERS`] tasks × `rounds` calls.
    pub(crate) async fn victim(self: &Arc<Self>, rounds: usize) -> Outcome {
        let mut submitters = Vec::new();
        for submitter in 0..SUBMITTERS {
            let hood = Arc::clone(self);
            submitters.push(support::task(async move {
                let mut outcome = Outcome::default();
                for round in 0..rounds {
                    let asked = std::time::Instant::now();
                    match hood.victim_call(submitter, round).await {
                        Ok(()) => {
                            outcome.ok += 1;
                            let micros = asked.elapsed().as_micros();
                            outcome
                                .micros
                                .push(u64::try_from(micros).unwrap_or(u64::MAX));
                        }
                        Err(e) => outcome.failures.push(format!("round {round}: {e}")),
                    }
                }
                outcome
            }));
        }
        let mut all = Outcome::default();
        for submitter in submitters {
            let outcome = submitter.await.expect("victim submitter");
            all.ok += outcome.ok;
            all.failures.extend(outcome.failures);
            all.micros.extend(outcome.micros);
        }
        all
    }
}

/// Stops attacker loops when dropped.
#[derive(Clone, Default)]
pub(crate) struct Stop(Arc<AtomicBool>);

impl Stop {
    pub(crate) fn stopped(&self) -> bool {
        self.0.load(Ordering::Acquire)
    }

    pub(crate) fn stop(&self) {
        self.0.store(true, Ordering::Release);
    }
}
