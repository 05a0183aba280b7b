//! Unit tests for the limits table, field names, validation and lowering.

use std::collections::HashSet;
use std::time::Duration;

use serde::de::value::{Error as ValueError, MapDeserializer, StrDeserializer};
use serde::de::IntoDeserializer;
use serde::Deserialize;

use super::{LimitField as F, Limits, LimitsError as E, RELATIONS};

/// The original design's table: (field, default, ceiling); durations in milliseconds.
const TABLE: [(F, u64, u64); 23] = [
    (F::RetainedConfigurations, 32, 256),
    (F::ConfiguredClients, 128, 1_024),
    (F::ClientsPerProvider, 8, 128),
    (F::Connections, 256, 4_096),
    (F::ConnectionsPerClient, 8, 256),
    (F::ConnectionsPerTenant, 4, 256),
    (F::IdleConnections, 64, 1_024),
    (F::PendingRequests, 128, 1_024),
    (F::RunningRequests, 64, 1_024),
    (F::RequestsPerTenant, 32, 1_024),
    (F::RequestsPerProvider, 64, 1_024),
    (F::RunningPerTenant, 16, 1_024),
    (F::RunningPerProvider, 32, 1_024),
    (F::ProviderWorkers, 16, 128),
    (F::WorkersPerTenant, 8, 128),
    (F::CleanupJobs, 8, 128),
    (F::MetadataBytes, 8_388_608, 67_108_864),
    (F::MetadataPerTenant, 2_097_152, 67_108_864),
    (F::PrivateConfigBytes, 65_536, 1_048_576),
    (F::QueueAge, 5_000, 60_000),
    (F::IdleAge, 30_000, 3_600_000),
    (F::DialBackoffInitial, 100, 30_000),
    (F::DialBackoffMax, 30_000, 300_000),
];

/// Sets `field` of `limits` to `value` (milliseconds for durations).
fn set(limits: &mut Limits, field: F, value: u32) {
    let ms = Duration::from_millis(u64::from(value));
    match field {
        F::RetainedConfigurations => limits.retained_configurations = value,
        F::ConfiguredClients => limits.configured_clients = value,
        F::ClientsPerProvider => limits.clients_per_provider = value,
        F::Connections => limits.connections = value,
        F::ConnectionsPerClient => limits.connections_per_client = value,
        F::ConnectionsPerTenant => limits.connections_per_tenant = value,
        F::IdleConnections => limits.idle_connections = value,
        F::PendingRequests => limits.pending_requests = value,
        F::RunningRequests => limits.running_requests = value,
        F::RequestsPerTenant => limits.requests_per_tenant = value,
        F::RequestsPerProvider => limits.requests_per_provider = value,
        F::RunningPerTenant => limits.running_per_tenant = value,
        F::RunningPerProvider => limits.running_per_provider = value,
        F::ProviderWorkers => limits.provider_workers = value,
        F::WorkersPerTenant => limits.workers_per_tenant = value,
        F::CleanupJobs => limits.cleanup_jobs = value,
        F::MetadataBytes => limits.metadata_bytes = value,
        F::MetadataPerTenant => limits.metadata_per_tenant = value,
        F::PrivateConfigBytes => limits.private_config_bytes = value,
        F::QueueAge => limits.queue_age = ms,
        F::IdleAge => limits.idle_age = ms,
        F::DialBackoffInitial => limits.dial_backoff_initial = ms,
        F::DialBackoffMax => limits.dial_backoff_max = ms,
    }
}

/// `Limits::DEFAULT` with the given fields replaced.
fn default_with(changes: &[(F, u32)]) -> Limits {
    let mut limits = Limits::DEFAULT;
    for &(field, value) in changes {
        set(&mut limits, field, value);
    }
    limits
}

/// `E::AboveCeiling` for `field = value` above `ceiling`.
fn above(field: F, value: u64, ceiling: u64) -> E {
    E::AboveCeiling {
        field,
        value,
        ceiling,
    }
}

/// `E::Relation` for `field = value` above `bound_field = bound`.
fn relation(field: F, value: u64, bound_field: F, bound: u64) -> E {
    E::Relation {
        field,
        value,
        bound_field,
        bound,
    }
}

/// `E::Zero` for `field`.
fn zero(field: F) -> E {
    E::Zero { field }
}

/// `E::Raised` for `field` raised from `bound` to `value`.
fn raised(field: F, value: u64, bound: u64) -> E {
    E::Raised {
        field,
        value,
        bound,
    }
}

#[test]
fn default_and_ceiling_match_the_table() {
    let fields: Vec<F> = TABLE.iter().map(|row| row.0).collect();
    assert_eq!(fields, F::ALL);
    for (field, default, ceiling) in TABLE {
        assert_eq!(Limits::DEFAULT.get(field), default, "default of {field}");
        assert_eq!(Limits::CEILING.get(field), ceiling, "ceiling of {field}");
    }
    // Writing back what `get` reports changes nothing: the table is exact, durations too.
    for limits in [Limits::DEFAULT, Limits::CEILING] {
        for field in F::ALL {
            let mut copy = limits;
            let value = u32::try_from(limits.get(field)).unwrap_or(0);
            set(&mut copy, field, value);
            assert_eq!(copy, limits, "{field}");
        }
    }
    assert_eq!(Limits::default(), Limits::DEFAULT);
}

