//! The stress test's sockets: a loopback listener that counts accepted and
//! open sockets by the (provider, epoch) tag each dial writes first, and
//! the dialer that writes it.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use provider_pools::{DialError, DialErrorKind, DialTarget, Dialer};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// A socket's first bytes: its provider index and its epoch, little-endian.
const TAG: usize = 16;

/// What the listener has seen: every accepted socket, the ones still open,
/// and the open ones by the (provider, epoch) they were dialed for.
#[derive(Debug, Default)]
pub(crate) struct Sockets {
    pub(crate) accepted: usize,
    /// The listener's last `accept` error, if any (it keeps accepting).
    pub(crate) accept_error: Option<String>,
    pub(crate) open: usize,
    /// Open sockets whose tag has not been read yet.
    pub(crate) untagged: usize,
    pub(crate) by_epoch: BTreeMap<(u64, u64), usize>,
}

pub(crate) type Shared = Arc<Mutex<Sockets>>;

pub(crate) fn lock(sockets: &Shared) -> std::sync::MutexGuard<'_, Sockets> {
    sockets.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A loopback listener that reads each socket's tag, then waits for its EOF.
pub(crate) async fn listener() -> (String, Shared) {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let target = listener.local_addr().expect("local addr").to_string();
    let sockets = Shared::default();
    let shared = Arc::clone(&sockets);
    crate::support::task(async move {
        loop {
            match listener.accept().await {
                Ok((socket, _)) => {
                    {
                        let mut s = lock(&shared);
                        s.accepted += 1;
                        s.open += 1;
                        s.untagged += 1;
                    }
                    crate::support::task(serve(socket, Arc::clone(&shared)));
                }
                Err(err) => {
                    lock(&shared).accept_error = Some(err.to_string());
                    tokio::time::sleep(Duration::from_millis(1)).await;
                }
            }
        }
    });
    (target, sockets)
}

async fn serve(mut socket: TcpStream, sockets: Shared) {
    let mut tag = [0u8; TAG];
    let key = match socket.read_exact(&mut tag).await {
        Ok(_) => {
            let (p, e) = tag.split_at(8);
            let key = (le(p), le(e));
            let mut s = lock(&sockets);
            s.untagged -= 1;
            *s.by_epoch.entry(key).or_default() += 1;
            Some(key)
        }
        Err(_) => {
            lock(&sockets).untagged -= 1;
            None
        }
    };
    let mut buf = [0u8; 64];
    while matches!(socket.read(&mut buf).await, Ok(n) if n > 0) {}
    let mut s = lock(&sockets);
    s.open -= 1;
    if let Some(key) = key {
        let count = s.by_epoch.entry(key).or_default();
        *count -= 1;
        if *count == 0 {
            s.by_epoch.remove(&key);
        }
    }
}

fn le(bytes: &[u8]) -> u64 {
    u64::from_le_bytes(bytes.try_into().expect("8 bytes"))
}

pub(crate) fn tag(provider: usize, epoch: u64) -> Vec<u8> {
    [(provider as u64).to_le_bytes(), epoch.to_le_bytes()].concat()
}

/// Dials a real socket and writes the epoch's credential (its tag) first.
#[derive(Debug, Default, Clone)]
pub(crate) struct TaggingDialer {
    pub(crate) dialed: Arc<AtomicUsize>,
}

impl Dialer for TaggingDialer {
    type Conn = TcpStream;

    async fn dial(&self, target: DialTarget<'_>) -> Result<TcpStream, DialError> {
        let failed = |e: std::io::Error| DialError::new(DialErrorKind::Other, e.to_string());
        let mut socket = TcpStream::connect(target.target).await.map_err(failed)?;
        self.dialed.fetch_add(1, SeqCst);
        socket
            .write_all(target.credential.expose_to_adapter())
            .await
            .map_err(failed)?;
        Ok(socket)
    }
}
