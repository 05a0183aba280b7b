//! Buffered HTTP against a real loopback hyper origin: reuse of one TCP
//! connection, EOF when the pool destroys it, body limits, statuses that
//! pass through unretried, and backoff after a refused origin.

mod support;

use bytes::Bytes;
use http::Method;
use provider_pools_actors::{ConnectError, ConnectionCounts, DialErrorKind, Limits};
use provider_pools_adapters::http_origin::{call, BodyLimits, HttpDialer, HttpError, OriginError};
use support::origin::Origin;
use support::{bounded, eventually, get, install, running, start};

#[tokio::test]
async fn sequential_requests_reuse_one_tcp_connection() {
    let origin = Origin::start().await;
    let pools = start(Limits::DEFAULT).await;
    let receipt = install(&pools, &origin.target, &[], b"k").await;
    let dialer = HttpDialer::new(pools.clone());

    for session in 1..=5 {
        let request = running(&pools, &receipt, session).await;
        let response = bounded(
            "a buffered call",
            call(&pools, &request, &dialer, get("/ok"), BodyLimits::default()),
        )
        .await
        .expect("200");
        assert_eq!(response.status, 200);
        assert_eq!(response.body.bytes().as_ref(), b"hello");
    }
    assert_eq!(origin.accepted(), 1, "one TCP connection for every request");
    assert_eq!(dialer.dials(), 1);
    assert_eq!(origin.hits("/ok"), 5);
    // Parks and releases travel through the actors' mailboxes.
    eventually("one idle connection and nothing running", || {
        let snapshot = pools.snapshot();
        snapshot.connections.idle == 1 && snapshot.running_requests == 0
    })
    .await;
}

#[tokio::test]
async fn a_destroyed_connection_is_seen_as_eof_and_shutdown_is_clean() {
    let mut origin = Origin::start().await;
    let pools = start(Limits::DEFAULT).await;
    let receipt = install(&pools, &origin.target, &[], b"k").await;
    let dialer = HttpDialer::new(pools.clone());
    let request = running(&pools, &receipt, 1).await;
    call(&pools, &request, &dialer, get("/ok"), BodyLimits::default())
        .await
        .expect("200");
    drop(request);
    eventually("the connection parked", || {
        pools.snapshot().connections.idle == 1
    })
    .await;

    // Shutdown destroys the idle connection: its driver job ends, the
    // socket closes and the origin reads EOF; the job is joined.
    let report = bounded("shutdown", pools.shutdown(support::deadline())).await;
    origin.client_closed().await;
    assert!(report.is_clean(), "{report:?}");
}

#[tokio::test]
async fn connection_close_from_the_origin_is_never_parked() {
    let origin = Origin::start().await;
    let pools = start(Limits::DEFAULT).await;
    let receipt = install(&pools, &origin.target, &[], b"k").await;
    let dialer = HttpDialer::new(pools.clone());

    let request = running(&pools, &receipt, 1).await;
    let response = call(
        &pools,
        &request,
        &dialer,
        get("/close"),
        BodyLimits::default(),
    )
    .await
    .expect("200");
    assert_eq!(response.body.bytes().as_ref(), b"bye");
    assert_eq!(pools.snapshot().connections, ConnectionCounts::default());
    drop((response, request));

    let request = running(&pools, &receipt, 2).await;
    call(&pools, &request, &dialer, get("/ok"), BodyLimits::default())
        .await
        .expect("200");
    assert_eq!(origin.accepted(), 2, "the closed connection was not reused");
}

#[tokio::test]
async fn a_request_body_over_the_limit_is_refused_before_any_dial() {
    let origin = Origin::start().await;
    let pools = start(Limits::DEFAULT).await;
    let receipt = install(&pools, &origin.target, &[], b"k").await;
    let dialer = HttpDialer::new(pools.clone());
    let request = running(&pools, &receipt, 1).await;
    let mut post = get("/ok");
    post.method = Method::POST;
    post.body = Bytes::from(vec![0u8; 2048]);
    let limits = BodyLimits {
        max_request: 1024,
        ..BodyLimits::default()
    };

    let err = call(&pools, &request, &dialer, post, limits)
        .await
        .expect_err("too large");
    assert!(
        matches!(
            err,
            HttpError::RequestTooLarge {
                len: 2048,
                max: 1024
            }
        ),
        "{err:?}"
    );
    assert_eq!(err.code(), "request_too_large");
    assert_eq!(dialer.dials(), 0);
    assert_eq!(origin.accepted(), 0);
    assert_eq!(pools.snapshot().connections, ConnectionCounts::default());
}

