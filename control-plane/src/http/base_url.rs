//! The HTTP client's base URL, checked once when the client is built.
//!
//! INTERIM: [`interim_endpoint_check`] is the only place the client checks
//! its endpoint. When the transports land, its body becomes a call to
//! `transport::Endpoint::parse` (the secure endpoint validation) and
//! [`BaseUrl`] wraps what that returns; nothing else changes.
//!
//! Invariants:
//! - `https://` anywhere; `http://` only to a loopback IP address
//!   (`127.0.0.0/8`, `[::1]`): a name such as `localhost` may resolve
//!   elsewhere.
//! - No userinfo, query or fragment; no whitespace or control characters.
//! - The base has no trailing `/`; a request URL is the base followed by a
//!   V1 path (`/v1/...`).

use std::net::IpAddr;

use crate::error::ControlPlaneError;

/// A checked base URL such as `https://cp.example.net/prefix`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct BaseUrl(String);

impl BaseUrl {
    /// The absolute URL of a V1 `path`.
    pub(crate) fn join(&self, path: &str) -> String {
        format!("{}{path}", self.0)
    }

    /// The base as text.
    pub(crate) fn as_str(&self) -> &str {
        &self.0
    }
}

fn insecure(reason: impl Into<String>) -> ControlPlaneError {
    ControlPlaneError::InsecureEndpoint {
        reason: reason.into(),
    }
}

/// Checks `text` as the client's endpoint (see the module doc).
///
/// TODO(lead, when cp-transport merges): replace by `Endpoint::parse`.
///
/// # Errors
///
/// [`ControlPlaneError::InsecureEndpoint`] for plain http off loopback or
/// userinfo; [`ControlPlaneError::Invalid`] naming `endpoint` for anything
/// else that is no base URL.
pub(crate) fn interim_endpoint_check(text: &str) -> Result<BaseUrl, ControlPlaneError> {
    let invalid = |reason: &str| ControlPlaneError::invalid("endpoint", reason);
    if text.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(invalid("holds whitespace or a control character"));
    }
    if text.contains(['?', '#']) {
        return Err(invalid("holds a query or fragment"));
    }
    let (secure, rest) = if let Some(rest) = text.strip_prefix("https://") {
        (true, rest)
    } else if let Some(rest) = text.strip_prefix("http://") {
        (false, rest)
    } else {
        return Err(invalid("must start with https:// or http://"));
    };
    let authority = rest.split('/').next().unwrap_or_default();
    if authority.contains('@') {
        return Err(insecure("userinfo is not allowed in the endpoint"));
    }
    let host = host_of(authority).ok_or_else(|| invalid("has no host"))?;
    if !secure {
        let loopback = host
            .parse::<IpAddr>()
            .map(|ip| ip.is_loopback())
            .unwrap_or(false);
        if !loopback {
            return Err(insecure(format!(
                "plain http is only allowed to a loopback address, not {host}"
            )));
        }
    }
    Ok(BaseUrl(text.trim_end_matches('/').to_owned()))
}

/// The host of `host[:port]` or `[v6][:port]`, without brackets.
fn host_of(authority: &str) -> Option<&str> {
    let host = match authority.strip_prefix('[') {
        Some(bracketed) => bracketed.split(']').next()?,
        None => authority
            .rsplit_once(':')
            .map_or(authority, |(host, _)| host),
    };
    (!host.is_empty()).then_some(host)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn https_anywhere_and_http_on_loopback_are_accepted() {
        for ok in [
            "https://cp.example.net",
            "https://cp.example.net:8443/prefix/",
            "http://127.0.0.1:8080",
            "http://127.9.0.1",
            "http://[::1]:9000/",
        ] {
            let base = interim_endpoint_check(ok).expect(ok);
            assert!(!base.as_str().ends_with('/'), "{ok}");
            assert!(base.join("/v1/x").ends_with("/v1/x"));
        }
    }

    #[test]
    fn insecure_and_malformed_endpoints_are_refused() {
        for (bad, code) in [
            ("http://10.0.0.1:80", "insecure_endpoint"),
            ("http://localhost:80", "insecure_endpoint"),
            ("https://user:pw@cp.example.net", "insecure_endpoint"),
            ("http://user@127.0.0.1", "insecure_endpoint"),
            ("ftp://cp.example.net", "invalid"),
            ("https://", "invalid"),
            ("https://cp.example.net/?a=b", "invalid"),
            ("https://cp example.net", "invalid"),
        ] {
            let error = interim_endpoint_check(bad).expect_err(bad);
            assert_eq!(error.code().as_str(), code, "{bad}: {error}");
            assert!(!error.to_string().contains("pw"), "{error}");
        }
    }
}
