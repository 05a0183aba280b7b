//! The target of one request, checked by every built-in transport before
//! it dials, whoever built the request.
//!
//! Invariants:
//! - A request URL is absolute `http` or `https` with a non-empty host and
//!   no userinfo; plain `http` goes to loopback hosts only (the
//!   [`Endpoint`](super::Endpoint) rule, applied again to each request).
//! - A refused target is [`TransportError::Connect`]: nothing was sent.
//! - The URL is parsed once; the transport dials and writes the parsed form,
//!   so no byte of a request line or `Host` header comes unchecked from the
//!   caller (the parser percent-encodes what it does not allow).

use url::Url;

use super::endpoint::is_loopback_host;
use super::TransportError;

/// The parsed, checked URL of a request.
pub(crate) fn request_url(text: &str) -> Result<Url, TransportError> {
    if text.chars().any(|c| c.is_control() || c.is_whitespace()) {
        return Err(refused(
            "the request URL contains control characters or whitespace",
        ));
    }
    let url = Url::parse(text)
        .map_err(|error| refused(&format!("the request URL is not valid: {error}")))?;
    if !url.username().is_empty() || url.password().is_some() {
        return Err(refused("the request URL carries userinfo"));
    }
    let Some(host) = url.host() else {
        return Err(refused("the request URL has no host"));
    };
    match url.scheme() {
        "https" => Ok(url),
        "http" if is_loopback_host(&host) => Ok(url),
        "http" => Err(refused("plain http is allowed only to a loopback host")),
        _ => Err(refused("the request URL is neither http nor https")),
    }
}

/// `/path?query` of `url`, as written on a request line.
pub(crate) fn origin_form(url: &Url) -> &str {
    &url[url::Position::BeforePath..url::Position::AfterQuery]
}

fn refused(reason: &str) -> TransportError {
    TransportError::Connect(format!("request refused before sending: {reason}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_http_and_any_https_are_accepted_with_their_query() {
        let url = request_url("http://127.0.0.1:9/v1/x?service=a").expect("loopback http");
        assert_eq!(origin_form(&url), "/v1/x?service=a");
        assert!(request_url("https://cp.example.com/v1/x").is_ok());
        assert!(request_url("http://[::1]:80/").is_ok());
    }

    #[test]
    fn off_loopback_http_userinfo_and_other_schemes_are_refused_before_sending() {
        for text in [
            "http://cp.example.com/v1/x",
            "https://user:secret@cp.example.com/",
            "ftp://127.0.0.1/",
            "http://127.0.0.1/a b",
            "/v1/relative",
        ] {
            let error = request_url(text).expect_err(text);
            assert!(error.before_send(), "{text}: {error}");
            assert!(!error.to_string().contains("secret"), "{error}");
        }
    }
}
