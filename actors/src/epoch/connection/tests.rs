//! The connection errors' stable names and codes, and the dial outcomes'
//! codes: what logs, metrics, spans and callers match on.

use std::time::Duration;

use super::{ConnectError, DialError, DialErrorKind, DialOutcome};

const KINDS: [DialErrorKind; 8] = [
    DialErrorKind::Refused,
    DialErrorKind::Timeout,
    DialErrorKind::Handshake,
    DialErrorKind::Protocol,
    DialErrorKind::NoStream,
    DialErrorKind::Cancelled,
    DialErrorKind::Saturated,
    DialErrorKind::Other,
];

#[test]
fn dial_error_kinds_have_stable_names_shown_by_display() {
    let names: Vec<_> = KINDS.iter().map(|kind| kind.name()).collect();
    assert_eq!(
        names,
        [
            "refused",
            "timeout",
            "handshake",
            "protocol",
            "no_stream",
            "cancelled",
            "saturated",
            "other"
        ]
    );
    for kind in KINDS {
        assert_eq!(kind.to_string(), kind.name());
    }
    assert_eq!(
        DialError::new(DialErrorKind::Refused, "connection refused").to_string(),
        "dial failed (refused): connection refused"
    );
}

/// A dial that failed for want of a local resource is `busy` (retry soon);
/// one whose peer allows no stream is `no_stream`; any other failed dial is
/// `unavailable`, as is a client in backoff.
#[test]
fn connect_errors_have_stable_codes() {
    for kind in KINDS {
        let expected = match kind {
            DialErrorKind::Saturated => "busy",
            DialErrorKind::NoStream => "no_stream",
            _ => "unavailable",
        };
        assert_eq!(
            ConnectError::Dial(DialError::new(kind, "x")).code(),
            expected,
            "a failed dial of kind {kind}"
        );
    }
    let others = [
        ConnectError::Unavailable {
            kind: DialErrorKind::Saturated,
            retry_after: Duration::from_secs(1),
        },
        ConnectError::Busy,
        ConnectError::Capacity {
            resource: "connections",
            used: 1,
            limit: 1,
        },
        ConnectError::Timeout,
        ConnectError::Closed,
        ConnectError::NoStream,
    ];
    let codes: Vec<_> = others.iter().map(ConnectError::code).collect();
    assert_eq!(
        codes,
        [
            "unavailable",
            "busy",
            "capacity",
            "timeout",
            "closed",
            "no_stream"
        ]
    );
}

/// The codes a dial's span records as its outcome: a failed dial by its
/// kind's name.
#[test]
fn dial_outcomes_have_stable_codes() {
    let outcomes = [
        DialOutcome::Connected,
        DialOutcome::Failed(DialErrorKind::Handshake),
        DialOutcome::Withdrawn,
        DialOutcome::Abandoned,
    ];
    let codes: Vec<_> = outcomes.into_iter().map(DialOutcome::code).collect();
    assert_eq!(codes, ["connected", "handshake", "withdrawn", "abandoned"]);
}
