//! Every adapter error that wraps a refusal of the pools returns it from
//! `source()`, and keeps the pools' stable code.

use std::error::Error;

/// The source of `error`, as text.
#[allow(dead_code, reason = "unused when no adapter feature is on")]
fn source_of(error: &dyn Error) -> Option<String> {
    error.source().map(ToString::to_string)
}

#[cfg(feature = "http")]
#[test]
fn an_http_staging_refusal_is_the_source() {
    use provider_pools_actors::AdmitError;
    use provider_pools_adapters::http_origin::HttpError;

    let error = HttpError::Staging(AdmitError::Busy);
    assert_eq!(source_of(&error), Some(AdmitError::Busy.to_string()));
    assert_eq!(error.code(), "busy");
}

#[cfg(feature = "blob")]
#[test]
fn a_blob_job_refusal_is_the_source() {
    use provider_pools_actors::JobError;
    use provider_pools_adapters::blob::BlobError;

    let error = BlobError::Job(JobError::Panicked);
    assert_eq!(source_of(&error), Some(JobError::Panicked.to_string()));
}

#[cfg(feature = "nats")]
#[test]
fn nats_connect_and_staging_refusals_are_the_source() {
    use provider_pools_actors::{AdmitError, ConnectError};
    use provider_pools_adapters::nats::NatsError;

    let connect = NatsError::Connect(ConnectError::Timeout);
    assert_eq!(source_of(&connect), Some(ConnectError::Timeout.to_string()));
    assert_eq!(connect.code(), "timeout");
    let staging = NatsError::Staging(AdmitError::Closed);
    assert_eq!(source_of(&staging), Some(AdmitError::Closed.to_string()));
    assert_eq!(staging.code(), "closed");
}

#[cfg(feature = "s3")]
#[test]
fn s3_connect_and_staging_refusals_are_the_source() {
    use provider_pools_actors::{AdmitError, ConnectError};
    use provider_pools_adapters::s3::S3Error;

    let connect = S3Error::Connect(ConnectError::Busy);
    assert_eq!(source_of(&connect), Some(ConnectError::Busy.to_string()));
    let staging = S3Error::Staging(AdmitError::Timeout);
    assert_eq!(source_of(&staging), Some(AdmitError::Timeout.to_string()));
}

#[cfg(feature = "vault")]
#[test]
fn a_vault_staging_refusal_is_the_source() {
    use provider_pools_actors::AdmitError;
    use provider_pools_adapters::vault::VaultError;

    let error = VaultError::Staging(AdmitError::Busy);
    assert_eq!(source_of(&error), Some(AdmitError::Busy.to_string()));
    assert_eq!(error.code(), "busy");
}

#[cfg(feature = "secret")]
#[test]
fn secret_capacity_and_job_refusals_are_the_source() {
    use provider_pools_actors::{AdmitError, JobError};
    use provider_pools_adapters::secret::SecretError;

    let capacity = SecretError::Capacity(AdmitError::Busy);
    assert_eq!(source_of(&capacity), Some(AdmitError::Busy.to_string()));
    let job = SecretError::Job(JobError::Closed);
    assert_eq!(source_of(&job), Some(JobError::Closed.to_string()));
}
