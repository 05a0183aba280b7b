//! The choice of the least-held policy ([`Fairness::LeastHeld`]): the
//! eligible tenant holding the fewest running slots relative to its
//! weight, then its group whose provider it holds the fewest slots of,
//! each the earliest in its rotation among equals. Both are linear walks
//! of the rotations; the rotation policy never calls them.

use std::hash::Hash;

use super::{FairQueue, Fairness};

impl<T, K, P> FairQueue<T, K, P>
where
    K: Clone + Eq + Hash,
    P: Clone + Eq + Hash,
{
    /// Chooses the fairness policy; the next grant follows it. A tenant
    /// keeps its place in the rotation, which breaks ties under either.
    pub(crate) fn set_fairness(&mut self, fairness: Fairness) {
        self.fairness = fairness;
    }

    /// Class `c`'s eligible tenant with the fewest running slots (in
    /// every class) per unit of weight, the earliest in the class's
    /// rotation among equals.
    pub(super) fn least_held_tenant(&self, c: usize) -> Option<u32> {
        let rotation = self.rotation.get(c)?;
        // (tenant, running, weight) of the least held so far.
        let mut least: Option<(u32, u32, u32)> = None;
        let mut next = rotation.front();
        while let Some(t) = next {
            next = rotation.next_of(&self.tenants, t);
            let Some(tenant) = self.tenants.get(t) else {
                continue;
            };
            // running / weight < least's, without division.
            let fewer = least.is_none_or(|(_, running, weight)| {
                u64::from(tenant.running) * u64::from(weight)
                    < u64::from(running) * u64::from(tenant.weight)
            });
            if fewer {
                least = Some((t, tenant.running, tenant.weight));
                if tenant.running == 0 {
                    break;
                }
            }
        }
        least.map(|(t, _, _)| t)
    }

    /// Tenant `t`'s unblocked group of class `c` whose provider runs the
    /// fewest of `t`'s requests (in every class), the earliest in its
    /// provider rotation among equals.
    pub(super) fn least_held_group(&self, t: u32, c: usize) -> Option<u32> {
        let groups = &self.tenants.get(t)?.classes.get(c)?.groups;
        // (group, running) of the least held so far.
        let mut least: Option<(u32, u32)> = None;
        let mut next = groups.front();
        while let Some(g) = next {
            next = groups.next_of(&self.groups, g);
            let Some(group) = self.groups.get(g) else {
                continue;
            };
            let running = (self.pair_running.get(&(t, group.provider))).map_or(0, |&n| n);
            if least.is_none_or(|(_, fewest)| running < fewest) {
                least = Some((g, running));
                if running == 0 {
                    break;
                }
            }
        }
        least.map(|(g, _)| g)
    }
}
