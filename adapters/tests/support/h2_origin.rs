//! A loopback HTTP/2 origin on hyper's server, prior knowledge (h2c),
//! with a stream limit of its own. Its counters witness connections
//! accepted, streams served per connection and the most it carried at
//! once; `/slow` holds its answer until [`H2Origin::release`], `/goaway`
//! has its connection shut down gracefully (GOAWAY: streams in flight
//! finish), then answers.

use std::collections::HashMap;
use std::convert::Infallible;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper_util::rt::{TokioExecutor, TokioIo};
use tokio::net::TcpListener;
use tokio::sync::{mpsc, oneshot, Semaphore};

use super::task;

#[derive(Debug, Default)]
struct Counts {
    accepted: usize,
    /// Streams in flight per connection, and the most at once.
    in_flight: HashMap<usize, usize>,
    most: HashMap<usize, usize>,
    /// (connection, path) of every stream, in arrival order.
    seen: Vec<(usize, String)>,
}

/// A running origin; its tasks end with the test's runtime.
pub(crate) struct H2Origin {
    /// `http://127.0.0.1:PORT`.
    pub(crate) target: String,
    counts: Arc<Mutex<Counts>>,
    slow: Arc<Semaphore>,
}

impl H2Origin {
    /// Starts it, allowing `max_streams` concurrent streams per connection.
    pub(crate) async fn start(max_streams: u32) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let target = format!("http://{}", listener.local_addr().expect("addr"));
        let counts = Arc::new(Mutex::new(Counts::default()));
        let slow = Arc::new(Semaphore::new(0));
        let (c, s) = (Arc::clone(&counts), Arc::clone(&slow));
        task(async move {
            while let Ok((socket, _)) = listener.accept().await {
                let id = {
                    let mut counts = c.lock().expect("counts");
                    counts.accepted += 1;
                    counts.accepted
                };
                task(serve(
                    socket,
                    id,
                    max_streams,
                    Arc::clone(&c),
                    Arc::clone(&s),
                ));
            }
        });
        Self {
            target,
            counts,
            slow,
        }
    }

    /// Lets `n` held `/slow` answers go.
    pub(crate) fn release(&self, n: usize) {
        self.slow.add_permits(n);
    }

    /// TCP connections accepted so far.
    pub(crate) fn accepted(&self) -> usize {
        self.counts.lock().expect("counts").accepted
    }

    /// The most streams connection `id` (from 1) carried at once.
    pub(crate) fn most_at_once(&self, id: usize) -> usize {
        (self.counts.lock().expect("counts").most.get(&id)).map_or(0, |n| *n)
    }

    /// Streams in flight now, over every connection.
    pub(crate) fn in_flight(&self) -> usize {
        self.counts.lock().expect("counts").in_flight.values().sum()
    }

    /// (connection, path) of every stream so far.
    pub(crate) fn seen(&self) -> Vec<(usize, String)> {
        self.counts.lock().expect("counts").seen.clone()
    }
}

/// Serves connection `id` until it ends; `/goaway` shuts it down
/// gracefully once answered.
async fn serve(
    socket: tokio::net::TcpStream,
    id: usize,
    max_streams: u32,
    counts: Arc<Mutex<Counts>>,
    slow: Arc<Semaphore>,
) {
    // `/goaway` asks the connection loop to shut down gracefully and
    // answers once it has: the GOAWAY goes out before the answer.
    let (go_away, mut asked) = mpsc::unbounded_channel::<oneshot::Sender<()>>();
    let service = hyper::service::service_fn(move |request: hyper::Request<Incoming>| {
        let path = request.uri().path().to_owned();
        let (counts, slow, go_away) = (Arc::clone(&counts), Arc::clone(&slow), go_away.clone());
        {
            let mut counts = counts.lock().expect("counts");
            counts.seen.push((id, path.clone()));
            let now = counts.in_flight.entry(id).or_default();
            *now += 1;
            let now = *now;
            let most = counts.most.entry(id).or_default();
            *most = (*most).max(now);
        }
        async move {
            let body: &'static [u8] = match path.as_str() {
                "/slow" => {
                    slow.acquire()
                        .await
                        .expect("the semaphore stays open")
                        .forget();
                    b"slow"
                }
                "/goaway" => {
                    let (done, shut) = oneshot::channel();
                    let _ = go_away.send(done);
                    let _ = shut.await;
                    b"bye"
                }
                _ => b"hello",
            };
            if let Some(now) = counts.lock().expect("counts").in_flight.get_mut(&id) {
                *now -= 1;
            }
            Ok::<_, Infallible>(hyper::Response::new(Full::new(Bytes::from_static(body))))
        }
    });
    let conn = hyper::server::conn::http2::Builder::new(TokioExecutor::new())
        .max_concurrent_streams(max_streams)
        .serve_connection(TokioIo::new(socket), service);
    let mut conn = std::pin::pin!(conn);
    loop {
        tokio::select! {
            _ = conn.as_mut() => return,
            Some(done) = asked.recv() => {
                conn.as_mut().graceful_shutdown();
                let _ = done.send(());
            }
        }
    }
}
