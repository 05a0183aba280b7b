//! One Vault exchange on a pooled connection: vaultrs's endpoint and
//! middleware build the request, the connection's reqwest client sends it,
//! the answer is read under a cap and classified.
//!
//! Invariants:
//! - The whole exchange — connection, request, answer — is bounded by the
//!   request's deadline.
//! - A response body never grows past its cap; past it the exchange fails
//!   and its connection is destroyed.
//! - A connection is parked only after a complete answer (whatever its
//!   status); a transport error, an oversized body, a deadline or a dropped
//!   future destroy it.
//! - The token header is marked sensitive; no error carries request or
//!   response bytes, except Vault's own bounded error messages.

use provider_pools_actors::{ProviderPools, RunningRequest};
use rustify::endpoint::{Endpoint, MutatedEndpoint};
use serde::de::DeserializeOwned;

use crate::vault::dialer::VaultDialer;
use crate::vault::error::{bounded_messages, VaultError};

/// Vault's message for a check-and-set mismatch (a 400 answer).
const CAS_MISMATCH: &str = "check-and-set parameter did not match";

/// Sends `endpoint` on a pooled connection of `running`'s client and
/// returns the body of a 2xx answer; other statuses become errors.
///
/// Dropping the future destroys the connection in use.
pub(crate) async fn exchange<E: Endpoint>(
    pools: &ProviderPools,
    running: &RunningRequest,
    dialer: &VaultDialer,
    endpoint: E,
    max_response: usize,
) -> Result<Vec<u8>, VaultError> {
    let (status, body) = tokio::time::timeout_at(running.deadline(), async {
        let conn = pools.reserve_connection(running, dialer).await?;
        let client = conn.get();
        let request = MutatedEndpoint::new(endpoint, client.middle())
            .request(client.base())
            .map_err(|_| VaultError::Protocol {
                phase: "building the request",
            })?;
        let mut request =
            reqwest::Request::try_from(request).map_err(|_| VaultError::Protocol {
                phase: "building the request",
            })?;
        if let Some(token) = request.headers_mut().get_mut("x-vault-token") {
            token.set_sensitive(true);
        }
        let response = client
            .http()
            .execute(request)
            .await
            .map_err(|e| transport_error(&e, "sending the request"))?;
        let status = response.status().as_u16();
        let body = read_capped(response, max_response).await?;
        // A complete answer: reqwest keeps the socket for the next request.
        conn.park();
        Ok::<_, VaultError>((status, body))
    })
    .await
    .map_err(|_| VaultError::Timeout)??;
    classify(status, body)
}

/// Reads `response`'s body to its end, failing as soon as it would pass
/// `max` bytes.
pub(crate) async fn read_capped(
    mut response: reqwest::Response,
    max: usize,
) -> Result<Vec<u8>, VaultError> {
    let too_large = |len: u64| VaultError::TooLarge {
        what: "response body",
        len,
        max,
    };
    let announced = response.content_length().unwrap_or(0);
    if announced > max as u64 {
        return Err(too_large(announced));
    }
    let mut body = Vec::with_capacity(usize::try_from(announced).unwrap_or(max).min(max));
    while let Some(chunk) = response
        .chunk()
        .await
        .map_err(|e| transport_error(&e, "reading the response"))?
    {
        let len = body.len().saturating_add(chunk.len());
        if len > max {
            return Err(too_large(len as u64));
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

fn transport_error(e: &reqwest::Error, phase: &'static str) -> VaultError {
    if e.is_timeout() {
        VaultError::Timeout
    } else {
        VaultError::Protocol { phase }
    }
}

/// Vault's error body: `{"errors": [...]}`.
#[derive(serde::Deserialize)]
struct ErrorBody {
    #[serde(default)]
    errors: Vec<String>,
}

/// A 2xx body, or the error its status and messages name.
fn classify(status: u16, body: Vec<u8>) -> Result<Vec<u8>, VaultError> {
    match status {
        200..=299 => Ok(body),
        404 => Err(VaultError::NotFound),
        403 => Err(VaultError::Denied),
        status => {
            let messages = serde_json::from_slice::<ErrorBody>(&body)
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

/// The `data` of Vault's response envelope.
pub(crate) fn envelope_data<T: DeserializeOwned>(body: &[u8]) -> Result<T, VaultError> {
    serde_json::from_slice::<vaultrs::api::EndpointResult<T>>(body)
        .map_err(|_| VaultError::Protocol {
            phase: "parsing the response",
        })?
        .data
        .ok_or(VaultError::Protocol {
            phase: "reading the response's data",
        })
}

#[cfg(test)]
mod tests {
    use super::*;

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
