//! [`Nginx`]: Debian's nginx as a real HTTP/1.1 origin, with a generated
//! configuration and an access log that witnesses connection reuse.
//!
//! Invariants:
//! - The process runs in the foreground in one process (`daemon off`,
//!   `master_process off`) with every path under the peer's temporary
//!   directory; dropping the [`NginxPeer`] kills it.
//! - Every request the tests send is logged as one line of
//!   `$connection $connection_requests $request_method $uri $status
//!   $body_bytes_sent $server_protocol`; the readiness probe (`/ready`) is
//!   not logged.

use std::fmt::Write as _;
use std::net::SocketAddr;
use std::time::Duration;

use crate::peer::{http_status, Peer, PeerCommand};

/// How to start an nginx origin.
#[derive(Debug, Clone)]
pub struct Nginx {
    keepalive_timeout: Duration,
    keepalive_requests: u32,
    bodies: Vec<usize>,
    /// A certificate chain and key (PEM) for an HTTP/2 listener over TLS.
    http2_tls: Option<(Vec<u8>, Vec<u8>)>,
    /// Bytes per second each response is sent at (`limit_rate`), if set.
    limit_rate: Option<u32>,
    /// Connections nginx's one worker holds at once (`worker_connections`,
    /// the listening sockets included).
    worker_connections: u32,
}

impl Default for Nginx {
    /// nginx's own keep-alive defaults (75 s, 1,000 requests), no bodies.
    fn default() -> Self {
        Self {
            keepalive_timeout: Duration::from_secs(75),
            keepalive_requests: 1000,
            bodies: Vec::new(),
            http2_tls: None,
            limit_rate: None,
            worker_connections: 1024,
        }
    }
}

impl Nginx {
    /// The default configuration.
    pub fn new() -> Self {
        Self::default()
    }

    /// How many connections nginx holds at once (`worker_connections`,
    /// 1,024 by default, listening sockets included); nginx also asks for
    /// twice as many open files (`worker_rlimit_nofile`), which the process
    /// starting it must allow.
    pub fn worker_connections(mut self, connections: u32) -> Self {
        self.worker_connections = connections;
        self
    }

    /// How long nginx keeps an idle keep-alive connection before it closes
    /// it (`keepalive_timeout`, whole milliseconds).
    pub fn keepalive_timeout(mut self, timeout: Duration) -> Self {
        self.keepalive_timeout = timeout;
        self
    }

    /// How many requests one connection serves before nginx closes it
    /// (`keepalive_requests`).
    pub fn keepalive_requests(mut self, requests: u32) -> Self {
        self.keepalive_requests = requests;
        self
    }

    /// Serves a static body of `len` bytes (`b'x'` repeated) at
    /// `/bytes/{len}` ([`NginxPeer::body_path`]).
    pub fn body(mut self, len: usize) -> Self {
        self.bodies.push(len);
        self
    }

    /// Also listens on a second port for HTTP/2 over TLS (`listen … ssl
    /// http2`, ALPN `h2`), with this certificate chain and private key
    /// (PEM); [`NginxPeer::https_origin`] names it. The same locations
    /// and access log serve both listeners.
    pub fn http2_tls(mut self, chain_pem: Vec<u8>, key_pem: Vec<u8>) -> Self {
        self.http2_tls = Some((chain_pem, key_pem));
        self
    }

    /// Sends every response at `bytes_per_second` (`limit_rate`), so that
    /// responses of a few KiB overlap in time.
    pub fn limit_rate(mut self, bytes_per_second: u32) -> Self {
        self.limit_rate = Some(bytes_per_second);
        self
    }

    /// Starts nginx on a free loopback port and waits until it answers.
    ///
    /// # Panics
    ///
    /// When nginx is not installed (`scripts/peers`) or never answers.
    pub fn start(self) -> NginxPeer {
        let mut command = PeerCommand::new("nginx")
            .args(["-p", "{dir}/", "-c", "nginx.conf", "-e", "error.log"])
            .template("nginx.conf", &self.config())
            .file("html/ready", b"ready\n".to_vec())
            // nginx creates its temporary directories, not their parent.
            .file("tmp/.keep", Vec::new());
        for &len in &self.bodies {
            command = command.file(&format!("html/bytes/{len}"), vec![b'x'; len]);
        }
        if let Some((chain, key)) = &self.http2_tls {
            command = command
                .file("tls/chain.pem", chain.clone())
                .file("tls/key.pem", key.clone());
        }
        let peer = command.start(|addr| http_status(addr, "/ready") == Some(200));
        NginxPeer { peer }
    }

