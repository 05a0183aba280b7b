//! One Vault exchange on a connection the pools own: the request (built by
//! a vaultrs endpoint, handed over by [`PoolClient`](super::client)) gets
//! Vault's headers and the running epoch's token, is sent on an [`HttpConnection`]
//! reserved with the slot's [`HttpDialer`] (the http adapter's checkout),
//! and the answer is read under a cap and classified.
//!
//! Invariants:
//! - The slot (address, namespace, mount, token) is checked before any
//!   connection is reserved.
//! - The token is read from the running request's epoch when the request
//!   is built. Its one copy made here backs the `X-Vault-Token` header
//!   value, marked sensitive, and is zeroized when that value is dropped.
//! - The whole exchange — connection, request, answer — is bounded by the
//!   request's deadline.
//! - A response body never grows past its cap; past it the exchange fails
//!   and its connection is destroyed.
//! - Each body chunk is charged to the request's tenant share and the
//!   node's metadata budget (`OutputBuffer`) before it is kept; the first
//!   chunk that does not fit fails the call with [`VaultError::Staging`]
//!   and destroys the connection, so the bytes held never exceed the
//!   charge (plus hyper's read buffer).
//! - A parked connection the server closed never fails a request: it is
//!   skipped at checkout, or hands the request back unsent and the
//!   request goes to another connection.
//! - A connection is parked only by the http adapter's rule: the answer
//!   was read to its end, it is HTTP/1.1 without `Connection: close`, and
//!   the connection is ready again within `REUSE_WAIT`; a transport error,
//!   an oversized body, a deadline or a dropped future destroy it.
//! - A request body is moved into a zeroizing buffer that backs it until
//!   hyper drops it.
//! - No error carries request or response bytes, except Vault's own
//!   bounded error messages.

use bytes::Bytes;
use http::header::{HeaderName, HeaderValue, CONTENT_TYPE, HOST};
use http::Version;
use http_body_util::{BodyExt, Full};
use hyper::body::{Body, Incoming};
use provider_pools_actors::{OriginKind, ProviderPools, RunningRequest, StagedOutput};
use zeroize::Zeroizing;

use crate::http_origin::delivery::{asks_close, park_if_reusable};
use crate::http_origin::delivery::{deliver, Delivered, Undeliverable};
use crate::http_origin::error::Progress;
use crate::http_origin::{HttpConnection, HttpDialer};
use crate::vault::config::{
    self, VaultAddress, MOUNT_SETTING, NAMESPACE_SETTING, TRANSIT_MOUNT_SETTING,
};
use crate::vault::error::{bounded_messages, VaultError};
use crate::vault::wire::ErrorBody;

/// Vault's message for a check-and-set mismatch (a 400 answer).
const CAS_MISMATCH: &str = "check-and-set parameter did not match";

const X_VAULT_TOKEN: HeaderName = HeaderName::from_static("x-vault-token");
const X_VAULT_NAMESPACE: HeaderName = HeaderName::from_static("x-vault-namespace");
const X_VAULT_REQUEST: HeaderName = HeaderName::from_static("x-vault-request");

/// What an exchange needs from the slot, checked before any dial.
pub(crate) struct Slot {
    pub(crate) address: VaultAddress,
    namespace: Option<String>,
    /// The KV-v2 mount.
    pub(crate) mount: String,
    /// The transit mount.
    pub(crate) transit_mount: String,
}

/// One request as it goes on the wire, Vault's headers and token aside.
#[derive(Debug)]
pub(crate) struct Outgoing {
    pub(crate) method: http::Method,
    /// Origin-form: `/v1/...`, with its query.
    pub(crate) path: String,
    /// The JSON body; empty for none.
    pub(crate) body: Vec<u8>,
}

