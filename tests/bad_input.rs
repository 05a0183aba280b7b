//! The bad-input catalogue: every class of hostile or broken input a user
//! can hand the library, each answered with its typed error and the previous
//! state unchanged.
//!
//! Parsers with their own exhaustive tables are represented here by one
//! case each and the table named; stateful paths (installing, staging,
//! restoring control-plane state) check the state before and after.

mod support;

use provider_pools::node::{NodeConfig, NodeConfigError};
use provider_pools::{
    AdmitError, Bytes, Credential, InstallError, LimitField, Limits, LimitsError, OriginKind,
    OriginSlot, ProviderConfig, ProviderId, ServiceName, TenantId,
};
use provider_pools_adapters::blob::BlobKey;
use provider_pools_adapters::http_origin::{RequestTarget, TargetError};
use provider_pools_control_plane::{
    ControlPlane, ControlPlaneError, Endpoint, FileClient, LeaseKey, LeaseName, LeaseRequest,
    NodeId,
};
use support::{installation, plan, provider, start, with_alpha};

#[test]
fn every_limit_over_its_ceiling_in_a_node_file_is_refused_naming_it() {
    for field in LimitField::ALL {
        let key = if field.is_duration() {
            format!("{}_ms", field.name())
        } else {
            field.name().to_owned()
        };
        let over = Limits::CEILING.get(field) + 1;
        let text = format!("[limits]\n{key} = {over}\n");
        match NodeConfig::parse(&text) {
            Err(NodeConfigError::Limits(error @ LimitsError::AboveCeiling { .. })) => {
                assert_eq!(error.field(), field, "{text}");
            }
            other => panic!("{text}: expected the ceiling of {field} refused, got {other:?}"),
        }
    }
}

#[test]
fn a_truncated_node_file_is_refused_naming_its_line() {
    let text = "[limits]\npending_requests = 64\n\n[[provider]]\nid = \"weather\"\nkind = \"ht";
    match NodeConfig::parse(text) {
        Err(NodeConfigError::Syntax { line, .. }) => assert_eq!(line, 6),
        other => panic!("expected a syntax error on line 6, got {other:?}"),
    }
}

#[test]
fn malformed_identities_are_refused_by_every_constructor() {
    let long = "a".repeat(300);
    for bad in ["", "Bad Id", "a/../b", "caf\u{e9}", long.as_str()] {
        assert!(ProviderId::new(bad).is_err(), "provider {bad:?}");
        assert!(TenantId::new(bad).is_err(), "tenant {bad:?}");
        assert!(NodeId::new(bad).is_err(), "node {bad:?}");
    }
    assert!(ServiceName::new("").is_err());
    assert!(ServiceName::new(long).is_err());
}

#[tokio::test]
async fn an_oversized_credential_is_refused_and_a_refused_install_changes_nothing() {
    let oversized = vec![0x41; provider_pools::Credential::MAX_LEN + 1];
    assert!(Credential::from_slice(&oversized).is_err());

    let limits = Limits {
        private_config_bytes: 1_024,
        ..Limits::DEFAULT
    };
    let (pools, alpha, _receipt) = with_alpha(limits, 1).await;
    let before = pools.snapshot();
    let described = pools.describe(&alpha);
    let too_big = vec![0x42; 2_048];
    let config = ProviderConfig::new(ServiceName::new("beta/v1").expect("service")).with_origin(
        OriginSlot::new(0),
        OriginKind::Http,
        "http://127.0.0.1:9",
    );
    let refused = pools
        .install(installation(&provider("beta"), 0, &too_big, config))
        .await;
    assert!(
        matches!(
            refused,
            Err(InstallError::PrivateConfigTooLarge {
                len: 2_048,
                limit: 1_024
            })
        ),
        "{refused:?}"
    );
    let rotation = pools
        .install(installation(
            &alpha,
            1,
            &too_big,
            support::http_config("alpha/v1", 1),
        ))
        .await;
    assert!(
        matches!(rotation, Err(InstallError::PrivateConfigTooLarge { .. })),
        "{rotation:?}"
    );
    assert_eq!(pools.snapshot(), before, "nothing retained by the refusals");
    assert_eq!(
        pools.describe(&alpha),
        described,
        "the installed provider is untouched"
    );
    assert!(pools.describe(&provider("beta")).is_none());
}

