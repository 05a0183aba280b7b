//! Loopback GET throughput and latency through the buffered HTTP adapter,
//! against raw hyper connections, hyper-util's legacy client and a shared
//! reqwest client, and over HTTP/2 against a raw h2 connection.
//!
//! The HTTP/1.1 clients hit the same in-process hyper HTTP/1.1 server on a
//! free loopback port, which answers every GET with a fixed 256-byte body,
//! over keep-alive connections; the HTTP/2 clients hit an in-process h2
//! server answering the same body (prior knowledge, no stream limit). One iteration is one GET answered and its body
//! read, by one of `n` concurrent tasks (1 or 64); criterion's time is wall
//! time per request across all tasks, its throughput requests per second.
//!
//! - `http/engine`: what a guest call pays: admit → dispatch → start, the
//!   buffered `call` (checkout of a parked connection, send, read and charge
//!   the body, park), then drop the response and the request (release).
//! - `http/engine_call`: the buffered `call` alone, each task holding one
//!   running request admitted before the timer starts.
//! - `http/hyper_conn`: hyper's `client::conn::http1`, one connection per
//!   task, opened before the timer starts and reused for every request.
//! - `http/hyper_legacy`: one shared `hyper_util::client::legacy::Client`
//!   (HTTP/1.1 over its `tokio` connector) with its own keep-alive pool.
//! - `http/reqwest`: one shared `reqwest::Client` (0.12, plain HTTP/1.1)
//!   with its own keep-alive pool.
//! - `http/engine_h2`: as `http/engine`, for a provider with `http2 = "on"`:
//!   one tenant's requests are streams of one HTTP/2 connection.
//! - `http/h2_conn`: h2's client, one connection opened before the timer
//!   starts, every task sending on a clone of its `SendRequest`.
//! - `http/hyper_h2_conn`: hyper's `client::conn::http2` the same way (its
//!   tasks on tokio through hyper-util's executor).
//! - `http/hyper_legacy_h2`: hyper-util's legacy client with `http2_only`
//!   (prior knowledge), its own pool, over the HTTP/2 origin.
//! - `http/reqwest_h2`: a reqwest client with `http2_prior_knowledge`, its
//!   own pool, over the HTTP/2 origin.
//!
//! Before each throughput benchmark the same client runs a fixed number of
//! requests ([`LATENCY_SAMPLES`]) at the same concurrency, records each
//! request's duration, and prints the percentiles (`latency ...` lines).
//!
//! Run with `cargo bench --locked --bench http`.

mod support;

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use http_body_util::{BodyExt, Empty, Full};
use hyper::client::conn::http1 as client_http1;
use hyper::{HeaderMap, Method, Request, Response};
use hyper_util::client::legacy::{self, connect::HttpConnector};
use hyper_util::rt::{TokioExecutor, TokioIo};
use provider_pools::{Bytes, Limits, RunningRequest};
use provider_pools_adapters::http_origin::{
    call, BodyLimits, HttpDialer, HttpRequest, RequestTarget, HTTP2_SETTING,
};
use support::{run_tasks, share, Engine};
use tokio::net::{TcpListener, TcpStream};
use tokio::runtime::Runtime;
use tokio::time::Instant;

/// The size of every answer's body.
const BODY: usize = 256;

/// Concurrent tasks of each benchmark.
const CONCURRENCY: [usize; 2] = [1, 64];

/// Requests timed one by one for the latency percentiles, per benchmark.
const LATENCY_SAMPLES: u64 = 20_000;

/// The in-process origin: hyper's HTTP/1.1 server, answering [`BODY`]
/// bytes to everything.
async fn server() -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("local addr");
    let body = Bytes::from(vec![b'x'; BODY]);
    support::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let _ = stream.set_nodelay(true);
            let body = body.clone();
            let service = hyper::service::service_fn(move |_: Request<hyper::body::Incoming>| {
                let body = body.clone();
                async move { Ok::<_, Infallible>(Response::new(Full::new(body))) }
            });
            support::spawn(async move {
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), service)
                    .await;
            });
        }
    });
    addr
}

/// The in-process HTTP/2 origin: h2's server (prior knowledge),
/// answering [`BODY`] bytes to every stream.
async fn h2_server() -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("local addr");
    let body = Bytes::from(vec![b'x'; BODY]);
    support::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let _ = stream.set_nodelay(true);
            let body = body.clone();
            support::spawn(async move {
                let Ok(mut conn) = h2::server::handshake(stream).await else {
                    return;
                };
                while let Some(Ok((_, mut respond))) = conn.accept().await {
                    let body = body.clone();
                    support::spawn(async move {
                        let head = Response::new(());
                        if let Ok(mut send) = respond.send_response(head, false) {
                            let _ = send.send_data(body, true);
                        }
                    });
                }
            });
        }
    });
    addr
}

