//! HTTP/1.1 and HTTP/2 adapters, buffered and streaming, on connections
//! the pools own.
//!
//! A trusted configuration approves origins (`http://host[:port]` or
//! `https://host[:port]`, one per slot); a guest names a slot and an
//! origin-form target. [`HttpDialer`] opens hyper 1 client connections over
//! tokio TCP — with rustls (ring provider) for `https` — whose drivers run
//! as bounded provider jobs; [`call`] reads a whole response under a cap and
//! charges it, [`call_streaming`] hands the body out chunk by chunk.
//!
//! With the provider setting `http2 = "on"` ([`HTTP2_SETTING`]) a client
//! speaks HTTP/2 (ALPN `h2` for `https`, prior knowledge for `http`), one
//! connection carrying several requests of one tenant (see
//! `http/http2/mod.rs`).
//!
//! Invariants:
//! - No request creates a pool, a client or an origin: the slot's approved
//!   origin is the only host a request reaches, and `Host` is set from it.
//! - Request and response bodies are bounded; a refused request dials
//!   nothing, an oversized response destroys its connection.
//! - A connection is parked only after the whole body was read, both heads
//!   allow keep-alive (HTTP/1.1, no `Connection: close`) and the sender is
//!   ready again; an oversized body, a protocol error, a deadline, a dropped
//!   stream or `Connection: close` destroy it.
//! - The opaque credential binding (setting `auth_header`) is resolved from
//!   the running epoch when the request is built, and marked sensitive; it
//!   never appears in an error or `Debug` output.
//! - The pools never retry: 4xx and 5xx answers pass through unchanged.
//! - A webhook's inbound event keeps its ownership until its
//!   acknowledgement ([`AckBody`]) is written; a refusal answers
//!   [`refusal_status`].
//! - An `https` connection is verified against the approved origin's host;
//!   a failed TLS handshake is a failed dial, and the client backs off.
//!
//! # Origins and TLS
//!
//! A slot's origin must be `http://host[:port]` or `https://host[:port]`
//! (`ApprovedOrigin`; default ports 80 and 443); a guest names only an
//! origin-form `RequestTarget`. `https` runs rustls on the ring provider
//! (given to each configuration; no process default is installed); it trusts the bundled
//! `webpki-roots`, or only the PEM bundle named by the provider setting
//! `ca_file` ([`CA_FILE_SETTING`], an absolute path, read by each dial
//! through `DialTarget::settings`; the reading is the `tls-roots/` crate's,
//! shared with the control plane's transports). An unusable `ca_file` or a
//! failed TLS handshake is a `DialErrorKind::Handshake` dial error whose
//! message names the setting, never the file's contents.
//!
//! # Pooled, charged, destroyed
//!
//! - **Pooled:** `HttpConnection`, one HTTP/1.1 connection — hyper's
//!   `SendRequest` plus the `JobHandle` of its driver, which runs as a
//!   bounded provider job (`ProviderPools::spawn`) owning the TCP socket, or
//!   the rustls session over it for `https`.
//! - **Charged:** the node's and the client's connection charges before the
//!   dial (`reserve_connection`); one `provider_workers` slot for the driver,
//!   reserved before the TCP connect (and any TLS handshake) and held while
//!   the connection lives, idle or active; a buffered body charged chunk by
//!   chunk as it is read (`OutputBuffer`; the first chunk that does not fit
//!   fails the call as `Staging` and destroys the connection), and each
//!   streamed chunk, as the request's `StagedOutput` (metadata bytes,
//!   holding the running owner until dropped).
//! - **Destroyed:** dropping it drops the sender: the driver ends, the socket
//!   closes (the origin reads EOF) and the job is joined. The driver fires
//!   the connection's closure notice when it ends, so a parked connection
//!   the origin closed leaves the stash at once.
//! - A `ResponseStream` holds the connection and a `RunningRequest` clone
//!   until its body ends (then it parks or destroys the connection and
//!   releases the owner) or it is dropped.
//!
//! # In tower
//!
//! `service.rs`, `admission_layer.rs` and `admitted.rs` use the
//! `tower-service` and `tower-layer` traits only: `HttpService` is the
//! buffered adapter as a `Service<http::Request<B>>` bound to one provider's
//! slot; `AdmissionLayer` admits the calls of any inner service. Both take
//! the tenant and the deadlines from the request's `ExecutionPlan` extension
//! (refused `missing_plan` before anything is charged without one), admit,
//! dispatch and start in that order, and answer a response whose body
//! (`StagedBody`, `HeldBody`) holds the running request until it is dropped.
//! Decisions: `poll_ready` of `HttpService` is always ready (admission is
//! the backpressure); the layer claims the inner service's readiness before
//! admission waits (tower's ready-clone rule), and bounds the inner call's
//! head by the plan's deadline (`Timeout`). What the layer does not own is
//! said in its module docs: the inner client's connections, TLS, retries
//! and body sizes. Tests: `adapters/tests/http_tower.rs` (tower-http's
//! set-header layer around the service; hyper-util's pooled client under
//! the layer, against a counting loopback server: at most the running
//! ceiling at once, a light tenant's turns under a flood, release on body
//! drop, timeout).

mod admission_layer;
mod admitted;
mod buffered;
pub(crate) mod delivery;
mod dialer;
mod error;
pub(crate) mod exchange;
mod http2;
mod ingress;
mod origin;
mod service;
mod streaming;
mod tls;

pub use admission_layer::{AdmissionLayer, Admitted, HeldBody};
pub use admitted::ServiceError;
pub use buffered::{call, BufferedResponse};
pub use dialer::{HttpConnection, HttpDialer};
pub use error::{HttpError, ProtocolError, Sent};
pub use exchange::{BodyLimits, HttpRequest, AUTH_HEADER_SETTING};
pub use http2::{
    H2Connection, H2Dialer, H2Stream, DEFAULT_MAX_STREAMS, HTTP2_MAX_STREAMS_SETTING,
    HTTP2_SETTING, MAX_STREAMS_CEILING,
};
pub use ingress::{refusal_status, AckBody};
pub use origin::{ApprovedOrigin, OriginError, RequestTarget, TargetError, MAX_TARGET};
pub use service::{HttpService, StagedBody};
pub use streaming::{call_streaming, ResponseStream};
pub use tls::CA_FILE_SETTING;
