//! One peer process: found, started, awaited, stopped.

use std::collections::BTreeSet;
use std::fmt;
use std::fs::File;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use tempfile::TempDir;

/// How long a peer may take to answer after it was started.
const READY_WITHIN: Duration = Duration::from_secs(60);
/// How many times a peer is restarted on another port when its first port
/// was taken between [`free_port`] and the peer's bind.
const START_ATTEMPTS: usize = 3;

/// The directory the peers are installed in.
fn peers_dir() -> PathBuf {
    match std::env::var_os("PROVIDER_POOLS_PEERS") {
        Some(dir) => PathBuf::from(dir),
        // test-peers/ sits in the workspace root, beside target/.
        None => Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("..")
            .join("target")
            .join("peers"),
    }
}

/// Where `scripts/peers` puts binaries, under the peers directory: the
/// Python peers' virtual environment, then the unpacked etcd-server,
/// nginx and lighttpd packages.
const INSTALL_DIRS: [&str; 4] = [
    "venv/bin",
    "etcd/usr/bin",
    "nginx/usr/sbin",
    "lighttpd/usr/sbin",
];

/// The path of the peer binary `name`: from the peers directory (the
/// virtual environment or an unpacked Debian package), else from `PATH`.
///
/// # Panics
///
/// When it is in neither, with a message saying how to install it.
pub fn binary(name: &str) -> PathBuf {
    for dir in INSTALL_DIRS {
        let installed = peers_dir().join(dir).join(name);
        if installed.is_file() {
            return installed;
        }
    }
    if let Some(path) = std::env::var_os("PATH") {
        for dir in std::env::split_paths(&path) {
            let candidate = dir.join(name);
            if candidate.is_file() {
                return candidate;
            }
        }
    }
    panic!(
        "test peer `{name}` is not installed: run ./scripts/peers \
         (the README test command ./scripts/test runs it), which installs \
         the pinned peers into {}",
        peers_dir().display()
    );
}

/// The ports this process has handed out: the kernel may give the same
/// free port to two `bind(0)` calls in a row once the first listener is
/// closed, and two tests of one binary starting peers at once would then
/// race for it (the loser's readiness probe reaching the winner's peer).
static HANDED_OUT: Mutex<BTreeSet<u16>> = Mutex::new(BTreeSet::new());

/// A loopback port that was free a moment ago and that this process has
/// not handed out before.
pub fn free_port() -> u16 {
    let mut handed_out = HANDED_OUT.lock().unwrap_or_else(PoisonError::into_inner);
    // Held open until a fresh one is found, so a retry gets another port.
    let mut held = Vec::new();
    loop {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind a loopback port");
        let port = listener.local_addr().expect("local address").port();
        if handed_out.insert(port) {
            return port;
        }
        held.push(listener);
    }
}

/// Two distinct loopback ports, each from [`free_port`].
fn free_port_pair() -> (u16, u16) {
    (free_port(), free_port())
}

/// What to start: the binary, its arguments and environment. `{port}`,
/// `{port2}` and `{dir}` in an argument or a variable's value become the
/// chosen port (the one [`Peer::addr`] names), a second free port (for a
/// peer that listens twice, like etcd's client and peer URLs) and the
/// peer's temporary directory.
#[derive(Debug, Clone)]
pub struct PeerCommand {
    name: &'static str,
    args: Vec<String>,
    env: Vec<(String, String)>,
    files: Vec<(String, FileContent)>,
}

/// A file written into the peer's directory before it starts.
#[derive(Debug, Clone)]
enum FileContent {
    /// Text in which `{port}`, `{port2}` and `{dir}` are filled in.
    Template(String),
    /// Bytes written as they are.
    Bytes(Vec<u8>),
}

impl PeerCommand {
    /// The peer binary `name` (see [`binary`]).
    pub fn new(name: &'static str) -> Self {
        Self {
            name,
            args: Vec::new(),
            env: Vec::new(),
            files: Vec::new(),
        }
    }

    /// Writes `text` to `path` (relative to the peer's directory, parent
    /// directories created) before the peer starts, with `{port}`,
    /// `{port2}` and `{dir}` filled in: a configuration file.
    pub fn template(mut self, path: &str, text: &str) -> Self {
        self.files
            .push((path.to_owned(), FileContent::Template(text.to_owned())));
        self
    }

