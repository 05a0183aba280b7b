//! Saturation and live lowering: full queues refuse at once naming the
//! bound; `lower_limits` never raises a limit above the one in force (so a
//! second lowering never undoes the first), never erases reservations,
//! never goes below actual use, is all or nothing, and binds what is
//! already configured (the connection limits of existing clients).

mod support;

use std::time::Duration;

use provider_pools::{
    AdmitError, Bytes, DialError, DialTarget, Dialer, InstallReceipt, LimitField, Limits,
    LimitsError, LowerError, PooledConnection, ProviderPools, RunningRequest,
};
use support::{
    admitted, bounded, eventually, http_config, installation, plan, request, running,
    running_until, task, with_alpha, with_mem,
};

#[tokio::test]
async fn a_full_queue_refuses_at_once_naming_each_bound() {
    for (limits, tenant_b, expected) in [
        (
            Limits {
                requests_per_tenant: 1,
                ..saturating()
            },
            "a",
            ("requests_per_tenant", 1, 1),
        ),
        (
            Limits {
                requests_per_provider: 1,
                ..saturating()
            },
            "b",
            ("requests_per_provider", 1, 1),
        ),
        (
            Limits {
                pending_requests: 1,
                requests_per_tenant: 1,
                requests_per_provider: 1,
                ..saturating()
            },
            "b",
            ("pending_requests", 1, 1),
        ),
    ] {
        let (pools, _, receipt) = with_alpha(limits, 1).await;
        let _held = admitted(&pools, request(&pools, plan("holder", 0), &receipt, b"h")).await;
        let first = {
            let (pools, request) = (pools.clone(), request(&pools, plan("a", 1), &receipt, b"x"));
            task(async move { pools.admit(request).await })
        };
        eventually("queued", || pools.snapshot().pending_requests == 1).await;
        let refused = pools
            .admit(request(&pools, plan(tenant_b, 2), &receipt, b"x"))
            .await;
        let (resource, used, limit) = expected;
        assert_eq!(
            refused.err(),
            Some(AdmitError::Capacity {
                resource,
                used,
                limit
            })
        );
        first.abort();
    }
}

/// Limits with a single running slot, so a held grant saturates them.
fn saturating() -> Limits {
    Limits {
        running_requests: 1,
        running_per_tenant: 1,
        running_per_provider: 1,
        ..Limits::DEFAULT
    }
}

#[tokio::test]
async fn lower_limits_never_raises_or_changes_backoff() {
    let (pools, _, _) = with_alpha(saturating(), 1).await;
    let raised = Limits {
        pending_requests: 129,
        ..saturating()
    };
    assert_eq!(
        pools.lower_limits(raised).await,
        Err(LowerError::Limits(LimitsError::Raised {
            field: LimitField::PendingRequests,
            value: 129,
            bound: 128,
        }))
    );
    let backoff = Limits {
        dial_backoff_initial: std::time::Duration::from_millis(50),
        ..saturating()
    };
    assert!(matches!(
        pools.lower_limits(backoff).await,
        Err(LowerError::Limits(LimitsError::Fixed { .. }))
    ));
}

