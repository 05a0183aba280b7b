//! The opaque credential binding: the provider setting `auth_header` puts
//! the running epoch's credential into that header when the request is
//! built — the origin receives it, a rotation changes it for new requests,
//! and no error or `Debug` output ever shows it.

mod support;

use http::HeaderValue;
use provider_pools_actors::{Authority, Credential, Epoch, Installation, Limits};
use provider_pools_adapters::http_origin::{call, BodyLimits, HttpDialer, HttpError};
use support::origin::Origin;
use support::{get, install, running, start};

const CANARY: &str = "CANARY-b41d-credential";

fn assert_clean(what: &str, text: &str) {
    assert!(
        !text.contains(CANARY),
        "{what} leaks the credential: {text}"
    );
    assert!(!text.contains("b41d"), "{what} leaks part of it: {text}");
}

#[tokio::test]
async fn the_credential_binding_reaches_the_origin_and_nothing_else() {
    let origin = Origin::start().await;
    let pools = start(Limits::DEFAULT).await;
    let settings = [("auth_header", "x-api-key")];
    let receipt = install(&pools, &origin.target, &settings, CANARY.as_bytes()).await;
    let dialer = HttpDialer::new(pools.clone());

    // A guest cannot supply the bound header, Host or framing headers.
    let mut request = get("/ok");
    request
        .headers
        .insert("x-api-key", HeaderValue::from_static("guest-forged"));
    request
        .headers
        .insert("host", HeaderValue::from_static("evil.example"));
    assert_clean("HttpRequest", &format!("{request:?}"));
    let running_request = running(&pools, &receipt, 1).await;
    let response = call(
        &pools,
        &running_request,
        &dialer,
        request,
        BodyLimits::default(),
    )
    .await
    .expect("200");
    assert_clean("BufferedResponse", &format!("{response:?}"));

    let seen = origin.seen();
    let headers = &seen[0].headers;
    let keys: Vec<_> = headers.get_all("x-api-key").iter().collect();
    assert_eq!(keys, [CANARY.as_bytes()], "exactly the bound credential");
    let port = origin.target.rsplit(':').next().expect("port");
    assert_eq!(
        headers.get("host").map(|h| h.as_bytes()),
        Some(format!("127.0.0.1:{port}").as_bytes()),
        "Host is the approved origin's"
    );

    // Errors after the binding was applied carry no credential either.
    let limits = BodyLimits {
        max_response: 8,
        ..BodyLimits::default()
    };
    let err = call(&pools, &running_request, &dialer, get("/big"), limits)
        .await
        .expect_err("too large");
    assert_clean("HttpError (Debug)", &format!("{err:?}"));
    assert_clean("HttpError (Display)", &format!("{err}"));
    assert_clean("HttpDialer", &format!("{dialer:?}"));
    assert_clean("RunningRequest", &format!("{running_request:?}"));
}

#[tokio::test]
async fn a_credential_that_is_no_header_value_fails_without_showing_it() {
    let origin = Origin::start().await;
    let pools = start(Limits::DEFAULT).await;
    let credential = format!("{CANARY}\r\nX-Injected: 1");
    let settings = [("auth_header", "authorization")];
    let receipt = install(&pools, &origin.target, &settings, credential.as_bytes()).await;
    let dialer = HttpDialer::new(pools.clone());
    let request = running(&pools, &receipt, 1).await;
    let err = call(&pools, &request, &dialer, get("/ok"), BodyLimits::default())
        .await
        .expect_err("not a header value");
    assert!(matches!(err, HttpError::Binding { .. }), "{err:?}");
    assert_eq!(err.code(), "invalid_binding");
    assert_clean("HttpError (Debug)", &format!("{err:?}"));
    assert_clean("HttpError (Display)", &format!("{err}"));
    assert_eq!(dialer.dials(), 0, "refused while building the request");
    assert_eq!(origin.accepted(), 0);
}

#[tokio::test]
async fn a_rotation_binds_the_new_credential_into_new_requests() {
    let origin = Origin::start().await;
    let pools = start(Limits::DEFAULT).await;
    let settings = [("auth_header", "x-api-key")];
    let receipt = install(&pools, &origin.target, &settings, b"first-key").await;
    let dialer = HttpDialer::new(pools.clone());
    let before = running(&pools, &receipt, 1).await;
    call(&pools, &before, &dialer, get("/ok"), BodyLimits::default())
        .await
        .expect("200");

    let config = support::config(&origin.target, &settings);
    let rotated = pools
        .install(Installation {
            provider: receipt.provider.clone(),
            authority: Authority::new("https://web.example").expect("authority"),
            expected: Epoch::new(1),
            credential: Credential::from_slice(b"second-key").expect("credential"),
            config,
        })
        .await
        .expect("rotation");
    let after = running(&pools, &rotated, 2).await;
    call(&pools, &after, &dialer, get("/ok"), BodyLimits::default())
        .await
        .expect("200");
    // A request of the old epoch, still running, keeps its own material.
    call(&pools, &before, &dialer, get("/ok"), BodyLimits::default())
        .await
        .expect("200");

    let keys: Vec<Vec<u8>> = origin
        .seen()
        .iter()
        .map(|s| {
            s.headers
                .get("x-api-key")
                .expect("bound")
                .as_bytes()
                .to_vec()
        })
        .collect();
    assert_eq!(keys, [&b"first-key"[..], b"second-key", b"first-key"]);
}
