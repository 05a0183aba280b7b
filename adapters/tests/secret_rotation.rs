//! Rotation during load. A secret rotated on disk: guests keep the old
//! version while the reload reads, then new reads see the new one, and a
//! guest still holding the old copy keeps it charged until it drops it. A
//! provider rotated to a new epoch: calls on the old epoch keep its cache,
//! new calls use the new epoch's own.

mod secret_support;
mod support;

use provider_pools_actors::{Authority, Credential, Epoch, Installation};
use provider_pools_adapters::secret::{
    self, prepayment, SecretError, ENTRY_OVERHEAD, MATERIAL_OVERHEAD,
};
use secret_support::{config, name, provider, Fixture, Writer, JOB};
use support::{eventually, task};

/// What a loaded secret keeps charged: its entry and its canonical copy.
fn kept(len: u32, file: &str) -> u32 {
    len + MATERIAL_OVERHEAD + ENTRY_OVERHEAD + file.len() as u32
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn readers_keep_the_old_version_while_a_reload_installs_the_new_one() {
    let mut f = Fixture::new(&[]).await;
    f.write("db-password", b"old-password");
    f.reload("db-password").await.expect("first load");
    let running = f.running().await;
    let old = secret::read(&running, &name("db-password")).expect("v1");
    let with_old = f.quiescent_metadata().await;

    // The operator rewrites the file in place under its lock; a reload
    // starts and waits for the writer.
    let writer = Writer::lock(&f.secrets().join("db-password"));
    writer.0.set_len(0).expect("truncate");
    std::io::Write::write_all(&mut &writer.0, b"new-password!").expect("rewrite");
    let reload = {
        let (pools, receipt) = (f.pools.clone(), f.receipt.clone());
        task(async move {
            secret::reload(
                &pools,
                &receipt.provider,
                &receipt.slots[0],
                &name("db-password"),
            )
            .await
        })
    };
    let prepaid = prepayment(13, &name("db-password")) + JOB;
    eventually("the reload waits for the writer, prepaid", || {
        let now = f.pools.snapshot();
        now.workers == 1 && now.metadata_bytes == with_old + prepaid
    })
    .await;
    let during = secret::read(&running, &name("db-password")).expect("served during the load");
    assert_eq!(
        (during.expose_to_guest(), during.version()),
        (&b"old-password"[..], 1)
    );
    drop(during);

    drop(writer);
    let reloaded = support::bounded("reload", reload)
        .await
        .expect("task")
        .expect("reload");
    assert_eq!((reloaded.version, reloaded.len), (2, 13));
    let new = secret::read(&running, &name("db-password")).expect("v2");
    assert_eq!(
        (new.expose_to_guest(), new.version()),
        (&b"new-password!"[..], 2)
    );
    assert_eq!(
        (old.expose_to_guest(), old.version()),
        (&b"old-password"[..], 1),
        "the holder of the old copy keeps it"
    );

    // The old copy is no longer the cache's, but its holder keeps it charged.
    let both = f.quiescent_metadata().await;
    assert_eq!(
        both,
        with_old + 13 + MATERIAL_OVERHEAD,
        "the entry is replaced; the old copy stays while it is held"
    );
    drop(old);
    assert_eq!(
        f.pools.snapshot().metadata_bytes,
        both - (12 + MATERIAL_OVERHEAD),
        "dropping the last holder releases exactly the old copy"
    );
    drop((new, running));
    f.shutdown_clean().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_provider_rotation_gives_the_new_epoch_its_own_cache() {
    let mut f = Fixture::new(&[]).await;
    let epoch_one = f.quiescent_metadata().await; // epoch 1's own charges only
    f.write("token", b"epoch-one");
    f.reload("token").await.expect("load on epoch 1");
    let on_one = f.running().await;

    let second_dir = f.dir.path().join("secrets-2");
    std::fs::create_dir(&second_dir).expect("second dir");
    std::fs::write(second_dir.join("token"), b"epoch-two").expect("write");
    let rotated = f
        .pools
        .install(Installation {
            provider: provider(),
            authority: Authority::new("file:secrets").expect("authority"),
            expected: Epoch::new(1),
            credential: Credential::empty(),
            config: config(&second_dir, &[]),
        })
        .await
        .expect("rotate");
    f.receipt = rotated;

    let on_two = f.running().await;
    assert_eq!(on_two.client().epoch(), Epoch::new(2));
    assert_eq!(
        secret::read(&on_two, &name("token")).map(|_| ()),
        Err(SecretError::NotLoaded),
        "the new epoch starts with an empty cache"
    );
    assert_eq!(
        secret::read(&on_one, &name("token"))
            .expect("the old epoch keeps its cache")
            .expose_to_guest(),
        b"epoch-one"
    );
    f.reload("token").await.expect("load on epoch 2");
    assert_eq!(
        secret::read(&on_two, &name("token"))
            .expect("epoch 2")
            .expose_to_guest(),
        b"epoch-two"
    );

    // The old epoch's cache goes with the epoch, after its last call.
    let both = f.quiescent_metadata().await;
    drop(on_one);
    support::quiescent(&f.pools).await;
    assert_eq!(
        f.pools.snapshot().retained_epochs,
        1,
        "the old epoch drains and drops its cache"
    );
    assert_eq!(
        f.quiescent_metadata().await,
        both - epoch_one - kept(9, "token") - 256,
        "the old epoch, its request and its cache entry were released together"
    );
    drop(on_two);
    f.shutdown_clean().await;
}
