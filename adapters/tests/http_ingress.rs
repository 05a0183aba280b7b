//! Webhook ingress over real HTTP: a flood of inbound events from one
//! tenant, beside light tenants, never exceeds the pending and running
//! limits, and every acknowledged event was handled.

mod support;

use std::collections::{BTreeMap, BTreeSet};
use std::convert::Infallible;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use http::{Request, Response, StatusCode};
use http_body_util::{BodyExt, Either, Empty, Full};
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use provider_pools_actors::{
    ExecutionPlan, IngressEvent, InstallReceipt, LedgerId, Limits, OriginKind, ProviderPools,
    SessionId, TenantId,
};
use provider_pools_adapters::http_origin::{refusal_status, AckBody};
use support::{install, start, task, AllowAll};
use tokio::net::{TcpListener, TcpStream};

const LIMITS: Limits = Limits {
    pending_requests: 12,
    requests_per_tenant: 6,
    requests_per_provider: 12,
    running_requests: 6,
    running_per_tenant: 2,
    running_per_provider: 6,
    ..Limits::DEFAULT
};

/// What the webhook saw: the events it handled, and the most it handled at
/// once, per tenant and in all.
#[derive(Default)]
struct Handled {
    events: Mutex<BTreeSet<(String, u32)>>,
    now: Mutex<BTreeMap<String, u32>>,
    most_per_tenant: AtomicU32,
    in_all: AtomicU32,
    most_in_all: AtomicU32,
    most_pending: AtomicU32,
    most_running: AtomicU32,
}

type Reply = Response<Either<AckBody, Empty<Bytes>>>;

/// The host's webhook endpoint: `POST /events/{tenant}/{id}`.
async fn webhook(
    pools: ProviderPools,
    receipt: Arc<InstallReceipt>,
    handled: Arc<Handled>,
    request: Request<Incoming>,
) -> Result<Reply, Infallible> {
    let path = request.uri().path().to_owned();
    let mut parts = path.trim_start_matches("/events/").split('/');
    let (tenant, id) = match (parts.next(), parts.next().and_then(|id| id.parse().ok())) {
        (Some(tenant), Some(id)) => (tenant.to_owned(), id),
        _ => return Ok(status(StatusCode::NOT_FOUND)),
    };
    let Ok(body) = request.into_body().collect().await else {
        return Ok(status(StatusCode::BAD_REQUEST));
    };
    let far = tokio::time::Instant::now() + Duration::from_secs(60);
    let event = IngressEvent {
        plan: ExecutionPlan::seal(
            TenantId::new(&tenant).expect("tenant"),
            SessionId::new(u64::from(id)),
            LedgerId::new(1),
            far,
            far,
        ),
        provider: receipt.provider.clone(),
        slot: receipt.slots[0],
        kind: OriginKind::Http,
        payload: body.to_bytes(),
    };
    let ingress = match pools.ingress(&AllowAll, event).await {
        Ok(ingress) => ingress,
        Err(refused) => return Ok(status(refusal_status(&refused))),
    };
    // Handling: observe the limits while this event holds its slot.
    let snapshot = pools.snapshot();
    handled
        .most_pending
        .fetch_max(snapshot.pending_requests, Ordering::SeqCst);
    handled
        .most_running
        .fetch_max(snapshot.running_requests, Ordering::SeqCst);
    let mine = {
        let mut now = handled.now.lock().expect("counts");
        let count = now.entry(tenant.clone()).or_default();
        *count += 1;
        *count
    };
    handled.most_per_tenant.fetch_max(mine, Ordering::SeqCst);
    let all = handled.in_all.fetch_add(1, Ordering::SeqCst) + 1;
    handled.most_in_all.fetch_max(all, Ordering::SeqCst);
    assert_eq!(
        ingress.payload().as_ref(),
        format!("{tenant}/{id}").as_bytes()
    );
    for _ in 0..8 {
        tokio::task::yield_now().await;
    }
    handled
        .events
        .lock()
        .expect("events")
        .insert((tenant.clone(), id));
    handled.in_all.fetch_sub(1, Ordering::SeqCst);
    *handled
        .now
        .lock()
        .expect("counts")
        .get_mut(&tenant)
        .expect("counted") -= 1;
    // The 200 is the acknowledgement; the slot is held until it is written.
    Ok(Response::new(Either::Left(AckBody::new(
        ingress,
        Bytes::from_static(b"ack"),
    ))))
}

fn status(code: StatusCode) -> Reply {
    let mut response = Response::new(Either::Right(Empty::new()));
    *response.status_mut() = code;
    response
}

/// Serves the webhook on a loopback port until the test ends.
async fn serve(pools: ProviderPools, receipt: InstallReceipt, handled: Arc<Handled>) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr").to_string();
    let receipt = Arc::new(receipt);
    task(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let (pools, receipt, handled) = (pools.clone(), receipt.clone(), handled.clone());
            let service = hyper::service::service_fn(move |request| {
                webhook(pools.clone(), receipt.clone(), handled.clone(), request)
            });
            task(async move {
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), service)
                    .await;
            });
        }
    });
    addr
}

