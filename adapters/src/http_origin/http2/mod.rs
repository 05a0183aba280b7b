//! HTTP/2 on the pools' own connections: ALPN `h2` over rustls for
//! `https` origins, prior knowledge (h2c) for `http` ones, chosen by the
//! provider setting `http2 = "on"` ([`HTTP2_SETTING`]).
//!
//! A connection carries several running requests of one tenant at once,
//! one stream each ([`provider_pools_actors::Multiplexed`], the engine's
//! table of streams). `HttpDialer` holds an `H2Dialer` beside its HTTP/1.1
//! dialing and shares its `DialerCore` (so its dial count); both use one
//! `connect` (TCP, then TLS). For `https` the TLS offers `h2` alone in ALPN:
//! an origin that selects nothing else fails the dial as `Handshake`,
//! naming ALPN.
//!
//! Invariants:
//! - The driver (h2's `Connection`) is the connection's own, as for
//!   HTTP/1.1 (decision record 0063); it ends when the connection is destroyed or the peer closes
//!   it, and then fires the closure notice.
//! - A connection whose peer sent GOAWAY, or that broke, opens no new
//!   stream: h2 refuses the first one tried (nothing of it written), which
//!   marks the connection going away. The streams it carries finish; it
//!   is destroyed with its last, never parked.
//! - A request goes to another connection only when the first cannot have
//!   processed it: a stream that cannot be opened (GOAWAY, broken
//!   connection) wrote nothing, and one above the last stream of the peer's
//!   GOAWAY was not processed; either way its connection is marked going
//!   away and the call takes another stream (see `delivery.rs`).
//! - Any other failure once a stream opened ends the call — `Sent::No` for
//!   a `REFUSED_STREAM` reset, `Sent::Yes` for a response head h2 refused
//!   (`HeadTooLarge` for header blocks continued past `max_head_bytes`),
//!   `Sent::Maybe` otherwise.
//! - A peer whose SETTINGS allow no stream fails the dial (`NoStream`, code
//!   `no_stream`): the client backs off instead of dialing for each call.
//!   A connection whose peer allows no more streams is never parked.
//! - Each stream ends at its request's deadline (its body reads fail, and
//!   the stream is reset when dropped); the connection lives on for the
//!   tenant's other streams.
//! - Response bodies release flow-control capacity only as they are read,
//!   so an unread body holds back the peer on its own connection only:
//!   its tenant's.
//! - Connections are per tenant, so an unread body, a stream error or a
//!   GOAWAY one tenant's request provokes stays within that tenant's
//!   connections.
//!
//! # Streams
//!
//! A call takes a stream from the engine's table of streams
//! (`ProviderPools::reserve_stream`): a connection of its tenant with fewer
//! streams than `max_streams` — the peer's `SETTINGS_MAX_CONCURRENT_STREAMS`
//! (h2's `current_max_send_streams`, known from the dial on: it waits for
//! the peer's SETTINGS; decision record 0083),
//! capped by the setting `http2_max_streams` ([`HTTP2_MAX_STREAMS_SETTING`],
//! 1 to 1,000, default 100) — else a connection from the idle stash or a
//! dial. The request is made absolute-form (`:scheme`, `:authority` from the
//! approved origin) and loses the headers HTTP/2 forbids (`Connection`,
//! `Host`, `TE`, `Transfer-Encoding`, `Upgrade`). The response body
//! (`H2Body`) gives flow-control capacity back as it is read and fails at
//! the request's deadline; dropping it resets the stream.
//!
//! # Pooled, charged, destroyed
//!
//! - **Pooled:** `H2Connection`: h2's `SendRequest` plus the `JobHandle` of
//!   its driver (h2's `Connection`, a future the job polls; no executor),
//!   the closure notice, and a going-away flag.
//! - **Charged:** as an HTTP/1.1 connection (node, client, tenant, driver
//!   slot), once, to its tenant, however many streams it carries; each
//!   stream is its own request's running slot.
//! - **Destroyed:** with its last stream when going away (GOAWAY seen by a
//!   new stream, or broken); parked with its last stream otherwise, and
//!   reused from the idle stash like any connection; dropping the sender
//!   with no stream left lets the driver close it.

