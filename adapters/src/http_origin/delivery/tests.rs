//! The hand-back path, made deterministic: connections are dialed by a
//! test dialer whose driver can be held. The stale connection's driver is
//! held while its origin closes the socket (a half-close, or a reset) and
//! until the next request is queued on it; released, it reads the close
//! before it could write anything (hyper reads first), so hyper hands the
//! request back untouched. The origin logs every request that reaches it
//! and keeps reading a half-closed socket, so a request written on the
//! stale connection would be seen.

mod held;
mod origin;

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use http_body_util::BodyExt;
use provider_pools_actors::{
    AdmitRequest, Authority, BrokerGeneration, Credential, Denied, DispatchAuthority, Epoch,
    ExecutionPlan, InstallReceipt, Installation, LedgerId, Limits, OriginKind, OriginSlot,
    PoolsConfig, ProviderConfig, ProviderId, RunningRequest, ServiceName, SessionId, TenantId,
};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use super::*;
use crate::http_origin::delivery::park_if_reusable;
use held::GatedDialer;
use origin::{Close, Origin};

/// The bound of every wait in these tests.
const WAIT: Duration = Duration::from_secs(5);

async fn bounded<T>(what: &str, future: impl Future<Output = T>) -> T {
    tokio::time::timeout(WAIT, future)
        .await
        .unwrap_or_else(|_| panic!("timed out after {WAIT:?}: {what}"))
}

/// Waits, within [`WAIT`], until `condition` holds.
async fn until(what: &str, mut condition: impl FnMut() -> bool) {
    bounded(what, async {
        while !condition() {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    })
    .await;
}

#[derive(Debug)]
struct AllowAll;

impl DispatchAuthority for AllowAll {
    fn authorize(&self, _: &ExecutionPlan, _: &ProviderId) -> Result<(), Denied> {
        Ok(())
    }
}

/// A registry with provider `web` at `target`, and one running request.
async fn running_at(target: &str) -> (ProviderPools, RunningRequest) {
    let config = PoolsConfig {
        limits: Limits::DEFAULT,
        ..PoolsConfig::new(tokio::runtime::Handle::current(), BrokerGeneration::new())
    };
    let pools = ProviderPools::start(config).await.expect("registry starts");
    let config = ProviderConfig::new(ServiceName::new("web").expect("service")).with_origin(
        OriginSlot::new(0),
        OriginKind::Http,
        target,
    );
    let receipt: InstallReceipt = pools
        .install(Installation {
            authority: Authority::new("https://web.example").expect("authority"),
            provider: ProviderId::new("web").expect("provider"),
            expected: Epoch::new(0),
            credential: Credential::from_slice(b"unused").expect("credential"),
            config,
        })
        .await
        .expect("install");
    let deadline = tokio::time::Instant::now() + WAIT;
    let plan = ExecutionPlan::seal(
        TenantId::new("t").expect("tenant"),
        SessionId::new(1),
        LedgerId::new(1),
        deadline,
        deadline,
    );
    let input = pools.stage_input(&plan, Bytes::new()).expect("staged");
    let request = AdmitRequest {
        plan,
        provider: receipt.provider.clone(),
        slot: receipt.slots[0],
        kind: OriginKind::Http,
        input,
    };
    let ready = bounded("admission", pools.admit(request))
        .await
        .expect("admitted");
    let call = pools
        .dispatch(&AllowAll, ready.plan(), ready.provider())
        .expect("dispatch");
    let running = ready.start(call).expect("start");
    (pools, running)
}

/// Returns once the runtime's I/O driver has taken in every socket event
/// that happened before the call: a byte sent now on a fresh loopback pair
/// is readable through tokio only after the driver's turn that reported
/// it, and epoll reports ready sockets in the order they became ready, so
/// that turn (or an earlier one) reported the close too. Tokio sees a
/// socket readable (at EOF or reset) only once its driver reported it;
/// without this, a released driver could write the request before
/// reading the close.
async fn io_turn_after_the_close() {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    let (ping, accepted) = tokio::join!(TcpStream::connect(addr), listener.accept());
    let (mut ping, (mut pong, _)) = (ping.expect("connect"), accepted.expect("accept"));
    bounded("the probe byte", async {
        ping.write_all(b"!").await.expect("probe written");
        let mut byte = [0u8; 1];
        pong.read_exact(&mut byte).await.expect("probe read");
    })
    .await;
}

fn get(path: &str) -> Built {
    let mut request = http::Request::new(Full::new(Bytes::new()));
    *request.uri_mut() = http::Uri::try_from(path).expect("origin-form");
    request
        .headers_mut()
        .insert(http::header::HOST, http::HeaderValue::from_static("origin"));
    request
}

fn connection_of(response: &http::Response<Incoming>) -> &str {
    response
        .headers()
        .get("x-connection")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
}

/// One request on a fresh connection, read and parked; then that
/// connection's driver is held while the origin closes it as `how`, the
/// next request is queued on it, and the driver is let go.
async fn a_stale_connection_hands_the_request_back(how: Close) {
    let origin = Origin::start().await;
    let (pools, running) = running_at(&origin.target).await;
    let dialer = GatedDialer {
        pools: pools.clone(),
        gates: Arc::default(),
    };

    let progress = Progress::default();
    let first = bounded(
        "the first request",
        deliver(&pools, &running, &dialer, get("/first"), false, &progress),
    )
    .await
    .expect("first request answered");
    assert_eq!(connection_of(&first.response), "0");
    let body = first.response.into_body().collect().await.expect("body");
    assert_eq!(body.to_bytes(), "ok");
    park_if_reusable(first.conn, running.deadline()).await;
    until("the connection parked", || {
        pools.snapshot().connections.idle == 1
    })
    .await;

    let gate = dialer.gate(0);
    gate.close();
    origin.close(0, how).await;
    io_turn_after_the_close().await;
    // Tokio now sees the socket closed, but the held driver read nothing:
    // the connection still looks alive and stays parked.
    assert_eq!(pools.snapshot().connections.idle, 1, "still parked");

    let progress = Progress::default();
    let (second, ()) = bounded("the second request", async {
        tokio::join!(
            deliver(&pools, &running, &dialer, get("/second"), false, &progress),
            async {
                // `Maybe` is set just before the request is queued on
                // the stale connection; only then is its driver let go.
                while progress.sent() != Sent::Maybe {
                    tokio::task::yield_now().await;
                }
                gate.open();
            }
        )
    })
    .await;
    let second = second.expect("the request is taken to another connection");
    assert_eq!(
        connection_of(&second.response),
        "1",
        "answered on a new one"
    );
    assert_eq!(progress.sent(), Sent::Yes);
    assert_eq!(dialer.dials(), 2, "one fresh dial");
    assert_eq!(origin.arrivals("/second"), [1], "arrived exactly once");
    drop(second);
    drop(running);
    // A dial leaves the `connecting` gauge before it hands its connection
    // over, so a shutdown at once counts nothing connecting.
    assert_eq!(pools.snapshot().connections.connecting, 0);
    let report = pools.shutdown(tokio::time::Instant::now() + WAIT).await;
    assert!(report.is_clean(), "{report:?}");
    assert_eq!(origin.arrivals("/second"), [1], "never on the stale one");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_queued_on_a_half_closed_parked_connection_is_handed_back_and_sent_once_on_another(
) {
    a_stale_connection_hands_the_request_back(Close::HalfClose).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_queued_on_a_reset_parked_connection_is_handed_back_and_sent_once_on_another() {
    a_stale_connection_hands_the_request_back(Close::Reset).await;
}