/// A second lowering built from the startup limits would raise the first
/// one's field back: it is refused whole, and the first lowering stays in
/// force (reported by `limits_in_force`, and enforced).
#[tokio::test]
async fn a_second_lowering_never_undoes_the_first() {
    let (pools, _, _) = with_alpha(Limits::DEFAULT, 1).await;
    let share = 64 * 1024;
    pools
        .lower_limits(Limits {
            metadata_per_tenant: share,
            ..pools.limits_in_force()
        })
        .await
        .expect("the first lowering");

    let from_startup = Limits {
        running_per_tenant: 8,
        ..*pools.limits()
    };
    assert_eq!(
        pools.lower_limits(from_startup).await,
        Err(LowerError::Limits(LimitsError::Raised {
            field: LimitField::MetadataPerTenant,
            value: u64::from(Limits::DEFAULT.metadata_per_tenant),
            bound: u64::from(share),
        }))
    );
    let in_force = pools.limits_in_force();
    assert_eq!(in_force.metadata_per_tenant, share);
    assert_eq!(
        in_force.running_per_tenant,
        Limits::DEFAULT.running_per_tenant
    );
    let over_the_share = pools.stage_input(&plan("a", 1), Bytes::from(vec![0u8; 128 * 1024]));
    assert!(
        matches!(
            over_the_share,
            Err(AdmitError::Capacity { resource: "metadata_per_tenant", limit, .. }) if limit == share
        ),
        "the first lowering is still enforced: {over_the_share:?}"
    );

    // Built from the limits in force, the second lowering keeps the first.
    pools
        .lower_limits(Limits {
            running_per_tenant: 8,
            ..pools.limits_in_force()
        })
        .await
        .expect("the second lowering");
    let in_force = pools.limits_in_force();
    assert_eq!(
        (in_force.metadata_per_tenant, in_force.running_per_tenant),
        (share, 8)
    );
    assert_eq!(
        *pools.limits(),
        Limits::DEFAULT,
        "the startup limits never change"
    );
}

#[tokio::test(start_paused = true)]
async fn lower_limits_refuses_below_actual_use() {
    let limits = Limits {
        running_per_tenant: 4,
        ..Limits::DEFAULT
    };
    let (pools, p, receipt) = with_alpha(limits, 3).await;
    let mut running = Vec::new();
    for session in 0..3 {
        running.push(admitted(&pools, request(&pools, plan("t", session), &receipt, b"x")).await);
    }
    let tenant_below = Limits {
        running_per_tenant: 2,
        ..limits
    };
    assert_eq!(
        pools.lower_limits(tenant_below).await,
        Err(LowerError::InUse {
            field: LimitField::RunningPerTenant,
            used: 3,
            requested: 2
        })
    );

    // A retired epoch still held by an old call counts: rotation leaves two
    // epochs of three clients each retained.
    pools
        .install(installation(&p, 1, b"k2", http_config("alpha", 3)))
        .await
        .expect("rotate");
    let clients_below = Limits {
        clients_per_provider: 5,
        ..limits
    };
    assert_eq!(
        pools.lower_limits(clients_below).await,
        Err(LowerError::InUse {
            field: LimitField::ClientsPerProvider,
            used: 6,
            requested: 5
        })
    );
    let retained_below = Limits {
        retained_configurations: 1,
        ..limits
    };
    assert_eq!(
        pools.lower_limits(retained_below).await,
        Err(LowerError::InUse {
            field: LimitField::RetainedConfigurations,
            used: 2,
            requested: 1
        })
    );
    drop(running);
    support::quiescent(&pools).await;
    assert_eq!(pools.snapshot().retained_epochs, 1, "the old epoch drains");
    pools
        .lower_limits(retained_below)
        .await
        .expect("now one epoch is retained");
}

#[tokio::test]
async fn a_refused_lowering_changes_no_limit() {
    let limits = Limits {
        running_per_tenant: 4,
        ..Limits::DEFAULT
    };
    let (pools, _, receipt) = with_alpha(limits, 1).await;
    let mut running = Vec::new();
    for session in 0..3 {
        running.push(admitted(&pools, request(&pools, plan("t", session), &receipt, b"x")).await);
    }
    // The metadata budget would lower fine; the tenant ceiling cannot.
    let both = Limits {
        metadata_bytes: 64 * 1024,
        metadata_per_tenant: 64 * 1024,
        running_per_tenant: 2,
        ..limits
    };
    assert!(matches!(
        pools.lower_limits(both).await,
        Err(LowerError::InUse { .. })
    ));
    let big = pools.stage_input(&plan("t", 9), Bytes::from(vec![0u8; 100 * 1024]));
    assert!(big.is_ok(), "the metadata limit was restored");
}

