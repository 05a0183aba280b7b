//! HTTP/1.1 adapters on connections the pools own.
//!
//! A trusted configuration approves origins (`http://host:port`, one per
//! slot); a guest names a slot and an origin-form target, never a URL.
//!
//! Plain `http` only in this round: https (rustls, a configurable CA) is a
//! follow-up.
//!
//! Invariants:
//! - No request creates a pool, a client or an origin: the slot's approved
//!   origin is the only host a request reaches.

mod origin;

pub use origin::{ApprovedOrigin, OriginError, RequestTarget, TargetError, MAX_TARGET};
