//! A TCP proxy on 127.0.0.1 in front of a real server: it counts accepted
//! connections, records what clients send, can hold the server's replies
//! back, and reports each client that closed its connection.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, watch, Notify};

/// Bytes of client traffic kept for [`Proxy::sent`].
const KEPT: usize = 1 << 20;

pub(crate) struct Proxy {
    addr: SocketAddr,
    accepted: Arc<AtomicUsize>,
    hold: watch::Sender<bool>,
    sent: Arc<(Mutex<Vec<u8>>, Notify)>,
    closed: mpsc::Receiver<()>,
}

impl Proxy {
    /// Starts a proxy to `upstream`.
    pub(crate) async fn start(upstream: SocketAddr) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("addr");
        let accepted = Arc::new(AtomicUsize::new(0));
        let (hold, held) = watch::channel(false);
        let sent = Arc::new((Mutex::new(Vec::new()), Notify::new()));
        let (closed_tx, closed) = mpsc::channel(64);
        let (count, log) = (Arc::clone(&accepted), Arc::clone(&sent));
        super::task(async move {
            while let Ok((client, _)) = listener.accept().await {
                count.fetch_add(1, Ordering::SeqCst);
                let Ok(server) = TcpStream::connect(upstream).await else {
                    continue;
                };
                let (mut client_rx, mut client_tx) = client.into_split();
                let (mut server_rx, mut server_tx) = server.into_split();
                let (log, closed) = (Arc::clone(&log), closed_tx.clone());
                super::task(async move {
                    let mut buf = vec![0u8; 16 * 1024];
                    loop {
                        match client_rx.read(&mut buf).await {
                            Ok(0) | Err(_) => break,
                            Ok(n) => {
                                {
                                    let mut kept = log.0.lock().expect("log");
                                    kept.extend_from_slice(&buf[..n]);
                                    let excess = kept.len().saturating_sub(KEPT);
                                    kept.drain(..excess);
                                }
                                log.1.notify_waiters();
                                if server_tx.write_all(&buf[..n]).await.is_err() {
                                    break;
                                }
                            }
                        }
                    }
                    let _ = closed.try_send(());
                    let _ = server_tx.shutdown().await;
                });
                let mut held = held.clone();
                super::task(async move {
                    let mut buf = vec![0u8; 16 * 1024];
                    loop {
                        match server_rx.read(&mut buf).await {
                            Ok(0) | Err(_) => break,
                            Ok(n) => {
                                if held.wait_for(|hold| !*hold).await.is_err() {
                                    break;
                                }
                                if client_tx.write_all(&buf[..n]).await.is_err() {
                                    break;
                                }
                            }
                        }
                    }
                });
            }
        });
        Self {
            addr,
            accepted,
            hold,
            sent,
            closed,
        }
    }

    /// `nats://127.0.0.1:PORT` of the proxy.
    pub(crate) fn target(&self) -> String {
        format!("nats://{}", self.addr)
    }

    /// Connections accepted so far.
    pub(crate) fn accepted(&self) -> usize {
        self.accepted.load(Ordering::SeqCst)
    }

    /// Holds the server's bytes back (`true`) or lets them through.
    pub(crate) fn hold_replies(&self, hold: bool) {
        self.hold.send_replace(hold);
    }

    /// Waits until some client has sent `needle`.
    pub(crate) async fn sent(&self, needle: &str) {
        super::bounded(&format!("a client to send {needle:?}"), async {
            loop {
                let notified = self.sent.1.notified();
                let found = {
                    let kept = self.sent.0.lock().expect("log");
                    kept.windows(needle.len()).any(|w| w == needle.as_bytes())
                };
                if found {
                    return;
                }
                notified.await;
            }
        })
        .await;
    }

    /// Waits until one client has closed its connection.
    pub(crate) async fn client_closed(&mut self) {
        super::bounded("a client to close its connection", self.closed.recv())
            .await
            .expect("proxy alive");
    }
}