    /// Writes `bytes` to `path` (relative to the peer's directory, parent
    /// directories created) before the peer starts.
    pub fn file(mut self, path: &str, bytes: Vec<u8>) -> Self {
        self.files
            .push((path.to_owned(), FileContent::Bytes(bytes)));
        self
    }

    /// Adds arguments.
    pub fn args<I, S>(mut self, args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.args.extend(args.into_iter().map(Into::into));
        self
    }

    /// Sets an environment variable.
    pub fn env(mut self, key: &str, value: &str) -> Self {
        self.env.push((key.to_owned(), value.to_owned()));
        self
    }

    /// Starts the peer on a free port and waits until `ready` says it
    /// answers (at most a minute). A peer that exits early, for example
    /// because its port was taken meanwhile, is started again on another
    /// port, at most three times.
    ///
    /// # Panics
    ///
    /// When the binary is missing, or the peer never answers; the message
    /// carries the end of the peer's log.
    pub fn start(&self, ready: impl Fn(SocketAddr) -> bool) -> Peer {
        let mut last_log = String::new();
        for _ in 0..START_ATTEMPTS {
            let (port, port2) = free_port_pair();
            let mut peer = self.spawn(port, port2);
            let until = Instant::now() + READY_WITHIN;
            loop {
                if peer.has_exited() {
                    last_log = peer.log_tail();
                    break;
                }
                if ready(peer.addr) {
                    return peer;
                }
                if Instant::now() >= until {
                    panic!(
                        "test peer `{}` did not answer on {} within {:?}; its log ends:\n{}",
                        self.name,
                        peer.addr,
                        READY_WITHIN,
                        peer.log_tail()
                    );
                }
                std::thread::sleep(Duration::from_millis(50));
            }
        }
        panic!(
            "test peer `{}` exited before answering, {START_ATTEMPTS} times; its last log ends:\n{last_log}",
            self.name
        );
    }

    /// Starts the peer with `{port}` and `{port2}` filled in as given, in
    /// a fresh temporary directory, without waiting for it to answer: for
    /// peers whose ports must be known before they start (the members of
    /// one etcd cluster name each other's). The caller owns the port race:
    /// a peer that exits early may have lost its port.
    ///
    /// # Panics
    ///
    /// When the binary is missing or cannot be started, or its directory,
    /// files or log cannot be written.
    pub(crate) fn spawn(&self, port: u16, port2: u16) -> Peer {
        let program = binary(self.name);
        let dir = tempfile::Builder::new()
            .prefix(&format!("peer-{}-", self.name))
            .tempdir()
            .expect("a temporary directory for the peer");
        let fill = |s: &str| {
            s.replace("{port}", &port.to_string())
                .replace("{port2}", &port2.to_string())
                .replace("{dir}", &dir.path().display().to_string())
        };
        for (path, content) in &self.files {
            let path = dir.path().join(path);
            if let Some(parent) = path.parent() {
                std::fs::create_dir_all(parent).expect("a directory for the peer's file");
            }
            match content {
                FileContent::Template(text) => std::fs::write(&path, fill(text)),
                FileContent::Bytes(bytes) => std::fs::write(&path, bytes),
            }
            .unwrap_or_else(|e| panic!("write {}: {e}", path.display()));
        }
        let log_path = dir.path().join("peer.log");
        let log = File::create(&log_path).expect("the peer's log file");
        let mut command = Command::new(&program);
        command
            .args(self.args.iter().map(|a| fill(a)))
            .current_dir(dir.path())
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("the peer's log file"))
            .stderr(log);
        for (key, value) in &self.env {
            command.env(key, fill(value));
        }
        let child = command
            .spawn()
            .unwrap_or_else(|e| panic!("start {}: {e}", program.display()));
        Peer {
            name: self.name,
            addr: SocketAddr::from(([127, 0, 0, 1], port)),
            port2,
            child,
            log_path,
            dir,
        }
    }
}

/// A running peer. Dropping it kills and reaps the process, then removes
/// its temporary directory.
pub struct Peer {
    name: &'static str,
    addr: SocketAddr,
    /// The second port `{port2}` named, for a peer that listens twice.
    port2: u16,
    child: Child,
    log_path: PathBuf,
    // Dropped last: the process is gone before its storage is removed.
    dir: TempDir,
}

impl Peer {
    /// The loopback address it listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Its port.
    pub fn port(&self) -> u16 {
        self.addr.port()
    }

    /// The second port its command or files named as `{port2}` (free when
    /// it started; used only by peers that listen on it).
    pub fn port2(&self) -> u16 {
        self.port2
    }