/// The clients under test.
#[derive(Clone, Copy, Debug)]
enum Client {
    Engine,
    EngineCall,
    HyperConn,
    HyperLegacy,
    Reqwest,
    EngineH2,
    H2Conn,
    HyperH2Conn,
    HyperLegacyH2,
    ReqwestH2,
}

impl Client {
    const ALL: [Client; 10] = [
        Client::Engine,
        Client::EngineCall,
        Client::HyperConn,
        Client::HyperLegacy,
        Client::Reqwest,
        Client::EngineH2,
        Client::H2Conn,
        Client::HyperH2Conn,
        Client::HyperLegacyH2,
        Client::ReqwestH2,
    ];

    fn name(self) -> &'static str {
        match self {
            Client::Engine => "engine",
            Client::EngineCall => "engine_call",
            Client::HyperConn => "hyper_conn",
            Client::HyperLegacy => "hyper_legacy",
            Client::Reqwest => "reqwest",
            Client::EngineH2 => "engine_h2",
            Client::H2Conn => "h2_conn",
            Client::HyperH2Conn => "hyper_h2_conn",
            Client::HyperLegacyH2 => "hyper_legacy_h2",
            Client::ReqwestH2 => "reqwest_h2",
        }
    }
}

/// hyper-util's pooling client over its plain-TCP connector.
type LegacyClient = legacy::Client<HttpConnector, Empty<Bytes>>;

/// Everything the clients share.
struct Fixture {
    addr: SocketAddr,
    engine: Arc<Engine>,
    dialer: Arc<HttpDialer>,
    hyper_legacy: LegacyClient,
    reqwest: reqwest::Client,
    url: String,
    /// The same for HTTP/2: an engine whose provider has `http2 = "on"`,
    /// and the raw baseline's one connection.
    h2_engine: Arc<Engine>,
    h2_dialer: Arc<HttpDialer>,
    h2_conn: h2::client::SendRequest<Bytes>,
    hyper_h2_conn: hyper::client::conn::http2::SendRequest<Empty<Bytes>>,
    /// The pooling clients speaking HTTP/2 with prior knowledge.
    hyper_legacy_h2: LegacyClient,
    reqwest_h2: reqwest::Client,
    h2_url: String,
}

fn limits() -> Limits {
    Limits {
        connections: 128,
        connections_per_client: 64,
        // One tenant stands for every caller here.
        connections_per_tenant: 64,
        idle_connections: 64,
        running_requests: 128,
        running_per_tenant: 64,
        running_per_provider: 64,
        pending_requests: 1_024,
        requests_per_tenant: 1_024,
        requests_per_provider: 1_024,
        // One driver job per connection.
        provider_workers: 128,
        queue_age: Duration::from_secs(60),
        idle_age: Duration::from_secs(3_600),
        ..Limits::DEFAULT
    }
}

async fn fixture() -> Fixture {
    let addr = server().await;
    let target = format!("http://{addr}");
    let engine = Arc::new(Engine::start(limits(), &target).await);
    let dialer = Arc::new(HttpDialer::new(engine.pools.clone()));
    let mut connector = HttpConnector::new();
    connector.set_nodelay(true);
    let hyper_legacy = legacy::Client::builder(TokioExecutor::new()).build(connector);
    // An error means a provider is installed already: keep it.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let reqwest = reqwest::Client::builder()
        .tcp_nodelay(true)
        .build()
        .expect("reqwest client");
    let h2_addr = h2_server().await;
    let h2_target = format!("http://{h2_addr}");
    let h2_engine =
        Arc::new(Engine::start_with(limits(), &h2_target, &[(HTTP2_SETTING, "on")]).await);
    let h2_dialer = Arc::new(HttpDialer::new(h2_engine.pools.clone()));
    let stream = TcpStream::connect(h2_addr).await.expect("connect");
    let _ = stream.set_nodelay(true);
    let (h2_conn, connection) = h2::client::handshake(stream).await.expect("h2 handshake");
    support::spawn(async move {
        let _ = connection.await;
    });
    let stream = TcpStream::connect(h2_addr).await.expect("connect");
    let _ = stream.set_nodelay(true);
    let (hyper_h2_conn, connection) =
        hyper::client::conn::http2::handshake(TokioExecutor::new(), TokioIo::new(stream))
            .await
            .expect("hyper h2 handshake");
    support::spawn(async move {
        let _ = connection.await;
    });
    let mut connector = HttpConnector::new();
    connector.set_nodelay(true);
    let hyper_legacy_h2 = legacy::Client::builder(TokioExecutor::new())
        .http2_only(true)
        .build(connector);
    let reqwest_h2 = reqwest::Client::builder()
        .tcp_nodelay(true)
        .http2_prior_knowledge()
        .build()
        .expect("reqwest HTTP/2 client");
    Fixture {
        addr,
        engine,
        dialer,
        hyper_legacy,
        reqwest,
        url: format!("{target}/"),
        h2_engine,
        h2_dialer,
        h2_conn,
        hyper_h2_conn,
        hyper_legacy_h2,
        reqwest_h2,
        h2_url: format!("{h2_target}/"),
    }
}

