//! Approved origins and guest request targets.
//!
//! The trusted configuration names each approved origin
//! (`http://host[:port]` or `https://host[:port]`)
//! and the pools number it with an opaque slot; a guest names a slot and an
//! origin-form request target (`/path?query`), never a URL. Parsing here is
//! pure: nothing in this module dials, installs or creates a pool.
//!
//! Invariants:
//! - An [`ApprovedOrigin`] is exactly scheme (`http` or `https`), host and
//!   port: no userinfo, path, query or fragment.
//! - A [`RequestTarget`] starts with `/`, never with `//`, and holds only
//!   printable ASCII without `@`, `\`, `#` or spaces, so it cannot name
//!   another origin whatever the server's parser does with it.

use std::fmt;

use crate::authority::{parse_port, split_host_port, AuthorityError};

/// Longest request target accepted, in bytes.
pub const MAX_TARGET: usize = 8 * 1024;

/// Why a configured origin was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum OriginError {
    /// The origin is neither `http://` nor `https://`.
    #[error("origin scheme must be http or https")]
    UnsupportedScheme,
    /// The origin carries `user@`.
    #[error("origin must not carry userinfo")]
    Userinfo,
    /// The origin carries a path (even `/`).
    #[error("origin must not carry a path")]
    Path,
    /// The origin carries a query.
    #[error("origin must not carry a query")]
    Query,
    /// The origin carries a fragment.
    #[error("origin must not carry a fragment")]
    Fragment,
    /// The host is empty or has characters a host cannot have.
    #[error("origin host is empty or invalid")]
    InvalidHost,
    /// The port is empty, not a number, zero or above 65535.
    #[error("origin port is invalid")]
    InvalidPort,
}

/// One approved origin: a scheme (`http` or `https`), a host and a port.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct ApprovedOrigin {
    tls: bool,
    host: String,
    port: u16,
}

impl ApprovedOrigin {
    /// Parses `http://host[:port]` (port 80 when omitted) or
    /// `https://host[:port]` (port 443 when omitted). Hosts are DNS names,
    /// IPv4 literals or bracketed IPv6 literals.
    ///
    /// # Errors
    ///
    /// The [`OriginError`] naming the first part that is not allowed.
    pub fn parse(text: &str) -> Result<Self, OriginError> {
        let scheme_end = text.find("://").ok_or(OriginError::UnsupportedScheme)?;
        let scheme = &text[..scheme_end];
        let tls = if scheme.eq_ignore_ascii_case("http") {
            false
        } else if scheme.eq_ignore_ascii_case("https") {
            true
        } else {
            return Err(OriginError::UnsupportedScheme);
        };
        let authority = &text[scheme_end + 3..];
        if authority.contains('@') {
            return Err(OriginError::Userinfo);
        }
        if authority.contains('/') {
            return Err(OriginError::Path);
        }
        if authority.contains('?') {
            return Err(OriginError::Query);
        }
        if authority.contains('#') {
            return Err(OriginError::Fragment);
        }
        let (host, port) = split_host_port(authority)?;
        let port = match port {
            None => default_port(tls),
            Some(port) => parse_port(port)?,
        };
        Ok(Self {
            tls,
            host: host.to_ascii_lowercase(),
            port,
        })
    }

    /// The scheme: `http` or `https`.
    pub fn scheme(&self) -> &'static str {
        if self.tls {
            "https"
        } else {
            "http"
        }
    }

    /// True for `https`: the connection runs TLS to [`Self::host`].
    pub fn is_tls(&self) -> bool {
        self.tls
    }

    /// The host, as configured (IPv6 literals keep their brackets).
    pub fn host(&self) -> &str {
        &self.host
    }

    /// The port.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// `host:port`, what a TCP connect resolves.
    pub fn connect_address(&self) -> String {
        format!("{}:{}", self.host, self.port)
    }

    /// The `Host` header value: the port is left out when it is the
    /// scheme's default (80 for http, 443 for https).
    pub fn host_header(&self) -> String {
        if self.port == default_port(self.tls) {
            self.host.clone()
        } else {
            self.connect_address()
        }
    }
}

impl fmt::Debug for ApprovedOrigin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ApprovedOrigin({self})")
    }
}