#[test]
fn get_reads_the_named_field_only() {
    for field in F::ALL {
        let limits = default_with(&[(field, 7_777)]);
        assert_eq!(limits.get(field), 7_777, "{field}");
        for other in F::ALL.into_iter().filter(|&other| other != field) {
            assert_eq!(
                limits.get(other),
                Limits::DEFAULT.get(other),
                "{other} / {field}"
            );
        }
    }
}

#[test]
fn field_names_are_distinct_and_match_display_and_serde() {
    let names: HashSet<&str> = F::ALL.iter().map(|f| f.name()).collect();
    assert_eq!(names.len(), F::ALL.len());
    for field in F::ALL {
        assert_eq!(field.to_string(), field.name());
        let de: StrDeserializer<'_, ValueError> = field.name().into_deserializer();
        assert_eq!(F::deserialize(de), Ok(field));
    }
}

#[test]
fn limits_deserialize_fills_defaults_and_refuses_unknown_fields() {
    let de = MapDeserializer::<_, ValueError>::new([("connections", 100u32)].into_iter());
    let expected = default_with(&[(F::Connections, 100)]);
    assert_eq!(Limits::deserialize(de), Ok(expected));
    let de = MapDeserializer::<_, ValueError>::new([("connection", 100u32)].into_iter());
    assert!(Limits::deserialize(de).is_err());
}

#[test]
fn default_and_ceiling_validate() {
    assert_eq!(Limits::DEFAULT.validate(), Ok(()));
    assert_eq!(Limits::CEILING.validate(), Ok(()));
}

#[test]
fn zero_is_refused_for_every_field() {
    for field in F::ALL {
        let err = zero(field);
        assert_eq!(default_with(&[(field, 0)]).validate(), Err(err.clone()));
        assert_eq!(err.field(), field);
    }
}

#[test]
fn above_ceiling_is_refused_for_every_field() {
    for (field, _, ceiling) in TABLE {
        let value = u32::try_from(ceiling + 1).unwrap_or(u32::MAX);
        let err = above(field, ceiling + 1, ceiling);
        assert_eq!(default_with(&[(field, value)]).validate(), Err(err.clone()));
        assert_eq!(err.field(), field);
        // The ceiling itself passes the ceiling check.
        let at_ceiling = default_with(&[(field, value - 1)]).validate();
        let refused = matches!(at_ceiling, Err(E::AboveCeiling { .. }));
        assert!(!refused, "{field}");
    }
}

