//! Vault test set-up: a real OpenBao dev server (KV-v2 at `secret/`), its
//! own small HTTP calls for tokens and policies, and a provider `vault`
//! whose slot 0 is a Vault origin (installed and run through the shared
//! helpers of `support`).

use std::net::SocketAddr;
use std::time::Duration;

use provider_pools_actors::{
    Bytes, InstallReceipt, OriginKind, ProviderConfig, ProviderPools, RunningRequest,
};
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// The dev server's root token.
pub(crate) const ROOT: &str = "root-token";

/// A policy allowing everything the adapter does under `secret/`.
const KV_POLICY: &str = r#"
path "secret/data/*" { capabilities = ["create", "read", "update"] }
path "secret/metadata/*" { capabilities = ["read"] }
"#;

/// Starts a dev server and waits until its KV-v2 engine at `secret/` is
/// mounted (its health endpoint answers a little earlier).
pub(crate) async fn start_bao() -> provider_pools_test_peers::Peer {
    let bao = provider_pools_test_peers::Bao::start(ROOT);
    let addr = bao.addr();
    let deadline = tokio::time::Instant::now() + super::WAIT;
    while bao_call(addr, "GET", "/v1/secret/config", ROOT, None)
        .await
        .0
        != 200
    {
        assert!(
            tokio::time::Instant::now() < deadline,
            "secret/ was not mounted in time; the server's log ends:\n{}",
            bao.log_tail()
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    bao
}

/// One HTTP/1.1 exchange with the dev server on its own socket
/// (`Connection: close`): the status and the JSON body (`null` if none).
pub(crate) async fn bao_call(
    addr: SocketAddr,
    method: &str,
    path: &str,
    token: &str,
    body: Option<Value>,
) -> (u16, Value) {
    bao_call_in(addr, None, method, path, token, body).await
}

/// As [`bao_call`], in `namespace` when one is named.
pub(crate) async fn bao_call_in(
    addr: SocketAddr,
    namespace: Option<&str>,
    method: &str,
    path: &str,
    token: &str,
    body: Option<Value>,
) -> (u16, Value) {
    let body = body.map(|b| b.to_string()).unwrap_or_default();
    let namespace = namespace
        .map(|ns| format!("X-Vault-Namespace: {ns}\r\n"))
        .unwrap_or_default();
    let request = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nX-Vault-Token: {token}\r\n{namespace}\
         Content-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let exchange = async {
        let mut stream = TcpStream::connect(addr).await.expect("connect to bao");
        stream
            .write_all(request.as_bytes())
            .await
            .expect("send to bao");
        let mut answer = Vec::new();
        stream
            .read_to_end(&mut answer)
            .await
            .expect("read from bao");
        answer
    };
    let answer = super::bounded("a set-up call to bao", exchange).await;
    let text = String::from_utf8(answer).expect("utf-8 answer");
    let status = text[9..12].parse().expect("status code");
    let (head, payload) = text.split_once("\r\n\r\n").expect("head and body");
    let payload = if head
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked")
    {
        dechunk(payload)
    } else {
        payload.to_owned()
    };
    let json = serde_json::from_str(&payload).unwrap_or(Value::Null);
    (status, json)
}

fn dechunk(mut text: &str) -> String {
    let mut out = String::new();
    while let Some((size, rest)) = text.split_once("\r\n") {
        let size = usize::from_str_radix(size.trim(), 16).expect("chunk size");
        if size == 0 {
            break;
        }
        out.push_str(&rest[..size]);
        text = &rest[size + 2..];
    }
    out
}

/// Creates the `kv` policy and an orphan token holding it.
pub(crate) async fn kv_token(addr: SocketAddr) -> String {
    let (status, _) = bao_call(
        addr,
        "PUT",
        "/v1/sys/policies/acl/kv",
        ROOT,
        Some(json!({ "policy": KV_POLICY })),
    )
    .await;
    assert_eq!(status, 204, "policy written");
    let (status, body) = bao_call(
        addr,
        "POST",
        "/v1/auth/token/create",
        ROOT,
        Some(json!({ "policies": ["kv"], "no_parent": true })),
    )
    .await;
    assert_eq!(status, 200, "token created: {body}");
    body["auth"]["client_token"]
        .as_str()
        .expect("client token")
        .to_owned()
}

/// Revokes `token` with the root token.
pub(crate) async fn revoke(addr: SocketAddr, token: &str) {
    let (status, body) = bao_call(
        addr,
        "POST",
        "/v1/auth/token/revoke",
        ROOT,
        Some(json!({ "token": token })),
    )
    .await;
    assert_eq!(status, 204, "token revoked: {body}");
}

/// Provider `vault`'s configuration: slot 0 at `target`, public `settings`.
pub(crate) fn config(target: &str, settings: &[(&str, &str)]) -> ProviderConfig {
    super::provider_config("vault", OriginKind::Vault, target, settings)
}

/// Installs provider `vault` at `expected` + 1 with `token`.
pub(crate) async fn install(
    pools: &ProviderPools,
    target: &str,
    settings: &[(&str, &str)],
    token: &[u8],
    expected: u64,
) -> InstallReceipt {
    let config = config(target, settings);
    super::install_provider(
        pools,
        "vault",
        "https://vault.example",
        config,
        token,
        expected,
    )
    .await
}

/// Admits, dispatches and starts a request of tenant `t` for slot 0.
pub(crate) async fn running(
    pools: &ProviderPools,
    receipt: &InstallReceipt,
    session: u64,
) -> RunningRequest {
    super::running_as(pools, receipt, "t", session, OriginKind::Vault).await
}

/// As [`running`], with the request's I/O deadline at `deadline`.
pub(crate) async fn running_until(
    pools: &ProviderPools,
    receipt: &InstallReceipt,
    session: u64,
    deadline: tokio::time::Instant,
) -> RunningRequest {
    let plan = super::plan_until("t", session, deadline);
    super::running_plan(pools, receipt, plan, OriginKind::Vault, Bytes::new()).await
}

/// A JSON object from `pairs`.
pub(crate) fn data(pairs: &[(&str, &str)]) -> serde_json::Map<String, Value> {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), Value::from(*v)))
        .collect()
}
