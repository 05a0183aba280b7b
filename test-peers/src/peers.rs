//! The peers the adapters' tests use, each with its start line and its
//! readiness probe.

use std::sync::atomic::{AtomicU64, Ordering};

use crate::peer::{first_line, http_ok_body, http_status, Peer, PeerCommand};

/// A moto server (S3, IAM and the other AWS APIs moto emulates).
#[derive(Debug)]
pub struct Moto;

impl Moto {
    /// Starts `moto_server` without authentication: any access key and
    /// secret are accepted.
    pub fn start() -> Peer {
        Self::command().start(moto_ready)
    }

    /// Starts `moto_server` with IAM authentication on: the first
    /// `unauthenticated_calls` requests are let through (to create IAM
    /// users and their access keys), every later request must be signed
    /// with a key moto knows, and a bad signature is refused.
    pub fn start_authenticated(unauthenticated_calls: u32) -> Peer {
        Self::command()
            .env(
                "INITIAL_NO_AUTH_ACTION_COUNT",
                &unauthenticated_calls.to_string(),
            )
            .start(moto_ready)
    }

    fn command() -> PeerCommand {
        PeerCommand::new("moto_server").args(["-H", "127.0.0.1", "-p", "{port}"])
    }
}

fn moto_ready(addr: std::net::SocketAddr) -> bool {
    // A TCP accept would do, but moto's own API also proves Flask is up.
    // It does not count against INITIAL_NO_AUTH_ACTION_COUNT.
    http_status(addr, "/moto-api/").is_some()
}

/// An OpenBao dev server (Vault's open fork): in memory, unsealed, with a
/// KV-v2 engine at `secret/`.
#[derive(Debug)]
pub struct Bao;

impl Bao {
    /// Starts `bao server -dev` whose root token is `root_token`.
    pub fn start(root_token: &str) -> Peer {
        PeerCommand::new("bao")
            .args([
                "server",
                "-dev",
                "-dev-listen-address=127.0.0.1:{port}",
                "-dev-no-store-token",
            ])
            .args([format!("-dev-root-token-id={root_token}")])
            .env("HOME", "{dir}")
            .start(|addr| http_status(addr, "/v1/sys/health") == Some(200))
    }
}

/// A nats-server with JetStream, storing in the peer's temporary directory.
#[derive(Debug)]
pub struct Nats;

impl Nats {
    /// Starts `nats-server -js` on loopback.
    pub fn start() -> Peer {
        Self::start_with(&[])
    }

    /// Starts `nats-server -js` on loopback accepting only clients that
    /// present `token` (`--auth`).
    pub fn start_with_token(token: &str) -> Peer {
        Self::start_with(&["--auth".to_owned(), token.to_owned()])
    }

    /// Starts `nats-server -js` on loopback with the configuration file
    /// `config` (for users, permissions or TLS); the listen address, port
    /// and store directory given on the command line take precedence.
    pub fn start_with_config(config: &std::path::Path) -> Peer {
        Self::start_with(&["-c".to_owned(), config.display().to_string()])
    }

    /// Starts it with `extra` arguments under a name no other peer of this
    /// process has, and is ready only when the server answering on the
    /// port greets with that name: a probe that reached another process
    /// on a reused port does not count.
    fn start_with(extra: &[String]) -> Peer {
        static STARTED: AtomicU64 = AtomicU64::new(0);
        let name = format!(
            "pp-test-{}-{}",
            std::process::id(),
            STARTED.fetch_add(1, Ordering::Relaxed)
        );
        PeerCommand::new("nats-server")
            .args([
                "-a",
                "127.0.0.1",
                "-p",
                "{port}",
                "-js",
                "-sd",
                "{dir}/js",
                "--server_name",
                &name,
            ])
            .args(extra.iter().cloned())
            .start(|addr| nats_greets_as(addr, &name))
    }
}

/// True when the server on `addr` sends its `INFO` greeting within two
/// seconds and the greeting carries `"server_name":"<name>"`.
fn nats_greets_as(addr: std::net::SocketAddr, name: &str) -> bool {
    first_line(addr).is_some_and(|line| {
        line.starts_with("INFO ") && line.contains(&format!(r#""server_name":"{name}""#))
    })
}

/// What every etcd member is started with, single or in a cluster: its
/// data in the peer's temporary directory, its client URL on the peer's
/// port (`{port}`), its peer URL on the second port (`{port2}`), all on
/// loopback.
pub(crate) const ETCD_MEMBER_ARGS: [&str; 10] = [
    "--data-dir",
    "{dir}/data",
    "--listen-client-urls",
    "http://127.0.0.1:{port}",
    "--advertise-client-urls",
    "http://127.0.0.1:{port}",
    "--listen-peer-urls",
    "http://127.0.0.1:{port2}",
    "--initial-advertise-peer-urls",
    "http://127.0.0.1:{port2}",
];

/// A single-member etcd (Debian's etcd-server 3.4), its client URL on the
/// peer's port and its peer URL on a second free port, storing in the
/// peer's temporary directory.
#[derive(Debug)]
pub struct Etcd;

impl Etcd {
    /// Starts `etcd` on loopback and waits until `GET /health` answers
    /// `{"health":"true"}`: the member has elected itself leader and
    /// serves the v3 JSON gateway at `http://{addr}/v3/`.
    pub fn start() -> Peer {
        PeerCommand::new("etcd")
            .args(["--name", "default"])
            .args(ETCD_MEMBER_ARGS)
            .args(["--initial-cluster", "default=http://127.0.0.1:{port2}"])
            .start(etcd_healthy)
    }
}

fn etcd_healthy(addr: std::net::SocketAddr) -> bool {
    http_ok_body(addr, "/health")
        .is_some_and(|body| body.split_whitespace().collect::<String>() == r#"{"health":"true"}"#)
}
