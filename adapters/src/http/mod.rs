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
//! `https` trusts the bundled web PKI roots, or only the PEM bundle named
//! by the provider setting `ca_file` ([`CA_FILE_SETTING`], an absolute
//! path) when it is set.
//!
//! Invariants:
//! - No request creates a pool, a client or an origin: the slot's approved
//!   origin is the only host a request reaches, and `Host` is set from it.
//! - Request and response bodies are bounded; a refused request dials
//!   nothing, an oversized response destroys its connection.
//! - A connection is parked only after a complete response with keep-alive
//!   allowed by both sides; everything else destroys it.
//! - The opaque credential binding (setting `auth_header`) is resolved from
//!   the running epoch when the request is built, and marked sensitive; it
//!   never appears in an error or `Debug` output.
//! - The pools never retry: 4xx and 5xx answers pass through unchanged.
//! - A webhook's inbound event keeps its ownership until its
//!   acknowledgement ([`AckBody`]) is written; a refusal answers
//!   [`refusal_status`].
//! - An `https` connection is verified against the approved origin's host;
//!   a failed TLS handshake is a failed dial, and the client backs off.

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
