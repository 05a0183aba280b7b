//! Every adapter's size and count bounds have a documented ceiling
//! (`CEILING`), the ceiling itself passes, and one above it is refused with
//! a `LimitError` naming the field.

use provider_pools_adapters::blob::BlobLimits;
use provider_pools_adapters::http_origin::BodyLimits;
use provider_pools_adapters::nats::NatsLimits;
use provider_pools_adapters::s3::S3Limits;
use provider_pools_adapters::vault::VaultLimits;

#[test]
fn every_adapter_limit_above_its_ceiling_is_refused() {
    assert_eq!(BodyLimits::CEILING.check(), Ok(()));
    assert_eq!(BlobLimits::CEILING.check(), Ok(()));
    assert_eq!(S3Limits::CEILING.check(), Ok(()));
    assert_eq!(VaultLimits::CEILING.check(), Ok(()));
    assert_eq!(NatsLimits::CEILING.check(), Ok(()));
    let refused = [
        (
            "max_response",
            BodyLimits {
                max_response: BodyLimits::CEILING.max_response + 1,
                ..BodyLimits::default()
            }
            .check(),
        ),
        (
            "chunk",
            BlobLimits {
                chunk: usize::MAX,
                ..BlobLimits::default()
            }
            .check(),
        ),
        (
            "max_list",
            S3Limits {
                max_list: S3Limits::CEILING.max_list + 1,
                ..S3Limits::default()
            }
            .check(),
        ),
        (
            "max_response_bytes",
            VaultLimits {
                max_response_bytes: usize::MAX,
                ..VaultLimits::default()
            }
            .check(),
        ),
        (
            "max_batch_bytes",
            NatsLimits {
                max_batch_bytes: NatsLimits::CEILING.max_batch_bytes + 1,
                ..NatsLimits::default()
            }
            .check(),
        ),
    ];
    for (field, outcome) in refused {
        let error = outcome.expect_err(field);
        assert_eq!(error.field, field);
        assert!(error.to_string().contains(field), "{error}");
    }
}
