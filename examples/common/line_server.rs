//! A line-protocol origin shared by `examples/custom_adapter.rs` and
//! `examples/supervised_restart.rs`: on loopback, it answers every line with
//! the same line upper-cased, keeps connections open, and counts the
//! connections it accepts (so an example can tell dials from reuse).
//!
//! Not an example by itself: each example includes it with `#[path]`.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufStream};
use tokio::net::TcpListener;

/// The server's `host:port` and its count of accepted connections.
pub(crate) async fn start() -> std::io::Result<(String, Arc<AtomicUsize>)> {
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let origin = listener.local_addr()?.to_string();
    let accepted = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&accepted);
    #[allow(clippy::disallowed_methods, reason = "the examples' own origin server")]
    tokio::spawn(async move {
        while let Ok((socket, _)) = listener.accept().await {
            counter.fetch_add(1, Ordering::SeqCst);
            tokio::spawn(async move {
                let mut stream = BufStream::new(socket);
                let mut line = String::new();
                // Ends at EOF or on an error: the client closed or went away.
                while matches!(stream.read_line(&mut line).await, Ok(n) if n > 0) {
                    let answered = stream.write_all(line.to_uppercase().as_bytes()).await;
                    if answered.is_err() || stream.flush().await.is_err() {
                        break;
                    }
                    line.clear();
                }
            });
        }
    });
    Ok((origin, accepted))
}
