//! Cancellation mid-reload: the waiter is dropped while the reload's
//! `control_blocking` job is held mid-read by a writer's lock. The job
//! keeps its worker slot and its prepayment until it really ends; then it
//! installs its material, and the source buffer's share returns.

mod secret_support;
mod support;

use provider_pools_adapters::secret::{self, prepayment, ENTRY_OVERHEAD, MATERIAL_OVERHEAD};
use secret_support::{name, Fixture, Writer, JOB};
use support::{bounded, eventually, task};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dropped_reload_waiter_keeps_the_jobs_charges_until_the_job_ends() {
    let mut f = Fixture::new(&[]).await;
    let bytes = b"rotated-api-key";
    f.write("api-key", bytes);
    let base = f.quiescent_metadata().await;

    let writer = Writer::lock(&f.secrets().join("api-key"));
    let waiter = {
        let (pools, receipt) = (f.pools.clone(), f.receipt.clone());
        task(async move {
            secret::reload(
                &pools,
                &receipt.provider,
                &receipt.slots[0],
                &name("api-key"),
            )
            .await
        })
    };
    let prepaid = prepayment(bytes.len() as u32, &name("api-key"));
    eventually("the read job is blocked with its prepayment", || {
        let now = f.pools.snapshot();
        now.workers == 1 && now.metadata_bytes == base + prepaid + JOB
    })
    .await;

    waiter.abort();
    assert!(bounded("the waiter is gone", waiter)
        .await
        .expect_err("aborted")
        .is_cancelled());
    let abandoned = f.pools.snapshot();
    assert_eq!(
        (abandoned.workers, abandoned.metadata_bytes),
        (1, base + prepaid + JOB),
        "an abandoned waiter refunds nothing while its job runs"
    );
    let running = f.running().await;
    assert_eq!(
        secret::read(&running, &name("api-key")).map(|_| ()),
        Err(secret::SecretError::NotLoaded),
        "nothing is installed before the job ends"
    );

    drop(writer);
    let kept = bytes.len() as u32 + MATERIAL_OVERHEAD + ENTRY_OVERHEAD + "api-key".len() as u32;
    eventually("the job ends: its slot and source share return", || {
        let now = f.pools.snapshot();
        // The running request holds its own 256 bytes meanwhile.
        now.workers == 0 && now.metadata_bytes == base + kept + 256
    })
    .await;
    let value = secret::read(&running, &name("api-key")).expect("the job installed it");
    assert_eq!((value.expose_to_guest(), value.version()), (&bytes[..], 1));
    drop((value, running));
    f.shutdown_clean().await;
}