fn get() -> HttpRequest {
    HttpRequest {
        method: Method::GET,
        target: RequestTarget::parse("/").expect("origin-form target"),
        headers: HeaderMap::new(),
        body: Bytes::new(),
        replayable: false,
    }
}

/// One client's per-task state: what a task holds across its requests.
enum Session {
    Engine(Arc<Engine>, Arc<HttpDialer>),
    EngineCall(Arc<Engine>, Arc<HttpDialer>, RunningRequest),
    HyperConn(client_http1::SendRequest<Empty<Bytes>>, String),
    HyperLegacy(Box<LegacyClient>, hyper::Uri),
    Reqwest(reqwest::Client, String),
    H2Conn(h2::client::SendRequest<Bytes>, String),
    HyperH2Conn(
        hyper::client::conn::http2::SendRequest<Empty<Bytes>>,
        String,
    ),
}

impl Session {
    /// Sets up one task's session (not timed).
    async fn open(f: &Fixture, client: Client) -> Self {
        match client {
            Client::Engine => Session::Engine(Arc::clone(&f.engine), Arc::clone(&f.dialer)),
            Client::EngineCall => Session::EngineCall(
                Arc::clone(&f.engine),
                Arc::clone(&f.dialer),
                f.engine.running().await,
            ),
            Client::HyperConn => {
                let stream = TcpStream::connect(f.addr).await.expect("connect");
                let _ = stream.set_nodelay(true);
                let (sender, connection) = client_http1::handshake(TokioIo::new(stream))
                    .await
                    .expect("handshake");
                support::spawn(async move {
                    let _ = connection.await;
                });
                Session::HyperConn(sender, f.addr.to_string())
            }
            Client::HyperLegacy => Session::HyperLegacy(
                Box::new(f.hyper_legacy.clone()),
                f.url.parse().expect("absolute uri"),
            ),
            Client::Reqwest => Session::Reqwest(f.reqwest.clone(), f.url.clone()),
            Client::EngineH2 => Session::Engine(Arc::clone(&f.h2_engine), Arc::clone(&f.h2_dialer)),
            Client::H2Conn => Session::H2Conn(f.h2_conn.clone(), f.h2_url.clone()),
            Client::HyperH2Conn => Session::HyperH2Conn(f.hyper_h2_conn.clone(), f.h2_url.clone()),
            Client::HyperLegacyH2 => Session::HyperLegacy(
                Box::new(f.hyper_legacy_h2.clone()),
                f.h2_url.parse().expect("absolute uri"),
            ),
            Client::ReqwestH2 => Session::Reqwest(f.reqwest_h2.clone(), f.h2_url.clone()),
        }
    }

