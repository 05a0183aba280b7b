//! Expiry on a paused clock: material is served until its time to live
//! ends, never after; the cache's copy is released at the first read that
//! finds it expired, reads answer `Expired` until a reload, and a guest
//! that read it in time keeps its value. The cache is bounded: a full cache
//! refuses new names before any I/O until a name is forgotten or expires.

mod secret_support;
mod support;

use std::time::Duration;

use provider_pools_adapters::secret::{self, SecretError, MATERIAL_OVERHEAD};
use secret_support::{name, Fixture};

#[tokio::test(start_paused = true)]
async fn expired_material_is_not_served_until_a_reload() {
    let mut f = Fixture::new(&[("ttl_ms", "60000")]).await;
    f.write("session-key", b"short-lived");
    let reloaded = f.reload("session-key").await.expect("load");
    let running = f.running().await;
    let now = tokio::time::Instant::now();
    assert_eq!(
        reloaded.expires_at.duration_since(now),
        Duration::from_secs(60),
        "the time to live starts when the reload read the file"
    );

    tokio::time::advance(Duration::from_millis(59_999)).await;
    let in_time = secret::read(&running, &name("session-key")).expect("still fresh");
    assert_eq!(in_time.expose_to_guest(), b"short-lived");
    let fresh = f.quiescent_metadata().await;

    tokio::time::advance(Duration::from_millis(1)).await;
    for _ in 0..2 {
        assert_eq!(
            secret::read(&running, &name("session-key")).map(|_| ()),
            Err(SecretError::Expired { version: 1 }),
            "expired material is never served"
        );
    }
    assert_eq!(
        f.pools.snapshot().metadata_bytes,
        fresh,
        "the guest that read in time still holds the copy, charged"
    );
    assert_eq!(in_time.expose_to_guest(), b"short-lived");
    drop(in_time);
    assert_eq!(
        f.pools.snapshot().metadata_bytes,
        fresh - (11 + MATERIAL_OVERHEAD),
        "the expired copy is released with its last holder; the entry stays"
    );

    f.write("session-key", b"renewed");
    let renewed = f.reload("session-key").await.expect("reload");
    assert_eq!(renewed.version, 2);
    let value = secret::read(&running, &name("session-key")).expect("served again");
    assert_eq!(
        (value.expose_to_guest(), value.version()),
        (&b"renewed"[..], 2)
    );
    drop((value, running));
    f.shutdown_clean().await;
}

#[tokio::test(start_paused = true)]
async fn the_cache_holds_at_most_max_secrets_and_makes_room_by_forgetting_or_expiry() {
    let mut f = Fixture::new(&[("max_secrets", "2"), ("ttl_ms", "60000")]).await;
    f.write("a", b"1");
    f.write("b", b"2");
    f.reload("a").await.expect("a");
    f.reload("b").await.expect("b");
    let full = f.quiescent_metadata().await;
    assert_eq!(
        f.reload("c").await,
        Err(SecretError::Full { limit: 2 }),
        "refused before any I/O: `c` does not even exist"
    );
    assert_eq!(f.quiescent_metadata().await, full);
    assert_eq!(
        f.reload("a").await.map(|r| r.version),
        Ok(3),
        "a loaded name fits"
    );

    let (provider, slot) = (f.receipt.provider.clone(), f.receipt.slots[0]);
    assert_eq!(
        secret::forget(&f.pools, &provider, &slot, &name("a")),
        Ok(true)
    );
    f.write("c", b"3");
    f.reload("c").await.expect("forgetting made room");

    tokio::time::advance(Duration::from_secs(60)).await;
    f.write("d", b"4");
    f.reload("d").await.expect("expired entries make room");
    let running = f.running().await;
    for evicted in ["b", "c"] {
        assert_eq!(
            secret::read(&running, &name(evicted)).map(|_| ()),
            Err(SecretError::NotLoaded),
            "{evicted} was expired and evicted"
        );
    }
    assert!(secret::read(&running, &name("d")).is_ok());
    drop(running);
    f.shutdown_clean().await;
}