    fn config(&self) -> String {
        let mut config = String::new();
        let _ = write!(
            config,
            "daemon off;
master_process off;
worker_processes 1;
pid nginx.pid;
error_log error.log info;
worker_rlimit_nofile {};
events {{ worker_connections {}; }}
http {{
  client_body_temp_path tmp/body;
  proxy_temp_path tmp/proxy;
  fastcgi_temp_path tmp/fastcgi;
  uwsgi_temp_path tmp/uwsgi;
  scgi_temp_path tmp/scgi;
  default_type application/octet-stream;
  log_format witness '$connection $connection_requests $request_method $uri $status $body_bytes_sent $server_protocol';
  keepalive_timeout {}ms;
  keepalive_requests {};
{}  server {{
    listen 127.0.0.1:{{port}};
{}    root html;
    access_log access.log witness;
    location = /ready {{ access_log off; }}
    location / {{ }}
  }}
}}
",
            u64::from(self.worker_connections) * 2,
            self.worker_connections,
            self.keepalive_timeout.as_millis(),
            self.keepalive_requests,
            self.limit_rate
                .map(|rate| format!("  limit_rate {rate};\n"))
                .unwrap_or_default(),
            if self.http2_tls.is_some() {
                "    listen 127.0.0.1:{port2} ssl http2;\n    \
                 ssl_certificate tls/chain.pem;\n    \
                 ssl_certificate_key tls/key.pem;\n"
            } else {
                ""
            },
        );
        config
    }
}

/// A running nginx; killed when dropped.
#[derive(Debug)]
pub struct NginxPeer {
    peer: Peer,
}

/// One line of the access log: one request nginx served.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AccessEntry {
    /// nginx's connection serial number (`$connection`).
    pub connection: u64,
    /// The request's number on its connection, from 1
    /// (`$connection_requests`).
    pub request: u64,
    /// The method.
    pub method: String,
    /// The path.
    pub uri: String,
    /// The status sent.
    pub status: u16,
    /// Body bytes sent.
    pub body_bytes: u64,
    /// The protocol it came in on (`$server_protocol`): `HTTP/1.1`,
    /// `HTTP/2.0`.
    pub protocol: String,
}

impl NginxPeer {
    /// Its loopback address.
    pub fn addr(&self) -> SocketAddr {
        self.peer.addr()
    }

    /// `http://127.0.0.1:PORT`, the origin to approve.
    pub fn origin(&self) -> String {
        format!("http://{}", self.peer.addr())
    }

    /// `https://127.0.0.1:PORT2`, the HTTP/2 over TLS listener's origin
    /// (see [`Nginx::http2_tls`]).
    pub fn https_origin(&self) -> String {
        format!("https://127.0.0.1:{}", self.peer.port2())
    }

    /// The path serving a body of `len` bytes (see [`Nginx::body`]).
    pub fn body_path(len: usize) -> String {
        format!("/bytes/{len}")
    }

    /// The process handle (its directory, its log, `kill`).
    pub fn peer(&mut self) -> &mut Peer {
        &mut self.peer
    }

    /// The process handle, owned.
    pub fn into_peer(self) -> Peer {
        self.peer
    }

    /// Every request logged so far, in the order nginx finished them.
    pub fn access_log(&self) -> Vec<AccessEntry> {
        let text = std::fs::read_to_string(self.peer.dir().join("access.log")).unwrap_or_default();
        text.lines().filter_map(parse_entry).collect()
    }

    /// The access log once it has at least `count` entries: nginx logs a
    /// request when it is done with it, which after a `Connection: close`
    /// is after its lingering close. Polls every 10 ms, at most `within`.
    ///
    /// # Panics
    ///
    /// When fewer than `count` entries were logged within `within`, with
    /// what was logged.
    pub fn wait_for_log(&self, count: usize, within: Duration) -> Vec<AccessEntry> {
        let until = std::time::Instant::now() + within;
        loop {
            let log = self.access_log();
            if log.len() >= count {
                return log;
            }
            assert!(
                std::time::Instant::now() < until,
                "nginx logged {} of {count} requests within {within:?}: {log:?}",
                log.len()
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// The error log (nginx writes `closed keepalive connection` there at
    /// `info` level).
    pub fn error_log(&self) -> String {
        std::fs::read_to_string(self.peer.dir().join("error.log")).unwrap_or_default()
    }
}

fn parse_entry(line: &str) -> Option<AccessEntry> {
    let mut fields = line.split(' ');
    Some(AccessEntry {
        connection: fields.next()?.parse().ok()?,
        request: fields.next()?.parse().ok()?,
        method: fields.next()?.to_owned(),
        uri: fields.next()?.to_owned(),
        status: fields.next()?.parse().ok()?,
        body_bytes: fields.next()?.parse().ok()?,
        protocol: fields.next()?.to_owned(),
    })
}
