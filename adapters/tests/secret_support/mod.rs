//! Shared set-up for the local secret adapter's tests: a registry with one
//! secret origin over a real temporary directory, guest requests admitted
//! through a policy table, a writer's exclusive `flock` as the gate that
//! holds a reload mid-read, and a subscriber that captures audit events.

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::fs::File;
use std::future::Future;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use provider_pools_actors::{
    AdmitRequest, Authority, BrokerGeneration, Bytes, Credential, Epoch, ExecutionPlan,
    InstallReceipt, Installation, LedgerId, Limits, OriginKind, OriginSlot, PolicyTable, PoolReady,
    PoolsConfig, ProviderConfig, ProviderId, ProviderPools, RunningRequest, ServiceName, SessionId,
    TenantId,
};
use provider_pools_adapters::secret::{self, Reloaded, SecretError, SecretName};

/// How long any bounded wait in these tests may take before it fails.
pub(crate) const WAIT: Duration = Duration::from_secs(5);

/// The worker pool's metadata charge per job not yet joined (ARCHITECTURE,
/// ownership table).
pub(crate) const JOB: u32 = 128;

/// The tenant the policy allows.
pub(crate) const TENANT: &str = "t";

pub(crate) struct Fixture {
    pub(crate) pools: ProviderPools,
    pub(crate) receipt: InstallReceipt,
    pub(crate) policy: PolicyTable,
    pub(crate) dir: tempfile::TempDir,
    sessions: u64,
}

pub(crate) fn name(text: &str) -> SecretName {
    SecretName::parse(text).expect("valid secret name")
}

pub(crate) fn provider() -> ProviderId {
    ProviderId::new("vault-files").expect("provider id")
}

/// A configuration with one secret origin on slot 0 at `dir`.
pub(crate) fn config(dir: &Path, settings: &[(&str, &str)]) -> ProviderConfig {
    settings.iter().fold(
        ProviderConfig::new(ServiceName::new("secrets").expect("service")).with_origin(
            OriginSlot::new(0),
            OriginKind::Secret,
            dir.display().to_string(),
        ),
        |config, (key, value)| config.with_setting(*key, *value),
    )
}

impl Fixture {
    /// Default limits, the secret directory `<tmp>/secrets`, `settings`.
    pub(crate) async fn new(settings: &[(&str, &str)]) -> Self {
        let dir = tempfile::tempdir().expect("temp dir");
        std::fs::create_dir(dir.path().join("secrets")).expect("secret dir");
        let pools = ProviderPools::start(PoolsConfig {
            limits: Limits::DEFAULT,
            ..PoolsConfig::new(tokio::runtime::Handle::current(), BrokerGeneration::new())
        })
        .await
        .expect("pools");
        let config = config(&dir.path().join("secrets"), settings);
        secret::SecretSettings::of_config(&config).expect("valid secret settings");
        let receipt = pools
            .install(Installation {
                provider: provider(),
                authority: Authority::new("file:secrets").expect("authority"),
                expected: Epoch::ZERO,
                credential: Credential::empty(),
                config,
            })
            .await
            .expect("install");
        let policy = PolicyTable::new();
        policy.allow(TenantId::new(TENANT).expect("tenant"), provider());
        Self {
            pools,
            receipt,
            policy,
            dir,
            sessions: 0,
        }
    }

    pub(crate) fn secrets(&self) -> PathBuf {
        self.dir.path().join("secrets")
    }

    pub(crate) fn write(&self, file: &str, bytes: &[u8]) {
        std::fs::write(self.secrets().join(file), bytes).expect("write secret file");
    }

    /// The operator's reload of `file` on slot 0.
    pub(crate) async fn reload(&self, file: &str) -> Result<Reloaded, SecretError> {
        let what = format!("reload of {file}");
        bounded(
            &what,
            secret::reload(
                &self.pools,
                &self.receipt.provider,
                &self.receipt.slots[0],
                &name(file),
            ),
        )
        .await
    }

    /// Admits a request of `tenant` for slot 0 (capacity only: no
    /// permission yet).
    pub(crate) async fn admitted(&mut self, tenant: &str) -> PoolReady {
        self.sessions += 1;
        let far = tokio::time::Instant::now() + Duration::from_secs(3_600);
        let plan = ExecutionPlan::seal(
            TenantId::new(tenant).expect("tenant"),
            SessionId::new(self.sessions),
            LedgerId::new(1),
            far,
            far,
        );
        let request = AdmitRequest {
            plan,
            provider: self.receipt.provider.clone(),
            slot: self.receipt.slots[0],
            kind: OriginKind::Secret,
            input: self.pools.stage_input(Bytes::new()).expect("empty input"),
        };
        bounded("admission", self.pools.admit(request))
            .await
            .expect("capacity is free")
    }

