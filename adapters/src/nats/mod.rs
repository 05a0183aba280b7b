//! NATS JetStream on clients the pools own: publish with acknowledgement,
//! pull consumption with explicit settlement, key-value get and put, and a
//! host-driven ingress loop that admits each delivery as an
//! [`IngressRequest`](provider_pools_actors::IngressRequest).
//!
//! A slot's target is its approved server, `nats://host[:port]` or
//! `tls://host[:port]` ([`NatsTarget`]). Provider settings scope what a
//! guest may name: `subject_prefix` ([`SUBJECT_PREFIX_SETTING`]) is put
//! before every guest [`Subject`], `stream` ([`STREAM_SETTING`]) is the
//! stream consumers are read from, `kv_bucket` ([`KV_BUCKET_SETTING`]) the
//! bucket; `auth` ([`AUTH_SETTING`]) says how the credential
//! authenticates (a token by default, or `user:password`); `ca_file`
//! ([`CA_FILE_SETTING`]) replaces the web PKI roots for `tls://`.
//!
//! The pooled resource is a [`NatsConnection`]: one async-nats client, its
//! JetStream context, and the provider job that accounts for the client's
//! internal tasks (see [`NatsConnection`]).
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

mod auth;
mod connection;
mod dialer;
mod error;
mod fetch;
mod health;
mod held;
mod ingress;
mod kv;
mod names;
mod publish;
mod target;

pub use auth::AUTH_SETTING;
pub use connection::{NatsConnection, DRAIN_WAIT, STOP_WAIT};
pub use dialer::NatsDialer;
pub use error::{Missing, NatsError};
pub use fetch::{fetch, Delivery, FetchedMessage, MAX_FETCH};
pub use ingress::{
    ingress_step, EventOutcome, Handling, IngressConsumer, IngressHost, IngressRoute, Settlement,
};
pub use kv::{kv_get, kv_put, KvEntry};
pub use names::{
    ConsumerName, KvKey, NameError, Subject, KV_BUCKET_SETTING, MAX_NAME, MAX_SUBJECT,
    STREAM_SETTING, SUBJECT_PREFIX_SETTING,
};
pub use publish::{publish, PublishAck};
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
