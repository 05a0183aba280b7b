//! Admission errors carry fixed, stable codes that callers and metrics
//! match on.

use provider_pools::{
    AdmitError, CallMismatch, Denied, LookupError, OriginSlot, ProviderId, TenantId,
};

#[test]
fn every_admission_error_has_its_stable_code() {
    let provider = ProviderId::new("alpha").expect("provider");
    let cases = [
        (
            AdmitError::Unavailable {
                provider: provider.clone(),
            },
            "unavailable",
        ),
        (AdmitError::Busy, "busy"),
        (
            AdmitError::Capacity {
                resource: "pending_requests",
                used: 1,
                limit: 1,
            },
            "capacity",
        ),
        (
            AdmitError::RateLimited {
                requests: 10,
                period: std::time::Duration::from_secs(1),
                wait: std::time::Duration::from_secs(3),
            },
            "rate_limited",
        ),
        (AdmitError::Timeout, "timeout"),
        (AdmitError::Closed, "closed"),
        (
            AdmitError::Revoked(Denied {
                tenant: TenantId::new("t").expect("tenant"),
                provider: provider.clone(),
            }),
            "revoked",
        ),
        (
            AdmitError::Mismatch {
                what: CallMismatch::Session,
            },
            "mismatch",
        ),
        (
            AdmitError::Retired {
                provider: provider.clone(),
            },
            "retired",
        ),
        (
            AdmitError::Slot(LookupError::UnknownSlot {
                provider,
                slot: OriginSlot::new(3),
            }),
            "invalid_slot",
        ),
    ];
    for (error, code) in cases {
        assert_eq!(error.code(), code, "{error}");
    }
}

#[test]
fn lookup_errors_map_to_admission_codes() {
    let provider = ProviderId::new("alpha").expect("provider");
    let mapped = |e: LookupError| AdmitError::from(e).code();
    assert_eq!(mapped(LookupError::Closed), "closed");
    assert_eq!(
        mapped(LookupError::UnknownProvider {
            provider: provider.clone()
        }),
        "unavailable"
    );
    assert_eq!(
        mapped(LookupError::Retired {
            provider: provider.clone()
        }),
        "retired"
    );
    assert_eq!(
        mapped(LookupError::ForeignSlot {
            provider,
            slot: OriginSlot::new(0)
        }),
        "invalid_slot"
    );
}
