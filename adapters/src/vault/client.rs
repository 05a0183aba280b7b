//! [`PoolClient`]: rustify's [`Client`] on the pools' own connections, so
//! vaultrs's endpoints (`vaultrs::api::*::requests`) run through
//! [`Endpoint::exec`] without vaultrs's reqwest client.
//!
//! rustify builds each request from a vaultrs endpoint (method, URL under
//! [`Client::base`], JSON body) and hands it to [`Client::send`]; `send`
//! turns it into one [`exchange`] on a pooled connection of the running
//! request's client and hands back the answer it read.
//!
//! Invariants:
//! - A client is built per call from an admitted [`RunningRequest`] and a
//!   checked [`Slot`]; it holds nothing shared, so what it meets is this
//!   call's alone.
//! - No `vaultrs::client::VaultClient` and no rustify reqwest client is
//!   built anywhere in the adapter: `send` is the only way out.
//! - A request leaves only for the slot's origin under `/v1/`, with a body
//!   of at most [`max_request`] (the largest input any call carries, a
//!   transit ciphertext of `max_secret_bytes` of plaintext, plus
//!   room for the JSON around it), checked before any connection is reserved; headers are the exchange's
//!   (rustify sets none without a middleware, and none is used).
//! - An answer is read under `max_response_bytes` and charged; the charged
//!   body stays in the client until the operation takes it or ends, so the
//!   copy rustify parses (transient, no larger) is always covered.
//! - A failure reaches rustify as `ClientError::ResponseError` carrying the
//!   typed [`VaultError`] and comes out of `exec` as that same error;
//!   rustify's own errors become [`VaultError::Protocol`] without their
//!   content (which may hold response bytes).

use std::sync::{Mutex, PoisonError};

use async_trait::async_trait;
use http::{Request, Response};
use provider_pools_actors::{ProviderPools, RunningRequest, StagedOutput};
use rustify::client::Client;
use rustify::endpoint::Endpoint;
use rustify::endpoint::Wrapper;
use rustify::errors::ClientError;
use serde::de::DeserializeOwned;
use serde::Deserialize;

use crate::http_origin::HttpDialer;
use crate::vault::error::VaultError;
use crate::vault::exchange::{exchange, Outgoing, Slot};
use crate::vault::sizes::max_request;
use crate::vault::VaultLimits;

/// Vault's answer envelope, of which only `data` is read (vaultrs's own
/// `EndpointResult` also requires the lease fields and parses `auth`,
/// which no call here needs).
#[derive(Deserialize)]
struct Envelope<T> {
    data: Option<T>,
}

impl<T: DeserializeOwned + Send + Sync> Wrapper for Envelope<T> {
    type Value = T;
}

/// rustify's [`Client`] for one call: the running request, its slot, the
/// dialer of its client, and the bounds of the call.
pub(crate) struct PoolClient<'a> {
    pools: &'a ProviderPools,
    running: &'a RunningRequest,
    dialer: &'a HttpDialer,
    slot: &'a Slot,
    limits: VaultLimits,
    /// `{origin}/v1`: where rustify builds each endpoint's URL.
    base: String,
    /// The charged body of the last answer.
    answer: Mutex<Option<StagedOutput>>,
}

impl<'a> PoolClient<'a> {
    pub(crate) fn new(
        pools: &'a ProviderPools,
        running: &'a RunningRequest,
        dialer: &'a HttpDialer,
        slot: &'a Slot,
        limits: VaultLimits,
    ) -> Self {
        Self {
            pools,
            running,
            dialer,
            slot,
            limits,
            base: format!("{}/v1", slot.address.origin()),
            answer: Mutex::new(None),
        }
    }

    /// Runs `endpoint` and returns the `data` of Vault's answer envelope.
    ///
    /// # Cancel safety
    ///
    /// As [`exchange`]: dropping the future destroys the connection in use.
    ///
    /// # Errors
    ///
    /// The exchange's [`VaultError`]; [`VaultError::Protocol`] when the
    /// answer is not an envelope of `E::Response`.
    pub(crate) async fn data<E: Endpoint>(&self, endpoint: &E) -> Result<E::Response, VaultError> {
        let result = endpoint.exec(self).await.map_err(from_client_error)?;
        let envelope =
            result
                .wrap::<Envelope<E::Response>>()
                .map_err(|_| VaultError::Protocol {
                    phase: "parsing the response",
                })?;
        envelope.data.ok_or(VaultError::Protocol {
            phase: "reading the response's data",
        })
    }

