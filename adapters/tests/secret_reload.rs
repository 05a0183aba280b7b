//! The local secret adapter against a real temporary directory: a reload
//! and an audited guest read, a missing file, denials (policy, unreadable
//! file, escaping symlink, non-files), a file over the bound refused before
//! it is read, and a file that grows while it is read.

mod secret_support;
mod support;

use provider_pools_actors::AdmitError;
use provider_pools_adapters::secret::{
    self, prepayment, SecretError, SecretName, ENTRY_OVERHEAD, MATERIAL_OVERHEAD,
};
use secret_support::{name, Audit, Fixture, Writer, JOB};
use support::{bounded, eventually, task};
use tracing::instrument::WithSubscriber;

const CANARY: &[u8] = b"CANARY-5e11-secret-bytes";

/// What a loaded secret keeps charged: its entry and its canonical copy.
fn kept(len: usize, file: &str) -> u32 {
    len as u32 + MATERIAL_OVERHEAD + ENTRY_OVERHEAD + file.len() as u32
}

fn assert_no_canary(what: &str, text: &str) {
    assert!(!text.contains("5e11"), "{what} shows secret bytes: {text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reload_loads_the_file_and_an_audited_guest_read_serves_it() {
    let mut f = Fixture::new(&[]).await;
    f.write("db-password", CANARY);
    let base = f.quiescent_metadata().await;

    let audit = Audit::default();
    let reloaded = f
        .reload("db-password")
        .with_subscriber(audit.clone())
        .await
        .expect("reload");
    assert_eq!((reloaded.version, reloaded.len), (1, CANARY.len()));
    assert_eq!(
        f.quiescent_metadata().await,
        base + kept(CANARY.len(), "db-password"),
        "the entry and its copy stay charged; the source buffer returned"
    );

    // The guest never reaches the file: it reads the cached copy.
    std::fs::remove_file(f.secrets().join("db-password")).expect("remove file");
    let running = f.running().await;
    let value = tracing::subscriber::with_default(audit.clone(), || {
        secret::read(&running, &name("db-password"))
    })
    .expect("served from the cache");
    assert_eq!(value.expose_to_guest(), CANARY);
    assert_eq!((value.version(), value.name().as_str()), (1, "db-password"));

    let events = audit.events();
    assert_eq!(events.len(), 2, "one reload and one read event: {events:?}");
    let read = &events[1];
    for (field, expected) in [
        ("tenant", "t"),
        ("provider", "vault-files"),
        ("name", "db-password"),
        ("version", "1"),
        ("outcome", "served"),
        ("epoch", "1"),
    ] {
        assert_eq!(
            read.get(field).map(String::as_str),
            Some(expected),
            "{field}"
        );
    }
    assert_eq!(
        events[0].get("outcome").map(String::as_str),
        Some("reloaded")
    );
    assert_no_canary("audit events", &format!("{events:?}"));
    assert_no_canary("SecretValue", &format!("{value:?}"));
    assert_no_canary("Reloaded", &format!("{reloaded:?}"));

    drop((value, running));
    f.shutdown_clean().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_file_is_not_found_and_an_unloaded_name_is_not_loaded() {
    let mut f = Fixture::new(&[]).await;
    let base = f.quiescent_metadata().await;
    assert_eq!(f.reload("absent").await, Err(SecretError::NotFound));
    assert_eq!(f.quiescent_metadata().await, base, "nothing was prepaid");

    let running = f.running().await;
    let audit = Audit::default();
    let read = tracing::subscriber::with_default(audit.clone(), || {
        secret::read(&running, &name("absent"))
    });
    assert_eq!(read.map(|_| ()), Err(SecretError::NotLoaded));
    assert_eq!(
        audit.events()[0].get("outcome").map(String::as_str),
        Some("not_loaded"),
        "refused reads are audited too"
    );
    drop(running);
    f.shutdown_clean().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn permission_denied_by_the_dispatch_authority_stops_a_guest_before_any_read() {
    let mut f = Fixture::new(&[]).await;
    f.write("token", CANARY);
    f.reload("token").await.expect("reload");

    // Capacity alone never supplies permission: no start, so no read.
    let ready = f.admitted("mallory").await;
    let denied = f.pools.dispatch(&f.policy, ready.plan(), ready.provider());
    assert!(matches!(denied, Err(AdmitError::Revoked(_))), "{denied:?}");
    drop(ready);

    // A revoked policy stops the next activation of an allowed tenant.
    let allowed = f.running().await;
    assert!(secret::read(&allowed, &name("token")).is_ok());
    drop(allowed);
    f.policy.revoke(
        &provider_pools_actors::TenantId::new("t").expect("tenant"),
        &secret_support::provider(),
    );
    let ready = f.admitted("t").await;
    assert!(matches!(
        f.pools.dispatch(&f.policy, ready.plan(), ready.provider()),
        Err(AdmitError::Revoked(_))
    ));
    drop(ready);
    f.shutdown_clean().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn permission_denied_on_an_unreadable_file() {
    use std::os::unix::fs::PermissionsExt;
    let f = Fixture::new(&[]).await;
    f.write("locked", CANARY);
    let path = f.secrets().join("locked");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o000)).expect("chmod 000");
    let base = f.quiescent_metadata().await;

    // Root (CAP_DAC_OVERRIDE) reads a mode-000 file; anyone else may not.
    let privileged = std::fs::File::open(&path).is_ok();
    let reloaded = f.reload("locked").await;
    if privileged {
        assert_eq!(
            reloaded.map(|r| r.len),
            Ok(CANARY.len()),
            "privileged reader"
        );
    } else {
        assert_eq!(reloaded, Err(SecretError::PermissionDenied));
        assert_eq!(f.quiescent_metadata().await, base, "nothing was prepaid");
    }
    f.shutdown_clean().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn names_that_leave_the_directory_or_are_not_files_are_refused() {
    let f = Fixture::new(&[]).await;
    let outside = f.dir.path().join("outside");
    std::fs::write(&outside, b"not a secret of this origin").expect("outside file");
    std::os::unix::fs::symlink(&outside, f.secrets().join("escape")).expect("symlink out");
    std::fs::create_dir(f.secrets().join("folder")).expect("dir");
    let fifo = std::process::Command::new("mkfifo")
        .arg(f.secrets().join("pipe"))
        .status()
        .expect("mkfifo runs");
    assert!(fifo.success());
    // A symlink that stays inside (as a Kubernetes secret mount has) is fine.
    f.write("real", b"inside");
    std::os::unix::fs::symlink(f.secrets().join("real"), f.secrets().join("alias"))
        .expect("symlink in");
    let base = f.quiescent_metadata().await;

    assert_eq!(
        f.reload("escape").await,
        Err(SecretError::Escapes),
        "even for root"
    );
    assert_eq!(f.reload("folder").await, Err(SecretError::NotAFile));
    assert_eq!(
        f.reload("pipe").await,
        Err(SecretError::NotAFile),
        "a pipe is refused at once, never waited on"
    );
    assert_eq!(f.quiescent_metadata().await, base);
    assert_eq!(f.reload("alias").await.map(|r| r.len), Ok(6));
    for refused in ["../outside", "a/b", ".hidden", ""] {
        assert!(SecretName::parse(refused).is_err(), "{refused:?}");
    }
    f.shutdown_clean().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_oversized_file_is_refused_before_any_byte_is_read_or_prepaid() {
    let f = Fixture::new(&[("max_secret_bytes", "16")]).await;
    f.write("big", &[b'x'; 17]);
    let base = f.quiescent_metadata().await;
    // A read would wait for this writer's lock: an answer proves none began.
    let writer = Writer::lock(&f.secrets().join("big"));
    assert_eq!(
        f.reload("big").await,
        Err(SecretError::TooLarge { len: 17, limit: 16 })
    );
    assert_eq!(f.quiescent_metadata().await, base, "nothing was prepaid");
    drop(writer);
    f.write("fits", &[b'x'; 16]);
    assert_eq!(f.reload("fits").await.map(|r| r.len), Ok(16));
    f.shutdown_clean().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_file_that_grows_while_it_is_read_is_refused_and_changes_nothing() {
    let mut f = Fixture::new(&[]).await;
    f.write("token", b"version1");
    f.reload("token").await.expect("first load");
    let loaded = f.quiescent_metadata().await;

    let writer = Writer::lock(&f.secrets().join("token"));
    let reload = {
        let (pools, receipt) = (f.pools.clone(), f.receipt.clone());
        task(async move {
            secret::reload(&pools, &receipt.provider, &receipt.slots[0], &name("token")).await
        })
    };
    let held = loaded + prepayment(8, &name("token")) + JOB;
    eventually(
        "the read job waits for the writer with its prepayment",
        || {
            let now = f.pools.snapshot();
            now.workers == 1 && now.metadata_bytes == held
        },
    )
    .await;
    std::io::Write::write_all(&mut &writer.0, b"-and-more").expect("append");
    drop(writer);
    let refused = bounded("the reload ends", reload).await.expect("task");
    assert_eq!(refused, Err(SecretError::Grew { prepaid: 8 }));
    assert_eq!(f.quiescent_metadata().await, loaded, "nothing changed");

    let running = f.running().await;
    let value = secret::read(&running, &name("token")).expect("still served");
    assert_eq!(
        (value.expose_to_guest(), value.version()),
        (&b"version1"[..], 1)
    );
    drop((value, running));
    f.shutdown_clean().await;
}
