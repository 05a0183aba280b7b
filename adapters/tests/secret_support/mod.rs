//! Shared set-up for the local secret adapter's tests: a registry with one
//! secret origin over a real temporary directory, guest requests admitted
//! through a policy table, a writer's exclusive `flock` as the gate that
//! holds a reload mid-read, and a subscriber that captures audit events.
//! Registry start, installation, admission and the bounded waits are the
//! shared ones of `support`.

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use provider_pools_actors::{
    Bytes, InstallReceipt, Limits, OriginKind, PolicyTable, PoolReady, ProviderConfig, ProviderId,
    ProviderPools, RunningRequest, TenantId,
};
use provider_pools_adapters::secret::{self, Reloaded, SecretError, SecretName};

use crate::support::{self, bounded, deadline, eventually};

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
    let target = dir.display().to_string();
    support::provider_config("secrets", OriginKind::Secret, &target, settings)
}

impl Fixture {
    /// Default limits, the secret directory `<tmp>/secrets`, `settings`.
    pub(crate) async fn new(settings: &[(&str, &str)]) -> Self {
        Self::with_limits(settings, Limits::DEFAULT).await
    }

    /// [`Fixture::new`] on a registry with `limits`.
    pub(crate) async fn with_limits(settings: &[(&str, &str)], limits: Limits) -> Self {
        let dir = tempfile::tempdir().expect("temp dir");
        std::fs::create_dir(dir.path().join("secrets")).expect("secret dir");
        let pools = support::start(limits).await;
        let config = config(&dir.path().join("secrets"), settings);
        secret::SecretSettings::of_config(&config).expect("valid secret settings");
        let id = provider();
        let receipt =
            support::install_provider(&pools, id.as_str(), "file:secrets", config, b"", 0).await;
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
        let plan = support::plan(tenant, self.sessions);
        let kind = OriginKind::Secret;
        support::admitted(&self.pools, &self.receipt, plan, kind, Bytes::new()).await
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
    pub(crate) async fn quiescent_metadata(&self) -> u32 {
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