impl fmt::Display for ApprovedOrigin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}://{}:{}", self.scheme(), self.host, self.port)
    }
}

fn default_port(tls: bool) -> u16 {
    if tls {
        443
    } else {
        80
    }
}

impl From<AuthorityError> for OriginError {
    fn from(error: AuthorityError) -> Self {
        match error {
            AuthorityError::InvalidHost => Self::InvalidHost,
            AuthorityError::InvalidPort => Self::InvalidPort,
        }
    }
}

/// Why a guest request target was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TargetError {
    /// The target is empty.
    #[error("request target is empty")]
    Empty,
    /// The target is longer than [`MAX_TARGET`].
    #[error("request target is longer than {MAX_TARGET} bytes")]
    TooLong,
    /// The target has bytes outside ASCII.
    #[error("request target must be ASCII")]
    NonAscii,
    /// The target has a control byte (CR, LF, NUL, DEL, …).
    #[error("request target contains a control byte")]
    Control,
    /// The target has a space.
    #[error("request target contains a space")]
    Whitespace,
    /// The target is an absolute URL (`scheme:…`).
    #[error("request target must not be an absolute URL")]
    AbsoluteUrl,
    /// The target starts with `//`, naming another authority.
    #[error("request target must not be scheme-relative")]
    SchemeRelative,
    /// The target is authority-form (`host:port`).
    #[error("request target must not be authority-form")]
    AuthorityForm,
    /// The target does not start with `/`.
    #[error("request target must start with '/'")]
    NotOriginForm,
    /// The target contains `@`.
    #[error("request target must not contain '@'")]
    AtSign,
    /// The target contains a backslash.
    #[error("request target must not contain a backslash")]
    Backslash,
    /// The target contains a fragment (`#`).
    #[error("request target must not contain a fragment")]
    Fragment,
    /// The target is not a valid path and query.
    #[error("request target is not a valid path and query")]
    Invalid,
}

/// A guest's origin-form request target: `/path?query`, nothing more.
#[derive(Clone, PartialEq, Eq)]
pub struct RequestTarget(http::uri::PathAndQuery);

impl RequestTarget {
    /// Parses an origin-form target.
    ///
    /// # Errors
    ///
    /// The [`TargetError`] naming what was wrong.
    pub fn parse(text: &str) -> Result<Self, TargetError> {
        if text.is_empty() {
            return Err(TargetError::Empty);
        }
        if text.len() > MAX_TARGET {
            return Err(TargetError::TooLong);
        }
        if !text.is_ascii() {
            return Err(TargetError::NonAscii);
        }
        if text.bytes().any(|b| b.is_ascii_control()) {
            return Err(TargetError::Control);
        }
        if text.contains(' ') {
            return Err(TargetError::Whitespace);
        }
        if text.contains('\\') {
            return Err(TargetError::Backslash);
        }
        if text.starts_with("//") {
            return Err(TargetError::SchemeRelative);
        }
        if !text.starts_with('/') {
            return Err(not_origin_form(text));
        }
        if text.contains('@') {
            return Err(TargetError::AtSign);
        }
        if text.contains('#') {
            return Err(TargetError::Fragment);
        }
        http::uri::PathAndQuery::try_from(text)
            .map(Self)
            .map_err(|_| TargetError::Invalid)
    }

    /// The target as sent on the request line.
    pub fn as_str(&self) -> &str {
        self.0.as_str()
    }

    pub(crate) fn uri(&self) -> http::Uri {
        http::Uri::from(self.0.clone())
    }
}

/// Classifies a target that does not start with `/`.
fn not_origin_form(text: &str) -> TargetError {
    let Some((scheme, rest)) = text.split_once(':') else {
        return TargetError::NotOriginForm;
    };
    let is_scheme = scheme
        .bytes()
        .next()
        .is_some_and(|b| b.is_ascii_alphabetic())
        && scheme
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'-' | b'.'));
    if !rest.is_empty() && rest.bytes().all(|b| b.is_ascii_digit()) {
        TargetError::AuthorityForm
    } else if is_scheme {
        TargetError::AbsoluteUrl
    } else {
        TargetError::NotOriginForm
    }
}

impl fmt::Debug for RequestTarget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "RequestTarget({})", self.as_str())
    }
}

impl fmt::Display for RequestTarget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}
