//! A dialer whose connections' drivers a test can hold: plain TCP and
//! hyper's handshake like `HttpDialer`, each driver behind its own
//! [`Gate`].

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};

use hyper::client::conn::http1;
use hyper_util::rt::TokioIo;
use provider_pools_actors::{
    close_watch, DialError, DialErrorKind, DialTarget, Dialer, ProviderPools,
};
use tokio::net::TcpStream;

use crate::http_origin::dialer::HttpConnection;

/// Holds a connection's driver while closed: it is not polled (and so
/// reads nothing) until opened. The driver is polled under the lock, so
/// once [`Gate::close`] returns no poll is under way.
#[derive(Default)]
pub(super) struct Gate(Mutex<Holding>);

#[derive(Default)]
struct Holding {
    closed: bool,
    waker: Option<Waker>,
}

impl Gate {
    pub(super) fn close(&self) {
        self.0.lock().expect("gate").closed = true;
    }

    pub(super) fn open(&self) {
        let waker = {
            let mut holding = self.0.lock().expect("gate");
            holding.closed = false;
            holding.waker.take()
        };
        if let Some(waker) = waker {
            waker.wake();
        }
    }
}

struct Held<F> {
    inner: Pin<Box<F>>,
    gate: Arc<Gate>,
}

impl<F: Future> Future for Held<F> {
    type Output = F::Output;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let this = &mut *self;
        let mut holding = this.gate.0.lock().expect("gate");
        if holding.closed {
            holding.waker = Some(cx.waker().clone());
            return Poll::Pending;
        }
        this.inner.as_mut().poll(cx)
    }
}

/// Dials plain TCP like [`crate::http_origin::HttpDialer`], with each
/// connection's driver behind its own [`Gate`].
#[derive(Clone)]
pub(super) struct GatedDialer {
    pub(super) pools: ProviderPools,
    pub(super) gates: Arc<Mutex<Vec<Arc<Gate>>>>,
}

impl GatedDialer {
    pub(super) fn gate(&self, dial: usize) -> Arc<Gate> {
        Arc::clone(&self.gates.lock().expect("gates")[dial])
    }

    pub(super) fn dials(&self) -> usize {
        self.gates.lock().expect("gates").len()
    }
}

impl Dialer for GatedDialer {
    type Conn = HttpConnection;

    async fn dial(&self, target: DialTarget<'_>) -> Result<HttpConnection, DialError> {
        let failed =
            |e: &dyn std::fmt::Display| DialError::new(DialErrorKind::Other, e.to_string());
        let address = target.target.trim_start_matches("http://");
        let stream = TcpStream::connect(address).await.map_err(|e| failed(&e))?;
        let (sender, connection) = http1::handshake(TokioIo::new(stream))
            .await
            .map_err(|e| failed(&e))?;
        let gate = Arc::new(Gate::default());
        self.gates.lock().expect("gates").push(Arc::clone(&gate));
        let (watch, notifier) = close_watch();
        let driver = self
            .pools
            .spawn(move || async move {
                let _ = Held {
                    inner: Box::pin(connection),
                    gate,
                }
                .await;
                notifier.closed();
            })
            .await
            .map_err(|e| failed(&e))?;
        Ok(HttpConnection::from_parts(sender, watch, driver))
    }
}
