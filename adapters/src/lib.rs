//! Protocol adapters for provider-pools.
//!
//! One module per protocol, each behind a cargo feature of the same name
//! but the first: `http_origin` (feature `http`: buffered and streaming
//! HTTP/1.1 and HTTP/2 to approved origins on owned connections, and their
//! webhooks' ingress), `blob` (local blobs), `s3`, `vault` (KV-v2 and transit), `nats`
//! (JetStream) and `secret` (local secrets); all six are built. An adapter
//! knows its protocol and nothing of scheduling: it validates its
//! configuration, installs it through
//! [`provider_pools_actors::ProviderPools::install`], and owns the real
//! resources it is granted. What each one pools, charges and destroys, its
//! settings, limits and errors, are in its own module doc.
//!
//! Invariants:
//! - An adapter dials in the request's own task, through `reserve_connection`.
//! - It owns what it dials through `PooledConnection<T>`, and parks only what
//!   it has verified reusable.
//! - It never retries.
//! - Every dialer (HTTP/1.1, HTTP/2, NATS) is built on one `DialerCore`
//!   (`dialer_core.rs`): the pools, the dial count its clones share, and the
//!   reservation of the provider job that owns a connection's driver (or a
//!   client's tasks) before anything is dialed, `Saturated` when no worker
//!   slot is free. Each dialer keeps only what its protocol connects to and
//!   how it handshakes.
//!
//! # Real origins: closures, delivery, charges
//!
//! - **The driver, not a checkout, learns of a close.** The engine knows no
//!   protocol, so the notice is generic (`close_watch`): whoever owns the
//!   socket fires it; the stash evicts in the firing task, outside its lock
//!   (a park that races the notice evicts after its push). A polled
//!   `is_closed` at checkout would let dead entries sit charged and counted
//!   idle until someone looked.
//! - **Connection selection is not a retry.** `try_send_request` hands the
//!   request back when the connection closed before its dispatcher took it,
//!   so no byte left the process; only then does delivery take another idle
//!   connection or dial, within the deadline. A fresh connection that fails
//!   so ends the call (`Sent::No`); a request a connection took is never sent
//!   again, unless the caller marked it replayable and a reused connection
//!   lost it before any byte of an answer: then once more, on a dialed
//!   connection (decision record 0080).
//! - **`Sent` is a method, not a variant.** `HttpError::was_sent()` answers
//!   `No`/`Maybe`/`Yes` for every variant; `Protocol` and `Timeout` carry
//!   their own (`Timeout` learns it from the exchange's `Progress`).
//! - **Charge the allocation, not the length.** `OutputBuffer` charges each
//!   growth of its `Vec` before it grows (first piece exact, then doubling,
//!   falling back to exact growth when doubling does not fit), so the bytes
//!   held never exceed the charge; an announced `Content-Length` only checks
//!   the bound. S3 charges the SDK's buffered frames by sharing each frame
//!   (`Bytes`), not copying it.
//!
//! # Bodies and stale connections in HTTP, Vault and S3
//!
//! - **One delivery for every adapter on `HttpConnection`s.** The checkout
//!   and unsent hand-back live in `http_origin/delivery.rs` and are used by buffered
//!   and streaming HTTP, Vault's exchange and S3's `PoolConnector`, so a
//!   stale parked connection fails no request of any of them. It is generic
//!   over the dialer only so that its unit test can hold a driver
//!   (`delivery/tests.rs`); every adapter passes `HttpDialer`.
//! - **A failure after the deadline is the deadline's.** Delivery sets the
//!   request's deadline on the connection it takes, and the driver closes a
//!   connection in use at that deadline; a taken request that fails once it
//!   passed is `Undeliverable::Expired` (a timeout), and so is any body (HTTP
//!   buffered or streamed, Vault, S3) that fails after it.
//! - **A streamed chunk that cannot be charged ends the stream.** HTTP's
//!   `ResponseStream` and S3's `S3Reader` answer `Staging` once and end,
//!   never reading on past the lost chunk; the connection is destroyed, as
//!   for every buffered body.

#![forbid(unsafe_code)]
#![warn(missing_docs, unreachable_pub, missing_debug_implementations)]

#[cfg(any(feature = "http", feature = "nats"))]
mod authority;
#[cfg(feature = "blob")]
pub mod blob;
#[cfg(any(feature = "http", feature = "nats"))]
mod dialer_core;
#[cfg(any(feature = "blob", feature = "s3", feature = "secret"))]
mod guest_key;
#[cfg(feature = "http")]
pub mod http_origin;
mod limits;
#[cfg(feature = "nats")]
pub mod nats;
#[cfg(feature = "s3")]
pub mod s3;
#[cfg(feature = "secret")]
pub mod secret;
#[cfg(any(feature = "http", feature = "nats"))]
mod tls_roots;
#[cfg(feature = "vault")]
pub mod vault;

pub use limits::LimitError;
