//! The tests' loopback origin: keep-alive answers naming their
//! connection, a log of every request that arrives, and a close on
//! command (a half-close that keeps reading, or a reset).

use std::future::Future;
use std::sync::{Arc, Mutex};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::oneshot;

use super::bounded;

/// How the origin closes a connection.
#[derive(Debug, Clone, Copy)]
pub(super) enum Close {
    /// Shuts down its sending side (FIN) and keeps reading.
    HalfClose,
    /// Drops the socket with a zero linger (RST).
    Reset,
}

type Command = (Close, oneshot::Sender<()>);

/// A loopback HTTP/1.1 origin answering every `GET` with keep-alive and
/// the number of the connection it came on (`x-connection`), logging
/// `(connection, path)` for each request that arrives.
pub(super) struct Origin {
    pub(super) target: String,
    log: Arc<Mutex<Vec<(usize, String)>>>,
    closers: Arc<Mutex<Vec<Option<oneshot::Sender<Command>>>>>,
}

impl Origin {
    pub(super) async fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let target = format!("http://{}", listener.local_addr().expect("addr"));
        let log = Arc::new(Mutex::new(Vec::new()));
        let closers = Arc::new(Mutex::new(Vec::new()));
        let (log_in, closers_in) = (Arc::clone(&log), Arc::clone(&closers));
        task(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let (close, commands) = oneshot::channel();
                let id = {
                    let mut closers = closers_in.lock().expect("closers");
                    closers.push(Some(close));
                    closers.len() - 1
                };
                task(serve(id, stream, Arc::clone(&log_in), commands));
            }
        });
        Self {
            target,
            log,
            closers,
        }
    }

    /// The connections on which a request for `path` arrived.
    pub(super) fn arrivals(&self, path: &str) -> Vec<usize> {
        let log = self.log.lock().expect("log");
        log.iter()
            .filter(|(_, p)| p == path)
            .map(|(id, _)| *id)
            .collect()
    }

    /// Closes connection `id` as `how`, once its server task did so.
    pub(super) async fn close(&self, id: usize, how: Close) {
        let close = self.closers.lock().expect("closers")[id]
            .take()
            .expect("connection open");
        let (done, closed) = oneshot::channel();
        close.send((how, done)).expect("connection served");
        bounded("the origin to close the connection", closed)
            .await
            .expect("closed");
    }
}

#[allow(clippy::disallowed_methods, reason = "tests own their tasks")]
fn task(future: impl Future<Output = ()> + Send + 'static) {
    tokio::spawn(future);
}

/// One connection of the origin: answers each request head, until told
/// to close; after a half-close it still reads (and logs) what comes.
async fn serve(
    id: usize,
    mut stream: TcpStream,
    log: Arc<Mutex<Vec<(usize, String)>>>,
    mut commands: oneshot::Receiver<Command>,
) {
    let mut buf = Vec::new();
    let mut closing = false;
    loop {
        tokio::select! {
            read = stream.read_buf(&mut buf) => {
                match read {
                    Ok(0) | Err(_) => return,
                    Ok(_) => {}
                }
                while let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                    let head = String::from_utf8_lossy(&buf[..end]).into_owned();
                    buf.drain(..end + 4);
                    let path = head.split(' ').nth(1).unwrap_or_default().to_owned();
                    log.lock().expect("log").push((id, path));
                    if !closing {
                        let answer = format!(
                            "HTTP/1.1 200 OK\r\ncontent-length: 2\r\nx-connection: {id}\r\n\r\nok"
                        );
                        if stream.write_all(answer.as_bytes()).await.is_err() {
                            return;
                        }
                    }
                }
            }
            command = &mut commands, if !closing => {
                let Ok((how, done)) = command else { return };
                match how {
                    Close::HalfClose => {
                        let _ = stream.shutdown().await;
                        closing = true;
                        let _ = done.send(());
                    }
                    Close::Reset => {
                        let _ = stream.set_zero_linger();
                        drop(stream);
                        let _ = done.send(());
                        return;
                    }
                }
            }
        }
    }
}
