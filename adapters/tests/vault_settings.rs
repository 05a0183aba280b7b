//! The Vault adapter's settings and credential against a real OpenBao dev
//! server: an unusable token or mount fails before any dial and is never
//! shown; the `namespace` and `mount` settings choose where secrets live.

mod support;

use provider_pools_actors::Limits;
use provider_pools_adapters::http_origin::HttpDialer;
use provider_pools_adapters::vault::{self, SecretPath, VaultError, VaultLimits};
use support::vault::{bao_call, bao_call_in, data, install, running, start_bao, ROOT};
use support::{deadline, start};

fn path(text: &str) -> SecretPath {
    SecretPath::parse(text).expect("valid path")
}

async fn assert_clean_shutdown(pools: &provider_pools_actors::ProviderPools) {
    let report = pools.shutdown(deadline()).await;
    assert!(report.is_clean(), "shutdown leaves {report:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unusable_token_or_setting_fails_before_any_dial_without_showing_it() {
    let bao = start_bao().await;
    let pools = start(Limits::DEFAULT).await;
    let target = format!("http://{}", bao.addr());
    let dialer = HttpDialer::new(pools.clone());
    let limits = VaultLimits::default();

    let token = b"CANARY-9d1e\r\nX-Injected: 1";
    let receipt = install(&pools, &target, &[], token, 0).await;
    let request = running(&pools, &receipt, 1).await;
    let err = vault::read(&pools, &request, &dialer, &path("app/db"), limits)
        .await
        .expect_err("not a token");
    assert!(
        matches!(
            err,
            VaultError::Config {
                setting: "credential",
                ..
            }
        ),
        "{err:?}"
    );
    assert_eq!(err.code(), "invalid_config");
    assert!(!format!("{err} {err:?}").contains("9d1e"), "{err:?}");
    drop(request);

    let receipt = install(&pools, &target, &[("mount", "../sys")], ROOT.as_bytes(), 1).await;
    let request = running(&pools, &receipt, 2).await;
    let err = vault::read(&pools, &request, &dialer, &path("app/db"), limits)
        .await
        .expect_err("bad mount");
    assert!(
        matches!(
            err,
            VaultError::Config {
                setting: "mount",
                ..
            }
        ),
        "{err:?}"
    );
    assert_eq!(dialer.dials(), 0);
    drop(request);
    assert_clean_shutdown(&pools).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_namespace_and_mount_settings_choose_where_secrets_live() {
    let bao = start_bao().await;
    let addr = bao.addr();
    let (status, _) = bao_call(addr, "POST", "/v1/sys/namespaces/team", ROOT, None).await;
    assert_eq!(status, 200, "namespace created");
    let engine = serde_json::json!({ "type": "kv", "options": { "version": "2" } });
    let (status, _) = bao_call_in(
        addr,
        Some("team"),
        "POST",
        "/v1/sys/mounts/kv-team",
        ROOT,
        Some(engine),
    )
    .await;
    assert_eq!(status, 204, "kv-v2 mounted in the namespace");

    let pools = start(Limits::DEFAULT).await;
    let target = format!("http://{addr}");
    let settings = [("namespace", "team"), ("mount", "kv-team")];
    let receipt = install(&pools, &target, &settings, ROOT.as_bytes(), 0).await;
    let dialer = HttpDialer::new(pools.clone());
    let request = running(&pools, &receipt, 1).await;
    vault::write(
        &pools,
        &request,
        &dialer,
        &path("app/db"),
        data(&[("ns", "team")]),
        None,
        VaultLimits::default(),
    )
    .await
    .expect("write in the namespace");

    let (status, stored) = bao_call_in(
        addr,
        Some("team"),
        "GET",
        "/v1/kv-team/data/app/db",
        ROOT,
        None,
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(stored["data"]["data"]["ns"], "team");
    let (status, _) = bao_call(addr, "GET", "/v1/secret/data/app/db", ROOT, None).await;
    assert_eq!(status, 404, "nothing was written outside the namespace");
    drop(request);
    assert_clean_shutdown(&pools).await;
}
