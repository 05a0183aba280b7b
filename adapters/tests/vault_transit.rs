//! Transit encrypt and decrypt against a real OpenBao dev server, the
//! engine enabled through `sys/mounts` in set-up: a round trip of binary
//! plaintext on one socket, the `transit_mount` setting, a key that cannot
//! decrypt, and the plaintext charged until dropped.

mod support;

use std::net::SocketAddr;

use provider_pools_actors::Limits;
use provider_pools_adapters::http_origin::HttpDialer;
use provider_pools_adapters::vault::{self, TransitKey, VaultError, VaultLimits};
use serde_json::json;
use support::relay::Relay;
use support::vault::{bao_call, install, running, start_bao, ROOT};
use support::{deadline, eventually, start};

/// Enables the transit engine at `mount` and creates `keys` in it.
async fn enable_transit(addr: SocketAddr, mount: &str, keys: &[&str]) {
    let (status, body) = bao_call(
        addr,
        "POST",
        &format!("/v1/sys/mounts/{mount}"),
        ROOT,
        Some(json!({ "type": "transit" })),
    )
    .await;
    assert_eq!(status, 204, "transit enabled: {body}");
    for key in keys {
        let (status, body) =
            bao_call(addr, "POST", &format!("/v1/{mount}/keys/{key}"), ROOT, None).await;
        assert!(
            status == 200 || status == 204,
            "key {key} created: {status} {body}"
        );
    }
}

fn key(name: &str) -> TransitKey {
    TransitKey::parse(name).expect("key name")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn encrypts_and_decrypts_binary_plaintext_on_one_socket() {
    let bao = start_bao().await;
    enable_transit(bao.addr(), "transit", &["app-key", "other-key"]).await;
    let relay = Relay::start(bao.addr()).await;
    let pools = start(Limits::DEFAULT).await;
    let receipt = install(&pools, &relay.target, &[], ROOT.as_bytes(), 0).await;
    let dialer = HttpDialer::new(pools.clone());
    let limits = VaultLimits::default();
    let request = running(&pools, &receipt, 1).await;
    let plaintext: Vec<u8> = (0..=255u8).chain(*b"CANARY-plaintext").collect();

    let ciphertext = vault::encrypt(
        &pools,
        &request,
        &dialer,
        &key("app-key"),
        &plaintext,
        limits,
    )
    .await
    .expect("encrypt");
    assert!(ciphertext.starts_with("vault:v1:"), "{ciphertext}");
    assert!(!ciphertext.contains("CANARY"));
    let before = pools.snapshot();
    let decrypted = vault::decrypt(
        &pools,
        &request,
        &dialer,
        &key("app-key"),
        &ciphertext,
        limits,
    )
    .await
    .expect("decrypt");
    assert_eq!(decrypted.bytes().as_ref(), plaintext.as_slice());
    assert!(!format!("{decrypted:?}").contains("CANARY"));
    // The plaintext is charged while it is held.
    let held = pools.snapshot();
    assert!(
        held.metadata_bytes as usize >= before.metadata_bytes as usize + plaintext.len(),
        "{before:?} -> {held:?}"
    );
    drop(decrypted);

    // An empty plaintext round-trips too.
    let empty = vault::encrypt(&pools, &request, &dialer, &key("app-key"), b"", limits)
        .await
        .expect("encrypt nothing");
    let back = vault::decrypt(&pools, &request, &dialer, &key("app-key"), &empty, limits)
        .await
        .expect("decrypt nothing");
    assert!(back.bytes().is_empty());
    drop(back);

    // Another key cannot decrypt it: Vault's 400, an answer.
    let err = vault::decrypt(
        &pools,
        &request,
        &dialer,
        &key("other-key"),
        &ciphertext,
        limits,
    )
    .await
    .expect_err("wrong key");
    assert!(
        matches!(err, VaultError::Rejected { status: 400, .. }),
        "{err:?}"
    );
    assert!(!format!("{err} {err:?}").contains("CANARY"));

    assert_eq!(dialer.dials(), 1);
    assert_eq!(relay.accepted(), 1);
    eventually("the connection is parked", || {
        let c = pools.snapshot().connections;
        (c.active, c.idle) == (0, 1)
    })
    .await;
    drop(request);
    let report = pools.shutdown(deadline()).await;
    assert!(report.is_clean(), "shutdown leaves {report:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_transit_mount_setting_chooses_the_engine() {
    let bao = start_bao().await;
    enable_transit(bao.addr(), "crypt", &["k"]).await;
    let pools = start(Limits::DEFAULT).await;
    let target = format!("http://{}", bao.addr());
    let moved = install(
        &pools,
        &target,
        &[("transit_mount", "crypt")],
        ROOT.as_bytes(),
        0,
    )
    .await;
    let dialer = HttpDialer::new(pools.clone());
    let limits = VaultLimits::default();
    let request = running(&pools, &moved, 1).await;
    let ciphertext = vault::encrypt(&pools, &request, &dialer, &key("k"), b"hello", limits)
        .await
        .expect("encrypt under crypt/");
    let plain = vault::decrypt(&pools, &request, &dialer, &key("k"), &ciphertext, limits)
        .await
        .expect("decrypt under crypt/");
    assert_eq!(plain.bytes().as_ref(), b"hello");
    // The server decrypts it under crypt/ too.
    let (status, body) = bao_call(
        bao.addr(),
        "POST",
        "/v1/crypt/decrypt/k",
        ROOT,
        Some(json!({ "ciphertext": ciphertext })),
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(body["data"]["plaintext"], "aGVsbG8=");
    drop((plain, request));
    let report = pools.shutdown(deadline()).await;
    assert!(report.is_clean(), "shutdown leaves {report:?}");
}
