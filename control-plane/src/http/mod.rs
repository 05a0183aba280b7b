//! The HTTP profile: the V1 JSON [`protocol`] between the HTTP client and a
//! control-plane server.

pub mod protocol;
