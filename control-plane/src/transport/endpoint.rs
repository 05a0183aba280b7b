//! [`Endpoint`]: the validated base URL of a remote control plane, and the
//! loopback rule every built-in transport applies again to each request.
//!
//! Invariants:
//! - The scheme is `https`; plain `http` only when the host is a loopback
//!   address: `127.0.0.0/8`, `::1` or the name `localhost` (exactly; no
//!   trailing dot, no sub-domain, no IPv4-mapped IPv6 form).
//! - Never userinfo (`user:pass@`), not even an empty one; never a query or a
//!   fragment; no control characters, whitespace or backslashes anywhere.
//! - What is validated is what is dialled: the endpoint keeps the WHATWG
//!   parser's normalized form (the parser reqwest uses), so `http://127.1`
//!   is kept as `http://127.0.0.1` and a host spelled to look local but that
//!   is not (`127.0.0.1.evil.com`) is refused.
//! - A refusal describes what was wrong and never quotes the input, which
//!   may hold a credential.

use std::fmt;
use std::net::{Ipv4Addr, Ipv6Addr};
use std::str::FromStr;

use url::{Host, Url};

use crate::error::ControlPlaneError;

/// The longest endpoint accepted, in bytes.
pub const MAX_ENDPOINT_BYTES: usize = 2048;

/// The scheme of an [`Endpoint`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Scheme {
    /// Plain HTTP: loopback hosts only.
    Http,
    /// HTTP over TLS.
    Https,
}

impl Scheme {
    /// The scheme as written in a URL.
    pub fn as_str(&self) -> &'static str {
        match self {
            Self::Http => "http",
            Self::Https => "https",
        }
    }
}

/// A validated control-plane base URL: `https://host[:port][/base]`, or
/// `http://` to a loopback host.
///
/// ```
/// use provider_pools_control_plane::transport::Endpoint;
///
/// let endpoint = Endpoint::parse("https://cp.example.com:8443/control/")?;
/// assert_eq!(endpoint.join("/v1/leases/acquire"), "https://cp.example.com:8443/control/v1/leases/acquire");
/// assert!(Endpoint::parse("http://127.0.0.1:7000")?.is_loopback());
/// assert!(Endpoint::parse("http://cp.example.com").is_err());
/// # Ok::<(), provider_pools_control_plane::ControlPlaneError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Endpoint {
    /// Normalized `scheme://host[:port][/base]`, no trailing slash.
    base: String,
    scheme: Scheme,
    /// Byte length of `scheme://host[:port]` within `base`.
    origin_len: usize,
    /// As written in the URL: IPv6 keeps its brackets.
    host: String,
    port: u16,
    loopback: bool,
}

impl Endpoint {
    /// Validates `text` as a control-plane endpoint.
    ///
    /// # Errors
    ///
    /// [`ControlPlaneError::InsecureEndpoint`] for plain `http` off loopback
    /// and for userinfo; [`ControlPlaneError::Invalid`] (field `endpoint`)
    /// for anything malformed: too long, empty, control characters or
    /// whitespace, another scheme, an empty host, a bad port (including 0),
    /// a query or a fragment.
    pub fn parse(text: &str) -> Result<Self, ControlPlaneError> {
        let scheme = precheck(text)?;
        let url = Url::parse(text).map_err(|error| invalid(describe_parse_error(error)))?;
        if !url.username().is_empty() || url.password().is_some() {
            return Err(insecure("userinfo (credentials in the URL) is not allowed"));
        }
        if url.query().is_some() {
            return Err(invalid("a query is not allowed"));
        }
        if url.fragment().is_some() {
            return Err(invalid("a fragment is not allowed"));
        }
        let host = url.host().ok_or_else(|| invalid("the host is empty"))?;
        if matches!(host, Host::Domain("")) {
            return Err(invalid("the host is empty"));
        }
        if url.port() == Some(0) {
            return Err(invalid("port 0 cannot be dialled"));
        }
        let loopback = is_loopback_host(&host);
        if scheme == Scheme::Http && !loopback {
            return Err(insecure(
                "plain http is allowed only to a loopback host (127.0.0.0/8, ::1, localhost); use https",
            ));
        }
        let port = url
            .port_or_known_default()
            .ok_or_else(|| invalid("no port"))?;
        let base = url.as_str().trim_end_matches('/').to_owned();
        let origin_len = base.len() - url.path().trim_end_matches('/').len();
        Ok(Self {
            base,
            scheme,
            origin_len,
            host: url.host_str().unwrap_or_default().to_owned(),
            port,
            loopback,
        })
    }

