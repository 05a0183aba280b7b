//! Opening the byte stream of a connection to an approved origin, for
//! HTTP/1.1 and HTTP/2 alike: the provider's connection settings, the dial
//! plan (origin and TLS configuration), the TCP connect and the TLS
//! handshake.
//!
//! Invariants:
//! - The TLS configuration is built before connecting, so an unusable
//!   `ca_file` fails before any socket is opened.
//! - A stream asked to carry `h2` over TLS is returned only when the
//!   handshake agreed on it.

use std::sync::Arc;

use provider_pools_actors::{DialError, DialErrorKind, DialTarget};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;

use crate::dialer_core::unusable_target;
use crate::http_origin::origin::ApprovedOrigin;
use crate::http_origin::settings::ConnectionSettings;
use crate::http_origin::tls;

/// A connection's byte stream: plain TCP or TLS over TCP.
pub(crate) trait Stream: AsyncRead + AsyncWrite + Send + Unpin {}

impl<T: AsyncRead + AsyncWrite + Send + Unpin> Stream for T {}

/// What a connection's driver is, in the error when it cannot start.
pub(crate) const DRIVER_JOB: &str = "the connection driver";

/// The connection settings of `target`'s provider.
///
/// # Errors
///
/// `Other`, naming the setting, for one out of range (calls refuse it
/// before they reserve a connection, so only a dial started otherwise
/// meets it).
pub(crate) fn dial_settings(target: &DialTarget<'_>) -> Result<ConnectionSettings, DialError> {
    ConnectionSettings::read(|key| target.settings.get(key).map(String::as_str))
        .map_err(|e| DialError::new(DialErrorKind::Other, e.to_string()))
}

/// What a dial of `target` connects to: its approved origin and, for
/// `https`, the TLS configuration asking `alpn` — built first, so that an
/// unusable `ca_file` fails before connecting.
///
/// # Errors
///
/// `Other` for a target that is no approved origin; `Handshake` for an
/// unusable `ca_file`.
pub(crate) fn dial_plan(
    target: &DialTarget<'_>,
    alpn: tls::Alpn,
) -> Result<(ApprovedOrigin, Option<Arc<rustls::ClientConfig>>), DialError> {
    let origin = ApprovedOrigin::parse(target.target).map_err(unusable_target)?;
    let tls_config = if origin.is_tls() {
        Some(tls::client_config(target.settings, alpn)?)
    } else {
        None
    };
    Ok((origin, tls_config))
}

/// Connects to `origin` over TCP, then runs the TLS handshake when
/// `tls_config` is given (requiring `h2` when `alpn` asks for it).
///
/// # Cancel safety
///
/// Dropping the future drops the socket (and the half-done session).
///
/// # Errors
///
/// `Refused`/`Timeout`/`Other` from the TCP connect; `Handshake` from TLS.
pub(crate) async fn connect(
    origin: &ApprovedOrigin,
    tls_config: Option<Arc<rustls::ClientConfig>>,
    alpn: tls::Alpn,
) -> Result<Box<dyn Stream>, DialError> {
    let stream = TcpStream::connect(origin.connect_address())
        .await
        .map_err(connect_error)?;
    // Latency over batching; a failure here changes nothing else.
    let _ = stream.set_nodelay(true);
    Ok(match tls_config {
        Some(config) => {
            let stream = tls::handshake(config, origin, stream).await?;
            if alpn == tls::Alpn::H2 {
                tls::require_h2(&stream)?;
            }
            Box::new(stream)
        }
        None => Box::new(stream),
    })
}

fn connect_error(e: std::io::Error) -> DialError {
    let kind = match e.kind() {
        std::io::ErrorKind::ConnectionRefused | std::io::ErrorKind::ConnectionReset => {
            DialErrorKind::Refused
        }
        std::io::ErrorKind::TimedOut => DialErrorKind::Timeout,
        _ => DialErrorKind::Other,
    };
    DialError::new(kind, e.to_string())
}