    /// One GET, its whole body read; returns the body's length.
    async fn get(&mut self) -> usize {
        match self {
            Session::Engine(engine, dialer) => {
                let running = engine.running().await;
                let response = call(
                    &engine.pools,
                    &running,
                    dialer,
                    get(),
                    BodyLimits::default(),
                )
                .await
                .expect("200");
                response.body.bytes().len()
            }
            Session::EngineCall(engine, dialer, running) => {
                let response = call(&engine.pools, running, dialer, get(), BodyLimits::default())
                    .await
                    .expect("200");
                response.body.bytes().len()
            }
            Session::HyperConn(sender, host) => {
                let request = Request::builder()
                    .uri("/")
                    .header(hyper::header::HOST, host.as_str())
                    .body(Empty::new())
                    .expect("request");
                sender.ready().await.expect("connection ready");
                let response = sender.send_request(request).await.expect("response");
                let body = response.into_body().collect().await.expect("body");
                body.to_bytes().len()
            }
            Session::HyperLegacy(client, uri) => {
                let request = Request::get(uri.clone())
                    .body(Empty::new())
                    .expect("request");
                let response = client.request(request).await.expect("response");
                let body = response.into_body().collect().await.expect("body");
                body.to_bytes().len()
            }
            Session::Reqwest(client, url) => {
                let response = client.get(url.as_str()).send().await.expect("response");
                response.bytes().await.expect("body").len()
            }
            Session::H2Conn(sender, url) => {
                let request = Request::get(url.as_str()).body(()).expect("request");
                let mut ready = sender.clone().ready().await.expect("connection ready");
                let (response, _) = ready.send_request(request, true).expect("stream");
                let mut body = response.await.expect("response").into_body();
                let mut len = 0;
                while let Some(chunk) = body.data().await {
                    let chunk = chunk.expect("body");
                    len += chunk.len();
                    let _ = body.flow_control().release_capacity(chunk.len());
                }
                len
            }
            Session::HyperH2Conn(sender, url) => {
                let request = Request::get(url.as_str())
                    .body(Empty::new())
                    .expect("request");
                sender.ready().await.expect("connection ready");
                let response = sender.send_request(request).await.expect("response");
                let body = response.into_body().collect().await.expect("body");
                body.to_bytes().len()
            }
        }
    }
}

/// Opens `tasks` sessions (not timed).
async fn sessions(f: &Fixture, client: Client, tasks: usize) -> Vec<Session> {
    let mut sessions = Vec::with_capacity(tasks);
    for _ in 0..tasks {
        sessions.push(Session::open(f, client).await);
    }
    sessions
}

/// `iters` GETs over `tasks` tasks; the wall time they took.
async fn throughput(f: &Fixture, client: Client, tasks: usize, iters: u64) -> Duration {
    let mut sessions = sessions(f, client, tasks).await.into_iter();
    let start = Instant::now();
    run_tasks(tasks, |i| {
        let mut session = sessions.next().expect("one session per task");
        async move {
            for _ in 0..share(iters, tasks, i) {
                assert_eq!(session.get().await, BODY);
            }
        }
    })
    .await;
    start.elapsed()
}

/// [`LATENCY_SAMPLES`] GETs over `tasks` tasks, each timed on its own.
async fn latencies(f: &Fixture, client: Client, tasks: usize) -> Vec<Duration> {
    let mut sessions = sessions(f, client, tasks).await.into_iter();
    let per_task = run_tasks(tasks, |i| {
        let mut session = sessions.next().expect("one session per task");
        async move {
            let count = share(LATENCY_SAMPLES, tasks, i);
            let mut samples = Vec::with_capacity(count as usize);
            for _ in 0..count {
                let start = Instant::now();
                assert_eq!(session.get().await, BODY);
                samples.push(start.elapsed());
            }
            samples
        }
    })
    .await;
    let mut all: Vec<Duration> = per_task.into_iter().flatten().collect();
    all.sort_unstable();
    all
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let rank = ((sorted.len() as f64) * p).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

fn report_latency(runtime: &Runtime, f: &Fixture, client: Client, tasks: usize) {
    let sorted = runtime.block_on(latencies(f, client, tasks));
    println!(
        "latency http/{}/{tasks}: n={} p50={:.1?} p90={:.1?} p99={:.1?} p99.9={:.1?} max={:.1?}",
        client.name(),
        sorted.len(),
        percentile(&sorted, 0.50),
        percentile(&sorted, 0.90),
        percentile(&sorted, 0.99),
        percentile(&sorted, 0.999),
        percentile(&sorted, 1.0),
    );
}

fn http(c: &mut Criterion) {
    let runtime = support::runtime();
    let f = runtime.block_on(fixture());

    let mut group = c.benchmark_group("http");
    group.throughput(Throughput::Elements(1));
    for tasks in CONCURRENCY {
        for client in Client::ALL {
            // The latency run goes with the benchmark: once, and only when
            // criterion's filter selects it.
            let mut latency_run = false;
            group.bench_with_input(BenchmarkId::new(client.name(), tasks), &tasks, |b, &n| {
                if !std::mem::replace(&mut latency_run, true) {
                    report_latency(&runtime, &f, client, n);
                }
                b.to_async(&runtime)
                    .iter_custom(|iters| throughput(&f, client, n, iters))
            });
        }
    }
    group.finish();
    println!(
        "http: engine dials {}, engine_h2 dials {} (connections opened by the adapter)",
        f.dialer.dials(),
        f.h2_dialer.dials()
    );
}

criterion_group!(benches, http);
criterion_main!(benches);
