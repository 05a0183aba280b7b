//! [`PoolConnector`]: the SDK's HTTP client for one running request. It
//! sends each request the SDK signed on an HTTP/1.1 connection the pools
//! own (`reserve_connection` with the http adapter's [`HttpDialer`]).
//!
//! Invariants:
//! - A request whose scheme, host or port is not the slot's approved
//!   endpoint (with the bucket prefixed under virtual-hosted addressing) is
//!   refused before any connection is reserved.
//! - The request body is bounded before a connection is reserved.
//! - Connection, request and response head are bounded by the running
//!   request's deadline; the response body by [`PooledBody`].
//! - The connection travels with the response body: parked only after the
//!   body ended on a reusable connection, destroyed otherwise.
//! - A parked connection the endpoint closed never fails a request: it is
//!   skipped at checkout, or hands the request back unsent and the request
//!   goes to another connection; a request a connection took is never
//!   sent again.
//! - Where the bytes are charged: the SDK owns the buffering of every
//!   answer but a streamed get's 2xx body, and it reads the frames of
//!   [`PooledBody`], so each frame is charged there, before the SDK gets
//!   it. That covers every answer the SDK reads whole: the operations that
//!   buffer (`charge_body`) and any non-2xx answer (an error document, also
//!   of a get, bounded by `max_error`). A streamed get's body is charged
//!   chunk by chunk by its reader.
//! - Nothing is retried here (the SDK's retries are disabled too).

use std::sync::Arc;

use aws_sdk_s3::config::http::{HttpRequest, HttpResponse};
use aws_sdk_s3::error::ConnectorError;
use aws_sdk_s3::primitives::SdkBody;
use aws_smithy_runtime_api::client::http::{
    HttpClient, HttpConnector, HttpConnectorFuture, HttpConnectorSettings, SharedHttpConnector,
};
use aws_smithy_runtime_api::client::runtime_components::RuntimeComponents;
use http::header::{HeaderValue, HOST};
use http::{Uri, Version};
use http_body_util::{BodyExt, Full, Limited};
use provider_pools_actors::{ProviderPools, RunningRequest};

use crate::http_origin::delivery::asks_close;
use crate::http_origin::delivery::{deliver, Delivered, Undeliverable};
use crate::http_origin::error::Progress;
use crate::http_origin::HttpDialer;
use crate::s3::body::{Charged, PooledBody};
use crate::s3::config::S3Endpoint;
use crate::s3::error::Failure;

/// Body limits of the exchanges a connector carries, in bytes.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Bounds {
    pub(crate) max_request: u64,
    pub(crate) max_response: u64,
    /// Largest error answer (a non-2xx status), which the SDK always
    /// reads whole; it is always charged.
    pub(crate) max_error: u64,
    /// The SDK buffers the whole answer (every operation but a streamed
    /// get, whose reader charges its own chunks): each chunk is charged to
    /// the request before the SDK gets it, held until the operation ends.
    pub(crate) charge_body: bool,
}

/// The SDK's HTTP client and connector, bound to one running request.
#[derive(Clone)]
pub(crate) struct PoolConnector(Arc<Bound>);

struct Bound {
    pools: ProviderPools,
    running: RunningRequest,
    dialer: Arc<HttpDialer>,
    endpoint: Arc<S3Endpoint>,
    bounds: Bounds,
    /// The charged chunks of the answers the SDK buffers, kept until the
    /// operation (and its connector) is dropped.
    charged: Charged,
}

impl PoolConnector {
    pub(crate) fn new(
        pools: &ProviderPools,
        running: &RunningRequest,
        dialer: &Arc<HttpDialer>,
        endpoint: Arc<S3Endpoint>,
        bounds: Bounds,
    ) -> Self {
        Self(Arc::new(Bound {
            pools: pools.clone(),
            running: running.clone(),
            dialer: Arc::clone(dialer),
            endpoint,
            bounds,
            charged: Charged::default(),
        }))
    }
}

impl std::fmt::Debug for PoolConnector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PoolConnector")
            .field("endpoint", &self.0.endpoint.origin)
            .field("bounds", &self.0.bounds)
            .finish_non_exhaustive()
    }
}

impl HttpClient for PoolConnector {
    fn http_connector(
        &self,
        _settings: &HttpConnectorSettings,
        _components: &RuntimeComponents,
    ) -> SharedHttpConnector {
        // The SDK's connect/read timeouts are not used: the running
        // request's deadline bounds every exchange.
        SharedHttpConnector::new(self.clone())
    }
}

impl HttpConnector for PoolConnector {
    fn call(&self, request: HttpRequest) -> HttpConnectorFuture {
        let bound = Arc::clone(&self.0);
        HttpConnectorFuture::new(async move {
            bound.send(request).await.map_err(|failure| match failure {
                Failure::Timeout => ConnectorError::timeout(Box::new(failure)),
                Failure::Unapproved(_) | Failure::RequestTooLarge { .. } | Failure::RequestBody => {
                    ConnectorError::user(Box::new(failure))
                }
                _ => ConnectorError::io(Box::new(failure)),
            })
        })
    }
}