    /// An admitted, dispatched (the policy allows [`TENANT`]) and started
    /// guest request.
    pub(crate) async fn running(&mut self) -> RunningRequest {
        let ready = self.admitted(TENANT).await;
        let call = self
            .pools
            .dispatch(&self.policy, ready.plan(), ready.provider())
            .expect("the policy allows the tenant");
        ready.start(call).expect("start")
    }

    /// Accounted metadata once every job has been joined.
    pub(crate) async fn settled_metadata(&self) -> u32 {
        eventually("every job joined", || self.pools.snapshot().workers == 0).await;
        self.pools.snapshot().metadata_bytes
    }

    /// Shuts down and asserts the report is clean and all zero.
    pub(crate) async fn shutdown_clean(self) {
        let report = bounded("shutdown", self.pools.shutdown(deadline())).await;
        assert!(
            report.is_clean() && report.owns_nothing(),
            "shutdown left {report:?}"
        );
    }
}

/// A writer holding an exclusive `flock` on a secret file: a reload's read
/// waits for it. Dropping it releases the lock.
pub(crate) struct Writer(pub(crate) File);

impl Writer {
    pub(crate) fn lock(path: &Path) -> Self {
        let file = std::fs::OpenOptions::new()
            .append(true)
            .open(path)
            .expect("open for writing");
        rustix::fs::flock(&file, rustix::fs::FlockOperation::LockExclusive)
            .expect("exclusive lock");
        Self(file)
    }
}

/// Runs `future` with a bound, failing with `what` if it does not finish.
pub(crate) async fn bounded<T>(what: &str, future: impl Future<Output = T>) -> T {
    tokio::time::timeout(WAIT, future)
        .await
        .unwrap_or_else(|_| panic!("timed out after {WAIT:?}: {what}"))
}

/// Polls `condition` until it holds, failing after [`WAIT`] with `what`.
pub(crate) async fn eventually(what: &str, mut condition: impl FnMut() -> bool) {
    let deadline = tokio::time::Instant::now() + WAIT;
    while !condition() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "timed out after {WAIT:?} waiting for: {what}"
        );
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
}

/// A deadline [`WAIT`] from now.
pub(crate) fn deadline() -> tokio::time::Instant {
    tokio::time::Instant::now() + WAIT
}

/// Runs `future` as a task of the test's runtime.
#[allow(clippy::disallowed_methods, reason = "tests own their tasks")]
pub(crate) fn task<F>(future: F) -> tokio::task::JoinHandle<F::Output>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    tokio::spawn(future)
}

/// One captured event: its fields, formatted.
pub(crate) type Fields = BTreeMap<String, String>;

/// A subscriber that keeps the events of the secret audit target.
#[derive(Clone, Default)]
pub(crate) struct Audit(Arc<Mutex<Vec<Fields>>>);

impl Audit {
    pub(crate) fn events(&self) -> Vec<Fields> {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

struct Collect<'a>(&'a mut Fields);

impl tracing::field::Visit for Collect<'_> {
    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
        self.0.insert(field.name().to_owned(), format!("{value:?}"));
    }
    fn record_str(&mut self, field: &tracing::field::Field, value: &str) {
        self.0.insert(field.name().to_owned(), value.to_owned());
    }
}

impl tracing::Subscriber for Audit {
    fn enabled(&self, metadata: &tracing::Metadata<'_>) -> bool {
        metadata.target() == secret::AUDIT_TARGET
    }
    fn new_span(&self, _: &tracing::span::Attributes<'_>) -> tracing::span::Id {
        tracing::span::Id::from_u64(1)
    }
    fn record(&self, _: &tracing::span::Id, _: &tracing::span::Record<'_>) {}
    fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}
    fn event(&self, event: &tracing::Event<'_>) {
        let mut fields = Fields::new();
        event.record(&mut Collect(&mut fields));
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(fields);
    }
    fn enter(&self, _: &tracing::span::Id) {}
    fn exit(&self, _: &tracing::span::Id) {}
}
