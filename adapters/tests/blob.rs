//! The local blob adapter against a real temporary directory: round trips,
//! streamed reads, escapes refused (`..`, absolute keys, symlinks), size
//! bounds, and open file handles accounted as connections.

use std::time::Duration;

use provider_pools_actors::{
    AdmitRequest, Authority, BrokerGeneration, Bytes, Credential, Denied, DispatchAuthority, Epoch,
    ExecutionPlan, Installation, LedgerId, OriginKind, OriginSlot, PoolsConfig, ProviderConfig,
    ProviderId, ProviderPools, RunningRequest, ServiceName, SessionId, TenantId,
};
use provider_pools_adapters::blob::{self, BlobError, BlobKey, BlobLimits, PathRefusal};
use provider_pools_test_peers::eventually;

struct AllowAll;

impl DispatchAuthority for AllowAll {
    fn authorize(&self, _: &ExecutionPlan, _: &ProviderId) -> Result<(), Denied> {
        Ok(())
    }
}

struct Fixture {
    pools: ProviderPools,
    receipt: provider_pools_actors::InstallReceipt,
    dir: tempfile::TempDir,
    sessions: u64,
}

impl Fixture {
    async fn new() -> Self {
        let dir = tempfile::tempdir().expect("temp dir");
        let pools = ProviderPools::start(PoolsConfig::new(
            tokio::runtime::Handle::current(),
            BrokerGeneration::new(),
        ))
        .await
        .expect("pools");
        let root = dir.path().join("root");
        std::fs::create_dir(&root).expect("root dir");
        let receipt = pools
            .install(Installation {
                provider: ProviderId::new("files").expect("id"),
                authority: Authority::new("file:local").expect("authority"),
                expected: Epoch::ZERO,
                credential: Credential::empty(),
                config: ProviderConfig::new(ServiceName::new("files").expect("service"))
                    .with_origin(
                        OriginSlot::new(0),
                        OriginKind::Blob,
                        root.display().to_string(),
                    ),
            })
            .await
            .expect("install");
        Self {
            pools,
            receipt,
            dir,
            sessions: 0,
        }
    }

    fn root(&self) -> std::path::PathBuf {
        self.dir.path().join("root")
    }

    async fn running(&mut self) -> RunningRequest {
        self.sessions += 1;
        let far = tokio::time::Instant::now() + Duration::from_secs(60);
        let plan = ExecutionPlan::seal(
            TenantId::new("t").expect("tenant"),
            SessionId::new(self.sessions),
            LedgerId::new(1),
            far,
            far,
        );
        let ready = self
            .pools
            .admit(AdmitRequest {
                plan: plan.clone(),
                provider: self.receipt.provider.clone(),
                slot: self.receipt.slots[0],
                kind: OriginKind::Blob,
                input: self.pools.stage_input(&plan, Bytes::new()).expect("input"),
            })
            .await
            .expect("admitted");
        let call = self
            .pools
            .dispatch(&AllowAll, &plan, &self.receipt.provider)
            .expect("dispatch");
        ready.start(call).expect("start")
    }
}

fn key(k: &str) -> BlobKey {
    BlobKey::parse(k).expect("valid key")
}

