//! S3 test set-up against a real moto server: provider `store` whose slot
//! 0 is an S3 endpoint, running requests on that slot (through the shared
//! `support` helpers), and raw set-up calls to moto (IAM's Query API and
//! bucket creation, unsigned, inside moto's unauthenticated window). The
//! loopback relay the tests put in front of moto is `support::relay`.

#![allow(dead_code)]

use std::net::SocketAddr;
use std::sync::Arc;

use provider_pools_actors::{
    Bytes, InstallReceipt, OriginKind, ProviderConfig, ProviderPools, RunningRequest,
};
use provider_pools_adapters::http_origin::HttpDialer;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::support::{self, bounded};

/// The bucket every test provider serves.
pub(crate) const BUCKET: &str = "objects";

/// Provider `store`'s configuration: slot 0 is the S3 endpoint `target`,
/// serving [`BUCKET`].
pub(crate) fn config(target: &str) -> ProviderConfig {
    config_for(target, BUCKET)
}

/// Provider `store`'s configuration serving `bucket`.
pub(crate) fn config_for(target: &str, bucket: &str) -> ProviderConfig {
    let settings = [("region", "us-east-1"), ("bucket", bucket)];
    support::provider_config("store", OriginKind::S3, target, &settings)
}

/// Installs (`expected` 0) or rotates (`expected` the current epoch)
/// provider `store` with `credential`.
pub(crate) async fn install(
    pools: &ProviderPools,
    target: &str,
    expected: u64,
    credential: &[u8],
) -> InstallReceipt {
    install_config(pools, config(target), expected, credential).await
}

/// Installs or rotates provider `store` with `config`.
pub(crate) async fn install_config(
    pools: &ProviderPools,
    config: ProviderConfig,
    expected: u64,
    credential: &[u8],
) -> InstallReceipt {
    let authority = "https://store.example";
    support::install_provider(pools, "store", authority, config, credential, expected).await
}

/// The pools' HTTP dialer, shared as the S3 operations take it.
pub(crate) fn dialer(pools: &ProviderPools) -> Arc<HttpDialer> {
    Arc::new(HttpDialer::new(pools.clone()))
}

/// Admits, dispatches and starts a request of tenant `t` for the S3 slot,
/// with `input` staged.
pub(crate) async fn running_with(
    pools: &ProviderPools,
    receipt: &InstallReceipt,
    session: u64,
    input: Bytes,
) -> RunningRequest {
    let plan = support::plan("t", session);
    support::running_plan(pools, receipt, plan, OriginKind::S3, input).await
}

/// A running request for the S3 slot with no input.
pub(crate) async fn running(
    pools: &ProviderPools,
    receipt: &InstallReceipt,
    session: u64,
) -> RunningRequest {
    running_with(pools, receipt, session, Bytes::new()).await
}

/// `http://ADDR`, the endpoint origin of a peer.
pub(crate) fn endpoint(addr: SocketAddr) -> String {
    format!("http://{addr}")
}

/// One raw HTTP/1.1 exchange (`Connection: close`): the status and body.
pub(crate) async fn raw(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> (u16, String) {
    let mut stream = bounded("connect to moto", TcpStream::connect(addr))
        .await
        .expect("moto accepts");
    let mut request = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nContent-Length: {}\r\n",
        body.len()
    );
    for (name, value) in headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    request.push_str("\r\n");
    request.push_str(body);
    stream
        .write_all(request.as_bytes())
        .await
        .expect("request sent");
    let mut answer = Vec::new();
    bounded("moto's answer", stream.read_to_end(&mut answer))
        .await
        .expect("answer read");
    let answer = String::from_utf8_lossy(&answer).into_owned();
    let status = answer
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no status line in {answer:?}"));
    let body = answer
        .split_once("\r\n\r\n")
        .map(|(_, body)| body.to_owned())
        .unwrap_or_default();
    (status, body)
}

/// An unsigned `Authorization` header naming `service`: moto routes by
/// it, and checks nothing inside its unauthenticated window.
fn unsigned(service: &str) -> String {
    format!(
        "AWS4-HMAC-SHA256 Credential=AKIAUNSIGNED/20260101/us-east-1/{service}/aws4_request, \
         SignedHeaders=host, Signature=00"
    )
}

/// Creates [`BUCKET`] with one unsigned request.
pub(crate) async fn create_bucket(addr: SocketAddr) {
    let auth = unsigned("s3");
    let (status, body) = raw(
        addr,
        "PUT",
        &format!("/{BUCKET}"),
        &[("Authorization", &auth)],
        "",
    )
    .await;
    assert_eq!(status, 200, "bucket created: {body}");
}

/// One IAM Query API action, unsigned; panics unless moto answers 200.
pub(crate) async fn iam(addr: SocketAddr, params: &[(&str, &str)]) -> String {
    let auth = unsigned("iam");
    let mut form = String::from("Version=2010-05-08");
    for (name, value) in params {
        form.push_str(&format!("&{name}={}", encode(value)));
    }
    let headers = [
        ("Authorization", auth.as_str()),
        ("Content-Type", "application/x-www-form-urlencoded"),
    ];
    let (status, body) = raw(addr, "POST", "/", &headers, &form).await;
    assert_eq!(status, 200, "iam {params:?}: {body}");
    body
}

/// Lets the next `count` requests through moto's authentication
/// (moto's `/moto-api/reset-auth`; moto's own API is never authenticated).
pub(crate) async fn open_window(addr: SocketAddr, count: u32) {
    let (status, body) = raw(
        addr,
        "POST",
        "/moto-api/reset-auth",
        &[],
        &count.to_string(),
    )
    .await;
    assert_eq!(status, 200, "reset-auth: {body}");
}

/// An IAM user with an inline policy allowing `actions` on `resource`
/// (none when `actions` is empty), and one access key: returns
/// `ACCESS_KEY_ID:SECRET` as the adapter's credential. Takes 2 or 3
/// unauthenticated requests.
pub(crate) async fn user(addr: SocketAddr, name: &str, actions: &str, resource: &str) -> String {
    iam(addr, &[("Action", "CreateUser"), ("UserName", name)]).await;
    if !actions.is_empty() {
        let policy = format!(
            r#"{{"Version":"2012-10-17","Statement":[{{"Effect":"Allow","Action":{actions},"Resource":"{resource}"}}]}}"#
        );
        iam(
            addr,
            &[
                ("Action", "PutUserPolicy"),
                ("UserName", name),
                ("PolicyName", "access"),
                ("PolicyDocument", &policy),
            ],
        )
        .await;
    }
    access_key(addr, name).await
}

/// A new access key of `name`, as `ACCESS_KEY_ID:SECRET`.
pub(crate) async fn access_key(addr: SocketAddr, name: &str) -> String {
    let xml = iam(addr, &[("Action", "CreateAccessKey"), ("UserName", name)]).await;
    format!(
        "{}:{}",
        element(&xml, "AccessKeyId"),
        element(&xml, "SecretAccessKey")
    )
}

/// The text of the first `<name>` element of `xml`.
pub(crate) fn element<'a>(xml: &'a str, name: &str) -> &'a str {
    let open = format!("<{name}>");
    let start = xml
        .find(&open)
        .unwrap_or_else(|| panic!("no <{name}> in {xml}"))
        + open.len();
    let end = xml[start..]
        .find(&format!("</{name}>"))
        .unwrap_or_else(|| panic!("no </{name}> in {xml}"));
    &xml[start..start + end]
}

/// Percent-encodes a form value.
fn encode(value: &str) -> String {
    value
        .bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}
