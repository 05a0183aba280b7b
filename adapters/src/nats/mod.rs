//! NATS JetStream on clients the pools own: publish with acknowledgement
//! (awaits the stream's ack), pull `fetch` with explicit acknowledgement
//! (`ack`/`nak`/`term`), key-value get and put (`kv_get`, `kv_put`), and a
//! host-driven ingress loop (`ingress_step`) that admits each delivery as
//! an [`IngressRequest`](provider_pools_actors::IngressRequest).
//!
//! A slot's target is its approved server, `nats://host[:port]` or
//! `tls://host[:port]` ([`NatsTarget`]; port 4222 by default; no userinfo,
//! path or query). The pooled resource is a [`NatsConnection`]: one
//! async-nats 0.51 client (its connection handler owns the socket), its
//! JetStream context, and the `JobHandle` of one provider job that stands
//! for the client's own tasks (see [`NatsConnection`]).
//!
//! Invariants:
//! - The client is charged as one connection and its tasks as one provider
//!   job, both reserved before the TCP connect.
//! - A client connects once: no reconnect, no other server.
//! - Payloads and values are bounded; a refused one dials nothing.
//! - A connection is parked only after a successful operation on a healthy
//!   client; every other end closes it through the cleanup actor, which
//!   drains the client and waits until it is gone before the charges are
//!   released.
//! - The credential never appears in an error, a log line or `Debug`.
//! - Nothing is retried.
//! - Nothing is acknowledged that was not handled, and a failed acknowledgement
//!   leaves the message to the ack wait (at least once, never lost).
//!
//! # Settings and credential
//!
//! Provider settings scope what a guest may name: `subject_prefix`
//! ([`SUBJECT_PREFIX_SETTING`]) is put before every guest [`Subject`]
//! (relative, no wildcards), `stream` ([`STREAM_SETTING`]) is the stream
//! `fetch` reads its durable pull consumers from, `kv_bucket`
//! ([`KV_BUCKET_SETTING`]) the key-value bucket. `auth` ([`AUTH_SETTING`])
//! says how the credential authenticates: the credential bytes are a token
//! (`auth = token`, the default; empty bytes mean no authentication) or
//! `user:password` (`auth = user_password`); the client's auth callback
//! holds them in a zeroizing buffer and hands them out for the first
//! connect only. `tls://` runs rustls on ring with the shared `ca_file`
//! rules ([`CA_FILE_SETTING`] replaces the web PKI roots; `tls_roots.rs`
//! over the `tls-roots/` crate).
//!
//! # The client's tasks and faults
//!
//! async-nats spawns its own tasks with `tokio::spawn` — the connection
//! handler, the event task and the JetStream acker — so the pools cannot
//! hold their join handles: the provider job reserved per client is their
//! accounting owner. It waits on a watch channel whose sender lives in the
//! client's event callback; async-nats drops that callback when its event
//! task ends, which happens after the connection handler has ended and
//! dropped its socket, so the job's end (and the close's wait) means the
//! socket is gone. (The acker ends when its context is dropped and holds no
//! socket.) The same callback records the client's first fault — a
//! disconnect, a permissions violation, a server or client error, a slow
//! consumer, lame-duck mode — and operations race that fault and the
//! request's deadline; a permissions violation answers `NatsError::Denied`
//! at once instead of waiting for a reply that never comes. A refused
//! credential is a `Handshake` dial error with a fixed message (the client
//! backs off), reported as `Denied`; a refused certificate is a `Handshake`
//! dial error too.
//!
//! # Fetched batches
//!
//! A fetched batch keeps its connection checked out (active, charged,
//! holding the request) until every message of it is acknowledged or dropped;
//! acknowledgements are confirmed by the server (a request to the message's
//! reply subject), and a failed or abandoned one closes the connection
//! instead of parking it. A message dropped unacknowledged is redelivered after
//! the consumer's ack wait.
//!
//! # Limits
//!
//! Payloads (`NatsLimits::max_payload`) and values (`max_value`) over the
//! limit are refused before any dial; a batch over `max_batch_bytes` is
//! refused after it arrived. Every client queue is bounded: 256 commands,
//! 1,024 messages per subscription (a fetch asks for at most `MAX_FETCH` =
//! 512), 256 publish acks in flight.
//!
//! # Pooled, charged, destroyed
//!
//! - **Charged:** the node's and the client's connection charges before the
//!   dial (`reserve_connection`), shared with the client's driver (started
//!   before the TCP connect; no `provider_workers` slot), so they return
//!   only once the client's tasks have ended, idle or active; each fetched payload and
//!   each value read as the request's `StagedOutput`.
//! - **Parked** only after a successful operation (or a not-found or
//!   too-large answer) on a client that reported no fault; any error, fault,
//!   deadline or dropped future closes it.
//! - **Destroyed:** a close through the cleanup actor (`Cleanup`): `drain`,
//!   then wait until the client's tasks are gone; if the server does not
//!   answer the drain within `DRAIN_WAIT` (2 s), drop every client handle,
//!   which stops the handler at once, and wait `STOP_WAIT` (3 s) more — only
//!   then do the connection's charges and its request return; a close that
//!   never sees the tasks end fails and stays charged.
//!
//! # Ingress
//!
//! `ingress_step`: one turn of a delivery loop the host drives — the
//! library starts no task or timer. The turn fetches a batch with the
//! host's own consumer request, then for every delivery at once:
//! `IngressHost::route` names the plan (tenant), provider and slot (`None`:
//! the message is terminated); `ProviderPools::ingress` takes an
//! `IngressRequest` under that tenant's limits; `IngressHost::handle` runs;
//! the message is acknowledged only after the handler returned `Ok`, and
//! the `IngressRequest` is dropped only after the acknowledgement. An event
//! the pools refused (capacity, busy, deadline, revoked) or whose handler
//! failed is `nak`ed with the host's delay, so JetStream delivers it again.