async fn read_all(reader: &mut blob::BlobReader) -> Vec<u8> {
    let mut out = Vec::new();
    while let Some(chunk) = reader.next_chunk().await {
        out.extend_from_slice(chunk.expect("chunk").bytes());
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn put_head_get_list_delete_round_trip() {
    let mut f = Fixture::new().await;
    let running = f.running().await;
    let limits = BlobLimits {
        chunk: 7,
        ..BlobLimits::default()
    };
    let body = Bytes::from_static(b"quarterly numbers, streamed in chunks");
    let meta = blob::put(
        &f.pools,
        &running,
        &key("reports/q4.csv"),
        body.clone(),
        limits,
    )
    .await
    .expect("put");
    assert_eq!(meta.len, body.len() as u64);
    assert_eq!(
        std::fs::read(f.root().join("reports/q4.csv")).expect("on disk"),
        body.as_ref()
    );
    assert_eq!(
        blob::head(&f.pools, &running, &key("reports/q4.csv"))
            .await
            .expect("head")
            .len,
        body.len() as u64
    );

    let mut reader = blob::get(&f.pools, &running, &key("reports/q4.csv"), limits)
        .await
        .expect("get");
    assert_eq!(
        f.pools.snapshot().connections.active,
        1,
        "the open handle is accounted"
    );
    assert_eq!(read_all(&mut reader).await, body.as_ref());
    assert_eq!(
        f.pools.snapshot().connections.active,
        0,
        "closed at the end"
    );

    blob::put(
        &f.pools,
        &running,
        &key("reports/q3.csv"),
        Bytes::from_static(b"x"),
        limits,
    )
    .await
    .expect("put");
    assert_eq!(
        blob::list(&f.pools, &running, Some(&key("reports")), limits)
            .await
            .expect("list"),
        vec!["reports/q3.csv".to_string(), "reports/q4.csv".to_string()]
    );
    blob::delete(&f.pools, &running, &key("reports/q4.csv"))
        .await
        .expect("delete");
    assert!(matches!(
        blob::head(&f.pools, &running, &key("reports/q4.csv")).await,
        Err(BlobError::Refused(PathRefusal::Missing))
    ));
    drop(reader);
    drop(running);
    assert_eq!(f.pools.snapshot().connections, Default::default());
    eventually("every job joined", || f.pools.snapshot().workers == 0).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn symlinks_escaping_the_root_are_refused() {
    let mut f = Fixture::new().await;
    let outside = f.dir.path().join("outside");
    std::fs::create_dir(&outside).expect("outside dir");
    std::fs::write(outside.join("secret.txt"), b"not yours").expect("outside file");
    std::os::unix::fs::symlink(&outside, f.root().join("link")).expect("dir symlink");
    std::os::unix::fs::symlink(outside.join("secret.txt"), f.root().join("file-link"))
        .expect("file symlink");
    let running = f.running().await;
    let limits = BlobLimits::default();

    for k in ["link/secret.txt", "file-link"] {
        assert!(
            matches!(
                blob::get(&f.pools, &running, &key(k), limits).await,
                Err(BlobError::Refused(PathRefusal::Escapes))
            ),
            "reading through {k} must be refused"
        );
    }
    assert!(matches!(
        blob::put(
            &f.pools,
            &running,
            &key("link/new.txt"),
            Bytes::from_static(b"x"),
            limits
        )
        .await,
        Err(BlobError::Refused(PathRefusal::Escapes))
    ));
    assert!(matches!(
        blob::put(
            &f.pools,
            &running,
            &key("file-link"),
            Bytes::from_static(b"x"),
            limits
        )
        .await,
        Err(BlobError::Refused(PathRefusal::Escapes))
    ));
    assert_eq!(
        std::fs::read(outside.join("secret.txt")).expect("untouched"),
        b"not yours"
    );
    assert!(
        !outside.join("new.txt").exists(),
        "nothing written outside the root"
    );
    assert_eq!(f.pools.snapshot().connections.active, 0);
}

#[test]
fn dot_dot_and_absolute_keys_never_reach_a_path() {
    assert!(BlobKey::parse("../outside/secret.txt").is_err());
    assert!(BlobKey::parse("a/../../b").is_err());
    assert!(BlobKey::parse("/etc/passwd").is_err());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sizes_are_bounded() {
    let mut f = Fixture::new().await;
    let running = f.running().await;
    let small = BlobLimits {
        max_object: 4,
        max_list: 1,
        ..BlobLimits::default()
    };
    assert!(matches!(
        blob::put(
            &f.pools,
            &running,
            &key("big"),
            Bytes::from_static(b"12345"),
            small
        )
        .await,
        Err(BlobError::TooLarge { len: 5, limit: 4 })
    ));
    assert!(
        !f.root().join("big").exists(),
        "refused before anything was opened"
    );
    std::fs::write(f.root().join("big"), b"12345").expect("write");
    std::fs::write(f.root().join("other"), b"1").expect("write");
    assert!(matches!(
        blob::get(&f.pools, &running, &key("big"), small).await,
        Err(BlobError::TooLarge { len: 5, limit: 4 })
    ));
    assert!(matches!(
        blob::list(&f.pools, &running, None, small).await,
        Err(BlobError::TooMany { limit: 1 })
    ));
    assert_eq!(
        f.pools.snapshot().connections.active,
        0,
        "refused handles were closed"
    );
}

/// A reader of a 1,000-byte object in 10-byte chunks, and its first chunk.
async fn long_reader(
    f: &Fixture,
    running: &RunningRequest,
) -> (blob::BlobReader, provider_pools_actors::StagedOutput) {
    std::fs::write(f.root().join("long"), vec![7u8; 1_000]).expect("write");
    let limits = BlobLimits {
        chunk: 10,
        ..BlobLimits::default()
    };
    let mut reader = blob::get(&f.pools, running, &key("long"), limits)
        .await
        .expect("get");
    let first = reader.next_chunk().await.expect("a chunk").expect("read");
    assert_eq!(first.bytes().len(), 10);
    (reader, first)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dropped_reader_closes_its_handle_and_returns_the_running_owner() {
    let mut f = Fixture::new().await;
    let running = f.running().await;
    let (reader, first) = long_reader(&f, &running).await;
    drop(running);
    assert_eq!(
        f.pools.snapshot().running_requests,
        1,
        "the reader keeps the request"
    );
    drop(reader);
    assert_eq!(
        f.pools.snapshot().connections.active,
        0,
        "the handle closed with the reader"
    );
    drop(first);
    eventually("the last chunk returns the running owner", || {
        f.pools.snapshot().running_requests == 0
    })
    .await;
}

#[tokio::test(start_paused = true)]
async fn no_read_starts_once_the_requests_deadline_has_passed() {
    let mut f = Fixture::new().await;
    let running = f.running().await;
    let (mut reader, _first) = long_reader(&f, &running).await;
    assert_eq!(f.pools.snapshot().connections.active, 1);

    // The fixture's requests have 60 s; the reader has 990 bytes to go.
    tokio::time::advance(Duration::from_secs(61)).await;
    let late = reader.next_chunk().await.expect("an answer");
    assert!(matches!(late, Err(BlobError::Timeout)), "{late:?}");
    assert_eq!(
        late.as_ref().map(drop).expect_err("timeout").code(),
        "timeout"
    );
    assert_eq!(
        f.pools.snapshot().connections.active,
        0,
        "the handle closed at the deadline, its charge returned"
    );
    assert!(reader.next_chunk().await.is_none(), "the reader has ended");
    assert_eq!(reader.remaining(), 990);
}
