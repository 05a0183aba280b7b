//! A TCP relay on 127.0.0.1 in front of a real peer: it counts the
//! client's sockets, reports each socket the client closed (EOF or reset),
//! and can hold the peer's answers so a call stays mid-exchange for as
//! long as a test needs.
//!
//! Nothing is changed in transit: the peer answers every request itself.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, Notify};

pub(crate) struct Relay {
    /// `http://127.0.0.1:PORT`, as a provider's origin target.
    pub(crate) target: String,
    shared: Arc<Shared>,
    closed: mpsc::Receiver<()>,
    held: mpsc::Receiver<()>,
}

struct Shared {
    accepted: AtomicUsize,
    open: AtomicUsize,
    hold: AtomicBool,
    release: Notify,
}

impl Relay {
    /// A relay to `upstream`.
    pub(crate) async fn start(upstream: SocketAddr) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let target = format!("http://{}", listener.local_addr().expect("addr"));
        let shared = Arc::new(Shared {
            accepted: AtomicUsize::new(0),
            open: AtomicUsize::new(0),
            hold: AtomicBool::new(false),
            release: Notify::new(),
        });
        let (closed_tx, closed) = mpsc::channel(256);
        let (held_tx, held) = mpsc::channel(256);
        let state = Arc::clone(&shared);
        super::task(async move {
            while let Ok((client, _)) = listener.accept().await {
                let Ok(server) = TcpStream::connect(upstream).await else {
                    continue;
                };
                state.accepted.fetch_add(1, Ordering::SeqCst);
                state.open.fetch_add(1, Ordering::SeqCst);
                let (state, closed_tx, held_tx) =
                    (Arc::clone(&state), closed_tx.clone(), held_tx.clone());
                super::task(async move {
                    pipe(client, server, &state, &closed_tx, &held_tx).await;
                    state.open.fetch_sub(1, Ordering::SeqCst);
                });
            }
        });
        Self {
            target,
            shared,
            closed,
            held,
        }
    }

    /// Sockets the client opened so far.
    pub(crate) fn accepted(&self) -> usize {
        self.shared.accepted.load(Ordering::SeqCst)
    }

    /// Sockets open right now.
    pub(crate) fn open(&self) -> usize {
        self.shared.open.load(Ordering::SeqCst)
    }

    /// From now on, the peer's answers are held until [`Self::release`].
    pub(crate) fn hold(&self) {
        self.shared.hold.store(true, Ordering::SeqCst);
    }

    /// Forwards every held answer and stops holding.
    pub(crate) fn release(&self) {
        self.shared.hold.store(false, Ordering::SeqCst);
        self.shared.release.notify_waiters();
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

async fn pipe(
    mut client: TcpStream,
    mut server: TcpStream,
    state: &Shared,
    closed: &mpsc::Sender<()>,
    held: &mpsc::Sender<()>,
) {
    let mut from_client = vec![0u8; 16 * 1024];
    let mut from_server = vec![0u8; 16 * 1024];
    let mut pending: Option<Vec<u8>> = None;
    loop {
        // Created before the flag is read, so a release in between wakes it.
        let release = state.release.notified();
        if pending.is_some() && !state.hold.load(Ordering::SeqCst) {
            let bytes = pending.take().unwrap_or_default();
            if client.write_all(&bytes).await.is_err() {
                return;
            }
            continue;
        }
        tokio::select! {
            read = client.read(&mut from_client) => match read {
                Ok(0) | Err(_) => {
                    let _ = closed.try_send(());
                    return;
                }
                Ok(n) => {
                    if server.write_all(&from_client[..n]).await.is_err() {
                        return;
                    }
                }
            },
            read = server.read(&mut from_server), if pending.is_none() => match read {
                Ok(0) | Err(_) => return,
                Ok(n) if state.hold.load(Ordering::SeqCst) => {
                    pending = Some(from_server[..n].to_vec());
                    let _ = held.try_send(());
                }
                Ok(n) => {
                    if client.write_all(&from_server[..n]).await.is_err() {
                        return;
                    }
                }
            },
            () = release, if pending.is_some() => {}
        }
    }
}
