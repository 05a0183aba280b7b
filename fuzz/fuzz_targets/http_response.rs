//! Hostile HTTP responses, both readers:
//!
//! 1. the control plane's `StdHttpTransport` reader (from bytes, through a
//!    buffer of a drawn size so reads split anywhere): never a panic, a
//!    body never over its bound, every failure typed;
//! 2. the HTTP adapter's buffered `call`, for real: an in-process loopback
//!    origin reads the request head and answers with the input bytes, then
//!    closes. Never a panic; an accepted body is within `max_response`.
//!
//! The first input byte picks the bounds and the buffer size; the rest is
//! the response.
#![no_main]

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::Duration;

use bytes::Bytes;
use libfuzzer_sys::fuzz_target;
use provider_pools_actors::{
    AdmitRequest, Authority, BrokerGeneration, Credential, Denied, DispatchAuthority, Epoch,
    ExecutionPlan, InstallReceipt, Installation, LedgerId, Limits, OriginKind, OriginSlot,
    PoolsConfig, ProviderConfig, ProviderId, ProviderPools, ServiceName, SessionId, TenantId,
};
use provider_pools_adapters::http_origin::{
    call, BodyLimits, HttpDialer, HttpError, HttpRequest, RequestTarget,
};
use provider_pools_control_plane::transport::{read_response_for_fuzzing, TransportError};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

/// How long one adapter exchange may take: the request's deadline.
const EXCHANGE: Duration = Duration::from_secs(2);

struct Origin {
    runtime: tokio::runtime::Runtime,
    pools: ProviderPools,
    receipt: InstallReceipt,
    dialer: HttpDialer,
    listener: TcpListener,
    session: AtomicU64,
}

#[derive(Debug)]
struct AllowAll;

impl DispatchAuthority for AllowAll {
    fn authorize(&self, _: &ExecutionPlan, _: &ProviderId) -> Result<(), Denied> {
        Ok(())
    }
}

fn origin() -> &'static Origin {
    static ORIGIN: OnceLock<Origin> = OnceLock::new();
    ORIGIN.get_or_init(|| {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        let (pools, receipt, dialer, listener) = runtime.block_on(async {
            let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
            let target = format!("http://{}", listener.local_addr().expect("addr"));
            let config = PoolsConfig {
                limits: Limits::DEFAULT,
                ..PoolsConfig::new(tokio::runtime::Handle::current(), BrokerGeneration::new())
            };
            let pools = ProviderPools::start(config).await.expect("registry starts");
            let receipt = pools
                .install(Installation {
                    authority: Authority::new("https://web.example").expect("authority"),
                    provider: ProviderId::new("web").expect("provider id"),
                    expected: Epoch::new(0),
                    credential: Credential::from_slice(b"k").expect("credential"),
                    config: ProviderConfig::new(ServiceName::new("web").expect("service"))
                        .with_origin(OriginSlot::new(0), OriginKind::Http, &target),
                })
                .await
                .expect("install");
            let dialer = HttpDialer::new(pools.clone());
            (pools, receipt, dialer, listener)
        });
        Origin {
            runtime,
            pools,
            receipt,
            dialer,
            listener,
            session: AtomicU64::new(1),
        }
    })
}

/// Reads the request head (bounded), answers `response`, closes.
async fn answer(listener: &TcpListener, response: &[u8]) {
    let Ok((mut stream, _)) = listener.accept().await else {
        return;
    };
    let mut head = Vec::new();
    let mut buffer = [0u8; 1024];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") && head.len() < 64 * 1024 {
        match stream.read(&mut buffer).await {
            Ok(0) | Err(_) => return,
            Ok(n) => head.extend_from_slice(&buffer[..n]),
        }
    }
    let _ = stream.write_all(response).await;
    let _ = stream.shutdown().await;
}

fn adapter(response: &[u8], max_response: usize, close: bool) {
    let origin = origin();
    origin.runtime.block_on(async {
        let deadline = tokio::time::Instant::now() + EXCHANGE;
        let session = origin.session.fetch_add(1, Ordering::Relaxed);
        let plan = ExecutionPlan::seal(
            TenantId::new("t").expect("tenant"),
            SessionId::new(session),
            LedgerId::new(1),
            deadline,
            deadline,
        );
        let input = origin.pools.stage_input(&plan, Bytes::new()).expect("input");
        let ready = origin
            .pools
            .admit(AdmitRequest {
                plan,
                provider: origin.receipt.provider.clone(),
                slot: origin.receipt.slots[0],
                kind: OriginKind::Http,
                input,
            })
            .await
            .expect("capacity is free");
        let call_permit = origin
            .pools
            .dispatch(&AllowAll, ready.plan(), ready.provider())
            .expect("dispatch");
        let running = ready.start(call_permit).expect("start");
        let mut headers = http::HeaderMap::new();
        if close {
            headers.insert(
                http::header::CONNECTION,
                http::HeaderValue::from_static("close"),
            );
        }
        let request = HttpRequest {
            method: http::Method::GET,
            target: RequestTarget::parse("/fuzz").expect("target"),
            headers,
            body: Bytes::new(),
            replayable: false,
        };
        let limits = BodyLimits {
            max_request: 1024,
            max_response,
        };
        let (result, ()) = tokio::join!(
            call(&origin.pools, &running, &origin.dialer, request, limits),
            async {
                // A reused connection never reaches the listener: stop
                // waiting once the call is done.
                let _ = tokio::time::timeout_at(deadline, answer(&origin.listener, response)).await;
            }
        );
        match result {
            Ok(response) => assert!(
                response.body.bytes().len() <= max_response,
                "a body of {} bytes over {max_response}",
                response.body.bytes().len()
            ),
            Err(HttpError::ResponseTooLarge { max }) => assert_eq!(max, max_response),
            Err(error) => {
                let _ = error.to_string();
            }
        }
    });
}

fuzz_target!(|data: &[u8]| {
    let Some((&choice, response)) = data.split_first() else {
        return;
    };
    let max_body = [0, 1, 16, 256, 4096, 1 << 20][usize::from(choice % 6)];
    let buffer = [1, 7, 64, 8192][usize::from((choice >> 3) % 4)];
    match read_response_for_fuzzing(response, max_body, buffer) {
        Ok(answer) => assert!(
            answer.body.len() <= max_body,
            "a body of {} bytes over {max_body}",
            answer.body.len()
        ),
        Err(TransportError::TooLarge { limit }) => assert_eq!(limit, max_body),
        Err(TransportError::Malformed(_) | TransportError::Io(_)) => {}
        Err(other) => panic!("unexpected reader failure: {other:?}"),
    }
    adapter(response, max_body, choice & 0x80 != 0);
});
