//! Secret hygiene, end to end: a provider installed with a distinctive
//! credential serves traffic, fails in every way it can, is rotated to a
//! second distinctive credential, and shuts down. Every tracing event and
//! span of the whole process is captured, and every value the run produced
//! is formatted with `Debug` (and `Display` for errors): neither
//! credential's bytes appear anywhere.

mod support;

use support::capture::Capture;

use std::fmt::Write as _;
use std::time::Duration;

use provider_pools_actors::{Authority, Credential, Epoch, Installation, Limits, OriginKind};
use provider_pools_adapters::http_origin::{call, BodyLimits, HttpDialer};
use support::origin::Origin;
use support::{get, install, install_provider, running, start};

const FIRST: &str = "CANARY-9d2f-first-credential";
const SECOND: &str = "CANARY-61ab-second-credential";
const MARKERS: [&str; 4] = ["CANARY", "9d2f", "61ab", "credential-"];

fn assert_clean(what: &str, text: &str) {
    for marker in MARKERS {
        assert!(
            !text.contains(marker),
            "{what} shows credential bytes ({marker}): {text}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_credential_byte_reaches_a_log_a_debug_or_an_error() {
    let capture = Capture::default();
    tracing::subscriber::set_global_default(capture.clone()).expect("the only subscriber");
    let mut shown = String::new();
    let mut show = |what: &str, text: String| {
        let _ = writeln!(shown, "{what}: {text}");
    };

    let origin = Origin::start().await;
    let pools = start(Limits::DEFAULT).await;
    let settings = [("auth_header", "authorization")];
    let receipt = install(&pools, &origin.target, &settings, FIRST.as_bytes()).await;
    show("receipt", format!("{receipt:?}"));
    let dialer = HttpDialer::new(pools.clone());

    // Traffic, then every failure the first epoch can meet.
    let first = running(&pools, &receipt, 1).await;
    for path in ["/ok", "/ok", "/close", "/status/404", "/status/503"] {
        let answer = call(&pools, &first, &dialer, get(path), BodyLimits::default()).await;
        show(path, format!("{answer:?}"));
    }
    let small = BodyLimits {
        max_response: 8,
        ..BodyLimits::default()
    };
    let too_big = call(&pools, &first, &dialer, get("/big"), small).await;
    let too_big = too_big.expect_err("over the bound");
    show("too big", format!("{too_big:?} / {too_big}"));
    let hung = tokio::time::timeout(
        Duration::from_millis(200),
        call(&pools, &first, &dialer, get("/hang"), BodyLimits::default()),
    )
    .await;
    show("hung", format!("{:?}", hung.is_err()));

    // An unreachable origin: a failed dial, then backoff.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let unreachable = format!("http://{}", closed.local_addr().expect("address"));
    drop(closed);
    let config = support::provider_config("dead", OriginKind::Http, &unreachable, &settings);
    let dead = install_provider(
        &pools,
        "dead",
        "https://dead.example",
        config,
        FIRST.as_bytes(),
        0,
    )
    .await;
    let dead_request = support::running_as(
        &pools,
        &dead,
        "t",
        9,
        provider_pools_actors::OriginKind::Http,
    )
    .await;
    for _ in 0..2 {
        let failed = call(
            &pools,
            &dead_request,
            &dialer,
            get("/ok"),
            BodyLimits::default(),
        )
        .await;
        let failed = failed.expect_err("nothing listens");
        show("unreachable", format!("{failed:?} / {failed}"));
    }

    // A refused rotation, then a rotation to the second credential.
    let stale = pools
        .install(Installation {
            provider: receipt.provider.clone(),
            authority: Authority::new("https://web.example").expect("authority"),
            expected: Epoch::new(7),
            credential: Credential::from_slice(SECOND.as_bytes()).expect("credential"),
            config: support::config(&origin.target, &settings),
        })
        .await
        .expect_err("wrong epoch");
    show("stale rotation", format!("{stale:?} / {stale}"));
    let rotated = pools
        .install(Installation {
            provider: receipt.provider.clone(),
            authority: Authority::new("https://web.example").expect("authority"),
            expected: Epoch::new(1),
            credential: Credential::from_slice(SECOND.as_bytes()).expect("credential"),
            config: support::config(&origin.target, &settings),
        })
        .await
        .expect("rotation");
    show("rotated", format!("{rotated:?}"));
    let second = running(&pools, &rotated, 2).await;
    let answer = call(&pools, &second, &dialer, get("/ok"), BodyLimits::default()).await;
    show("after rotation", format!("{answer:?}"));
    let keys: Vec<Vec<u8>> = origin
        .seen()
        .iter()
        .filter_map(|seen| {
            seen.headers
                .get("authorization")
                .map(|key| key.as_bytes().to_vec())
        })
        .collect();
    assert!(
        keys.contains(&FIRST.as_bytes().to_vec()) && keys.contains(&SECOND.as_bytes().to_vec())
    );

    for (what, text) in [
        ("pools", format!("{pools:?}")),
        ("snapshot", format!("{:?}", pools.snapshot())),
        (
            "descriptor",
            format!("{:?}", pools.describe(&receipt.provider)),
        ),
        ("dialer", format!("{dialer:?}")),
        ("running (first epoch)", format!("{first:?}")),
        ("running (second epoch)", format!("{second:?}")),
        ("running (dead)", format!("{dead_request:?}")),
    ] {
        show(what, text);
    }
    drop((answer, first, second, dead_request));
    let report = pools
        .shutdown(tokio::time::Instant::now() + Duration::from_secs(5))
        .await;
    show("shutdown", format!("{report:?}"));
    assert!(report.is_clean(), "{report:?}");

    let logged = capture.text();
    assert!(
        logged.lines().count() > 0,
        "the run logged nothing: the capture is broken"
    );
    assert_clean("tracing", &logged);
    assert_clean("formatted values", &shown);
}
