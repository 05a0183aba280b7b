//! Protocol adapters for provider-pools.
//!
//! One module per protocol, each behind a cargo feature of the same name:
//! `http` (buffered and streaming HTTP/1.1 on owned connections), `blob`
//! (local blobs), `s3`, `vault` (KV-v2), `nats` (JetStream) and `secret`
//! (local secrets). An adapter knows its protocol and nothing of scheduling:
//! it validates its configuration, installs it through
//! [`provider_pools_actors::ProviderPools::install`], and owns the real
//! resources it is granted.
//!
//! Built so far: `http`, `blob`, `nats`, `s3`, `secret` and `vault`.

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
pub mod http;
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