impl Slot {
    /// The running request's slot: a Vault origin, its settings and a
    /// usable token.
    ///
    /// # Errors
    ///
    /// [`VaultError::Config`] naming what is unusable (never its value).
    pub(crate) fn of(running: &RunningRequest) -> Result<Self, VaultError> {
        let client = running.client();
        if client.kind() != OriginKind::Vault {
            return Err(VaultError::Config {
                setting: "target",
                reason: "is not a vault origin",
            });
        }
        let address = VaultAddress::parse(client.target())?;
        let namespace = config::namespace(client.setting(NAMESPACE_SETTING))?;
        config::token(client.credential_for_adapter().expose_to_adapter())?;
        let mount = config::mount(client.setting(MOUNT_SETTING))?;
        let transit_mount = config::transit_mount(client.setting(TRANSIT_MOUNT_SETTING))?;
        Ok(Self {
            address,
            namespace,
            mount,
            transit_mount,
        })
    }
}

/// Sends `outgoing` on a pooled connection of `running`'s client and
/// returns the status and body of a 2xx answer; other statuses become
/// errors. A
/// stale idle connection that hands the request back unsent is replaced
/// by another (the http adapter's delivery); a request a connection took
/// is never sent again.
///
/// # Cancel safety
///
/// Dropping the future destroys the connection in use and drops the
/// answer's charged bytes read so far (their charges are released with
/// them).
pub(crate) async fn exchange(
    pools: &ProviderPools,
    running: &RunningRequest,
    dialer: &HttpDialer,
    slot: &Slot,
    outgoing: Outgoing,
    max_response: usize,
) -> Result<(http::StatusCode, StagedOutput), VaultError> {
    let request = build(running, slot, outgoing)?;
    let deadline = running.deadline();
    let (conn, keep_alive, status, body) = tokio::time::timeout_at(deadline, async {
        let Delivered { conn, response } =
            deliver(pools, running, dialer, request, false, &Progress::default())
                .await
                .map_err(|e| match e {
                    Undeliverable::Connect(e) => VaultError::Connect(e),
                    Undeliverable::Send { .. } => VaultError::Protocol {
                        phase: "sending the request",
                    },
                    Undeliverable::Expired => VaultError::Timeout,
                    Undeliverable::HeadTooLarge { .. } | Undeliverable::Head(_) => {
                        VaultError::Protocol {
                            phase: "reading the response head",
                        }
                    }
                })?;
        // The request never asks to close: only the answer can.
        let keep_alive = response.version() == Version::HTTP_11 && !asks_close(response.headers());
        let status = response.status();
        let body = read_capped(response.into_body(), max_response, running).await?;
        Ok::<_, VaultError>((conn, keep_alive, status, body))
    })
    .await
    .map_err(|_| VaultError::Timeout)??;
    release(conn, keep_alive, deadline).await;
    classify(status.as_u16(), body).map(|body| (status, body))
}

/// After a complete answer: parks a keep-alive connection once it is ready
/// again, destroys any other.
async fn release(
    conn: provider_pools_actors::PooledConnection<HttpConnection>,
    keep_alive: bool,
    deadline: tokio::time::Instant,
) {
    if keep_alive {
        park_if_reusable(conn, deadline).await;
    } else {
        drop(conn);
    }
}

/// The hyper request: origin-form path, `Host` from the slot's address,
/// Vault's headers and the running epoch's token.
fn build(
    running: &RunningRequest,
    slot: &Slot,
    outgoing: Outgoing,
) -> Result<http::Request<Full<Bytes>>, VaultError> {
    let building = VaultError::Protocol {
        phase: "building the request",
    };
    let Outgoing { method, path, body } = outgoing;
    let json = !body.is_empty();
    // The body may hold secret data or plaintext: wiped once hyper drops it.
    let body = Bytes::from_owner(Zeroizing::new(body));
    let mut request = http::Request::new(Full::new(body));
    *request.method_mut() = method;
    *request.uri_mut() = http::Uri::try_from(path).map_err(|_| building)?;
    let headers = request.headers_mut();
    let host = HeaderValue::from_str(&slot.address.origin().host_header()).map_err(|_| {
        VaultError::Config {
            setting: "target",
            reason: "has no valid host",
        }
    })?;
    headers.insert(HOST, host);
    headers.insert(X_VAULT_REQUEST, HeaderValue::from_static("true"));
    if json {
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    }
    if let Some(namespace) = &slot.namespace {
        let namespace = HeaderValue::from_str(namespace).map_err(|_| VaultError::Config {
            setting: NAMESPACE_SETTING,
            reason: "is not a valid header value",
        })?;
        headers.insert(X_VAULT_NAMESPACE, namespace);
    }
    headers.insert(X_VAULT_TOKEN, token_header(running)?);
    Ok(request)
}

