//! Reports and tables round-trip, and hostile ones are refused naming
//! what is wrong.

use std::collections::BTreeMap;

use provider_pools_actors::TenantId;
use provider_pools_control_plane::NodeId;

use super::{Departed, Report, Row, Table, MAX_REPORTED_TENANTS};
use crate::error::ClusterError;

fn report(tenants: usize) -> Report {
    Report {
        incarnation: 7,
        epoch: 3,
        in_force: 4,
        cap: 8,
        tenants: (0..tenants)
            .map(|i| (TenantId::new(format!("tenant-{i}")).expect("valid"), 1))
            .collect(),
        weights: BTreeMap::new(),
        leaving: false,
    }
}

fn decode_error(result: Result<impl std::fmt::Debug, ClusterError>) -> String {
    match result {
        Err(ClusterError::Decode { reason, .. }) => reason,
        other => panic!("expected a decode error, got {other:?}"),
    }
}

#[test]
fn a_report_and_a_table_round_trip() {
    let sent = report(3);
    assert_eq!(
        Report::decode(&sent.encode().expect("encodes")).expect("decodes"),
        sent
    );
    let node = NodeId::new("node-a").expect("valid");
    let table = Table {
        epoch: 9,
        rows: BTreeMap::from([(
            node.clone(),
            Row {
                incarnation: 7,
                grant: 2,
                bound: 5,
                tenants: sent.tenants.clone(),
                recent: vec![1, 2],
            },
        )]),
        departed: BTreeMap::from([(
            node,
            Departed {
                bound: 1,
                until: 12,
            },
        )]),
    };
    assert_eq!(
        Table::decode(&table.encode().expect("encodes")).expect("decodes"),
        table
    );
}

#[test]
fn a_report_with_an_unknown_field_or_a_bad_tenant_is_refused() {
    let unknown = br#"{"incarnation":1,"epoch":0,"in_force":0,"cap":1,"tenants":{},"extra":1}"#;
    assert!(decode_error(Report::decode(unknown)).contains("unknown field"));
    let bad = br#"{"incarnation":1,"epoch":0,"in_force":0,"cap":1,"tenants":{"Not Valid":1}}"#;
    let reason = decode_error(Report::decode(bad));
    assert!(reason.contains("tenant"), "{reason}");
}

#[test]
fn a_report_with_too_many_tenants_is_refused_both_ways() {
    let big = report(MAX_REPORTED_TENANTS + 1);
    assert!(matches!(
        big.encode(),
        Err(ClusterError::Encode { what: "report", .. })
    ));
    let bytes = serde_json::to_vec(&big).expect("serialises");
    assert_eq!(decode_error(Report::decode(&bytes)), "too many tenants");
}

#[test]
fn a_table_granting_above_its_bound_is_refused() {
    let text =
        br#"{"epoch":1,"rows":{"node-a":{"incarnation":1,"grant":3,"bound":2,"tenants":{}}}}"#;
    let reason = decode_error(Table::decode(text));
    assert!(reason.contains("grant above its bound"), "{reason}");
}

#[test]
fn a_value_larger_than_the_board_allows_is_refused_before_parsing() {
    let huge = vec![b' '; provider_pools_control_plane::MAX_BOARD_VALUE_BYTES + 1];
    assert_eq!(
        decode_error(Report::decode(&huge)),
        "larger than a board value"
    );
}

#[test]
fn a_report_carries_weights_and_refuses_them_out_of_range_or_for_tenants_not_listed() {
    let mut sent = report(2);
    let tenant = TenantId::new("tenant-1").expect("valid");
    sent.weights.insert(tenant.clone(), 3);
    assert_eq!(
        Report::decode(&sent.encode().expect("encodes")).expect("decodes"),
        sent
    );
    let most = provider_pools_actors::ProviderPools::MAX_TENANT_WEIGHT;
    for weight in [0, most + 1] {
        let mut bad = report(2);
        bad.weights.insert(tenant.clone(), weight);
        assert!(matches!(
            bad.encode(),
            Err(ClusterError::Encode { what: "report", .. })
        ));
        let bytes = serde_json::to_vec(&bad).expect("serialises");
        assert!(decode_error(Report::decode(&bytes)).contains("weight outside"));
    }
    let mut unlisted = report(2);
    unlisted
        .weights
        .insert(TenantId::new("someone-else").expect("valid"), 2);
    let bytes = serde_json::to_vec(&unlisted).expect("serialises");
    assert!(decode_error(Report::decode(&bytes)).contains("does not list"));
    // A report without weights says nothing of them on the wire.
    let plain = String::from_utf8(report(1).encode().expect("encodes")).expect("utf-8");
    assert!(!plain.contains("weights"), "{plain}");
}
