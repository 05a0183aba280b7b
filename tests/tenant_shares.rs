//! Per-tenant shares of the node-wide resources a request can hold: a
//! tenant at its share is refused before it takes anything shared, and
//! every other tenant keeps the rest. (The noisy-neighbour suite in
//! `adapters/tests/noisy_neighbour.rs` drives the same shares through the
//! real adapters.)

mod support;

use std::sync::mpsc;

use provider_pools::{AdmitError, Bytes, JobError, LimitField, Limits, LowerError};
use support::{plan, running, with_alpha};

const MIB: usize = 1024 * 1024;

#[tokio::test]
async fn a_tenant_at_its_metadata_share_is_refused_and_another_tenant_is_not() {
    let (pools, _, receipt) = with_alpha(Limits::DEFAULT, 1).await;
    let before = pools.snapshot().metadata_bytes;
    let share = Limits::DEFAULT.metadata_per_tenant as usize;
    let hog = plan("hog", 1);
    let held = pools
        .stage_input(&hog, Bytes::from(vec![0u8; share - 512]))
        .expect("within the share");
    // Its own request overhead still fits; a further MiB does not.
    let refused = pools.stage_input(&hog, Bytes::from(vec![0u8; MIB]));
    assert_eq!(
        refused.err(),
        Some(AdmitError::Capacity {
            resource: "metadata_per_tenant",
            used: (share - 512) as u32,
            limit: share as u32,
        })
    );
    assert_eq!(
        pools.snapshot().metadata_bytes,
        before + (share - 512) as u32,
        "the refusal took nothing shared"
    );
    let other = pools
        .stage_input(&plan("other", 1), Bytes::from(vec![0u8; share - 512]))
        .expect("another tenant has its own share");
    // Results count against the same share as inputs.
    let request = running(&pools, &receipt, "hog", 2).await;
    let output = request.stage_output(Bytes::from(vec![0u8; MIB]));
    assert!(
        matches!(
            &output,
            Err(AdmitError::Capacity {
                resource: "metadata_per_tenant",
                ..
            })
        ),
        "{output:?}"
    );
    drop((held, other, request));
    assert_eq!(pools.snapshot().metadata_bytes, before);
}