/// A broken relation: changes to `Limits::DEFAULT`, then field, value, bound_field, bound.
type RelationCase = (&'static [(F, u32)], F, u64, F, u64);

#[test]
fn each_broken_relation_is_reported_exactly() {
    #[rustfmt::skip]
    let cases: [RelationCase; 9] = [
        (&[(F::Connections, 100), (F::ConnectionsPerClient, 200)], F::ConnectionsPerClient, 200, F::Connections, 100),
        (&[(F::IdleConnections, 300)], F::IdleConnections, 300, F::Connections, 256),
        (&[(F::ConfiguredClients, 4)], F::ClientsPerProvider, 8, F::ConfiguredClients, 4),
        (&[(F::RequestsPerTenant, 200)], F::RequestsPerTenant, 200, F::PendingRequests, 128),
        (&[(F::RequestsPerProvider, 200)], F::RequestsPerProvider, 200, F::PendingRequests, 128),
        (&[(F::RunningPerTenant, 100)], F::RunningPerTenant, 100, F::RunningRequests, 64),
        (&[(F::RunningPerProvider, 100)], F::RunningPerProvider, 100, F::RunningRequests, 64),
        (&[(F::MetadataBytes, 32_768)], F::PrivateConfigBytes, 65_536, F::MetadataBytes, 32_768),
        (&[(F::DialBackoffInitial, 20_000), (F::DialBackoffMax, 10_000)], F::DialBackoffInitial, 20_000, F::DialBackoffMax, 10_000),
    ];
    let pairs: Vec<(F, F)> = cases.iter().map(|case| (case.1, case.3)).collect();
    assert_eq!(pairs, RELATIONS, "one case per relation, in order");
    for (changes, field, value, bound_field, bound) in cases {
        let err = relation(field, value, bound_field, bound);
        assert_eq!(default_with(changes).validate(), Err(err.clone()));
        assert_eq!(err.field(), field);
        // Equal to the bound is fine.
        let mut at_bound = default_with(changes);
        let bound_value = u32::try_from(bound).unwrap_or(u32::MAX);
        set(&mut at_bound, field, bound_value);
        assert_eq!(at_bound.validate(), Ok(()), "{field} = {bound_field}");
    }
    // No relation between configured clients and connections.
    let clients = [(F::ConfiguredClients, 1_024), (F::Connections, 8)];
    let clients = [clients[0], clients[1], (F::IdleConnections, 8)];
    assert_eq!(default_with(&clients).validate(), Ok(()));
}

#[test]
fn validation_order_is_zero_then_ceiling_then_relation() {
    let over = [(F::IdleConnections, 300), (F::Connections, 5_000)];
    let also_zero = [over[0], over[1], (F::CleanupJobs, 0)];
    let err = zero(F::CleanupJobs);
    assert_eq!(default_with(&also_zero).validate(), Err(err));
    let err = above(F::Connections, 5_000, 4_096);
    assert_eq!(default_with(&over).validate(), Err(err));
}

#[test]
fn durations_compare_in_milliseconds_rounded_up() {
    let mut limits = Limits::DEFAULT;
    limits.queue_age = Duration::from_nanos(1);
    assert_eq!(limits.get(F::QueueAge), 1);
    assert_eq!(limits.validate(), Ok(()));
    limits.queue_age = Duration::from_secs(60) + Duration::from_nanos(1);
    let err = above(F::QueueAge, 60_001, 60_000);
    assert_eq!(limits.validate(), Err(err.clone()));
    let message = "limit queue_age = 60001 ms exceeds its ceiling 60000 ms";
    assert_eq!(err.to_string(), message);
}

#[test]
fn check_lowering_refuses_raises() {
    let startup = Limits::DEFAULT;
    let more_pending = default_with(&[(F::PendingRequests, 200)]);
    let err = raised(F::PendingRequests, 200, 128);
    assert_eq!(startup.check_lowering(&more_pending), Err(err.clone()));
    let message = "cannot raise pending_requests from 128 to 200";
    assert_eq!(err.to_string(), message);
    let older = default_with(&[(F::QueueAge, 6_000)]);
    let err = raised(F::QueueAge, 6_000, 5_000);
    assert_eq!(startup.check_lowering(&older), Err(err));
    let invalid = default_with(&[(F::PendingRequests, 0)]);
    let err = zero(F::PendingRequests);
    assert_eq!(startup.check_lowering(&invalid), Err(err));
}

#[test]
fn check_lowering_refuses_any_backoff_change() {
    let startup = Limits::DEFAULT;
    for (field, value) in [(F::DialBackoffInitial, 50), (F::DialBackoffMax, 20_000)] {
        let changed = default_with(&[(field, value)]);
        assert_eq!(startup.check_lowering(&changed), Err(E::Fixed { field }));
    }
    let mut nudged = startup;
    nudged.dial_backoff_initial = Duration::from_micros(99_500);
    let field = F::DialBackoffInitial;
    let err = E::Fixed { field };
    assert_eq!(startup.check_lowering(&nudged), Err(err.clone()));
    let message = "dial_backoff_initial is fixed for the registry generation";
    assert_eq!(err.to_string(), message);
}

#[test]
fn check_lowering_accepts_equal_and_strictly_lower_limits() {
    let startup = Limits::DEFAULT;
    assert_eq!(startup.check_lowering(&startup), Ok(()));
    let mut lowered = startup;
    for field in F::ALL.into_iter().filter(|f| !f.is_fixed()) {
        let half = u32::try_from(startup.get(field) / 2).unwrap_or(u32::MAX);
        set(&mut lowered, field, half);
    }
    assert_eq!(lowered.validate(), Ok(()));
    assert_eq!(startup.check_lowering(&lowered), Ok(()));
}

#[test]
fn error_messages_name_field_value_and_bound() {
    let message = "limit connections_per_client = 300 exceeds its ceiling 256";
    let err = above(F::ConnectionsPerClient, 300, 256);
    assert_eq!(err.to_string(), message);
    let err = relation(F::IdleConnections, 300, F::Connections, 256);
    let message = "limit idle_connections = 300 must not exceed connections = 256";
    assert_eq!(err.to_string(), message);
    let message = "limit pending_requests must not be zero";
    assert_eq!(zero(F::PendingRequests).to_string(), message);
    let err = relation(F::DialBackoffInitial, 20_000, F::DialBackoffMax, 10_000);
    let message = "limit dial_backoff_initial = 20000 ms must not exceed \
                   dial_backoff_max = 10000 ms";
    assert_eq!(err.to_string(), message);
}

#[test]
fn a_share_above_its_total_is_capped_at_it() {
    let defaults = Limits::DEFAULT;
    assert_eq!(
        (
            defaults.connections_share(),
            defaults.workers_share(),
            defaults.metadata_share()
        ),
        (4, 8, 2 * 1_048_576),
        "the defaults keep every share below its total"
    );
    let small = default_with(&[
        (F::ConnectionsPerClient, 2),
        (F::ProviderWorkers, 1),
        (F::MetadataBytes, 1_048_576),
    ]);
    assert_eq!(
        small.validate(),
        Ok(()),
        "no relation refuses a large share"
    );
    assert_eq!(
        (
            small.connections_share(),
            small.workers_share(),
            small.metadata_share()
        ),
        (2, 1, 1_048_576)
    );
}
