//! The guest's path: [`read`] a secret through an admitted, dispatched and
//! started request.
//!
//! Invariants:
//! - Only a [`RunningRequest`] reaches the cache: normal admission and a
//!   fresh dispatch (the policy's decision) came first.
//! - A read never touches the file: it shares the cached canonical copy.
//! - Every read, served or refused, emits one audit event on
//!   [`AUDIT_TARGET`] with tenant, session, provider, epoch, name, version
//!   and outcome — never bytes.

use provider_pools_actors::{OriginKind, RunningRequest};
use tokio::time::Instant;

use crate::secret::cache::SecretCache;
use crate::secret::{SecretError, SecretName, SecretValue, AUDIT_TARGET};

/// Reads the cached material of `name` for the request's activation.
///
/// The value shares the canonical copy and keeps it charged until dropped;
/// the guest's Store holds it until the Store is destroyed. It does not
/// hold the request's running capacity.
///
/// # Errors
///
/// [`SecretError::NotSecret`] when the request's origin is not a secret
/// origin, [`SecretError::Setting`], [`SecretError::NotLoaded`] when no
/// reload installed `name`, and [`SecretError::Expired`] once its material
/// is past its time to live.
pub fn read(running: &RunningRequest, name: &SecretName) -> Result<SecretValue, SecretError> {
    let outcome = lookup(running, name);
    let plan = running.plan();
    let client = running.client();
    let (version, outcome_code) = match &outcome {
        Ok(value) => (value.version(), "served"),
        Err(SecretError::Expired { version }) => (*version, "expired"),
        Err(e) => (0, e.code()),
    };
    tracing::info!(
        target: AUDIT_TARGET,
        tenant = %plan.tenant(),
        session = plan.session().get(),
        provider = %client.provider(),
        epoch = client.epoch().get(),
        name = %name,
        version,
        outcome = outcome_code,
        "secret read"
    );
    outcome
}

fn lookup(running: &RunningRequest, name: &SecretName) -> Result<SecretValue, SecretError> {
    let client = running.client();
    if client.kind() != OriginKind::Secret {
        return Err(SecretError::NotSecret);
    }
    let cache = client.adapter_state(SecretCache::build)?;
    cache.get(name, Instant::now()).map(SecretValue::new)
}