#[tokio::test]
async fn a_requests_overhead_is_charged_to_its_plans_tenant_whoever_staged_its_input() {
    let (pools, _, receipt) = with_alpha(Limits::DEFAULT, 1).await;
    let before = pools.snapshot().metadata_bytes;
    let share = Limits::DEFAULT.metadata_per_tenant as usize;
    // The hog's share has less room left than one request's overhead.
    let held = pools
        .stage_input(&plan("hog", 1), Bytes::from(vec![0u8; share - 100]))
        .expect("within the share");
    // Input staged for another tenant does not lend the hog its share.
    let mut request = support::request(&pools, plan("other", 2), &receipt, b"x");
    request.plan = plan("hog", 2);
    let refused = pools.admit(request).await;
    assert!(
        matches!(
            &refused,
            Err(AdmitError::Capacity {
                resource: "metadata_per_tenant",
                ..
            })
        ),
        "{refused:?}"
    );
    // Nor does the hog's input make the other tenant pay at the hog's share.
    let mut request = support::request(&pools, plan("hog", 3), &receipt, b"");
    request.plan = plan("other", 3);
    let granted = pools.admit(request).await;
    assert!(granted.is_ok(), "{granted:?}");
    drop((held, granted));
    assert_eq!(pools.snapshot().metadata_bytes, before);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tenants_blocking_jobs_stop_at_its_worker_share() {
    let (pools, _, receipt) = with_alpha(Limits::DEFAULT, 1).await;
    let share = Limits::DEFAULT.workers_per_tenant as usize;
    let hog = running(&pools, &receipt, "hog", 1).await;
    let (release, gate) = mpsc::channel::<()>();
    let gate = std::sync::Arc::new(std::sync::Mutex::new(gate));
    let mut jobs = Vec::new();
    for _ in 0..share {
        let gate = std::sync::Arc::clone(&gate);
        let job = pools
            .spawn_blocking_for(&hog, move || {
                let _ = gate.lock().map(|g| g.recv());
            })
            .await
            .expect("within the share");
        jobs.push(job);
    }
    let refused = pools.spawn_blocking_for(&hog, || ()).await;
    assert!(
        matches!(
            refused,
            Err(JobError::Capacity {
                resource: "workers_per_tenant",
                used,
                limit,
            }) if used as usize == share && limit as usize == share
        ),
        "{refused:?}"
    );
    // The node still has workers for everyone else.
    let other = running(&pools, &receipt, "other", 2).await;
    let job = pools
        .spawn_blocking_for(&other, || 7)
        .await
        .expect("another tenant's job");
    assert_eq!(job.join().await, Ok(7));
    for _ in 0..share {
        release.send(()).expect("a job waits");
    }
    for job in jobs {
        assert_eq!(job.join().await, Ok(()));
    }
    drop((hog, other));
    let report = pools.shutdown(support::deadline()).await;
    assert!(report.is_clean(), "{report:?}");
}

#[tokio::test]
async fn a_tenants_admissions_stop_at_its_share_before_the_admission_queue() {
    let limits = Limits {
        running_per_tenant: 1,
        ..Limits::DEFAULT
    };
    let (pools, _, receipt) = with_alpha(limits, 1).await;
    let _running = running(&pools, &receipt, "flood", 0).await;
    // Polled once each, no task running between them: far more admits than
    // the tenant's share, and than the admission queue's pending bound.
    let mut queued = Vec::new();
    let mut refused = 0;
    for session in 1..=400 {
        let request = support::request(&pools, plan("flood", session), &receipt, b"");
        let mut admit = Box::pin(pools.admit(request));
        match futures_poll(admit.as_mut()) {
            Some(Err(AdmitError::Capacity {
                resource: "requests_per_tenant",
                ..
            })) => refused += 1,
            Some(other) => panic!("unexpected answer: {other:?}"),
            None => queued.push(admit),
        }
    }
    let share = Limits::DEFAULT.requests_per_tenant as usize;
    assert_eq!((queued.len(), refused), (share, 400 - share));
    // Another tenant's admission still reaches the queue and is granted.
    let other = support::request(&pools, plan("other", 1), &receipt, b"");
    let granted = support::bounded("the other tenant's admission", pools.admit(other)).await;
    assert!(granted.is_ok(), "{granted:?}");
}

/// Polls `future` once.
fn futures_poll<F: std::future::Future>(future: std::pin::Pin<&mut F>) -> Option<F::Output> {
    let waker = std::task::Waker::noop();
    let mut cx = std::task::Context::from_waker(waker);
    match future.poll(&mut cx) {
        std::task::Poll::Ready(output) => Some(output),
        std::task::Poll::Pending => None,
    }
}

#[tokio::test]
async fn lowering_a_tenant_share_below_a_tenants_use_is_refused_and_restores_everything() {
    let (pools, _, _) = with_alpha(Limits::DEFAULT, 1).await;
    let held = pools
        .stage_input(&plan("a", 1), Bytes::from(vec![0u8; MIB]))
        .expect("within the share");
    let lowered = Limits {
        metadata_per_tenant: 512 * 1024,
        ..Limits::DEFAULT
    };
    assert_eq!(
        pools.lower_limits(lowered).await,
        Err(LowerError::InUse {
            field: LimitField::MetadataPerTenant,
            used: MIB as u32,
            requested: 512 * 1024,
        })
    );
    // Nothing changed: the old share is still in force.
    let more = pools.stage_input(&plan("a", 2), Bytes::from(vec![0u8; MIB]));
    assert!(more.is_ok(), "{more:?}");
    drop((held, more));
    pools
        .lower_limits(lowered)
        .await
        .expect("no tenant above it now");
    let refused = pools.stage_input(&plan("b", 1), Bytes::from(vec![0u8; MIB]));
    assert!(
        matches!(refused, Err(AdmitError::Capacity { resource: "metadata_per_tenant", limit, .. }) if limit == 512 * 1024),
        "{refused:?}"
    );
}