#[tokio::test]
async fn live_lowering_applies_to_new_grants() {
    let limits = Limits {
        running_per_tenant: 4,
        ..Limits::DEFAULT
    };
    let (pools, _, receipt) = with_alpha(limits, 1).await;
    let first = admitted(&pools, request(&pools, plan("t", 0), &receipt, b"x")).await;
    pools
        .lower_limits(Limits {
            running_per_tenant: 1,
            ..limits
        })
        .await
        .expect("one running, lowered to one");
    let second = {
        let (pools, request) = (pools.clone(), request(&pools, plan("t", 1), &receipt, b"x"));
        task(async move { pools.admit(request).await })
    };
    eventually("the second request waits", || {
        pools.snapshot().pending_requests == 1
    })
    .await;
    assert_eq!(pools.snapshot().running_requests, 1);
    drop(first);
    let second = second
        .await
        .expect("task")
        .expect("granted after the release");
    assert_eq!(second.provider(), &receipt.provider);
}

/// In-memory connections, for the connection limits below.
#[derive(Clone)]
struct Mem;

impl Dialer for Mem {
    type Conn = ();

    async fn dial(&self, _: DialTarget<'_>) -> Result<(), DialError> {
        Ok(())
    }
}

const CONNECTIONS: Limits = Limits {
    connections_per_client: 4,
    connections_per_tenant: 4,
    ..Limits::DEFAULT
};

/// Holds one connection of the client for `tenant`, with its request.
async fn hold(
    pools: &ProviderPools,
    receipt: &InstallReceipt,
    tenant: &str,
    session: u64,
) -> (RunningRequest, PooledConnection<()>) {
    let request = running(pools, receipt, tenant, session).await;
    let conn = bounded("a dial", pools.reserve_connection(&request, &Mem))
        .await
        .expect("room for a connection");
    (request, conn)
}

/// What a further connection of the client for `tenant` gets: it waits
/// for one, within a deadline 100 ms away.
async fn ask(
    pools: &ProviderPools,
    receipt: &InstallReceipt,
    tenant: &str,
    session: u64,
) -> &'static str {
    let deadline = tokio::time::Instant::now() + Duration::from_millis(100);
    let request = running_until(pools, receipt, tenant, session, deadline).await;
    match bounded("an ask", pools.reserve_connection(&request, &Mem)).await {
        Ok(_) => "connected",
        Err(e) => e.code(),
    }
}

#[tokio::test(start_paused = true)]
async fn a_live_lowering_of_connections_per_client_binds_the_configured_clients() {
    let (pools, receipt) = with_mem(CONNECTIONS).await;
    let _a = hold(&pools, &receipt, "a", 1).await;
    let _b = hold(&pools, &receipt, "b", 2).await;
    pools
        .lower_limits(Limits {
            connections_per_client: 2,
            connections_per_tenant: 2,
            ..CONNECTIONS
        })
        .await
        .expect("two held, lowered to two");
    assert_eq!(
        ask(&pools, &receipt, "c", 3).await,
        "timeout",
        "the client, lowered to two, is full: a third tenant waits out its deadline"
    );
}

#[tokio::test(start_paused = true)]
async fn a_live_lowering_of_connections_per_tenant_binds_the_configured_clients() {
    let (pools, receipt) = with_mem(CONNECTIONS).await;
    let _a = hold(&pools, &receipt, "a", 1).await;
    pools
        .lower_limits(Limits {
            connections_per_tenant: 1,
            ..CONNECTIONS
        })
        .await
        .expect("one held, lowered to one");
    assert_eq!(
        ask(&pools, &receipt, "a", 2).await,
        "timeout",
        "the tenant's share, lowered to one, is taken: its second request waits out its deadline"
    );
    assert_eq!(
        ask(&pools, &receipt, "b", 3).await,
        "connected",
        "another tenant has room"
    );
}
