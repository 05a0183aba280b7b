//! A control owner that dies closes admission, and no report can be clean.

mod support;

use std::time::Duration;

use provider_pools::{ControlState, InstallError, Limits, LookupError, OriginKind};
use support::{bounded, http_config, installation, with_alpha};

#[tokio::test]
async fn a_killed_registry_closes_admission_and_fails_the_report() {
    let (pools, p, receipt) = with_alpha(Limits::DEFAULT, 1).await;

    let registry = pools.registry_cell();
    registry.kill();
    bounded("registry stops", registry.wait(None))
        .await
        .expect("wait for the killed registry");

    assert_eq!(
        pools.client(&p, &receipt.slots[0], OriginKind::Http).err(),
        Some(LookupError::Closed)
    );
    assert_eq!(
        pools
            .install(installation(&p, 1, b"k2", http_config("alpha", 1)))
            .await,
        Err(InstallError::Closed)
    );
    let report = pools
        .shutdown(tokio::time::Instant::now() + Duration::from_millis(50))
        .await;
    assert_eq!(report.control, ControlState::Failed);
    assert!(!report.is_clean());
}

#[tokio::test(start_paused = true)]
async fn a_killed_scheduler_closes_admission_and_fails_the_report() {
    let (pools, _, receipt) = with_alpha(Limits::DEFAULT, 1).await;
    let scheduler = pools.scheduler_cell();
    scheduler.kill();
    bounded("scheduler stops", scheduler.wait(None))
        .await
        .expect("wait for the killed scheduler");
    support::quiescent(&pools).await;
    assert_eq!(
        pools.snapshot().control,
        ControlState::Failed,
        "the registry records the control failure"
    );

    let refused = pools
        .admit(support::request(
            &pools,
            support::plan("t", 1),
            &receipt,
            b"x",
        ))
        .await;
    assert_eq!(refused.err(), Some(provider_pools::AdmitError::Closed));
    let report = pools
        .shutdown(tokio::time::Instant::now() + Duration::from_millis(50))
        .await;
    assert_eq!(report.control, ControlState::Failed);
    assert!(!report.is_clean());
}

#[tokio::test(start_paused = true)]
async fn a_killed_worker_pool_or_cleanup_actor_fails_the_report() {
    for which in [1, 2] {
        let (pools, _, _) = with_alpha(Limits::DEFAULT, 1).await;
        let control = pools.control_cells()[which].clone();
        control.kill();
        bounded("control actor stops", control.wait(None))
            .await
            .expect("wait for the killed actor");
        support::quiescent(&pools).await;
        assert_eq!(
            pools.snapshot().control,
            ControlState::Failed,
            "the registry records the control failure"
        );
        assert!(pools.spawn(|| async {}).await.is_err(), "admission closed");
        let report = pools
            .shutdown(tokio::time::Instant::now() + Duration::from_millis(50))
            .await;
        assert!(!report.is_clean());
    }
}
