//! The ingress path: inbound events admitted like outbound requests.

use crate::admission::{AdmitError, AdmitRequest, IngressEvent, IngressRequest};
use crate::dispatch::DispatchAuthority;
use crate::provider_pools::ProviderPools;

impl ProviderPools {
    /// Takes finite ownership of one inbound event under its tenant's
    /// limits: stages (charges) the payload, queues for a running slot
    /// within the plan's deadlines, asks `authority` for a fresh dispatch
    /// and starts it.
    ///
    /// An event source acknowledges the event only after its handler is
    /// done with the returned [`IngressRequest`]; a refused event holds
    /// nothing, and the source decides whether it is delivered again.
    ///
    /// # Cancel safety
    ///
    /// Dropping the future refunds the queue slot and the payload charge;
    /// a grant that raced the drop is returned at once. Nothing was
    /// acknowledged, so the source still owns the event.
    ///
    /// # Errors
    ///
    /// Those of [`ProviderPools::stage_input`], [`ProviderPools::admit`],
    /// [`ProviderPools::dispatch`] and `PoolReady::start`: a full queue or
    /// metadata budget answers [`AdmitError::Capacity`] or
    /// [`AdmitError::Busy`] at once; [`AdmitError::Timeout`] when no slot
    /// freed in time; [`AdmitError::Revoked`] when the authority denies.
    pub async fn ingress(
        &self,
        authority: &dyn DispatchAuthority,
        event: IngressEvent,
    ) -> Result<IngressRequest, AdmitError> {
        let IngressEvent {
            plan,
            provider,
            slot,
            kind,
            payload,
        } = event;
        let input = self.stage_input(&plan, payload)?;
        let ready = self
            .admit(AdmitRequest {
                plan,
                provider,
                slot,
                kind,
                input,
            })
            .await?;
        let call = self.dispatch(authority, ready.plan(), ready.provider())?;
        let running = ready.start(call)?;
        Ok(IngressRequest::new(running))
    }
}