#[tokio::test]
async fn a_response_body_over_the_limit_destroys_its_connection() {
    let origin = Origin::start().await;
    let pools = start(Limits::DEFAULT).await;
    let receipt = install(&pools, &origin.target, &[], b"k").await;
    let dialer = HttpDialer::new(pools.clone());
    let limits = BodyLimits {
        max_response: 1024,
        ..BodyLimits::default()
    };

    // Announced by Content-Length, then found while reading chunks.
    for (session, path) in [(1, "/big"), (2, "/big-chunked")] {
        let request = running(&pools, &receipt, session).await;
        let err = bounded(
            "an oversized call",
            call(&pools, &request, &dialer, get(path), limits),
        )
        .await
        .expect_err("too large");
        assert!(
            matches!(err, HttpError::ResponseTooLarge { max: 1024 }),
            "{err:?}"
        );
        assert_eq!(err.code(), "response_too_large");
        let snapshot = pools.snapshot();
        assert_eq!(
            snapshot.connections,
            ConnectionCounts::default(),
            "{snapshot:?}"
        );
        assert_eq!(
            origin.accepted(),
            session as usize,
            "destroyed, never parked"
        );
    }

    let request = running(&pools, &receipt, 3).await;
    call(&pools, &request, &dialer, get("/ok"), limits)
        .await
        .expect("200");
    assert_eq!(origin.accepted(), 3, "the next request dialed anew");
    drop(request);
    eventually("no request left running", || {
        pools.snapshot().running_requests == 0
    })
    .await;
}

#[tokio::test]
async fn error_statuses_pass_through_and_are_never_retried() {
    let origin = Origin::start().await;
    let pools = start(Limits::DEFAULT).await;
    let receipt = install(&pools, &origin.target, &[], b"k").await;
    let dialer = HttpDialer::new(pools.clone());

    for (session, path, status) in [(1, "/status/404", 404), (2, "/status/503", 503)] {
        let request = running(&pools, &receipt, session).await;
        let response = call(&pools, &request, &dialer, get(path), BodyLimits::default())
            .await
            .expect("an answer, whatever its status");
        assert_eq!(response.status, status);
        assert_eq!(origin.hits(path), 1, "{path} was sent exactly once");
    }
    assert_eq!(origin.seen().len(), 2);
}

#[tokio::test]
async fn a_refused_origin_puts_the_client_into_backoff() {
    // A port nothing listens on any more: connecting is refused.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let target = format!("http://{}", listener.local_addr().expect("addr"));
    drop(listener);
    let pools = start(Limits::DEFAULT).await;
    let receipt = install(&pools, &target, &[], b"k").await;
    let dialer = HttpDialer::new(pools.clone());

    let request = running(&pools, &receipt, 1).await;
    let first = call(&pools, &request, &dialer, get("/ok"), BodyLimits::default())
        .await
        .expect_err("refused");
    assert!(
        matches!(&first, HttpError::Connect(ConnectError::Dial(e)) if e.kind == DialErrorKind::Refused),
        "{first:?}"
    );
    assert_eq!(first.code(), "unavailable");
    assert_eq!(dialer.dials(), 1);

    let second = call(&pools, &request, &dialer, get("/ok"), BodyLimits::default())
        .await
        .expect_err("in backoff");
    assert!(
        matches!(
            &second,
            HttpError::Connect(ConnectError::Unavailable {
                kind: DialErrorKind::Refused,
                ..
            })
        ),
        "{second:?}"
    );
    assert_eq!(second.code(), "unavailable");
    assert_eq!(dialer.dials(), 1, "no dial during backoff");
    assert_eq!(pools.snapshot().connections, ConnectionCounts::default());
}

#[tokio::test]
async fn an_origin_that_is_not_approved_http_is_refused_without_dialing() {
    let pools = start(Limits::DEFAULT).await;
    let receipt = install(&pools, "ftp://127.0.0.1:1", &[], b"k").await;
    let dialer = HttpDialer::new(pools.clone());
    let request = running(&pools, &receipt, 1).await;
    let err = call(&pools, &request, &dialer, get("/ok"), BodyLimits::default())
        .await
        .expect_err("only http and https are approved");
    assert!(
        matches!(err, HttpError::Origin(OriginError::UnsupportedScheme)),
        "{err:?}"
    );
    assert_eq!(dialer.dials(), 0);
}

#[tokio::test]
async fn body_limits_above_their_ceiling_are_refused_before_any_dial() {
    let origin = Origin::start().await;
    let pools = start(Limits::DEFAULT).await;
    let receipt = install(&pools, &origin.target, &[], b"k").await;
    let dialer = HttpDialer::new(pools.clone());
    let request = running(&pools, &receipt, 1).await;
    for limits in [
        BodyLimits {
            max_response: usize::MAX,
            ..BodyLimits::default()
        },
        BodyLimits {
            max_request: BodyLimits::CEILING.max_request + 1,
            ..BodyLimits::default()
        },
    ] {
        let err = call(&pools, &request, &dialer, get("/ok"), limits)
            .await
            .expect_err("above the ceiling");
        assert!(matches!(err, HttpError::Limit(_)), "{err:?}");
        assert_eq!(err.code(), "limit_above_ceiling");
    }
    assert!(
        call(&pools, &request, &dialer, get("/ok"), BodyLimits::CEILING)
            .await
            .is_ok()
    );
    assert_eq!(origin.accepted(), 1);
}
