//! The streaming phase: the HTTP adapter's streamed GET against a real
//! loopback hyper origin that sends one chunk, then waits for the case to
//! say whether the body ends, breaks (the origin aborts the connection) or
//! never ends. Real sockets, so real time with bounded waits.

use std::convert::Infallible;
use std::future::Future as _;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use hyper::body::{Body, Bytes, Frame};
use hyper_util::rt::TokioIo;
use provider_pools_adapters::http_origin::{call_streaming, BodyLimits, HttpDialer, HttpRequest};
use tokio::net::TcpListener;
use tokio::sync::{oneshot, Notify};

use crate::support::{bounded, eventually, installation, provider, task, tcp_config};
use crate::{drive, within_limits, Behaviour, Call, Outcome, LIMITS};

/// What the origin does after its first chunk.
#[derive(Debug, Clone, Copy)]
enum Next {
    /// Sends the last chunk and ends the body.
    End,
    /// Fails the body: hyper aborts the connection mid-body.
    Abort,
}

/// A body of one chunk, then whatever the case commands.
struct Scripted {
    first: Option<Bytes>,
    next: Option<oneshot::Receiver<Next>>,
    last: Option<Bytes>,
    wrote: Arc<Notify>,
}

impl Body for Scripted {
    type Data = Bytes;
    type Error = std::io::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, std::io::Error>>> {
        if let Some(first) = self.first.take() {
            return Poll::Ready(Some(Ok(Frame::data(first))));
        }
        if let Some(next) = self.next.as_mut() {
            let command = match Pin::new(next).poll(cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(command) => command.unwrap_or(Next::End),
            };
            self.next = None;
            self.wrote.notify_one();
            if let Next::Abort = command {
                return Poll::Ready(Some(Err(std::io::Error::other("aborted by the case"))));
            }
        }
        Poll::Ready(self.last.take().map(|last| Ok(Frame::data(last))))
    }
}

/// A one-connection origin; its connection's end is observable.
struct Origin {
    target: String,
    next: Option<oneshot::Sender<Next>>,
    /// The origin acted on the command.
    wrote: Arc<Notify>,
    /// The connection is over (client gone, or aborted).
    ended: Arc<AtomicBool>,
}

impl Origin {
    async fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let target = format!("http://{}", listener.local_addr().expect("addr"));
        let (next_tx, next_rx) = oneshot::channel();
        let wrote = Arc::new(Notify::new());
        let ended = Arc::new(AtomicBool::new(false));
        let (wrote_by, ended_by) = (Arc::clone(&wrote), Arc::clone(&ended));
        task(async move {
            let Ok((stream, _)) = listener.accept().await else {
                return;
            };
            let body = std::sync::Mutex::new(Some(Scripted {
                first: Some(Bytes::from_static(b"first")),
                next: Some(next_rx),
                last: Some(Bytes::from_static(b"last")),
                wrote: wrote_by,
            }));
            let service = hyper::service::service_fn(move |_req| {
                let body = body.lock().expect("body").take();
                let body = body.expect("one request per connection");
                async move { Ok::<_, Infallible>(hyper::Response::new(body)) }
            });
            let _ = hyper::server::conn::http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service)
                .await;
            ended_by.store(true, Ordering::SeqCst);
        });
        Self {
            target,
            next: Some(next_tx),
            wrote,
            ended,
        }
    }

    fn command(&mut self, next: Next) {
        if let Some(tx) = self.next.take() {
            // Gone already if the client closed first.
            let _ = tx.send(next);
        }
    }
}

fn get(path: &str) -> HttpRequest {
    HttpRequest {
        method: hyper::Method::GET,
        target: provider_pools_adapters::http_origin::RequestTarget::parse(path).expect("target"),
        headers: hyper::HeaderMap::new(),
        body: Bytes::new(),
        replayable: false,
    }
}

pub(crate) async fn streaming(behaviour: Behaviour) -> Outcome {
    let mut origin = Origin::start().await;
    let pools = crate::support::start(LIMITS).await;
    let receipt = pools
        .install(installation(
            &provider("web"),
            0,
            b"k",
            tcp_config("web", std::slice::from_ref(&origin.target)),
        ))
        .await
        .expect("install");
    assert_eq!(receipt.slots.len(), 1);
    let baseline = pools.snapshot();
    let first = Arc::new(AtomicBool::new(false));
    let mut call: Call = Box::pin({
        let (pools, receipt, first) = (pools.clone(), receipt.clone(), Arc::clone(&first));
        async move {
            let running = crate::support::running(&pools, &receipt, "t", 1).await;
            let dialer = HttpDialer::new(pools.clone());
            let limits = BodyLimits::default();
            let Ok(mut stream) = call_streaming(&pools, &running, &dialer, get("/s"), limits).await
            else {
                return;
            };
            drop(running);
            while let Some(chunk) = stream.next_chunk().await {
                if chunk.is_err() {
                    return;
                }
                first.store(true, Ordering::SeqCst);
            }
        }
    });
    drive(&pools, &mut call, "streaming", |s| {
        first.load(Ordering::SeqCst) && s.connections.active == 1 && s.drivers == 1
    })
    .await?;
    match behaviour {
        Behaviour::Ok | Behaviour::Error => {
            let next = if behaviour == Behaviour::Ok {
                Next::End
            } else {
                Next::Abort
            };
            origin.command(next);
            bounded("the origin acts", origin.wrote.notified()).await;
            if behaviour == Behaviour::Error {
                eventually("the origin aborts", || origin.ended.load(Ordering::SeqCst)).await;
            }
        }
        _ => {}
    }
    within_limits(&pools.snapshot(), "at the drop instant")?;
    drop(call);
    match behaviour {
        Behaviour::Slow => {
            tokio::time::sleep(Duration::from_millis(50)).await;
            origin.command(Next::End);
        }
        Behaviour::SlowError => {
            tokio::time::sleep(Duration::from_millis(50)).await;
            origin.command(Next::Abort);
        }
        _ => {}
    }
    let returned = tokio::time::timeout(crate::support::WAIT, async {
        loop {
            let now = pools.snapshot();
            within_limits(&now, "while returning")?;
            if now == baseline && origin.ended.load(Ordering::SeqCst) {
                return Ok::<_, String>(());
            }
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
    })
    .await;
    match returned {
        Ok(result) => result?,
        Err(_) => {
            return Err(format!(
                "not returned within {:?} (origin connection ended: {}):\n expected {baseline:?}\n      got {:?}",
                crate::support::WAIT,
                origin.ended.load(Ordering::SeqCst),
                pools.snapshot()
            ))
        }
    }
    crate::shuts_down_clean(&pools).await
}
