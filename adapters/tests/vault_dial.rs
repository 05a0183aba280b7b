//! What a Vault dial is, now that the http adapter's dialer opens the
//! connections: an unreachable server is a failed dial and backs the
//! client off; a sealed server is reachable, so its answer (503) passes
//! through as `Rejected` and backs nothing off.

mod support;

use provider_pools_actors::{ConnectError, DialErrorKind, Limits, ProviderPools};
use provider_pools_adapters::http_origin::HttpDialer;
use provider_pools_adapters::vault::{self, SecretPath, VaultError, VaultLimits};
use provider_pools_test_peers::free_port;
use support::relay::Relay;
use support::vault::{bao_call, data, install, running, start_bao, ROOT};
use support::{deadline, eventually, start};

fn path(text: &str) -> SecretPath {
    SecretPath::parse(text).expect("valid path")
}

async fn assert_clean_shutdown(pools: &ProviderPools) {
    let report = pools.shutdown(deadline()).await;
    assert!(report.is_clean(), "shutdown leaves {report:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreachable_server_is_a_failed_dial_and_the_client_backs_off() {
    let pools = start(Limits::DEFAULT).await;
    let target = format!("http://127.0.0.1:{}", free_port());
    let receipt = install(&pools, &target, &[], ROOT.as_bytes(), 0).await;
    let dialer = HttpDialer::new(pools.clone());
    let limits = VaultLimits::default();
    let request = running(&pools, &receipt, 1).await;

    let err = vault::read(&pools, &request, &dialer, &path("app/db"), limits)
        .await
        .expect_err("nothing listens");
    assert!(
        matches!(&err, VaultError::Connect(ConnectError::Dial(e)) if e.kind == DialErrorKind::Refused),
        "{err:?}"
    );
    let err = vault::read(&pools, &request, &dialer, &path("app/db"), limits)
        .await
        .expect_err("in backoff");
    assert!(
        matches!(
            &err,
            VaultError::Connect(ConnectError::Unavailable {
                kind: DialErrorKind::Refused,
                ..
            })
        ),
        "{err:?}"
    );
    assert_eq!(err.code(), "unavailable");
    assert_eq!(dialer.dials(), 1, "the backoff answered without dialing");
    drop(request);
    assert_clean_shutdown(&pools).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sealed_server_answers_rejected_and_the_client_does_not_back_off() {
    let bao = start_bao().await;
    let relay = Relay::start(bao.addr()).await;
    let (status, body) = bao_call(bao.addr(), "PUT", "/v1/sys/seal", ROOT, None).await;
    assert_eq!(status, 204, "sealed: {body}");
    let pools = start(Limits::DEFAULT).await;
    let receipt = install(&pools, &relay.target, &[], ROOT.as_bytes(), 0).await;
    let dialer = HttpDialer::new(pools.clone());
    let limits = VaultLimits::default();
    let request = running(&pools, &receipt, 1).await;

    // The dial succeeds (the server listens); the first exchange on the
    // fresh connection gets Vault's answer, and so does the next one.
    for attempt in 0..2 {
        let err = vault::write(
            &pools,
            &request,
            &dialer,
            &path("app/db"),
            data(&[("k", "v")]),
            None,
            limits,
        )
        .await
        .expect_err("sealed");
        match &err {
            VaultError::Rejected { status, messages } => {
                assert_eq!(*status, 503, "attempt {attempt}");
                assert!(
                    messages.iter().any(|m| m.contains("sealed")),
                    "attempt {attempt}: {messages:?}"
                );
            }
            other => panic!("attempt {attempt}: {other:?}"),
        }
        assert_eq!(err.code(), "rejected");
    }
    // A complete answer: the connection was parked and reused, never
    // redialed, and the client was never put into backoff.
    assert_eq!((dialer.dials(), relay.accepted()), (1, 1));
    eventually("the connection is parked", || {
        pools.snapshot().connections.idle == 1
    })
    .await;
    drop(request);
    assert_clean_shutdown(&pools).await;
}
