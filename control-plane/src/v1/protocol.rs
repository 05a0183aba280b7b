//! The V1 JSON protocol between [`HttpControlPlaneClient`](super::HttpControlPlaneClient)
//! and a control-plane server (the reference server of the `server`
//! feature, or a deployment's own).
//!
//! | method | path | request JSON | success (200) JSON |
//! | --- | --- | --- | --- |
//! | `POST` | `/v1/presence/register` | [`Registration`]: `{"service","node","address","metadata":{..},"ttl_ms"}` | `{}` |
//! | `POST` | `/v1/presence/heartbeat` | [`PresenceKey`](crate::PresenceKey): `{"service","node"}` | `{}` |
//! | `POST` | `/v1/presence/deregister` | [`PresenceKey`](crate::PresenceKey) | `{}` |
//! | `GET` | `/v1/presence/{service}` | none | [`Instances`]: `{"instances":[Registration..]}` ordered by node |
//! | `POST` | `/v1/leases/acquire` | [`LeaseRequest`](crate::LeaseRequest): `{"key":{"scope":"global","name"},"holder","ttl_ms"}` | [`LeaseGrant`](crate::LeaseGrant): `{"key","holder","token","ttl_ms"}` |
//! | `POST` | `/v1/leases/renew` | [`LeaseGrant`](crate::LeaseGrant) | [`LeaseGrant`](crate::LeaseGrant) |
//! | `POST` | `/v1/leases/release` | [`LeaseGrant`](crate::LeaseGrant) | `{}` |
//! | `GET` | `/v1/leases/{scope}/{name}` | none | [`LeaseRead`]: `{"lease":LeaseState or null}` |
//!
//! `scope` is `global` or `service`. Every failure is an [`ErrorEnvelope`]
//! `{"error":{"code","message",..}}` with the status of its code
//! ([`status_of`], table in the [`errors`] module).
//!
//! Invariants:
//! - Names are `[A-Za-z0-9._:-]` by construction, so a path segment never
//!   needs escaping; anything else in a path is refused as `invalid`.
//! - A semantic refusal (held, lost, not registered, invalid, too large, a
//!   limit) never carries a status the client retries (408, 429, 500, 502,
//!   503, 504): a retry could not change the answer.
//! - Request bodies are small by construction (a registration is at most
//!   ~40 KiB); the reference server refuses bodies over
//!   [`MAX_REQUEST_BODY_BYTES`] with 413 `too_large`.

pub mod errors;

use serde::{Deserialize, Serialize};

pub use errors::{status_of, ErrorEnvelope, WireError};

use crate::error::ControlPlaneError;
use crate::lease::{LeaseKey, LeaseState};
use crate::name::{LeaseName, ServiceGroup};
use crate::presence::Registration;
use crate::transport::HttpMethod;

/// Largest request body the reference server reads by default.
pub const MAX_REQUEST_BODY_BYTES: usize = 64 * 1024;

/// The media type of every V1 body.
pub const CONTENT_TYPE: &str = "application/json";

/// One V1 operation and where it is sent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Route {
    /// `POST /v1/presence/register`
    Register,
    /// `POST /v1/presence/heartbeat`
    Heartbeat,
    /// `POST /v1/presence/deregister`
    Deregister,
    /// `GET /v1/presence/{service}`
    Discover(ServiceGroup),
    /// `POST /v1/leases/acquire`
    Acquire,
    /// `POST /v1/leases/renew`
    Renew,
    /// `POST /v1/leases/release`
    Release,
    /// `GET /v1/leases/{scope}/{name}`
    ReadLease(LeaseKey),
}

impl Route {
    /// The route's method.
    pub fn method(&self) -> HttpMethod {
        match self {
            Self::Discover(_) | Self::ReadLease(_) => HttpMethod::Get,
            _ => HttpMethod::Post,
        }
    }

    /// The route's path, starting with `/v1/`.
    pub fn path(&self) -> String {
        match self {
            Self::Register => "/v1/presence/register".to_owned(),
            Self::Heartbeat => "/v1/presence/heartbeat".to_owned(),
            Self::Deregister => "/v1/presence/deregister".to_owned(),
            Self::Discover(service) => format!("/v1/presence/{service}"),
            Self::Acquire => "/v1/leases/acquire".to_owned(),
            Self::Renew => "/v1/leases/renew".to_owned(),
            Self::Release => "/v1/leases/release".to_owned(),
            Self::ReadLease(key) => format!("/v1/leases/{}", key.path()),
        }
    }

