//! [`BearerHttpTransport`]: a [`PooledHttpTransport`] that adds
//! `Authorization: Bearer <token>` to every request.
//!
//! Invariants:
//! - The bounded, reused client is the pooled transport's (wrapped, not
//!   rebuilt): one code path for every request.
//! - The token is held in zeroizing memory ([`BearerToken`]) and wiped when
//!   the last holder drops it; the copies the HTTP stack makes while a
//!   request is written are outside this crate's reach.
//! - The header value is marked sensitive, so HTTP tooling does not log it.
//! - Neither `Debug` nor any error shows the token.
//! - A token is 1 to [`MAX_BEARER_TOKEN_BYTES`] visible ASCII characters (no
//!   space, no control character), so it is always a valid header value.

use std::fmt;

use reqwest::header::HeaderValue;
use zeroize::Zeroizing;

use super::{
    HttpControlPlaneRequest, HttpResponse, HttpTransport, PooledHttpTransport,
    SharedHttpControlPlaneRequest, TransportError,
};
use crate::error::ControlPlaneError;
use crate::future::BoxFuture;

/// The longest bearer token accepted, in bytes.
pub const MAX_BEARER_TOKEN_BYTES: usize = 8 * 1024;

/// A bearer token, validated and kept in zeroizing memory; its `Debug`
/// never shows it.
pub struct BearerToken {
    /// `Bearer <token>`, the header value.
    header: Zeroizing<String>,
}

impl BearerToken {
    /// Takes `token`, wiping the caller's allocation once it is copied into
    /// the header value.
    ///
    /// # Errors
    ///
    /// [`ControlPlaneError::Invalid`] (field `bearer token`) when the token
    /// is empty, longer than [`MAX_BEARER_TOKEN_BYTES`], or holds anything
    /// but visible ASCII. The message never quotes the token.
    pub fn new(token: impl Into<String>) -> Result<Self, ControlPlaneError> {
        let token = Zeroizing::new(token.into());
        if token.is_empty() {
            return Err(invalid("is empty"));
        }
        if token.len() > MAX_BEARER_TOKEN_BYTES {
            return Err(invalid(&format!(
                "is longer than {MAX_BEARER_TOKEN_BYTES} bytes"
            )));
        }
        if !token.bytes().all(|b| b.is_ascii_graphic()) {
            return Err(invalid(
                "holds a space, a control character or non-ASCII text",
            ));
        }
        let mut header = Zeroizing::new(String::with_capacity("Bearer ".len() + token.len()));
        header.push_str("Bearer ");
        header.push_str(&token);
        Ok(Self { header })
    }

    /// The sensitive `Authorization` value of one request.
    fn header_value(&self) -> Result<HeaderValue, TransportError> {
        let mut value = HeaderValue::from_str(&self.header).map_err(|_| {
            TransportError::Connect("the bearer token is not a header value".into())
        })?;
        value.set_sensitive(true);
        Ok(value)
    }
}

impl fmt::Debug for BearerToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("BearerToken(<redacted>)")
    }
}

/// The reused bounded client of a [`PooledHttpTransport`], plus a bearer
/// token on every request.
///
/// ```no_run
/// use provider_pools_control_plane::transport::{
///     BearerHttpTransport, BearerToken, PooledHttpTransport, PooledTransportConfig,
/// };
///
/// let pooled = PooledHttpTransport::new(PooledTransportConfig::default())?;
/// let transport = BearerHttpTransport::new(pooled, BearerToken::new("s3cr3t")?);
/// assert!(!format!("{transport:?}").contains("s3cr3t"));
/// # Ok::<(), provider_pools_control_plane::ControlPlaneError>(())
/// ```
pub struct BearerHttpTransport {
    pooled: PooledHttpTransport,
    token: BearerToken,
}

impl BearerHttpTransport {
    /// Wraps `pooled` (its client and connection pool are shared with any
    /// clone of it) with `token`.
    pub fn new(pooled: PooledHttpTransport, token: BearerToken) -> Self {
        Self { pooled, token }
    }

    /// The wrapped pooled transport.
    pub fn pooled(&self) -> &PooledHttpTransport {
        &self.pooled
    }

    async fn execute(
        &self,
        request: &SharedHttpControlPlaneRequest,
    ) -> Result<HttpResponse, TransportError> {
        let authorization = self.token.header_value()?;
        self.pooled.execute(request, Some(authorization)).await
    }
}

impl fmt::Debug for BearerHttpTransport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BearerHttpTransport")
            .field("pooled", &self.pooled)
            .field("token", &self.token)
            .finish()
    }
}

impl HttpTransport for BearerHttpTransport {
    fn send(
        &self,
        request: HttpControlPlaneRequest,
    ) -> BoxFuture<'_, Result<HttpResponse, TransportError>> {
        Box::pin(async move { self.execute(&request.into_shared()).await })
    }

    fn send_shared<'a>(
        &'a self,
        request: &'a SharedHttpControlPlaneRequest,
    ) -> BoxFuture<'a, Result<HttpResponse, TransportError>> {
        Box::pin(self.execute(request))
    }
}

fn invalid(reason: &str) -> ControlPlaneError {
    ControlPlaneError::invalid("bearer token", format!("the token {reason}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_tokens_are_refused_without_being_quoted() {
        let long = "a".repeat(MAX_BEARER_TOKEN_BYTES + 1);
        for token in [
            "",
            "has space",
            "new\nline",
            "tab\tx",
            "café",
            long.as_str(),
        ] {
            let error = BearerToken::new(token).expect_err("refused");
            let text = error.to_string();
            assert!(text.contains("bearer token"), "{text}");
            if !token.is_empty() {
                assert!(!text.contains(token), "{text}");
            }
        }
    }

    #[test]
    fn the_header_value_is_sensitive_and_debug_is_redacted() {
        let token = BearerToken::new("abc.DEF-123_~+/=").expect("a b64 token");
        let value = token.header_value().expect("header value");
        assert!(value.is_sensitive());
        assert_eq!(value.as_bytes(), b"Bearer abc.DEF-123_~+/=");
        assert_eq!(format!("{token:?}"), "BearerToken(<redacted>)");
    }
}
