//! HTTP/1.1 and HTTP/2 adapters, buffered and streaming, on connections
//! the pools own.
//!
//! A trusted configuration approves origins (`http://host[:port]` or
//! `https://host[:port]`, one per slot); a guest names a slot and an
//! origin-form target. [`HttpDialer`] opens hyper 1 client connections over
//! tokio TCP — with rustls (ring provider) for `https` — each with its own
//! driver, which holds the connection's charges; [`call`] reads a whole response under a cap and
//! charges it, [`call_streaming`] hands the body out chunk by chunk.
//!
//! With the provider setting `http2 = "on"` ([`HTTP2_SETTING`]) a client
//! speaks HTTP/2 (ALPN `h2` for `https`, prior knowledge for `http`), one
//! connection carrying several requests of one tenant (see
//! `http_origin/http2/mod.rs`).
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
//! - The pools never retry: 4xx and 5xx answers pass through unchanged. A
//!   request the caller marks replayable ([`HttpRequest::replayable`]) is
//!   delivered again, once, on a dialed connection when a reused
//!   connection lost it before any byte of an answer (the keep-alive
//!   race); `HttpService` marks idempotent methods (decision record 0080).
//! - Every response head is bounded (`max_head_bytes`) and charged to its
//!   tenant's metadata share while held.
//! - A parked HTTP/1.1 connection retires at its idle deadline, before an
//!   origin's keep-alive close; none lives past its age or request count.
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
//! # Settings
//!
//! Provider settings of the adapter, each checked before any dial (a value
//! out of range is refused with [`HttpError::Setting`] naming it):
//!
//! | setting | default | range | what it bounds |
//! | --- | --- | --- | --- |
//! | `http2` ([`HTTP2_SETTING`]) | `off` | `on`, `off` | the protocol |
//! | `http2_max_streams` ([`HTTP2_MAX_STREAMS_SETTING`]) | 100 | 1 to 1,000 | streams per HTTP/2 connection (the peer's own limit applies when lower) |
//! | `max_head_bytes` ([`MAX_HEAD_SETTING`]) | 65,536 | 8,192 to 1,048,576 | a response head: hyper's HTTP/1.1 head (`max_header_size`), h2's header list (`max_header_list_size`); over it, [`HttpError::HeadTooLarge`] (one complete HTTP/2 header block over it: `Protocol`, `reading the response head`) |
//! | `idle_timeout_ms` ([`IDLE_TIMEOUT_SETTING`]) | 4,000 | 1 to 3,600,000 | how long an HTTP/1.1 connection stays parked; an origin's `Keep-Alive: timeout=N` shortens it to N − 1 s; the engine's `idle_age` still applies when shorter; a connection with 100 ms or less to idle is not parked |
//! | `max_connection_age_ms` ([`MAX_AGE_SETTING`]) | 600,000 | 1 to 86,400,000 | a connection's life: past it, it is not reused (HTTP/2: it opens no new stream) |
//! | `max_connection_requests` ([`MAX_REQUESTS_SETTING`]) | 10,000 | 1 to 1,000,000 | the requests one connection carries (HTTP/2: its streams) |
//! | `auth_header` ([`AUTH_HEADER_SETTING`]) | unset | a header name, not a reserved one | the header carrying the credential |
//! | `ca_file` ([`CA_FILE_SETTING`]) | unset | an absolute path | the roots `https` trusts |
//!
//! The 4 s idle default sits below the 5 s keep-alive of lighttpd, Apache
//! httpd and Node.js, so a parked connection retires before such an
//! origin closes it. Every dial resolves the origin's host again (the TCP
//! connect takes `host:port`; nothing caches an address), so connections
//! that retire by age or request count move to the name's current
//! addresses (decision record 0081).
//!
//! # Pooled, charged, destroyed
//!
//! - **Pooled:** `HttpConnection`, one HTTP/1.1 connection — hyper's
//!   `SendRequest` plus the `JobHandle` of its driver, the connection's own
//!   task (`ProviderPools::spawn_driver`) owning the TCP socket, or the
//!   rustls session over it for `https`.
//! - **Charged:** the node's and the client's connection charges before the
//!   dial (`reserve_connection`), shared by the connection and its driver:
//!   they return once both are gone (decision record 0063). The driver
//!   takes no `provider_workers` slot; it is started before the TCP connect
//!   (and any TLS handshake) and runs while the connection lives, idle or
//!   active, holding the driver's metadata; a buffered body charged chunk by
//!   chunk as it is read (`OutputBuffer`; the first chunk that does not fit
//!   fails the call as `Staging` and destroys the connection), and each
//!   streamed chunk, as the request's `StagedOutput` (metadata bytes,
//!   holding the running owner until dropped); the response head, as a
//!   `HeldMetadata` charge of its measure (32 bytes, and each field's
//!   name, value and 32 bytes) held with the head (decision record 0082).
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
mod connect;
pub(crate) mod delivery;
mod dialer;
pub(crate) mod error;
pub(crate) mod exchange;
mod expiry;
mod http2;
mod ingress;
mod lifetime;
mod origin;
mod service;
mod settings;
mod streaming;
mod tls;

pub use admission_layer::{AdmissionLayer, Admitted, HeldBody};
pub use admitted::ServiceError;
pub use buffered::{call, BufferedResponse};
pub use dialer::{HttpConnection, HttpDialer};
pub use error::{HttpError, ProtocolError, Sent};
pub use exchange::{BodyLimits, HttpRequest, AUTH_HEADER_SETTING, RESERVED_HEADERS};
pub use http2::{
    H2Connection, H2Dialer, H2Stream, DEFAULT_MAX_STREAMS, HTTP2_MAX_STREAMS_SETTING,
    HTTP2_SETTING, MAX_STREAMS_CEILING,
};
pub use ingress::{refusal_status, AckBody};
pub use origin::{ApprovedOrigin, OriginError, RequestTarget, TargetError, MAX_TARGET};
pub use service::{HttpService, StagedBody};
pub use settings::{
    ConnectionSettings, IDLE_TIMEOUT_SETTING, MAX_AGE_SETTING, MAX_HEAD_SETTING,
    MAX_REQUESTS_SETTING,
};
pub use streaming::{call_streaming, ResponseStream};
pub use tls::CA_FILE_SETTING;
