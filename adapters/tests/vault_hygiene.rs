//! Vault secret hygiene, end to end against a real OpenBao dev server:
//! rustify and vaultrs instrument their calls with `tracing`, so every
//! event and span of the process is captured while the adapter writes and
//! reads canary data, encrypts and decrypts a canary plaintext, and fails
//! with a canary token (403), a check-and-set conflict, a missing path and
//! a wrong transit key. Neither the token nor the secret bytes appear in a
//! captured event, a `Debug` or an error.

mod support;

use support::capture::Capture;

use std::fmt::Write as _;

use provider_pools_actors::Limits;
use provider_pools_adapters::http_origin::HttpDialer;
use provider_pools_adapters::vault::{self, SecretPath, TransitKey, VaultLimits};
use serde_json::json;
use support::vault::{bao_call, data, install, running, start_bao, ROOT};
use support::{deadline, start};

/// The token of the denied calls.
const TOKEN: &str = "s.CANARY-7e1c-vault-token";
/// Secret data and plaintext.
const SECRET: &str = "CANARY-b04d-secret-value";
const MARKERS: [&str; 3] = ["CANARY", "7e1c", "b04d"];

fn assert_clean(what: &str, text: &str) {
    for marker in MARKERS {
        assert!(
            !text.contains(marker),
            "{what} shows secret bytes ({marker}): {text}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_token_or_secret_byte_reaches_a_log_a_debug_or_an_error() {
    let capture = Capture::default();
    tracing::subscriber::set_global_default(capture.clone()).expect("the only subscriber");
    let mut shown = String::new();
    let mut show = |what: &str, text: String| {
        let _ = writeln!(shown, "{what}: {text}");
    };

    let bao = start_bao().await;
    let (status, _) = bao_call(
        bao.addr(),
        "POST",
        "/v1/sys/mounts/transit",
        ROOT,
        Some(json!({ "type": "transit" })),
    )
    .await;
    assert_eq!(status, 204, "transit enabled");
    let pools = start(Limits::DEFAULT).await;
    let target = format!("http://{}", bao.addr());
    let limits = VaultLimits::default();
    let dialer = HttpDialer::new(pools.clone());
    let path = SecretPath::parse("app/db").expect("path");
    let key = TransitKey::parse("app-key").expect("key");

    // Served with the root token: canary data and plaintext.
    let root = install(&pools, &target, &[], ROOT.as_bytes(), 0).await;
    let request = running(&pools, &root, 1).await;
    let written = vault::write(
        &pools,
        &request,
        &dialer,
        &path,
        data(&[("v", SECRET)]),
        None,
        limits,
    )
    .await
    .expect("write");
    show("written", format!("{written:?}"));
    let read = vault::read(&pools, &request, &dialer, &path, limits)
        .await
        .expect("read");
    assert!(std::str::from_utf8(read.data.bytes())
        .expect("utf-8")
        .contains(SECRET));
    show("read", format!("{read:?}"));
    let conflict = vault::write(
        &pools,
        &request,
        &dialer,
        &path,
        data(&[("v", SECRET)]),
        Some(7),
        limits,
    )
    .await
    .expect_err("conflict");
    show("conflict", format!("{conflict} {conflict:?}"));
    let missing = vault::read(
        &pools,
        &request,
        &dialer,
        &SecretPath::parse("app/none").expect("path"),
        limits,
    )
    .await
    .expect_err("missing");
    show("missing", format!("{missing} {missing:?}"));
    let ciphertext = vault::encrypt(&pools, &request, &dialer, &key, SECRET.as_bytes(), limits)
        .await
        .expect("encrypt");
    let plain = vault::decrypt(&pools, &request, &dialer, &key, &ciphertext, limits)
        .await
        .expect("decrypt");
    assert_eq!(plain.bytes().as_ref(), SECRET.as_bytes());
    show("plaintext", format!("{plain:?}"));
    let other = TransitKey::parse("other").expect("key");
    let wrong = vault::decrypt(&pools, &request, &dialer, &other, &ciphertext, limits)
        .await
        .expect_err("no such key");
    show("wrong key", format!("{wrong} {wrong:?}"));
    drop((read, plain, request));

    // Denied with the canary token.
    let canary = install(&pools, &target, &[], TOKEN.as_bytes(), 1).await;
    let request = running(&pools, &canary, 2).await;
    let denied = vault::read(&pools, &request, &dialer, &path, limits)
        .await
        .expect_err("403");
    show("denied", format!("{denied} {denied:?}"));
    let denied = vault::encrypt(&pools, &request, &dialer, &key, SECRET.as_bytes(), limits)
        .await
        .expect_err("403");
    show("denied encrypt", format!("{denied} {denied:?}"));
    show("request", format!("{request:?}"));
    show("dialer", format!("{dialer:?}"));
    drop(request);

    let report = pools.shutdown(deadline()).await;
    show("report", format!("{report:?}"));
    assert!(report.is_clean(), "{report:?}");

    assert_clean("a Debug or an error", &shown);
    let captured = capture.text();
    // The capture saw rustify's own spans: the check is not vacuous.
    assert!(
        captured.contains("span exec"),
        "rustify's spans were captured"
    );
    assert_clean("a tracing event or span", &captured);
}
