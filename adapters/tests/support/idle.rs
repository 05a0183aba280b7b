//! A loopback HTTP/1.1 origin that closes idle keep-alive connections on
//! its own schedule, like nginx's `keepalive_timeout`: a connection that
//! has answered and then waits [`IdleOrigin::start`]'s `idle` for its next
//! request is closed by the server. It answers every request with the same
//! body (`x-connection` names the connection), logs `(connection, path)`
//! per request, and holds the answers of its first `wave` requests until
//! all of them arrived, so a wave takes that many connections.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{watch, Notify};

struct Shared {
    body: String,
    idle: Duration,
    wave: usize,
    log: Mutex<Vec<(usize, String)>>,
    arrived: watch::Sender<usize>,
    closed: AtomicUsize,
    closed_more: Notify,
}

pub(crate) struct IdleOrigin {
    /// `http://127.0.0.1:PORT`, as a provider's origin target.
    pub(crate) target: String,
    shared: Arc<Shared>,
}

impl IdleOrigin {
    /// An origin answering `200` with `body` (JSON), closing a connection
    /// idle for `idle`, holding its first `wave` answers until all came.
    pub(crate) async fn start(body: &str, idle: Duration, wave: usize) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let target = format!("http://{}", listener.local_addr().expect("addr"));
        let shared = Arc::new(Shared {
            body: body.to_owned(),
            idle,
            wave,
            log: Mutex::new(Vec::new()),
            arrived: watch::Sender::new(0),
            closed: AtomicUsize::new(0),
            closed_more: Notify::new(),
        });
        let serving = Arc::clone(&shared);
        super::task(async move {
            let mut id = 0;
            while let Ok((stream, _)) = listener.accept().await {
                super::task(serve(id, stream, Arc::clone(&serving)));
                id += 1;
            }
        });
        Self { target, shared }
    }

    /// The connections on which a request for `path` arrived, in order.
    pub(crate) fn arrivals(&self, path: &str) -> Vec<usize> {
        let log = self.shared.log.lock().expect("log");
        log.iter()
            .filter(|(_, p)| p.starts_with(path))
            .map(|(id, _)| *id)
            .collect()
    }

    /// Waits until the server has closed `count` idle connections.
    pub(crate) async fn closed(&self, count: usize) {
        super::bounded("the origin to close its idle connections", async {
            loop {
                let more = self.shared.closed_more.notified();
                if self.shared.closed.load(Ordering::SeqCst) >= count {
                    return;
                }
                more.await;
            }
        })
        .await;
    }
}

/// Serves one connection until the client closes it or it stays idle for
/// `idle` after an answer (then the server closes it).
async fn serve(id: usize, mut stream: TcpStream, shared: Arc<Shared>) {
    let mut buf = Vec::new();
    let mut answered = false;
    loop {
        let head = loop {
            if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                let head = String::from_utf8_lossy(&buf[..end]).into_owned();
                buf.drain(..end + 4);
                break head;
            }
            let read = stream.read_buf(&mut buf);
            let read = if answered {
                match tokio::time::timeout(shared.idle, read).await {
                    Ok(read) => read,
                    Err(_) => {
                        drop(stream);
                        shared.closed.fetch_add(1, Ordering::SeqCst);
                        shared.closed_more.notify_waiters();
                        return;
                    }
                }
            } else {
                read.await
            };
            match read {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
        };
        let path = head.split(' ').nth(1).unwrap_or_default().to_owned();
        shared.log.lock().expect("log").push((id, path));
        shared.arrived.send_modify(|n| *n += 1);
        let wave = shared.wave;
        let mut arrived = shared.arrived.subscribe();
        let _ = arrived.wait_for(|n| *n >= wave).await;
        let answer = format!(
            "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\
             etag: \"e\"\r\nx-connection: {id}\r\n\r\n{}",
            shared.body.len(),
            shared.body
        );
        if stream.write_all(answer.as_bytes()).await.is_err() {
            return;
        }
        answered = true;
    }
}
