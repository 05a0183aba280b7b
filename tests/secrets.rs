//! Credential bytes never appear in the `Debug` or `Display` output of any
//! snapshot, descriptor, receipt, lease, error, configuration or handle.

mod support;

use provider_pools::{Credential, Epoch, Installation, Limits, OriginKind};
use support::{http_config, installation, provider, start};

const CANARY: &[u8] = b"CANARY-c7e1-secret-bytes";

fn assert_clean(what: &str, text: &str) {
    let canary = std::str::from_utf8(CANARY).expect("ascii canary");
    assert!(
        !text.contains(canary),
        "{what} leaks the credential: {text}"
    );
    assert!(
        !text.contains("c7e1"),
        "{what} leaks part of the credential: {text}"
    );
}

#[tokio::test]
async fn a_distinctive_credential_never_appears_in_debug_or_display() {
    let limits = Limits {
        private_config_bytes: 64,
        ..Limits::DEFAULT
    };
    let pools = start(limits).await;
    let p = provider("alpha");

    let request = installation(&p, 0, CANARY, http_config("alpha", 1));
    assert_clean("Installation", &format!("{request:?}"));
    let receipt = pools.install(request).await.expect("install");
    assert_clean("InstallReceipt", &format!("{receipt:?}"));

    let lease = pools
        .client(&p, &receipt.slots[0], OriginKind::Http)
        .expect("lease");
    assert_eq!(lease.credential_for_adapter().expose_to_adapter(), CANARY);
    assert_clean("ClientLease", &format!("{lease:?}"));
    assert_clean("ProviderDescriptor", &format!("{:?}", pools.describe(&p)));
    assert_clean("Snapshot", &format!("{:?}", pools.snapshot()));
    assert_clean("ProviderPools", &format!("{pools:?}"));
    assert_clean("ProviderConfig", &format!("{:?}", http_config("alpha", 1)));

    // Errors produced by refused installs that carried the canary.
    let mut refusals = Vec::new();
    let mut oversized = CANARY.repeat(3);
    oversized.truncate(65);
    refusals.push(
        pools
            .install(installation(&p, 1, &oversized, http_config("alpha", 1)))
            .await,
    );
    refusals.push(
        pools
            .install(installation(&p, 7, CANARY, http_config("alpha", 1)))
            .await,
    );
    refusals.push(
        pools
            .install(installation(
                &provider("beta"),
                0,
                CANARY,
                http_config("alpha", 1),
            ))
            .await,
    );
    for refusal in &refusals {
        let err = refusal.as_ref().expect_err("each request is refused");
        assert_clean("InstallError (Debug)", &format!("{err:?}"));
        assert_clean("InstallError (Display)", &err.to_string());
    }
    let lookup = pools
        .client(&p, &receipt.slots[0], OriginKind::Vault)
        .expect_err("kind mismatch");
    assert_clean("LookupError", &format!("{lookup:?} {lookup}"));

    let too_long = Credential::new(vec![b'x'; provider_pools::Credential::MAX_LEN + 1])
        .err()
        .expect("over the ceiling");
    assert_clean("CredentialError", &format!("{too_long:?} {too_long}"));

    let manual = Installation {
        expected: Epoch::new(1),
        ..installation(&p, 0, CANARY, http_config("alpha", 1))
    };
    assert!(format!("{manual:?}").contains("<redacted>"));
}