    /// Its temporary directory.
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// The last 4 KiB of what it printed.
    pub fn log_tail(&self) -> String {
        let mut text = String::new();
        if let Ok(mut file) = File::open(&self.log_path) {
            let _ = file.read_to_string(&mut text);
        }
        let start = text.len().saturating_sub(4096);
        let start = (start..text.len())
            .find(|&i| text.is_char_boundary(i))
            .unwrap_or(text.len());
        text[start..].to_owned()
    }

    /// Kills the process now (to test a peer that disappears); the handle
    /// keeps its address and directory.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// True once the process has exited (and been reaped), killed or not.
    pub(crate) fn has_exited(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(Some(_)))
    }
}

impl Drop for Peer {
    fn drop(&mut self) {
        self.kill();
    }
}

impl fmt::Debug for Peer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Peer")
            .field("name", &self.name)
            .field("addr", &self.addr)
            .finish_non_exhaustive()
    }
}

/// The first line (at most 16 KiB) the server on `addr` sends unprompted,
/// within two seconds of connecting; `None` when it sends none.
pub(crate) fn first_line(addr: SocketAddr) -> Option<String> {
    let stream = TcpStream::connect_timeout(&addr, Duration::from_secs(1)).ok()?;
    stream.set_read_timeout(Some(Duration::from_secs(2))).ok()?;
    let mut line = String::new();
    BufReader::new(stream.take(16 * 1024))
        .read_line(&mut line)
        .ok()?;
    Some(line)
}

/// The body `GET path` answers on `addr` with (at most 64 KiB), over a
/// one-shot HTTP/1.0 exchange, when the status is 200; `None` when it does
/// not answer so within two seconds.
pub(crate) fn http_ok_body(addr: SocketAddr, path: &str) -> Option<String> {
    let mut stream = TcpStream::connect_timeout(&addr, Duration::from_secs(1)).ok()?;
    stream.set_read_timeout(Some(Duration::from_secs(2))).ok()?;
    stream
        .set_write_timeout(Some(Duration::from_secs(2)))
        .ok()?;
    write!(stream, "GET {path} HTTP/1.0\r\nHost: {addr}\r\n\r\n").ok()?;
    let mut response = Vec::new();
    stream.take(64 * 1024).read_to_end(&mut response).ok()?;
    let response = String::from_utf8(response).ok()?;
    let (head, body) = response.split_once("\r\n\r\n")?;
    head.get(9..12)
        .filter(|status| *status == "200")
        .map(|_| body.to_owned())
}

/// The status code `GET path` answers on `addr` with, over a one-shot
/// HTTP/1.0 exchange; `None` when it does not answer within two seconds.
pub(crate) fn http_status(addr: SocketAddr, path: &str) -> Option<u16> {
    let mut stream = TcpStream::connect_timeout(&addr, Duration::from_secs(1)).ok()?;
    stream.set_read_timeout(Some(Duration::from_secs(2))).ok()?;
    stream
        .set_write_timeout(Some(Duration::from_secs(2)))
        .ok()?;
    write!(stream, "GET {path} HTTP/1.0\r\nHost: {addr}\r\n\r\n").ok()?;
    let mut head = [0u8; 12];
    stream.read_exact(&mut head).ok()?;
    // "HTTP/1.x NNN"
    std::str::from_utf8(&head[9..12]).ok()?.parse().ok()
}

/// The status and body `POST path` with the JSON `body` answers on `addr`
/// with (at most 64 KiB), over a one-shot HTTP/1.0 exchange; `None` when
/// it does not answer within two seconds.
pub(crate) fn http_post(addr: SocketAddr, path: &str, body: &str) -> Option<(u16, String)> {
    let mut stream = TcpStream::connect_timeout(&addr, Duration::from_secs(1)).ok()?;
    stream.set_read_timeout(Some(Duration::from_secs(2))).ok()?;
    stream
        .set_write_timeout(Some(Duration::from_secs(2)))
        .ok()?;
    write!(
        stream,
        "POST {path} HTTP/1.0\r\nHost: {addr}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .ok()?;
    let mut response = Vec::new();
    stream.take(64 * 1024).read_to_end(&mut response).ok()?;
    let response = String::from_utf8(response).ok()?;
    let (head, body) = response.split_once("\r\n\r\n")?;
    let status = head.get(9..12)?.parse().ok()?;
    Some((status, body.to_owned()))
}