impl Bound {
    /// Checks the origin and the body, reserves a connection and sends. A
    /// stale idle connection that hands the request back unsent is
    /// replaced by another (the http adapter's delivery); a request a
    /// connection took is never sent again.
    ///
    /// # Cancel safety
    ///
    /// Dropping the future destroys the connection in use.
    async fn send(&self, request: HttpRequest) -> Result<HttpResponse, Failure> {
        let request = request
            .try_into_http1x()
            .map_err(|_| Failure::Unapproved("the request"))?;
        let host = approved_host(&self.endpoint, request.uri())?;
        let (mut parts, body) = request.into_parts();
        let max = self.bounds.max_request;
        let body = Limited::new(body, usize::try_from(max).unwrap_or(usize::MAX))
            .collect()
            .await
            .map_err(|e| {
                if e.is::<http_body_util::LengthLimitError>() {
                    Failure::RequestTooLarge { max }
                } else {
                    Failure::RequestBody
                }
            })?
            .to_bytes();
        parts.uri = match parts.uri.path_and_query() {
            Some(target) => Uri::from(target.clone()),
            None => Uri::from_static("/"),
        };
        parts.headers.insert(HOST, host);
        let request_close = asks_close(&parts.headers);
        let request = http::Request::from_parts(parts, Full::new(body));
        let deadline = self.running.deadline();
        tokio::time::timeout_at(deadline, async {
            let Delivered { conn, response } = deliver(
                &self.pools,
                &self.running,
                &*self.dialer,
                request,
                false,
                &Progress::default(),
            )
            .await
            .map_err(|e| match e {
                Undeliverable::Connect(e) => Failure::Connect(e),
                Undeliverable::Send { source, .. } => Failure::Protocol {
                    phase: "sending the request",
                    source,
                },
                Undeliverable::Expired => Failure::Timeout,
                Undeliverable::HeadTooLarge { source, .. } | Undeliverable::Head(source) => {
                    Failure::Protocol {
                        phase: "reading the response head",
                        source,
                    }
                }
            })?;
            let keep_alive = !request_close
                && response.version() == Version::HTTP_11
                && !asks_close(response.headers());
            let (parts, body) = response.into_parts();
            // The SDK reads an error answer whole to parse it, also for a
            // streamed get: it is charged and bounded like any buffered
            // answer.
            let buffered = self.bounds.charge_body || !parts.status.is_success();
            let max = if parts.status.is_success() {
                self.bounds.max_response
            } else {
                self.bounds.max_error
            };
            let charge = buffered.then(|| (self.running.clone(), self.charged.clone()));
            let body = PooledBody::new(body, conn, keep_alive, max, deadline, charge);
            let response = http::Response::from_parts(parts, SdkBody::from_body_1_x(body));
            HttpResponse::try_from(response).map_err(|_| Failure::Unapproved("the response"))
        })
        .await
        .map_err(|_| Failure::Timeout)?
    }
}

/// The `Host` of a request to the approved endpoint (the bucket prefixed
/// under virtual-hosted addressing), or the refusal naming what differs.
fn approved_host(endpoint: &S3Endpoint, uri: &Uri) -> Result<HeaderValue, Failure> {
    let origin = &endpoint.origin;
    let scheme_ok = uri
        .scheme_str()
        .is_some_and(|s| s.eq_ignore_ascii_case(origin.scheme()));
    if !scheme_ok {
        return Err(Failure::Unapproved("the scheme"));
    }
    let default = if origin.is_tls() { 443 } else { 80 };
    if uri.port_u16().unwrap_or(default) != origin.port() {
        return Err(Failure::Unapproved("the port"));
    }
    let host = uri.host().ok_or(Failure::Unapproved("the host"))?;
    let authority = if origin.port() == default {
        host.to_ascii_lowercase()
    } else {
        format!("{}:{}", host.to_ascii_lowercase(), origin.port())
    };
    let expected = endpoint.request_host();
    if authority != expected {
        return Err(Failure::Unapproved("the host"));
    }
    HeaderValue::from_str(&expected).map_err(|_| Failure::Unapproved("the host"))
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    fn endpoint(target: &str, path_style: &str) -> S3Endpoint {
        let settings: BTreeMap<String, String> = [
            ("region", "us-east-1"),
            ("bucket", "data"),
            ("path_style", path_style),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect();
        S3Endpoint::parse(target, &settings).expect("valid")
    }

    fn check(endpoint: &S3Endpoint, uri: &str) -> Result<String, &'static str> {
        let uri: Uri = uri.parse().expect("uri");
        approved_host(endpoint, &uri)
            .map(|host| host.to_str().expect("ascii").to_owned())
            .map_err(|failure| match failure {
                Failure::Unapproved(what) => what,
                _ => "other",
            })
    }

    #[test]
    fn only_the_slots_endpoint_is_approved() {
        let path = endpoint("http://127.0.0.1:9000", "true");
        assert_eq!(
            check(&path, "http://127.0.0.1:9000/data/k"),
            Ok("127.0.0.1:9000".into())
        );
        assert_eq!(
            check(&path, "https://127.0.0.1:9000/data/k"),
            Err("the scheme")
        );
        assert_eq!(
            check(&path, "http://127.0.0.1:9001/data/k"),
            Err("the port")
        );
        assert_eq!(
            check(&path, "http://127.0.0.2:9000/data/k"),
            Err("the host")
        );
        assert_eq!(
            check(&path, "http://data.127.0.0.1:9000/k"),
            Err("the host")
        );
        assert_eq!(check(&path, "/data/k"), Err("the scheme"));
    }

    #[test]
    fn virtual_hosted_requests_name_the_bucket_and_default_ports_are_implied() {
        let virtual_hosted = endpoint("https://s3.example", "false");
        assert_eq!(
            check(&virtual_hosted, "https://data.s3.example/k"),
            Ok("data.s3.example".into())
        );
        assert_eq!(
            check(&virtual_hosted, "https://data.s3.example:443/k"),
            Ok("data.s3.example".into())
        );
        assert_eq!(
            check(&virtual_hosted, "https://other.s3.example/k"),
            Err("the host")
        );
        assert_eq!(
            check(&virtual_hosted, "https://s3.example/data/k"),
            Err("the host")
        );
    }
}