mod auth;
mod checkout;
mod connection;
mod dialer;
mod error;
mod fetch;
mod health;
mod ingress;
mod kv;
mod names;
mod publish;
mod settings;
mod target;

pub use auth::AUTH_SETTING;
pub use connection::{NatsConnection, DRAIN_WAIT, STOP_WAIT};
pub use dialer::NatsDialer;
pub use error::{Missing, NatsError};
pub use fetch::{fetch, Delivery, FetchedMessage, MAX_FETCH};
pub use ingress::{
    ingress_step, Acknowledgement, EventOutcome, Handling, IngressConsumer, IngressHost,
    IngressRoute,
};
pub use kv::{kv_get, kv_put, KvEntry};
pub use names::{ConsumerName, KvKey, NatsNameError, Subject, MAX_NAME, MAX_SUBJECT};
pub use publish::{publish, PublishAck};
pub use settings::{KV_BUCKET_SETTING, STREAM_SETTING, SUBJECT_PREFIX_SETTING};
pub use target::{NatsTarget, NatsTargetError, DEFAULT_PORT};

pub use crate::tls_roots::CA_FILE_SETTING;

/// Size limits of NATS operations, in bytes.
///
/// Each bound is at most [`NatsLimits::CEILING`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NatsLimits {
    /// Largest payload published.
    pub max_payload: usize,
    /// Largest key-value value written or read.
    pub max_value: usize,
    /// Most payload bytes one fetch returns.
    pub max_batch_bytes: usize,
}

impl NatsLimits {
    /// The largest bounds: 64 MiB payloads and values (the server's own
    /// `max_payload` ceiling), 256 MiB per fetched batch.
    pub const CEILING: Self = Self {
        max_payload: 64 << 20,
        max_value: 64 << 20,
        max_batch_bytes: 256 << 20,
    };

    /// Refuses a bound above [`Self::CEILING`]; every operation calls it
    /// before any I/O.
    ///
    /// # Errors
    ///
    /// [`crate::LimitError`] naming the field.
    pub fn check(&self) -> Result<(), crate::LimitError> {
        crate::limits::at_most(
            "max_payload",
            self.max_payload,
            Self::CEILING.max_payload as u64,
        )?;
        crate::limits::at_most("max_value", self.max_value, Self::CEILING.max_value as u64)?;
        crate::limits::at_most(
            "max_batch_bytes",
            self.max_batch_bytes,
            Self::CEILING.max_batch_bytes as u64,
        )?;
        Ok(())
    }
}

impl Default for NatsLimits {
    /// 1 MiB payloads and values (the server's default `max_payload`),
    /// 4 MiB per fetched batch.
    fn default() -> Self {
        Self {
            max_payload: 1 << 20,
            max_value: 1 << 20,
            max_batch_bytes: 4 << 20,
        }
    }
}
