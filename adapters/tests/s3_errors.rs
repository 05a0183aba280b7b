//! S3 refusals from a real moto server in IAM authentication mode: a user
//! without S3 permission is denied, a wrong secret for a known key id is
//! refused as `SignatureDoesNotMatch` (moto checks the signature), an
//! unknown key id is refused; no error shows the credential.

mod s3_support;
mod support;

use provider_pools_actors::{Bytes, ConnectionCounts, Limits};
use provider_pools_adapters::s3::{head, put, ObjectKey, S3Error, S3Limits};
use provider_pools_test_peers::Moto;
use s3_support::{create_bucket, dialer, endpoint, install, running, user};
use support::{bounded, start};

/// Unauthenticated set-up requests: two users (3 + 2) and the bucket.
const SETUP: u32 = 6;

struct Keys {
    /// Allowed `s3:*` on everything.
    allowed: String,
    /// No policy at all.
    denied: String,
}

async fn set_up(moto: &provider_pools_test_peers::Peer) -> Keys {
    let allowed = user(moto.addr(), "writer", r#""s3:*""#, "*").await;
    let denied = user(moto.addr(), "nobody", "", "").await;
    create_bucket(moto.addr()).await;
    Keys { allowed, denied }
}

fn key(text: &str) -> ObjectKey {
    ObjectKey::parse(text).expect("key")
}

/// Puts one object with `credential`; the pools are shut down after.
async fn put_with(moto: &provider_pools_test_peers::Peer, credential: &str) -> Result<(), S3Error> {
    let pools = start(Limits::DEFAULT).await;
    let receipt = install(&pools, &endpoint(moto.addr()), 0, credential.as_bytes()).await;
    let dialer = dialer(&pools);
    let request = running(&pools, &receipt, 1).await;
    let result = put(
        &pools,
        &request,
        &dialer,
        &key("doc"),
        Bytes::from_static(b"body"),
        S3Limits::default(),
    )
    .await
    .map(|_| ());
    drop(request);
    let report = bounded("shutdown", pools.shutdown(support::deadline())).await;
    assert!(report.is_clean(), "{report:?}");
    assert_eq!(report.connections, ConnectionCounts::default());
    assert_eq!(report.metadata_bytes, 0);
    result
}

fn assert_hidden(err: &S3Error, credential: &str) {
    let (key_id, secret) = credential.split_once(':').expect("shape");
    let shown = format!("{err} {err:?}");
    assert!(!shown.contains(key_id), "{shown}");
    assert!(!shown.contains(secret), "{shown}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_user_without_s3_permission_is_denied() {
    let moto = Moto::start_authenticated(SETUP);
    let keys = set_up(&moto).await;

    put_with(&moto, &keys.allowed)
        .await
        .expect("the allowed user stores");
    let err = put_with(&moto, &keys.denied).await.expect_err("no policy");
    assert!(
        matches!(&err, S3Error::Denied { code } if code == "AccessDenied"),
        "{err:?}"
    );
    assert_eq!(err.code(), "denied");
    assert_hidden(&err, &keys.denied);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrong_secret_for_a_known_key_is_refused_as_a_bad_signature() {
    let moto = Moto::start_authenticated(SETUP);
    let keys = set_up(&moto).await;
    let (key_id, _) = keys.allowed.split_once(':').expect("shape");
    let forged = format!("{key_id}:WRONGSECRETwrongsecretWRONGSECRETwrong0");

    let err = put_with(&moto, &forged).await.expect_err("wrong secret");
    assert!(
        matches!(&err, S3Error::Denied { code } if code == "SignatureDoesNotMatch"),
        "{err:?}"
    );
    assert_hidden(&err, &forged);
    // The right secret for the same key id passes: the secret decided.
    put_with(&moto, &keys.allowed).await.expect("right secret");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unknown_access_key_is_refused() {
    let moto = Moto::start_authenticated(SETUP);
    set_up(&moto).await;
    let unknown = "AKIAUNKNOWNUNKNOWN00:unknownsecretunknownsecretunknown00";

    let pools = start(Limits::DEFAULT).await;
    let receipt = install(&pools, &endpoint(moto.addr()), 0, unknown.as_bytes()).await;
    let dialer = dialer(&pools);
    let request = running(&pools, &receipt, 1).await;
    let err = head(&pools, &request, &dialer, &key("doc"), S3Limits::default())
        .await
        .expect_err("unknown key id");
    assert!(matches!(err, S3Error::Denied { .. }), "{err:?}");
    assert_hidden(&err, unknown);
    drop(request);
    let report = bounded("shutdown", pools.shutdown(support::deadline())).await;
    assert!(report.is_clean(), "{report:?}");
    assert_eq!(report.connections, ConnectionCounts::default());
}