    /// The URL of `path` under this endpoint: the base path, then `path`
    /// with exactly one `/` between them. `path` is appended as given (the
    /// client builds it from validated names).
    pub fn join(&self, path: &str) -> String {
        let path = path.trim_start_matches('/');
        let mut url = String::with_capacity(self.base.len() + 1 + path.len());
        url.push_str(&self.base);
        url.push('/');
        url.push_str(path);
        url
    }

    /// The scheme.
    pub fn scheme(&self) -> Scheme {
        self.scheme
    }

    /// The host as written in the URL (an IPv6 address keeps its brackets).
    pub fn host(&self) -> &str {
        &self.host
    }

    /// The port dialled: the explicit one, else 443 for https and 80 for
    /// http.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The base path without a trailing slash (`""` when there is none).
    pub fn base_path(&self) -> &str {
        &self.base[self.origin_len..]
    }

    /// True when the host is a loopback address.
    pub fn is_loopback(&self) -> bool {
        self.loopback
    }

    /// The normalized base URL, without a trailing slash.
    pub fn as_str(&self) -> &str {
        &self.base
    }
}

impl fmt::Display for Endpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.base)
    }
}

impl FromStr for Endpoint {
    type Err = ControlPlaneError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        Self::parse(text)
    }
}

/// True when `host` is `127.0.0.0/8`, `::1` or exactly `localhost`.
pub(crate) fn is_loopback_host(host: &Host<&str>) -> bool {
    match host {
        Host::Ipv4(address) => Ipv4Addr::is_loopback(address),
        Host::Ipv6(address) => Ipv6Addr::is_loopback(address),
        Host::Domain(name) => *name == "localhost",
    }
}

/// The checks the WHATWG parser would otherwise paper over: it strips
/// whitespace and control characters, reads `\` as `/`, accepts a missing
/// `//`, skips extra slashes before the host (`https:///h`) and drops an
/// empty userinfo.
fn precheck(text: &str) -> Result<Scheme, ControlPlaneError> {
    if text.len() > MAX_ENDPOINT_BYTES {
        return Err(invalid(format!("longer than {MAX_ENDPOINT_BYTES} bytes")));
    }
    if text.is_empty() {
        return Err(invalid("empty"));
    }
    if text.chars().any(|c| c.is_control() || c.is_whitespace()) {
        return Err(invalid("contains control characters or whitespace"));
    }
    if text.contains('\\') {
        return Err(invalid("contains a backslash"));
    }
    let Some((scheme, rest)) = text.split_once("://") else {
        return Err(invalid(
            "expected an absolute URL: https://host[:port][/base]",
        ));
    };
    let scheme = if scheme.eq_ignore_ascii_case("https") {
        Scheme::Https
    } else if scheme.eq_ignore_ascii_case("http") {
        Scheme::Http
    } else {
        return Err(invalid(
            "the scheme must be https (or http to a loopback host)",
        ));
    };
    let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    if authority_end == 0 {
        return Err(invalid("the host is empty"));
    }
    if rest[..authority_end].contains('@') {
        return Err(insecure("userinfo (credentials in the URL) is not allowed"));
    }
    if rest.contains('?') {
        return Err(invalid("a query is not allowed"));
    }
    if rest.contains('#') {
        return Err(invalid("a fragment is not allowed"));
    }
    Ok(scheme)
}

fn describe_parse_error(error: url::ParseError) -> String {
    match error {
        url::ParseError::EmptyHost => "the host is empty".to_owned(),
        url::ParseError::InvalidPort => "the port is not a number from 1 to 65535".to_owned(),
        // The parser's messages name the defect, never the input.
        other => other.to_string(),
    }
}

fn invalid(reason: impl Into<String>) -> ControlPlaneError {
    ControlPlaneError::invalid("endpoint", reason)
}

fn insecure(reason: &str) -> ControlPlaneError {
    ControlPlaneError::InsecureEndpoint {
        reason: reason.to_owned(),
    }
}
