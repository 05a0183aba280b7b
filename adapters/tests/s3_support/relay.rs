//! A loopback TCP relay in front of a real peer: it counts the connections
//! the adapter opens, reports each one the adapter closes (EOF or reset
//! read from the adapter's side), and can hold the peer's answers back so
//! a test can cancel a call while the peer is mid-exchange.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, watch};

use crate::support::{bounded, task};

pub(crate) struct Relay {
    /// `http://127.0.0.1:PORT`, as a provider's endpoint origin.
    pub(crate) target: String,
    accepted: Arc<AtomicUsize>,
    forwarded: Arc<AtomicUsize>,
    closed: mpsc::Receiver<()>,
    hold: watch::Sender<bool>,
}

impl Relay {
    pub(crate) async fn start(peer: SocketAddr) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let target = format!("http://{}", listener.local_addr().expect("addr"));
        let accepted = Arc::new(AtomicUsize::new(0));
        let forwarded = Arc::new(AtomicUsize::new(0));
        let (closed_tx, closed) = mpsc::channel(64);
        let (hold, held) = watch::channel(false);
        let (count, bytes) = (Arc::clone(&accepted), Arc::clone(&forwarded));
        task(async move {
            while let Ok((client, _)) = listener.accept().await {
                count.fetch_add(1, Ordering::SeqCst);
                let Ok(upstream) = TcpStream::connect(peer).await else {
                    continue;
                };
                let (mut client_rx, mut client_tx) = client.into_split();
                let (mut peer_rx, mut peer_tx) = upstream.into_split();
                let (closed_tx, bytes) = (closed_tx.clone(), Arc::clone(&bytes));
                task(async move {
                    let mut buf = vec![0; 16 * 1024];
                    loop {
                        match client_rx.read(&mut buf).await {
                            Ok(0) | Err(_) => break,
                            Ok(n) => {
                                bytes.fetch_add(n, Ordering::SeqCst);
                                if peer_tx.write_all(&buf[..n]).await.is_err() {
                                    break;
                                }
                            }
                        }
                    }
                    let _ = closed_tx.send(()).await;
                    // Dropping `peer_tx` closes the peer's side too.
                });
                let mut held = held.clone();
                task(async move {
                    let mut buf = vec![0; 16 * 1024];
                    loop {
                        if held.wait_for(|hold| !*hold).await.is_err() {
                            break;
                        }
                        match peer_rx.read(&mut buf).await {
                            Ok(0) | Err(_) => break,
                            Ok(n) => {
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
            target,
            accepted,
            forwarded,
            closed,
            hold,
        }
    }

    /// Connections the adapter opened so far.
    pub(crate) fn accepted(&self) -> usize {
        self.accepted.load(Ordering::SeqCst)
    }

    /// Bytes the adapter sent so far.
    pub(crate) fn forwarded(&self) -> usize {
        self.forwarded.load(Ordering::SeqCst)
    }

    /// From now on the peer's answers are held back (until released).
    pub(crate) fn hold_answers(&self, hold: bool) {
        self.hold.send_replace(hold);
    }

    /// Waits until the adapter closed one more connection.
    pub(crate) async fn client_closed(&mut self) {
        bounded("the adapter closes a connection", self.closed.recv())
            .await
            .expect("relay alive");
    }

    /// True when no closed connection is waiting to be reported.
    pub(crate) fn none_closed(&mut self) -> bool {
        self.closed.try_recv().is_err()
    }
}
