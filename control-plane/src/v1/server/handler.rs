//! One V1 request: route, bounded body, the store's call, the JSON answer.

use std::convert::Infallible;
use std::sync::Arc;

use bytes::Bytes;
use http_body_util::{BodyExt, Full, LengthLimitError, Limited};
use hyper::body::Incoming;
use hyper::header::{HeaderValue, CONTENT_LENGTH, CONTENT_TYPE};
use hyper::{Method, Request, Response, StatusCode};
use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::client::{CallResult, ControlPlane};
use crate::error::ControlPlaneError;
use crate::lease::{LeaseGrant, LeaseRequest};
use crate::presence::{PresenceKey, Registration};
use crate::transport::HttpMethod;
use crate::v1::protocol::{
    status_of, Done, ErrorEnvelope, Instances, LeaseRead, Route, RouteError, WireError,
    CONTENT_TYPE as JSON,
};
use crate::v1::server::ServerConfig;

/// Answers one request; never fails (every failure is a V1 error body).
pub(super) async fn handle(
    store: Arc<dyn ControlPlane>,
    config: ServerConfig,
    request: Request<Incoming>,
) -> Result<Response<Full<Bytes>>, Infallible> {
    let (status, body) = match answer(&*store, &config, request).await {
        Ok(body) => (200, body),
        Err((status, error)) => (status, error_body(error)),
    };
    let mut response = Response::new(Full::new(body));
    *response.status_mut() = StatusCode::from_u16(status).unwrap_or(StatusCode::BAD_GATEWAY);
    response
        .headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static(JSON));
    Ok(response)
}

type Refusal = (u16, WireError);

fn refusal(error: &ControlPlaneError) -> Refusal {
    (status_of(error.code()), WireError::from_error(error))
}

fn protocol(status: u16, message: String) -> Refusal {
    let error = ControlPlaneError::Protocol(message);
    (status, WireError::from_error(&error))
}

fn error_body(error: WireError) -> Bytes {
    serde_json::to_vec(&ErrorEnvelope { error })
        .map(Bytes::from)
        .unwrap_or_else(|_| {
            Bytes::from_static(br#"{"error":{"code":"protocol","message":"unencodable error"}}"#)
        })
}

async fn answer(
    store: &dyn ControlPlane,
    config: &ServerConfig,
    request: Request<Incoming>,
) -> Result<Bytes, Refusal> {
    let method = match *request.method() {
        Method::GET => HttpMethod::Get,
        Method::POST => HttpMethod::Post,
        Method::PUT => HttpMethod::Put,
        Method::DELETE => HttpMethod::Delete,
        ref other => return Err(protocol(405, format!("method {other} is not V1"))),
    };
    let path = request.uri().path().to_owned();
    let route = Route::parse(method, &path).map_err(|error| match error {
        RouteError::NotFound => protocol(404, format!("no V1 route {path}")),
        RouteError::MethodNotAllowed => {
            protocol(405, format!("{} is not allowed on {path}", method.as_str()))
        }
        RouteError::Invalid(error) => refusal(&error),
    })?;
    let body = read_body(config, request).await?;
    dispatch(store, route, &body)
        .await
        .map_err(|error| refusal(&error))
}

/// The request body, at most `max_body_bytes`, within `body_read_timeout`.
async fn read_body(config: &ServerConfig, request: Request<Incoming>) -> Result<Bytes, Refusal> {
    let too_large = || {
        refusal(&ControlPlaneError::TooLarge {
            what: "request body",
            limit: config.max_body_bytes as u64,
        })
    };
    let announced = request
        .headers()
        .get(CONTENT_LENGTH)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.parse::<u64>().ok());
    if announced.is_some_and(|length| length > config.max_body_bytes as u64) {
        return Err(too_large());
    }
    let limited = Limited::new(request.into_body(), config.max_body_bytes);
    match tokio::time::timeout(config.body_read_timeout, limited.collect()).await {
        Err(_elapsed) => Err(protocol(
            408,
            "the request body was not received in time".into(),
        )),
        Ok(Ok(collected)) => Ok(collected.to_bytes()),
        Ok(Err(error)) if error.downcast_ref::<LengthLimitError>().is_some() => Err(too_large()),
        Ok(Err(error)) => Err(protocol(400, format!("reading the request body: {error}"))),
    }
}

fn decode<T: DeserializeOwned>(body: &[u8]) -> CallResult<T> {
    serde_json::from_slice(body)
        .map_err(|error| ControlPlaneError::invalid("body", error.to_string()))
}

fn encode<T: Serialize>(value: &T) -> CallResult<Bytes> {
    serde_json::to_vec(value)
        .map(Bytes::from)
        .map_err(|error| ControlPlaneError::Protocol(format!("encoding the answer: {error}")))
}

async fn dispatch(store: &dyn ControlPlane, route: Route, body: &[u8]) -> CallResult<Bytes> {
    match route {
        Route::Register => {
            store.register(decode::<Registration>(body)?).await?;
            encode(&Done {})
        }
        Route::Heartbeat => {
            store.heartbeat(decode::<PresenceKey>(body)?).await?;
            encode(&Done {})
        }
        Route::Deregister => {
            store.deregister(decode::<PresenceKey>(body)?).await?;
            encode(&Done {})
        }
        Route::Discover(service) => encode(&Instances {
            instances: store.discover(service).await?,
        }),
        Route::Acquire => {
            let request: LeaseRequest = decode(body)?;
            request.check()?;
            encode(&store.acquire(request).await?)
        }
        Route::Renew => {
            let grant: LeaseGrant = decode(body)?;
            grant.check()?;
            encode(&store.renew(grant).await?)
        }
        Route::Release => {
            let grant: LeaseGrant = decode(body)?;
            grant.check()?;
            store.release(grant).await?;
            encode(&Done {})
        }
        Route::ReadLease(key) => encode(&LeaseRead {
            lease: store.read_lease(key).await?,
        }),
    }
}
