//! The fairness policy of a registry's admission queue: which backlogged
//! tenant is granted the next running slot, and which of its providers.
//! Chosen once per registry ([`crate::PoolsConfig::fairness`]); every
//! policy keeps the same ceilings, rates, deadlines and weights, and
//! differs only in the order of grants among eligible tenants. It applies
//! within a priority class, once the class of the next grant is chosen
//! (see [`crate::Priority`]). See
//! docs/decisions/0097-fairness-by-slots-held.md.

/// Which eligible tenant (and which of its providers) is granted next.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Fairness {
    /// Tenants take turns in rotation (a tenant of weight `w` takes `w`
    /// turns per round), then providers in rotation within a tenant, FIFO
    /// within a provider. A grant costs O(1).
    ///
    /// Turns are equal whatever a request holds its slot for, so a tenant
    /// whose requests run long accumulates slots up to its running ceiling
    /// while the others' short requests come and go.
    #[default]
    Rotation,
    /// The next slot goes to the eligible tenant holding the fewest running
    /// slots relative to its weight, the earliest in the rotation among
    /// equals; within it, to the provider where it holds the fewest, the
    /// earliest in its provider rotation among equals. Shares of slot-time
    /// follow the weights whatever the hold times. A grant costs
    /// O(eligible tenants + the tenant's providers).
    LeastHeld,
}
