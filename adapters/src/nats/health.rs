//! A client's health, as its event callback reports it, and the signal
//! that its internal tasks are gone.
//!
//! async-nats tells a client's owner about its connection only through an
//! event callback, run by one of the client's own tasks. The callback here
//! owns the sending half of a watch channel:
//! - every fault (a disconnect, a server error, a permissions violation, a
//!   slow consumer, lame-duck mode, a drain or close) is recorded; the
//!   first one is kept;
//! - the sending half is dropped only when the client's event task ends,
//!   which happens after its connection handler has ended and dropped its
//!   socket. A closed channel therefore means the client is gone.
//!
//! Invariants:
//! - A client whose health is not [`Health::Healthy`] is never parked.
//! - [`gone`] returns only once the client's tasks have ended.

use std::fmt;

use async_nats::{Event, ServerError};
use tokio::sync::watch;

/// What a client has seen so far.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Health {
    /// Nothing went wrong.
    Healthy,
    /// The first fault seen.
    Faulted(Fault),
}

/// A fault that makes a client unfit for reuse.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Fault {
    /// The server refused an operation (a permissions violation) or the
    /// credential (an authorization violation).
    Denied,
    /// The connection was lost.
    Disconnected,
    /// The server reported another error.
    ServerError,
    /// The client dropped messages a subscription could not take.
    SlowConsumer,
    /// The server is shutting down.
    LameDuck,
    /// The client reported an error of its own.
    ClientError,
    /// The client is draining, closed, or gone.
    Closed,
}

impl fmt::Display for Fault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Denied => "the server denied the operation",
            Self::Disconnected => "the connection was lost",
            Self::ServerError => "the server reported an error",
            Self::SlowConsumer => "the client dropped messages of a slow subscription",
            Self::LameDuck => "the server is shutting down",
            Self::ClientError => "the client reported an error",
            Self::Closed => "the client is closed",
        })
    }
}

/// The fault an event reports, if any.
fn fault_of(event: &Event) -> Option<Fault> {
    match event {
        Event::Connected => None,
        Event::Disconnected => Some(Fault::Disconnected),
        Event::LameDuckMode => Some(Fault::LameDuck),
        Event::Draining | Event::Closed => Some(Fault::Closed),
        Event::SlowConsumer(_) => Some(Fault::SlowConsumer),
        Event::ServerError(ServerError::AuthorizationViolation) => Some(Fault::Denied),
        Event::ServerError(ServerError::Other(text))
            if text.to_ascii_lowercase().contains("permissions violation") =>
        {
            Some(Fault::Denied)
        }
        Event::ServerError(_) => Some(Fault::ServerError),
        Event::ClientError(_) => Some(Fault::ClientError),
    }
}

/// The event callback of one client: records its first fault in `health`.
/// Dropping the callback (its client's tasks ended) closes the channel.
pub(crate) fn recorder(
    health: watch::Sender<Health>,
) -> impl Fn(Event) -> std::future::Ready<()> + Send + Sync + 'static {
    move |event| {
        if let Some(fault) = fault_of(&event) {
            health.send_if_modified(|current| {
                let first = *current == Health::Healthy;
                if first {
                    *current = Health::Faulted(fault);
                }
                first
            });
        }
        std::future::ready(())
    }
}

/// Waits for the first fault; a gone client counts as [`Fault::Closed`].
///
/// Cancel safe: dropping the future loses nothing.
pub(crate) async fn fault(health: &mut watch::Receiver<Health>) -> Fault {
    match health.wait_for(|h| *h != Health::Healthy).await {
        Ok(seen) => match *seen {
            Health::Faulted(fault) => fault,
            Health::Healthy => Fault::Closed,
        },
        Err(_) => Fault::Closed,
    }
}

/// Waits until the client's tasks are gone (the callback was dropped).
///
/// Cancel safe: dropping the future loses nothing.
pub(crate) async fn gone(mut health: watch::Receiver<Health>) {
    while health.changed().await.is_ok() {}
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_first_fault_is_kept_and_a_dropped_callback_means_gone() {
        let (tx, rx) = watch::channel(Health::Healthy);
        let callback = recorder(tx);
        callback(Event::Connected).await;
        assert_eq!(*rx.borrow(), Health::Healthy);
        callback(Event::ServerError(ServerError::Other(
            "Permissions Violation for Publish to \"x\"".to_owned(),
        )))
        .await;
        callback(Event::Disconnected).await;
        assert_eq!(*rx.borrow(), Health::Faulted(Fault::Denied));
        assert_eq!(fault(&mut rx.clone()).await, Fault::Denied);
        let waiting = gone(rx.clone());
        drop(callback);
        waiting.await;
    }
}
