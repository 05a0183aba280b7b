//! The demo's `/metrics` endpoint: the registry's OpenMetrics text over
//! loopback HTTP/1 (hyper), and a raw-TCP scrape of it.

use std::convert::Infallible;
use std::sync::Arc;

use http_body_util::Full;
use hyper::body::Incoming;
use hyper::{Request, Response, StatusCode};
use provider_pools::metrics::prometheus_client::encoding::text::encode;
use provider_pools::metrics::prometheus_client::registry::Registry;
use provider_pools::Bytes;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::traffic::BoxError;

const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// Serves `GET /metrics` on a loopback port until the process ends;
/// returns the address (`127.0.0.1:PORT`).
pub(crate) async fn serve(registry: Arc<Registry>) -> Result<String, BoxError> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?.to_string();
    #[allow(clippy::disallowed_methods, reason = "the demo's own metrics server")]
    tokio::spawn(async move {
        while let Ok((socket, _)) = listener.accept().await {
            let registry = Arc::clone(&registry);
            #[allow(clippy::disallowed_methods, reason = "the demo's own metrics server")]
            tokio::spawn(async move {
                let service = hyper::service::service_fn(move |req: Request<Incoming>| {
                    let registry = Arc::clone(&registry);
                    async move { Ok::<_, Infallible>(answer(&registry, &req)) }
                });
                let io = hyper_util::rt::TokioIo::new(socket);
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(io, service)
                    .await;
            });
        }
    });
    Ok(addr)
}

fn answer(registry: &Registry, req: &Request<Incoming>) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(Bytes::new()));
    if req.method() != hyper::Method::GET || req.uri().path() != "/metrics" {
        *response.status_mut() = StatusCode::NOT_FOUND;
        return response;
    }
    let mut text = String::new();
    if encode(&mut text, registry).is_err() {
        *response.status_mut() = StatusCode::INTERNAL_SERVER_ERROR;
        return response;
    }
    *response.body_mut() = Full::new(Bytes::from(text));
    response.headers_mut().insert(
        hyper::header::CONTENT_TYPE,
        hyper::header::HeaderValue::from_static(CONTENT_TYPE),
    );
    response
}

/// One `GET /metrics` over a real TCP connection; the body, after checking
/// the status line.
pub(crate) async fn scrape(addr: &str) -> Result<String, BoxError> {
    let mut stream = tokio::net::TcpStream::connect(addr).await?;
    let request = format!("GET /metrics HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).await?;
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).await?;
    let text = String::from_utf8(raw)?;
    let (head, body) = text.split_once("\r\n\r\n").ok_or("no header end")?;
    if !head.starts_with("HTTP/1.1 200") {
        return Err(format!("scrape answered {}", head.lines().next().unwrap_or("")).into());
    }
    Ok(body.to_owned())
}
