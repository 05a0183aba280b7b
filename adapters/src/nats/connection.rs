//! [`NatsConnection`]: one async-nats client, its JetStream context, and
//! the driver that accounts for the client's internal tasks.
//!
//! async-nats runs each client on tasks it spawns itself (`tokio::spawn`):
//! the connection handler that owns the socket, the event task that runs
//! the event callback, and the JetStream context's acker. The pools cannot
//! own those tasks' join handles, so the dial starts one driver per client
//! before it connects (`ProviderPools::spawn_driver`, no worker slot) and
//! that driver stands for them: it lives until the client's event callback
//! is dropped — after the connection handler has ended and dropped its
//! socket — and holds the connection's charges until then.
//!
//! Invariants:
//! - The client connects once: no reconnect, no discovered servers.
//! - A close ([`Cleanup`]) drains the client — it flushes what was sent and
//!   stops once the server answers its last ping — and, when the server
//!   does not answer within [`DRAIN_WAIT`], drops every client handle,
//!   which stops the connection handler at once. Either way it waits until
//!   the client's tasks are gone before the connection's charges are
//!   released; a close that does not see them gone within [`STOP_WAIT`]
//!   more fails and keeps everything charged.
//! - A plain drop drops every client handle, so the connection handler
//!   stops; its worker slot stays charged until it has.
//! - A client that reported any fault is never parked.

use std::fmt;
use std::time::Duration;

use async_nats::connection::State;
use async_nats::jetstream::{self, kv};
use async_nats::Client;
use provider_pools_actors::{Cleanup, CloseFailure, JobHandle};
use tokio::sync::watch;

use crate::nats::error::{Missing, NatsError};
use crate::nats::health::{self, Health};

/// Longest wait for a drained client to stop on its own.
pub const DRAIN_WAIT: Duration = Duration::from_secs(2);
/// Longest further wait, after every client handle was dropped, for the
/// client's tasks to end (a connect attempt in progress ends within the
/// client's connect timeout).
pub const STOP_WAIT: Duration = Duration::from_secs(3);

/// Every handle on one client: dropping them all stops its connection
/// handler.
struct Handles {
    kv: Option<(String, kv::Store)>,
    jetstream: jetstream::Context,
    client: Client,
}

/// One owned NATS client.
///
/// Field order is drop order: every client handle goes first, which ends
/// the client's connection handler; the driver ends once it has.
pub struct NatsConnection {
    handles: Option<Handles>,
    health: watch::Receiver<Health>,
    _driver: JobHandle<()>,
}

impl NatsConnection {
    pub(crate) fn new(
        client: Client,
        jetstream: jetstream::Context,
        health: watch::Receiver<Health>,
        driver: JobHandle<()>,
    ) -> Self {
        Self {
            handles: Some(Handles {
                kv: None,
                jetstream,
                client,
            }),
            health,
            _driver: driver,
        }
    }

    fn handles(&self) -> Result<&Handles, NatsError> {
        self.handles.as_ref().ok_or_else(closed)
    }

    pub(crate) fn client(&self) -> Result<&Client, NatsError> {
        self.handles().map(|h| &h.client)
    }

    pub(crate) fn jetstream(&self) -> Result<&jetstream::Context, NatsError> {
        self.handles().map(|h| &h.jetstream)
    }

    /// A receiver of the client's health, for racing an operation against
    /// the first fault.
    pub(crate) fn health(&self) -> watch::Receiver<Health> {
        self.health.clone()
    }

    /// The key-value store of `bucket`, looked up once per connection.
    pub(crate) async fn kv(&mut self, bucket: &str) -> Result<&kv::Store, NatsError> {
        let handles = self.handles.as_mut().ok_or_else(closed)?;
        if handles.kv.as_ref().is_none_or(|(name, _)| name != bucket) {
            let store = handles
                .jetstream
                .get_key_value(bucket)
                .await
                .map_err(bucket_error)?;
            handles.kv = Some((bucket.to_owned(), store));
        }
        match &handles.kv {
            Some((_, store)) => Ok(store),
            None => Err(NatsError::NotFound(Missing::Bucket)),
        }
    }

    /// True while the client is connected, has seen no fault and its tasks
    /// run: the only state in which it may be parked or reused.
    pub fn is_reusable(&self) -> bool {
        *self.health.borrow() == Health::Healthy
            && self.health.has_changed().is_ok()
            && self
                .handles
                .as_ref()
                .is_some_and(|h| h.client.connection_state() == State::Connected)
    }
}

fn closed() -> NatsError {
    NatsError::protocol("using the client", "the client is closed")
}

fn bucket_error(e: async_nats::jetstream::context::KeyValueError) -> NatsError {
    use async_nats::jetstream::context::{GetStreamError, GetStreamErrorKind, KeyValueErrorKind};
    use async_nats::jetstream::ErrorCode;
    let missing = std::error::Error::source(&e)
        .and_then(|source| source.downcast_ref::<GetStreamError>())
        .is_some_and(|source| {
            matches!(source.kind(), GetStreamErrorKind::JetStream(js) if js.error_code() == ErrorCode::STREAM_NOT_FOUND)
        });
    match e.kind() {
        _ if missing => NatsError::NotFound(Missing::Bucket),
        KeyValueErrorKind::InvalidStoreName => NatsError::Config {
            setting: crate::nats::settings::KV_BUCKET_SETTING,
            reason: "names no key-value bucket",
        },
        _ => NatsError::protocol("opening the key-value bucket", e),
    }
}

impl fmt::Debug for NatsConnection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("NatsConnection")
            .field("health", &*self.health.borrow())
            .field(
                "state",
                &self.handles.as_ref().map(|h| h.client.connection_state()),
            )
            .finish_non_exhaustive()
    }
}

impl Cleanup for NatsConnection {
    /// Drains the client and waits for it to stop; past [`DRAIN_WAIT`]
    /// drops its handles to stop it, and waits [`STOP_WAIT`] more.
    async fn close(mut self) -> Result<(), CloseFailure<Self>> {
        let drained = tokio::time::timeout(DRAIN_WAIT, async {
            if let Some(handles) = &self.handles {
                // An error means the handler has stopped already.
                let _ = handles.client.drain().await;
            }
            health::gone(self.health.clone()).await;
        })
        .await;
        if drained.is_err() {
            // The server did not answer the drain: stop the client.
            self.handles = None;
            let stopped = tokio::time::timeout(STOP_WAIT, health::gone(self.health.clone())).await;
            if stopped.is_err() {
                return Err(CloseFailure::new(
                    self,
                    "the nats client's tasks did not end after its handles were dropped",
                ));
            }
        }
        drop(self);
        Ok(())
    }
}
