//! Lease operations of [`StoreState`].

use crate::error::ControlPlaneError;
use crate::lease::{FencingToken, LeaseGrant, LeaseKey, LeaseRequest, LeaseState};
use crate::store::state::{expiry, LeaseRecord, StoreState};

impl StoreState {
    /// Grants a free or expired lease with the next token, or re-grants it
    /// to its live holder with the same token.
    pub(crate) fn acquire(
        &mut self,
        request: LeaseRequest,
        now_ms: u64,
    ) -> Result<LeaseGrant, ControlPlaneError> {
        request.check()?;
        let expires_at_ms = expiry(now_ms, request.ttl, "lease expiry")?;
        let (old_bytes, token) = match self.leases.get(&request.key) {
            Some(record) => {
                if let Some(holder) = record.live_holder(now_ms) {
                    if *holder != request.holder {
                        return Err(ControlPlaneError::LeaseHeld {
                            holder: holder.clone(),
                            token: record.token,
                        });
                    }
                    (Some(record.bytes()), record.token)
                } else {
                    (Some(record.bytes()), record.token.next()?)
                }
            }
            None => (None, FencingToken(1)),
        };
        let record = LeaseRecord {
            key: request.key.clone(),
            holder: Some(request.holder.clone()),
            token,
            expires_at_ms,
        };
        let new_bytes = record.bytes();
        self.check_fits(
            usize::from(old_bytes.is_none()),
            old_bytes.unwrap_or(0),
            new_bytes,
        )?;
        self.leases.insert(request.key.clone(), record);
        self.account(old_bytes.unwrap_or(0), new_bytes);
        Ok(LeaseGrant {
            key: request.key,
            holder: request.holder,
            token,
            ttl: request.ttl,
        })
    }

    /// Extends a live lease held with the grant's token.
    pub(crate) fn renew(
        &mut self,
        grant: LeaseGrant,
        now_ms: u64,
    ) -> Result<LeaseGrant, ControlPlaneError> {
        grant.check()?;
        let expires_at_ms = expiry(now_ms, grant.ttl, "lease expiry")?;
        let record = self.held_record(&grant, now_ms)?;
        record.expires_at_ms = expires_at_ms;
        Ok(grant)
    }

    /// Frees a lease held with the grant's token; the slot keeps its token.
    pub(crate) fn release(
        &mut self,
        grant: &LeaseGrant,
        now_ms: u64,
    ) -> Result<(), ControlPlaneError> {
        let record = self.held_record(grant, now_ms)?;
        let old_bytes = record.bytes();
        record.holder = None;
        record.expires_at_ms = now_ms;
        let new_bytes = record.bytes();
        self.account(old_bytes, new_bytes);
        Ok(())
    }

    /// The lease as it stands.
    pub(crate) fn read_lease(&self, key: &LeaseKey, now_ms: u64) -> Option<LeaseState> {
        self.leases.get(key).map(|record| record.state(now_ms))
    }

    fn held_record(
        &mut self,
        grant: &LeaseGrant,
        now_ms: u64,
    ) -> Result<&mut LeaseRecord, ControlPlaneError> {
        match self.leases.get_mut(&grant.key) {
            Some(record)
                if record.live_holder(now_ms) == Some(&grant.holder)
                    && record.token == grant.token =>
            {
                Ok(record)
            }
            _ => Err(ControlPlaneError::LeaseLost),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::name::{LeaseName, NodeId};
    use crate::store::StoreLimits;

    #[test]
    fn an_exhausted_token_is_never_reused_and_the_slot_is_unchanged() {
        let key = LeaseKey::Global(LeaseName::new("leader").expect("name"));
        let mut state = StoreState::new(StoreLimits::MEMORY);
        let exhausted = LeaseRecord {
            key: key.clone(),
            holder: None,
            token: FencingToken(u64::MAX),
            expires_at_ms: 0,
        };
        state.restore_lease(exhausted.clone()).expect("restored");
        let request = LeaseRequest::new(
            key.clone(),
            NodeId::new("node-a").expect("node"),
            Duration::from_secs(1),
        )
        .expect("request");
        let error = state.acquire(request, 10).expect_err("exhausted");
        assert!(
            matches!(error, ControlPlaneError::EpochExhausted),
            "{error:?}"
        );
        assert_eq!(state.leases.get(&key), Some(&exhausted));
        assert_eq!(state.stats().rejections, 0);
    }
}
