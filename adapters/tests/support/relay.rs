//! A TCP relay on 127.0.0.1 in front of a real peer (moto, OpenBao,
//! nats-server), shared by the s3, vault and nats tests. It counts the
//! sockets the client opens and knows their addresses, counts and keeps the
//! bytes the client sends, reports each socket the client closed (EOF or
//! reset read from the client's side), and can hold the peer's answers back
//! so a call stays mid-exchange for as long as a test needs.
//!
//! Nothing is changed in transit: the peer answers every request itself.
//! When the peer closes a connection the relay half-closes the client's
//! side, so the client sees the close and the relay reports the client's
//! own close once it comes.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, watch, Notify};

/// Bytes of client traffic kept for [`Relay::sent`].
const KEPT: usize = 1 << 20;

pub(crate) struct Relay {
    /// `http://127.0.0.1:PORT`, as a provider's origin target.
    pub(crate) target: String,
    addr: SocketAddr,
    shared: Arc<Shared>,
    hold: watch::Sender<bool>,
    closed: mpsc::Receiver<()>,
    held: mpsc::Receiver<()>,
}

struct Shared {
    accepted: AtomicUsize,
    clients: Mutex<Vec<SocketAddr>>,
    open: AtomicUsize,
    forwarded: AtomicUsize,
    /// The last [`KEPT`] bytes the clients sent, and a wake-up per write.
    sent: Mutex<Vec<u8>>,
    sent_more: Notify,
}

/// One connection's ends of the relay's report channels.
#[derive(Clone)]
struct Reports {
    shared: Arc<Shared>,
    hold: watch::Receiver<bool>,
    closed: mpsc::Sender<()>,
    held: mpsc::Sender<()>,
}

impl Relay {
    /// A relay to `upstream`.
    pub(crate) async fn start(upstream: SocketAddr) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("addr");
        let shared = Arc::new(Shared {
            accepted: AtomicUsize::new(0),
            clients: Mutex::new(Vec::new()),
            open: AtomicUsize::new(0),
            forwarded: AtomicUsize::new(0),
            sent: Mutex::new(Vec::new()),
            sent_more: Notify::new(),
        });
        let (hold, hold_rx) = watch::channel(false);
        let (closed_tx, closed) = mpsc::channel(256);
        let (held_tx, held) = mpsc::channel(256);
        let reports = Reports {
            shared: Arc::clone(&shared),
            hold: hold_rx,
            closed: closed_tx,
            held: held_tx,
        };
        super::task(async move {
            while let Ok((client, from)) = listener.accept().await {
                reports
                    .shared
                    .clients
                    .lock()
                    .expect("not poisoned")
                    .push(from);
                reports.shared.accepted.fetch_add(1, Ordering::SeqCst);
                let Ok(server) = TcpStream::connect(upstream).await else {
                    continue;
                };
                reports.shared.open.fetch_add(1, Ordering::SeqCst);
                let reports = reports.clone();
                super::task(async move {
                    relay(client, server, &reports).await;
                    reports.shared.open.fetch_sub(1, Ordering::SeqCst);
                });
            }
        });
        Self {
            target: format!("http://{addr}"),
            addr,
            shared,
            hold,
            closed,
            held,
        }
    }

    /// `SCHEME://127.0.0.1:PORT`, for peers whose targets are not `http`.
    pub(crate) fn url(&self, scheme: &str) -> String {
        format!("{scheme}://{}", self.addr)
    }

    /// Sockets the client opened so far.
    pub(crate) fn accepted(&self) -> usize {
        self.shared.accepted.load(Ordering::SeqCst)
    }

    /// The relay's own address: the remote end of every client socket.
    pub(crate) fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The client's end of each socket accepted so far, in order.
    pub(crate) fn clients(&self) -> Vec<SocketAddr> {
        self.shared.clients.lock().expect("not poisoned").clone()
    }

    /// Sockets open right now.
    pub(crate) fn open(&self) -> usize {
        self.shared.open.load(Ordering::SeqCst)
    }

    /// Bytes the client sent so far, over all its sockets.
    pub(crate) fn forwarded(&self) -> usize {
        self.shared.forwarded.load(Ordering::SeqCst)
    }

    /// Waits until some client has sent `needle` (among the last
    /// [`KEPT`] bytes sent).
    pub(crate) async fn sent(&self, needle: &str) {
        super::bounded(&format!("a client to send {needle:?}"), async {
            loop {
                let more = self.shared.sent_more.notified();
                let found = {
                    let kept = self.shared.sent.lock().expect("not poisoned");
                    kept.windows(needle.len()).any(|w| w == needle.as_bytes())
                };
                if found {
                    return;
                }
                more.await;
            }
        })
        .await;
    }

    /// From now on, the peer's answers are held until [`Self::release`].
    pub(crate) fn hold(&self) {
        self.hold.send_replace(true);
    }

    /// Forwards every held answer and stops holding.
    pub(crate) fn release(&self) {
        self.hold.send_replace(false);
    }

    /// Waits until one more answer is held (its request reached the peer,
    /// and the peer answered; the client waits).
    pub(crate) async fn answer_held(&mut self) {
        super::bounded("the peer's answer to be held", self.held.recv())
            .await
            .expect("relay alive");
    }

    /// Waits until the client has closed one more socket (EOF or reset).
    pub(crate) async fn client_closed(&mut self) {
        super::bounded("the client to close its socket", self.closed.recv())
            .await
            .expect("relay alive");
    }

    /// True when no client close is waiting to be observed.
    pub(crate) fn no_close_pending(&mut self) -> bool {
        self.closed.try_recv().is_err()
    }
}

/// Relays one connection until the client closes its socket, then reports
/// the close and drops both sockets (a held answer is dropped with them).
async fn relay(client: TcpStream, server: TcpStream, reports: &Reports) {
    let (client_rx, client_tx) = client.into_split();
    let (server_rx, server_tx) = server.into_split();
    tokio::select! {
        () = upload(client_rx, server_tx, &reports.shared) => {}
        () = download(server_rx, client_tx, reports) => {}
    }
    let _ = reports.closed.try_send(());
}

/// Forwards the client's bytes until the client closes (EOF or reset).
/// Should the peer stop taking them, they are read and dropped, so the
/// client's close is still seen.
async fn upload(mut client: OwnedReadHalf, mut server: OwnedWriteHalf, shared: &Shared) {
    let mut buf = vec![0u8; 16 * 1024];
    let mut peer_takes = true;
    loop {
        let n = match client.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => n,
        };
        shared.forwarded.fetch_add(n, Ordering::SeqCst);
        {
            let mut kept = shared.sent.lock().expect("not poisoned");
            kept.extend_from_slice(&buf[..n]);
            let excess = kept.len().saturating_sub(KEPT);
            kept.drain(..excess);
        }
        shared.sent_more.notify_waiters();
        if peer_takes {
            peer_takes = server.write_all(&buf[..n]).await.is_ok();
        }
    }
}

/// Forwards the peer's bytes, holding each read while the relay holds
/// answers. When the peer closes (or the client stops taking bytes), the
/// client's side is half-closed and this never returns: the connection
/// ends with the client's close.
async fn download(mut server: OwnedReadHalf, mut client: OwnedWriteHalf, reports: &Reports) {
    let mut hold = reports.hold.clone();
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        let n = match server.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        if *hold.borrow_and_update() {
            let _ = reports.held.try_send(());
            if hold.wait_for(|hold| !*hold).await.is_err() {
                break;
            }
        }
        if client.write_all(&buf[..n]).await.is_err() {
            break;
        }
    }
    let _ = client.shutdown().await;
    std::future::pending::<()>().await;
}