    /// The operation's name: `register`, …, `read_lease`.
    pub fn operation(&self) -> &'static str {
        match self {
            Self::Register => "register",
            Self::Heartbeat => "heartbeat",
            Self::Deregister => "deregister",
            Self::Discover(_) => "discover",
            Self::Acquire => "acquire",
            Self::Renew => "renew",
            Self::Release => "release",
            Self::ReadLease(_) => "read_lease",
        }
    }

    /// True for acquire, renew and release: one attempt, never replayed.
    pub fn is_lease_mutation(&self) -> bool {
        matches!(self, Self::Acquire | Self::Renew | Self::Release)
    }

    /// The route of `method` and `path` (no query).
    ///
    /// # Errors
    ///
    /// [`RouteError::NotFound`] for a path outside V1,
    /// [`RouteError::MethodNotAllowed`] for a V1 path with another method,
    /// [`RouteError::Invalid`] for a name that is no valid name.
    pub fn parse(method: HttpMethod, path: &str) -> Result<Self, RouteError> {
        let rest = path.strip_prefix("/v1/").ok_or(RouteError::NotFound)?;
        let segments: Vec<&str> = rest.split('/').collect();
        let (route, wanted) = match segments.as_slice() {
            ["presence", "register"] if method == HttpMethod::Post => (Self::Register, None),
            ["presence", "heartbeat"] if method == HttpMethod::Post => (Self::Heartbeat, None),
            ["presence", "deregister"] if method == HttpMethod::Post => (Self::Deregister, None),
            ["presence", service] => (
                Self::Discover(
                    ServiceGroup::new(*service)
                        .map_err(|error| RouteError::Invalid(error.into()))?,
                ),
                Some(HttpMethod::Get),
            ),
            ["leases", "acquire"] => (Self::Acquire, Some(HttpMethod::Post)),
            ["leases", "renew"] => (Self::Renew, Some(HttpMethod::Post)),
            ["leases", "release"] => (Self::Release, Some(HttpMethod::Post)),
            ["leases", "global", name] => (
                Self::ReadLease(LeaseKey::Global(
                    LeaseName::new(*name).map_err(|error| RouteError::Invalid(error.into()))?,
                )),
                Some(HttpMethod::Get),
            ),
            ["leases", "service", name] => (
                Self::ReadLease(LeaseKey::Service(
                    ServiceGroup::new(*name).map_err(|error| RouteError::Invalid(error.into()))?,
                )),
                Some(HttpMethod::Get),
            ),
            _ => return Err(RouteError::NotFound),
        };
        match wanted {
            Some(wanted) if wanted != method => Err(RouteError::MethodNotAllowed),
            _ => Ok(route),
        }
    }
}

/// Why a request matched no route.
#[derive(Debug)]
pub enum RouteError {
    /// No V1 route has this path (404).
    NotFound,
    /// The path is a V1 route for another method (405).
    MethodNotAllowed,
    /// A name in the path is not a valid name (400 `invalid`).
    Invalid(ControlPlaneError),
}

/// The success body of `GET /v1/presence/{service}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Instances {
    /// The live instances, ordered by node.
    pub instances: Vec<Registration>,
}

/// The success body of `GET /v1/leases/{scope}/{name}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LeaseRead {
    /// The lease as it stands, `null` if it was never acquired.
    pub lease: Option<LeaseState>,
}

/// The success body of the calls that answer nothing: `{}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Done {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_route_parses_back_from_its_method_and_path() {
        let routes = [
            Route::Register,
            Route::Heartbeat,
            Route::Deregister,
            Route::Discover(ServiceGroup::new("register").expect("name")),
            Route::Acquire,
            Route::Renew,
            Route::Release,
            Route::ReadLease(LeaseKey::Global(LeaseName::new("a:b").expect("name"))),
            Route::ReadLease(LeaseKey::Service(
                ServiceGroup::new("billing").expect("name"),
            )),
        ];
        for route in routes {
            let parsed = Route::parse(route.method(), &route.path()).expect("parses");
            assert_eq!(parsed, route);
        }
    }

    #[test]
    fn foreign_paths_methods_and_names_are_refused() {
        assert!(matches!(
            Route::parse(HttpMethod::Get, "/v2/presence/x"),
            Err(RouteError::NotFound)
        ));
        assert!(matches!(
            Route::parse(HttpMethod::Get, "/v1/leases/acquire"),
            Err(RouteError::MethodNotAllowed)
        ));
        assert!(matches!(
            Route::parse(HttpMethod::Post, "/v1/presence/billing"),
            Err(RouteError::MethodNotAllowed)
        ));
        assert!(matches!(
            Route::parse(HttpMethod::Get, "/v1/presence/a%20b"),
            Err(RouteError::Invalid(ControlPlaneError::Invalid {
                field: "service",
                ..
            }))
        ));
        assert!(matches!(
            Route::parse(HttpMethod::Get, "/v1/leases/other/x"),
            Err(RouteError::NotFound)
        ));
    }
}
