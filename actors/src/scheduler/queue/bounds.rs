//! The bounds the queue enforces, and the refusals that name them.

/// The bounds the queue enforces: pending at push, running at grant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Ceilings {
    /// Most requests queued in total.
    pub(crate) pending_total: u32,
    /// Most requests queued for one tenant.
    pub(crate) pending_per_tenant: u32,
    /// Most requests queued for one logical provider.
    pub(crate) pending_per_provider: u32,
    /// Most requests running in total.
    pub(crate) running_total: u32,
    /// Most requests running for one tenant.
    pub(crate) running_per_tenant: u32,
    /// Most requests running for one logical provider.
    pub(crate) running_per_provider: u32,
}

/// The bound a refusal names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Bound {
    /// [`Ceilings::pending_total`].
    PendingTotal,
    /// [`Ceilings::pending_per_tenant`].
    PendingPerTenant,
    /// [`Ceilings::pending_per_provider`].
    PendingPerProvider,
    /// [`Ceilings::running_per_tenant`].
    RunningPerTenant,
    /// [`Ceilings::running_per_provider`].
    RunningPerProvider,
}

/// A push refused by a full pending bound: `used` already queued of `limit`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Refused {
    /// The full bound.
    pub(crate) bound: Bound,
    /// Requests queued under that bound before the push.
    pub(crate) used: u32,
    /// The bound's ceiling.
    pub(crate) limit: u32,
}

/// A ceiling change refused: a tenant or provider already uses `used > requested`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct InUse {
    /// The per-tenant or per-provider ceiling that is too low.
    pub(crate) bound: Bound,
    /// The largest current use under that ceiling.
    pub(crate) used: u32,
    /// The refused new ceiling.
    pub(crate) requested: u32,
}
