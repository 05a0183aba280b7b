//! Tenants' weights: a table kept while their bookkeeping comes and goes
//! (only weights other than 1 are kept), copied into that bookkeeping when
//! it is created (see the module rules of [`super`]).

use std::hash::Hash;

use super::FairQueue;

/// The highest weight a tenant may have: a tenant of weight `w` takes up
/// to `w` grants in a row, so the weight bounds how long the others wait
/// for their turn.
pub(crate) const MAX_WEIGHT: u32 = 64;

impl<T, K, P> FairQueue<T, K, P>
where
    K: Clone + Eq + Hash,
    P: Clone + Eq + Hash,
{
    /// Gives `tenant` its weight: its turns per round of the rotation,
    /// from its next grant on. The caller keeps `weight` within
    /// 1..=[`MAX_WEIGHT`]; out of it, it is clamped (debug-asserted).
    pub(crate) fn set_weight(&mut self, tenant: K, weight: u32) {
        debug_assert!(
            (1..=MAX_WEIGHT).contains(&weight),
            "weight {weight} out of range"
        );
        let weight = weight.clamp(1, MAX_WEIGHT);
        if let Some(entry) = (self.tenant_ix.get(&tenant)).and_then(|&t| self.tenants.get_mut(t)) {
            entry.weight = weight;
        }
        if weight == 1 {
            self.weights.remove(&tenant);
        } else {
            self.weights.insert(tenant, weight);
        }
    }

    /// `tenant`'s weight: 1 unless set otherwise.
    pub(crate) fn weight_of(&self, tenant: &K) -> u32 {
        if self.weights.is_empty() {
            return 1;
        }
        self.weights.get(tenant).copied().unwrap_or(1)
    }

    /// How many tenants have a weight other than 1.
    pub(crate) fn weighted(&self) -> usize {
        self.weights.len()
    }
}