    /// Runs `endpoint`, whose answer (a 204, or a body nothing is read
    /// from) only says it was done.
    ///
    /// # Cancel safety
    ///
    /// As [`Self::data`]; once the request was sent it may have been done.
    ///
    /// # Errors
    ///
    /// The exchange's [`VaultError`].
    pub(crate) async fn empty<E: Endpoint>(&self, endpoint: &E) -> Result<(), VaultError> {
        endpoint.exec(self).await.map_err(from_client_error)?;
        Ok(())
    }

    /// The charged body of the last answer, if not taken yet.
    pub(crate) fn take_answer(&self) -> Option<StagedOutput> {
        self.answer
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
    }

    /// What goes on the wire for rustify's request, refused before any
    /// connection is reserved when it leaves `/v1/` or its body is over
    /// its bound.
    fn outgoing(&self, request: Request<Vec<u8>>) -> Result<Outgoing, VaultError> {
        let (parts, body) = request.into_parts();
        VaultError::check_size("request body", body.len(), max_request(self.limits))?;
        let path = parts
            .uri
            .path_and_query()
            .map(|p| p.as_str())
            .filter(|p| p.starts_with("/v1/"))
            .ok_or(VaultError::Protocol {
                phase: "building the request",
            })?;
        Ok(Outgoing {
            method: parts.method,
            // rustify leaves a `?` when an endpoint's query is empty.
            path: path.strip_suffix('?').unwrap_or(path).to_owned(),
            body,
        })
    }

    async fn send_typed(&self, request: Request<Vec<u8>>) -> Result<Response<Vec<u8>>, VaultError> {
        let outgoing = self.outgoing(request)?;
        let (status, body) = exchange(
            self.pools,
            self.running,
            self.dialer,
            self.slot,
            outgoing,
            self.limits.max_response_bytes,
        )
        .await?;
        let copy = body.bytes().to_vec();
        *self.answer.lock().unwrap_or_else(PoisonError::into_inner) = Some(body);
        let mut response = Response::new(copy);
        *response.status_mut() = status;
        Ok(response)
    }
}

#[async_trait]
impl Client for PoolClient<'_> {
    async fn send(&self, request: Request<Vec<u8>>) -> Result<Response<Vec<u8>>, ClientError> {
        self.send_typed(request)
            .await
            .map_err(|e| ClientError::ResponseError {
                source: anyhow::Error::new(e),
            })
    }

    fn base(&self) -> &str {
        &self.base
    }
}

/// The typed error back out of rustify's.
fn from_client_error(error: ClientError) -> VaultError {
    match error {
        ClientError::ResponseError { source } => {
            source
                .downcast::<VaultError>()
                .unwrap_or(VaultError::Protocol {
                    phase: "sending the request",
                })
        }
        // Only a 2xx outside rustify's 200..=208: the exchange refused the rest.
        ClientError::ServerResponseError { code, .. } => VaultError::Rejected {
            status: code,
            messages: Vec::new(),
        },
        ClientError::ResponseParseError { .. } | ClientError::ResponseConversionError { .. } => {
            VaultError::Protocol {
                phase: "parsing the response",
            }
        }
        _ => VaultError::Protocol {
            phase: "building the request",
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_typed_failure_comes_back_out_of_rustify_unchanged() {
        let wrapped = ClientError::ResponseError {
            source: anyhow::Error::new(VaultError::CasConflict),
        };
        assert!(matches!(
            from_client_error(wrapped),
            VaultError::CasConflict
        ));
        let parse = ClientError::ResponseParseError {
            source: anyhow::anyhow!("bad json"),
            content: Some("SECRET-BYTES".to_owned()),
        };
        let err = from_client_error(parse);
        assert!(matches!(err, VaultError::Protocol { .. }));
        assert!(!format!("{err} {err:?}").contains("SECRET"));
    }
}