mod body;
mod connection;
mod delivery;

pub(crate) use body::H2Body;
pub use connection::{H2Connection, H2Dialer, H2Stream};
pub(crate) use delivery::{deliver, Delivered};

use bytes::Bytes;
use http::header::{CONNECTION, HOST, TE, TRANSFER_ENCODING, UPGRADE};
use http::HeaderName;
use provider_pools_actors::RunningRequest;

use crate::http_origin::error::HttpError;
use crate::http_origin::origin::{ApprovedOrigin, OriginError};

/// The provider setting that turns HTTP/2 on: `on` or `off` (the default).
pub const HTTP2_SETTING: &str = "http2";

/// The provider setting capping streams per HTTP/2 connection (1 to
/// 1,000; 100 when unset). The peer's own limit applies when lower.
pub const HTTP2_MAX_STREAMS_SETTING: &str = "http2_max_streams";

/// Streams per connection when `http2_max_streams` is unset.
pub const DEFAULT_MAX_STREAMS: u32 = 100;

/// The highest `http2_max_streams` taken.
pub const MAX_STREAMS_CEILING: u32 = 1_000;

/// Whether `running`'s client speaks HTTP/2.
///
/// # Errors
///
/// [`HttpError::Setting`] naming `http2` for a value other than `on` or
/// `off`, or `http2_max_streams` for one out of range.
pub(crate) fn enabled(running: &RunningRequest) -> Result<bool, HttpError> {
    match running.client().setting(HTTP2_SETTING) {
        None | Some("off") => Ok(false),
        Some("on") => {
            max_streams(running.client().setting(HTTP2_MAX_STREAMS_SETTING)).map_err(|reason| {
                HttpError::Setting {
                    setting: HTTP2_MAX_STREAMS_SETTING,
                    reason,
                }
            })?;
            Ok(true)
        }
        Some(_) => Err(HttpError::Setting {
            setting: HTTP2_SETTING,
            reason: "must be `on` or `off`",
        }),
    }
}

/// The stream cap a client's settings give its connections.
///
/// # Errors
///
/// A reason when `http2_max_streams` is not a whole number from 1 to
/// 1,000.
pub(crate) fn max_streams(value: Option<&str>) -> Result<u32, &'static str> {
    let Some(value) = value else {
        return Ok(DEFAULT_MAX_STREAMS);
    };
    match value.parse::<u32>() {
        Ok(n) if (1..=MAX_STREAMS_CEILING).contains(&n) => Ok(n),
        _ => Err("must be a whole number from 1 to 1000"),
    }
}

/// Headers HTTP/2 forbids (RFC 9113, 8.2.2), and `Host`, which travels as
/// `:authority`.
const CONNECTION_SPECIFIC: [HeaderName; 5] = [CONNECTION, HOST, TE, TRANSFER_ENCODING, UPGRADE];

/// `request` (origin-form, for `running`'s approved origin) as HTTP/2
/// sends it: the absolute URI its `:scheme` and `:authority` come from,
/// without the headers HTTP/2 forbids.
///
/// # Errors
///
/// [`HttpError::Origin`] when the client's origin does not parse.
pub(crate) fn for_http2(
    running: &RunningRequest,
    request: http::Request<Bytes>,
) -> Result<http::Request<Bytes>, HttpError> {
    let origin = ApprovedOrigin::parse(running.client().target())?;
    let (mut parts, body) = request.into_parts();
    let path = parts.uri.path_and_query().map_or("/", |p| p.as_str());
    parts.uri = format!("{}://{}{path}", origin.scheme(), origin.host_header())
        .parse()
        .map_err(|_| OriginError::InvalidHost)?;
    parts.version = http::Version::HTTP_2;
    for name in CONNECTION_SPECIFIC {
        parts.headers.remove(name);
    }
    Ok(http::Request::from_parts(parts, body))
}
