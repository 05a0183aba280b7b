//! The SDK client of one epoch, and its binding to one running request.
//!
//! Invariants:
//! - One SDK client per client and epoch, built from that epoch's
//!   credential through `ClientLease::adapter_state`: a rotation's epoch
//!   builds its own, calls holding the old epoch keep the old one.
//! - The client's own HTTP client refuses every request: each operation
//!   binds a [`PoolConnector`] for its running request through the SDK's
//!   per-operation config override, so no request leaves without the
//!   pools' accounting.
//! - The SDK never retries and runs no timeouts of its own: the request's
//!   deadline bounds every exchange.
//! - `Debug` shows the endpoint, never the credential (not even the key id).

use std::sync::Arc;

use aws_sdk_s3::config::http::HttpRequest;
use aws_sdk_s3::config::retry::RetryConfig;
use aws_sdk_s3::config::timeout::TimeoutConfig;
use aws_sdk_s3::config::{
    BehaviorVersion, Credentials, Region, RequestChecksumCalculation, ResponseChecksumValidation,
    StalledStreamProtectionConfig,
};
use aws_sdk_s3::error::ConnectorError;
use aws_smithy_runtime_api::client::http::{
    HttpClient, HttpConnector, HttpConnectorFuture, HttpConnectorSettings, SharedHttpConnector,
};
use aws_smithy_runtime_api::client::runtime_components::RuntimeComponents;
use provider_pools_actors::{ClientLease, OriginKind, ProviderPools, RunningRequest};

use crate::http_origin::HttpDialer;
use crate::s3::config::{split_credential, S3ConfigError, S3Endpoint};
use crate::s3::connector::{Bounds, PoolConnector};
use crate::s3::S3Error;

/// Where the SDK's credentials say they came from.
const CREDENTIAL_SOURCE: &str = "provider-pools";

/// The SDK client of one epoch, with its validated endpoint.
pub(crate) struct EpochClient {
    pub(crate) sdk: aws_sdk_s3::Client,
    pub(crate) endpoint: Arc<S3Endpoint>,
}

impl std::fmt::Debug for EpochClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EpochClient")
            .field("endpoint", &self.endpoint)
            .finish_non_exhaustive()
    }
}

/// One operation's SDK client and the config override that binds it to
/// the running request's pooled connections.
pub(crate) struct Call {
    pub(crate) client: Arc<EpochClient>,
    pub(crate) connector: PoolConnector,
}

impl Call {
    /// The running epoch's client (built on first use) and a connector for
    /// `running`.
    pub(crate) fn new(
        pools: &ProviderPools,
        running: &RunningRequest,
        dialer: &Arc<HttpDialer>,
        bounds: Bounds,
    ) -> Result<Self, S3Error> {
        let client = epoch_client(running.client())?;
        let connector =
            PoolConnector::new(pools, running, dialer, Arc::clone(&client.endpoint), bounds);
        Ok(Self { client, connector })
    }

    /// The per-operation config carrying this request's connector.
    pub(crate) fn config(&self) -> aws_sdk_s3::config::Builder {
        aws_sdk_s3::config::Builder::default().http_client(self.connector.clone())
    }

    /// The bucket the provider serves.
    pub(crate) fn bucket(&self) -> &str {
        &self.client.endpoint.bucket
    }
}

/// The epoch's SDK client, built once per client and epoch.
fn epoch_client(lease: &ClientLease) -> Result<Arc<EpochClient>, S3Error> {
    if lease.kind() != OriginKind::S3 {
        return Err(S3Error::Config(S3ConfigError::NotS3));
    }
    lease.adapter_state(build).map_err(S3Error::Config)
}

fn build(lease: &ClientLease) -> Result<EpochClient, S3ConfigError> {
    let endpoint = S3Endpoint::from_lookup(lease.target(), |key| lease.setting(key))?;
    let (key_id, secret) = split_credential(lease.credential_for_adapter().expose_to_adapter())?;
    let credentials = Credentials::new(key_id, secret, None, None, CREDENTIAL_SOURCE);
    let config = aws_sdk_s3::Config::builder()
        .behavior_version(BehaviorVersion::latest())
        .region(Region::new(endpoint.region.clone()))
        .endpoint_url(endpoint.endpoint_url())
        .force_path_style(endpoint.path_style)
        .credentials_provider(credentials)
        .retry_config(RetryConfig::disabled())
        .timeout_config(TimeoutConfig::disabled())
        .stalled_stream_protection(StalledStreamProtectionConfig::disabled())
        .request_checksum_calculation(RequestChecksumCalculation::WhenRequired)
        .response_checksum_validation(ResponseChecksumValidation::WhenRequired)
        .http_client(Unbound)
        .build();
    Ok(EpochClient {
        sdk: aws_sdk_s3::Client::from_conf(config),
        endpoint: Arc::new(endpoint),
    })
}

/// The client-level HTTP client: refuses every request, since only an
/// operation bound to a running request may send.
#[derive(Debug, Clone, Copy)]
struct Unbound;

/// The refusal `Unbound` answers with.
#[derive(Debug, thiserror::Error)]
#[error("s3 request not bound to a running request")]
struct NotBound;

impl HttpClient for Unbound {
    fn http_connector(
        &self,
        _settings: &HttpConnectorSettings,
        _components: &RuntimeComponents,
    ) -> SharedHttpConnector {
        SharedHttpConnector::new(*self)
    }
}

impl HttpConnector for Unbound {
    fn call(&self, _request: HttpRequest) -> HttpConnectorFuture {
        HttpConnectorFuture::ready(Err(ConnectorError::user(Box::new(NotBound))))
    }
}