/// The running epoch's token as a sensitive header value whose bytes are
/// wiped when the value is dropped.
fn token_header(running: &RunningRequest) -> Result<HeaderValue, VaultError> {
    let token = config::token(
        running
            .client()
            .credential_for_adapter()
            .expose_to_adapter(),
    )?;
    sensitive_value(token)
}

/// `token` as a header value marked sensitive, backed by a zeroizing copy.
fn sensitive_value(token: &str) -> Result<HeaderValue, VaultError> {
    // `Bytes::from_owner` keeps the zeroizing buffer alive for as long as
    // the header value (and any clone of it) lives, and drops it after.
    let owned = Bytes::from_owner(Zeroizing::new(token.as_bytes().to_vec()));
    let mut value = HeaderValue::from_maybe_shared(owned).map_err(|_| VaultError::Config {
        setting: "credential",
        reason: "the epoch's token is not a valid header value",
    })?;
    value.set_sensitive(true);
    Ok(value)
}

/// Reads `body` to its end, failing as soon as it would pass `max` bytes
/// or a piece cannot be charged: each piece is charged to `running`'s
/// metadata before it is kept, and nothing is allocated for what the
/// answer only announced.
async fn read_capped(
    mut body: Incoming,
    max: usize,
    running: &RunningRequest,
) -> Result<StagedOutput, VaultError> {
    let too_large = |len: u64| VaultError::TooLarge {
        what: "response body",
        len,
        max,
    };
    let announced = body.size_hint().lower();
    if announced > max as u64 {
        return Err(too_large(announced));
    }
    let mut buffer = running.output_buffer();
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|_| {
            // The driver closes the connection at the request's deadline.
            if tokio::time::Instant::now() >= running.deadline() {
                VaultError::Timeout
            } else {
                VaultError::Protocol {
                    phase: "reading the response",
                }
            }
        })?;
        if let Ok(data) = frame.into_data() {
            let len = buffer.len().saturating_add(data.len());
            if len > max {
                return Err(too_large(len as u64));
            }
            buffer.extend(&data).map_err(VaultError::Staging)?;
        }
    }
    Ok(buffer.finish())
}

/// A 2xx body, or the error its status and messages name.
fn classify<B: AsRef<[u8]>>(status: u16, body: B) -> Result<B, VaultError> {
    match status {
        200..=299 => Ok(body),
        404 => Err(VaultError::NotFound),
        403 => Err(VaultError::Denied),
        status => {
            let messages = serde_json::from_slice::<ErrorBody>(body.as_ref())
                .map(|b| b.errors)
                .unwrap_or_default();
            if status == 400 && messages.iter().any(|m| m.contains(CAS_MISMATCH)) {
                return Err(VaultError::CasConflict);
            }
            Err(VaultError::Rejected {
                status,
                messages: bounded_messages(messages),
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_token_header_is_sensitive_and_never_shown() {
        let value = sensitive_value("s.CANARY").expect("printable");
        assert!(value.is_sensitive());
        assert_eq!(value.as_bytes(), b"s.CANARY");
        assert!(!format!("{value:?}").contains("CANARY"));
    }

    #[test]
    fn statuses_map_to_their_errors() {
        assert!(classify(200, b"{}".to_vec()).is_ok());
        assert!(matches!(
            classify(404, Vec::new()),
            Err(VaultError::NotFound)
        ));
        assert!(matches!(classify(403, Vec::new()), Err(VaultError::Denied)));
        let cas = br#"{"errors":["check-and-set parameter did not match the current version"]}"#;
        assert!(matches!(
            classify(400, cas.to_vec()),
            Err(VaultError::CasConflict)
        ));
        let long = format!(r#"{{"errors":["{}","b","c","d","e"]}}"#, "x".repeat(500));
        match classify(500, long.into_bytes()) {
            Err(VaultError::Rejected { status, messages }) => {
                assert_eq!(status, 500);
                assert_eq!(messages.len(), 4);
                assert_eq!(messages[0].len(), 200);
            }
            other => panic!("{other:?}"),
        }
    }
}
