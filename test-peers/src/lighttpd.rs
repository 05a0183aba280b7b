//! [`Lighttpd`]: Debian's lighttpd as a second real HTTP/1.1 origin
//! family, with a generated configuration, a short keep-alive idle time
//! and an access log that witnesses every request and its connection.
//!
//! Invariants:
//! - The process runs in the foreground (`-D`) with every path under the
//!   peer's temporary directory and its modules from the unpacked package
//!   (`-m`); dropping the [`LighttpdPeer`] kills it.
//! - Every request the tests send is logged as one line of `%{remote}p %k
//!   %m %U %q %s %H` (the client's port, which names the connection; the
//!   request's index on its connection from 0; method, path, query
//!   string, status, protocol); the readiness probe's path (`/ready`) is left out
//!   of [`LighttpdPeer::access_log`]. lighttpd writes its log about once a
//!   second: [`LighttpdPeer::wait_for_log`] waits for it.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use crate::peer::{binary, http_status, Peer, PeerCommand};

/// How to start a lighttpd origin.
#[derive(Debug, Clone)]
pub struct Lighttpd {
    keep_alive_idle: Duration,
    keep_alive_requests: u32,
}

impl Default for Lighttpd {
    /// lighttpd's own keep-alive defaults: 5 s idle, 1,000 requests.
    fn default() -> Self {
        Self {
            keep_alive_idle: Duration::from_secs(5),
            keep_alive_requests: 1000,
        }
    }
}

impl Lighttpd {
    /// The default configuration.
    pub fn new() -> Self {
        Self::default()
    }

    /// How long lighttpd keeps an idle keep-alive connection before it
    /// closes it (`server.max-keep-alive-idle`, whole seconds, at least 1).
    pub fn keep_alive_idle(mut self, idle: Duration) -> Self {
        self.keep_alive_idle = idle;
        self
    }

    /// How many requests one connection serves before lighttpd closes it
    /// (`server.max-keep-alive-requests`).
    pub fn keep_alive_requests(mut self, requests: u32) -> Self {
        self.keep_alive_requests = requests;
        self
    }

    /// Starts lighttpd on a free loopback port and waits until it answers.
    ///
    /// # Panics
    ///
    /// When lighttpd is not installed (`scripts/peers`) or never answers.
    pub fn start(self) -> LighttpdPeer {
        let peer = PeerCommand::new("lighttpd")
            .args(["-D", "-f", "{dir}/lighttpd.conf", "-m"])
            .args([modules_dir().display().to_string()])
            .template("lighttpd.conf", &self.config())
            .file("html/ready", b"ready\n".to_vec())
            .file("html/ok", b"hello\n".to_vec())
            .start(|addr| http_status(addr, "/ready") == Some(200));
        LighttpdPeer { peer }
    }

    fn config(&self) -> String {
        format!(
            "server.document-root = \"{{dir}}/html\"
server.bind = \"127.0.0.1\"
server.port = {{port}}
server.errorlog = \"{{dir}}/error.log\"
server.max-keep-alive-idle = {}
server.max-keep-alive-requests = {}
server.modules = (\"mod_accesslog\")
accesslog.filename = \"{{dir}}/access.log\"
accesslog.format = \"%{{remote}}p %k %m %U %q %s %H\"
",
            self.keep_alive_idle.as_secs().max(1),
            self.keep_alive_requests,
        )
    }
}

/// The unpacked package's module directory, beside its binary.
fn modules_dir() -> PathBuf {
    let binary = binary("lighttpd");
    let usr = binary
        .parent()
        .and_then(|sbin| sbin.parent())
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/usr"));
    usr.join("lib/lighttpd")
}

/// A running lighttpd; killed when dropped.
#[derive(Debug)]
pub struct LighttpdPeer {
    peer: Peer,
}

/// One line of lighttpd's access log: one request it served.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LighttpdEntry {
    /// The client's port: the connection.
    pub client_port: u16,
    /// The request's index on its connection, from 0.
    pub request: u64,
    /// The method.
    pub method: String,
    /// The path.
    pub uri: String,
    /// The query string, without `?` (empty when there is none).
    pub query: String,
    /// The status sent.
    pub status: u16,
    /// The protocol it came in on.
    pub protocol: String,
}

impl LighttpdPeer {
    /// Its loopback address.
    pub fn addr(&self) -> SocketAddr {
        self.peer.addr()
    }

    /// `http://127.0.0.1:PORT`, the origin to approve.
    pub fn origin(&self) -> String {
        format!("http://{}", self.peer.addr())
    }

    /// The process handle (its directory, its log, `kill`).
    pub fn peer(&mut self) -> &mut Peer {
        &mut self.peer
    }

    /// The process handle, owned.
    pub fn into_peer(self) -> Peer {
        self.peer
    }

    /// Every request logged so far but the readiness probe's, in the order
    /// lighttpd finished them.
    pub fn access_log(&self) -> Vec<LighttpdEntry> {
        let text = std::fs::read_to_string(self.peer.dir().join("access.log")).unwrap_or_default();
        text.lines()
            .filter_map(parse_entry)
            .filter(|entry| entry.uri != "/ready")
            .collect()
    }

    /// The access log once it has at least `count` entries (lighttpd
    /// writes it about once a second). Polls every 50 ms, at most
    /// `within`.
    ///
    /// # Panics
    ///
    /// When fewer than `count` entries were logged within `within`, with
    /// what was logged.
    pub fn wait_for_log(&self, count: usize, within: Duration) -> Vec<LighttpdEntry> {
        let until = std::time::Instant::now() + within;
        loop {
            let log = self.access_log();
            if log.len() >= count {
                return log;
            }
            assert!(
                std::time::Instant::now() < until,
                "lighttpd logged {} of {count} requests within {within:?}: {log:?}",
                log.len()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

fn parse_entry(line: &str) -> Option<LighttpdEntry> {
    let mut fields = line.split(' ');
    Some(LighttpdEntry {
        client_port: fields.next()?.parse().ok()?,
        request: fields.next()?.parse().ok()?,
        method: fields.next()?.to_owned(),
        uri: fields.next()?.to_owned(),
        query: fields.next()?.to_owned(),
        status: fields.next()?.parse().ok()?,
        protocol: fields.next()?.to_owned(),
    })
}