#[tokio::test]
async fn an_oversized_body_is_refused_before_it_is_staged() {
    let pools = start(Limits {
        metadata_bytes: 64 * 1024,
        metadata_per_tenant: 64 * 1024,
        private_config_bytes: 16 * 1024,
        ..Limits::DEFAULT
    })
    .await;
    let before = pools.snapshot();
    let refused = pools.stage_input(&plan("t", 1), Bytes::from(vec![0u8; 128 * 1024]));
    assert!(
        matches!(
            refused,
            Err(AdmitError::Capacity {
                // The tenant's share is checked first, before anything shared.
                resource: "metadata_per_tenant",
                ..
            })
        ),
        "{refused:?}"
    );
    assert_eq!(pools.snapshot(), before);
    let staged = pools
        .stage_input(&plan("t", 1), Bytes::from(vec![0u8; 1024]))
        .expect("a small body fits");
    drop(staged);
    assert_eq!(
        pools.snapshot(),
        before,
        "a dropped staging returns its charge"
    );
}

#[test]
fn path_traversal_and_absolute_keys_are_refused() {
    for bad in [
        "../outside/secret.txt",
        "a/../../b",
        "/etc/passwd",
        "a/./b",
        "",
    ] {
        assert!(BlobKey::parse(bad).is_err(), "{bad:?}");
    }
    // The exhaustive table: adapters/tests/blob.rs (symlink escapes included).
}

#[test]
fn absolute_and_foreign_urls_are_refused() {
    assert_eq!(
        RequestTarget::parse("http://evil.example/x").map(|target| target.as_str().to_owned()),
        Err(TargetError::AbsoluteUrl)
    );
    assert_eq!(
        RequestTarget::parse("//evil.example/x").map(|target| target.as_str().to_owned()),
        Err(TargetError::SchemeRelative)
    );
    // The exhaustive table: adapters/tests/http_origin.rs.
    for insecure in ["http://cp.example.net", "https://user:pw@cp.example.net"] {
        let error = Endpoint::parse(insecure).expect_err(insecure);
        assert!(
            matches!(error, ControlPlaneError::InsecureEndpoint { .. }),
            "{insecure}: {error:?}"
        );
        assert!(!error.to_string().contains("pw"), "{error}");
    }
    // The exhaustive table: control-plane/tests/transport_endpoint.rs.
}

#[tokio::test]
async fn malformed_or_truncated_control_plane_state_leaves_the_live_state_intact() {
    let dir = tempfile::tempdir().expect("temp dir");
    let state = dir.path().join("state.json");
    let client = FileClient::open(&state).expect("opens");
    let key = LeaseKey::Global(LeaseName::new("leader").expect("lease"));
    let grant = client
        .acquire(
            LeaseRequest::new(
                key.clone(),
                NodeId::new("node-a").expect("node"),
                std::time::Duration::from_secs(60),
            )
            .expect("request"),
        )
        .await
        .expect("acquired");
    let backup = dir.path().join("backup.json");
    client.backup_to(&backup).expect("backed up");
    let valid = std::fs::read(&backup).expect("read backup");
    let on_disk = std::fs::read(&state).expect("read state");

    let truncated = valid[..valid.len() / 2].to_vec();
    let cases: [(&str, Vec<u8>); 4] = [
        ("truncated", truncated),
        ("not json", b"{ this is not json".to_vec()),
        ("wrong shape", br#"{"version":1,"registrations":{},"leases":7}"#.to_vec()),
        ("bad name", br#"{"version":1,"registrations":[],"leases":[{"key":{"scope":"global","name":"a/b"},"holder":"n","token":1,"expires_at_ms":1}]}"#.to_vec()),
    ];
    for (what, bytes) in cases {
        let bad = dir.path().join(format!("{}.json", what.replace(' ', "-")));
        std::fs::write(&bad, &bytes).expect("write case");
        let error = client.restore_from(&bad).expect_err(what);
        assert!(
            matches!(error, ControlPlaneError::Corrupt { .. }),
            "{what}: {error:?}"
        );
        assert_eq!(
            std::fs::read(&state).expect("read state"),
            on_disk,
            "{what}: the file is unchanged"
        );
        let lease = client
            .read_lease(key.clone())
            .await
            .expect("read")
            .expect("slot");
        assert!(
            lease.is_held_by(&grant.holder, grant.token),
            "{what}: the live state is unchanged"
        );
    }
    // Oversized files, record caps, duplicate keys and overflowing epochs:
    // control-plane/tests/file_bad_input.rs and file_epochs.rs.
}