/// One sender: delivers its events in order over one connection, sending
/// each again after a refusal, as a webhook source does. Returns the
/// acknowledged ids and how many refusals it saw.
async fn sender(addr: String, tenant: &'static str, ids: Vec<u32>) -> (Vec<(String, u32)>, u32) {
    let stream = TcpStream::connect(&addr).await.expect("connect");
    let (mut send, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .expect("handshake");
    task(connection);
    let (mut acked, mut refused) = (Vec::new(), 0);
    for id in ids {
        loop {
            send.ready().await.expect("connection ready");
            let request = Request::post(format!("/events/{tenant}/{id}"))
                .header(http::header::HOST, &addr)
                .body(Full::new(Bytes::from(format!("{tenant}/{id}"))))
                .expect("request");
            let response = send.send_request(request).await.expect("response");
            let code = response.status();
            let _ = response.into_body().collect().await.expect("body");
            match code {
                StatusCode::OK => {
                    acked.push((tenant.to_owned(), id));
                    break;
                }
                StatusCode::TOO_MANY_REQUESTS | StatusCode::SERVICE_UNAVAILABLE => {
                    refused += 1;
                    tokio::time::sleep(Duration::from_millis(1)).await;
                }
                other => panic!("event {tenant}/{id} answered {other}"),
            }
        }
    }
    (acked, refused)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_webhook_flood_stays_within_the_limits_and_loses_no_acknowledged_event() {
    let pools = start(LIMITS).await;
    let receipt = install(&pools, "http://127.0.0.1:9", &[], b"").await;
    let handled = Arc::new(Handled::default());
    let addr = serve(pools.clone(), receipt, handled.clone()).await;

    // "flood" sends 20 times what each light tenant sends, over 32
    // connections; the light tenants over 2 each.
    let mut senders = Vec::new();
    let mut expected = BTreeSet::new();
    for (tenant, connections, per_connection) in [
        ("flood", 32u32, 25u32),
        ("light-a", 2, 20),
        ("light-b", 2, 20),
    ] {
        for c in 0..connections {
            let ids: Vec<u32> = (0..per_connection).map(|i| c * 1_000 + i).collect();
            expected.extend(ids.iter().map(|&id| (tenant.to_owned(), id)));
            senders.push(task(sender(addr.clone(), tenant, ids)));
        }
    }
    let results = tokio::time::timeout(Duration::from_secs(120), async {
        let mut all = Vec::new();
        for sender in senders {
            all.push(sender.await.expect("sender"));
        }
        all
    })
    .await
    .expect("every event is acknowledged within two minutes");
    let refusals: u32 = results.iter().map(|(_, refused)| refused).sum();
    let acked: Vec<(String, u32)> = results.into_iter().flat_map(|(acked, _)| acked).collect();
    assert_eq!(acked.len(), expected.len(), "each event acknowledged once");
    assert_eq!(
        acked.into_iter().collect::<BTreeSet<_>>(),
        expected,
        "every event was acknowledged"
    );
    assert_eq!(
        *handled.events.lock().expect("events"),
        expected,
        "every acknowledged event was handled, and nothing refused was"
    );
    assert!(refusals > 0, "the flood met the queue bound");
    assert!(
        handled.most_per_tenant.load(Ordering::SeqCst) <= LIMITS.running_per_tenant,
        "a tenant handled {} events at once",
        handled.most_per_tenant.load(Ordering::SeqCst)
    );
    assert!(handled.most_in_all.load(Ordering::SeqCst) <= LIMITS.running_requests);
    assert!(handled.most_running.load(Ordering::SeqCst) <= LIMITS.running_requests);
    assert!(handled.most_pending.load(Ordering::SeqCst) <= LIMITS.pending_requests);

    let snapshot = pools
        .shutdown(tokio::time::Instant::now() + Duration::from_secs(5))
        .await;
    assert!(snapshot.is_clean(), "{snapshot:?}");
}

#[test]
fn a_refusal_tells_the_sender_whether_to_deliver_again() {
    use provider_pools_actors::{AdmitError, Denied, ProviderId};
    let provider = ProviderId::new("web").expect("provider id");
    let capacity = AdmitError::Capacity {
        resource: "pending_requests",
        used: 1,
        limit: 1,
    };
    for (error, code) in [
        (capacity, StatusCode::TOO_MANY_REQUESTS),
        (AdmitError::Busy, StatusCode::TOO_MANY_REQUESTS),
        (AdmitError::Timeout, StatusCode::SERVICE_UNAVAILABLE),
        (AdmitError::Closed, StatusCode::SERVICE_UNAVAILABLE),
        (
            AdmitError::Unavailable { provider },
            StatusCode::SERVICE_UNAVAILABLE,
        ),
        (
            AdmitError::Revoked(Denied {
                tenant: TenantId::new("t").expect("tenant"),
                provider: ProviderId::new("web").expect("provider id"),
            }),
            StatusCode::FORBIDDEN,
        ),
    ] {
        assert_eq!(refusal_status(&error), code, "for {error}");
    }
}
