//! The common path (`HttpProvider`) against a real loopback HTTP/1.1
//! origin: a GET for an allowed tenant is served and its charges go with
//! its response; a tenant the policy does not allow is refused at
//! dispatch with nothing sent; a rotation takes the new secret alone, and
//! calls after it carry the new secret on the new epoch.

mod support;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use provider_pools::{Epoch, HttpProvider, Limits, PolicyTable, ProviderPools, TenantId};
use support::{bounded, deadline, start, task};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

/// A loopback origin that answers every request with 200 "sunny" and
/// records each request's `authorization` header value.
async fn origin() -> (String, Arc<Mutex<Vec<String>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let target = format!("http://{}", listener.local_addr().expect("addr"));
    let seen = Arc::new(Mutex::new(Vec::new()));
    let record = Arc::clone(&seen);
    task(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            let record = Arc::clone(&record);
            task(async move {
                let mut buffer = [0u8; 4096];
                while let Ok(n @ 1..) = socket.read(&mut buffer).await {
                    let head = String::from_utf8_lossy(&buffer[..n]).to_string();
                    let secret = head
                        .lines()
                        .find_map(|l| l.strip_prefix("authorization: "))
                        .unwrap_or("")
                        .to_owned();
                    record.lock().expect("record").push(secret);
                    let answer = b"HTTP/1.1 200 OK\r\ncontent-length: 5\r\n\r\nsunny";
                    if socket.write_all(answer).await.is_err() {
                        break;
                    }
                }
            });
        }
    });
    (target, seen)
}

async fn weather(pools: &ProviderPools, target: &str) -> (HttpProvider, Arc<PolicyTable>) {
    let policy = Arc::new(PolicyTable::new());
    let weather = HttpProvider::install(pools, "weather", target, "Bearer one", policy.clone())
        .await
        .expect("install");
    (weather, policy)
}

fn tenant(name: &str) -> TenantId {
    TenantId::new(name).expect("a tenant id")
}

#[tokio::test]
async fn a_get_is_served_and_its_charges_go_with_its_response() {
    let (target, seen) = origin().await;
    let pools = start(Limits::DEFAULT).await;
    let (weather, policy) = weather(&pools, &target).await;
    policy.allow(tenant("acme"), weather.id().clone());

    let response = bounded(
        "a GET",
        weather.get(&tenant("acme"), "/today", Duration::from_secs(5)),
    )
    .await
    .expect("served");
    assert_eq!(response.status(), 200);
    assert_eq!(response.body().bytes().as_ref(), b"sunny");
    assert_eq!(pools.snapshot().running_requests, 1, "held by the response");
    drop(response);
    assert_eq!(pools.snapshot().running_requests, 0);
    assert_eq!(*seen.lock().expect("seen"), vec!["Bearer one".to_owned()]);
    let report = pools.shutdown(deadline()).await;
    assert!(report.is_clean(), "{report:?}");
}

#[tokio::test]
async fn a_tenant_the_policy_does_not_allow_is_refused_and_nothing_is_sent() {
    let (target, seen) = origin().await;
    let pools = start(Limits::DEFAULT).await;
    let (weather, _policy) = weather(&pools, &target).await;

    let refused = weather
        .get(&tenant("stranger"), "/today", Duration::from_secs(5))
        .await
        .expect_err("not allowed");
    assert_eq!(refused.code(), "revoked");
    assert!(seen.lock().expect("seen").is_empty());
    assert_eq!(pools.snapshot().running_requests, 0);
}

#[tokio::test]
async fn rotation_takes_the_new_secret_alone_and_later_calls_carry_it() {
    let (target, seen) = origin().await;
    let pools = start(Limits::DEFAULT).await;
    let (weather, policy) = weather(&pools, &target).await;
    policy.allow(tenant("acme"), weather.id().clone());
    assert_eq!(weather.epoch(), Epoch::new(1));

    let first = weather
        .get(&tenant("acme"), "/a", Duration::from_secs(5))
        .await
        .expect("first");
    drop(first);
    let epoch = weather.rotate("Bearer two").await.expect("rotation");
    assert_eq!((epoch, weather.epoch()), (Epoch::new(2), Epoch::new(2)));
    let second = weather
        .get(&tenant("acme"), "/b", Duration::from_secs(5))
        .await
        .expect("second");
    assert_eq!(second.status(), 200);
    drop(second);
    assert_eq!(
        *seen.lock().expect("seen"),
        vec!["Bearer one".to_owned(), "Bearer two".to_owned()]
    );
    let report = pools.shutdown(deadline()).await;
    assert!(report.is_clean(), "{report:?}");
}
