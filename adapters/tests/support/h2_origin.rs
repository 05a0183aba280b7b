//! A loopback HTTP/2 origin on h2's server, prior knowledge (h2c), with a
//! stream limit of its own. Its counters witness connections accepted,
//! streams served per connection and the most it carried at once; `/slow`
//! holds its answer until [`H2Origin::release`], `/goaway` answers then
//! sends GOAWAY (graceful: streams in flight finish), `/refuse` resets its
//! stream with `REFUSED_STREAM`.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::task::Poll;

use bytes::Bytes;
use tokio::net::TcpListener;
use tokio::sync::{mpsc, Semaphore};

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

/// A stream the connection accepted: its request and its responder.
type Accepted = (
    http::Request<h2::RecvStream>,
    h2::server::SendResponse<Bytes>,
);

enum Event {
    GoAway,
    Stream(Option<Result<Box<Accepted>, h2::Error>>),
}

async fn serve(
    socket: tokio::net::TcpStream,
    id: usize,
    max_streams: u32,
    counts: Arc<Mutex<Counts>>,
    slow: Arc<Semaphore>,
) {
    let Ok(mut conn) = h2::server::Builder::new()
        .max_concurrent_streams(max_streams)
        .handshake::<_, Bytes>(socket)
        .await
    else {
        return;
    };
    let (go_away, mut asked) = mpsc::unbounded_channel::<()>();
    loop {
        let event = std::future::poll_fn(|cx| {
            if let Poll::Ready(Some(())) = asked.poll_recv(cx) {
                return Poll::Ready(Event::GoAway);
            }
            conn.poll_accept(cx)
                .map(|accepted| Event::Stream(accepted.map(|r| r.map(Box::new))))
        })
        .await;
        match event {
            Event::GoAway => conn.graceful_shutdown(),
            Event::Stream(Some(Ok(accepted))) => {
                let (request, respond) = *accepted;
                let path = request.uri().path().to_owned();
                {
                    let mut counts = counts.lock().expect("counts");
                    counts.seen.push((id, path.clone()));
                    let now = counts.in_flight.entry(id).or_default();
                    *now += 1;
                    let now = *now;
                    let most = counts.most.entry(id).or_default();
                    *most = (*most).max(now);
                }
                let (counts, slow, go_away) =
                    (Arc::clone(&counts), Arc::clone(&slow), go_away.clone());
                task(async move {
                    answer(&path, respond, &slow, &go_away).await;
                    if let Some(now) = counts.lock().expect("counts").in_flight.get_mut(&id) {
                        *now -= 1;
                    }
                });
            }
            Event::Stream(_) => return,
        }
    }
}

async fn answer(
    path: &str,
    mut respond: h2::server::SendResponse<Bytes>,
    slow: &Semaphore,
    go_away: &mpsc::UnboundedSender<()>,
) {
    if path == "/refuse" {
        respond.send_reset(h2::Reason::REFUSED_STREAM);
        return;
    }
    let body: &'static [u8] = match path {
        "/slow" => {
            slow.acquire()
                .await
                .expect("the semaphore stays open")
                .forget();
            b"slow"
        }
        "/goaway" => b"bye",
        _ => b"hello",
    };
    let head = http::Response::builder()
        .status(200)
        .body(())
        .expect("a response head");
    if let Ok(mut send) = respond.send_response(head, false) {
        let _ = send.send_data(Bytes::from_static(body), true);
    }
    if path == "/goaway" {
        let _ = go_away.send(());
    }
}
