//! Request rates: how many requests of a provider may start per period,
//! shared between the tenants waiting for it, and how many of a tenant's
//! may start per period on this node.
//!
//! A rate is configured once ([`ProviderPools::configure_provider_rate`],
//! [`ProviderPools::configure_tenant_rate`]) and changed live
//! ([`ProviderPools::set_provider_rate`], [`ProviderPools::set_tenant_rate`])
//! under the rules of `lower_limits`: never above what was configured, and
//! nothing already granted is taken back. Admission grants a request only
//! when a running slot and a token of each rate it is under are free;
//! tenants waiting for a provider's tokens take them in the fair rotation,
//! and a request whose turn cannot come before its deadline is refused at
//! once ([`AdmitError::RateLimited`](crate::AdmitError::RateLimited)). See
//! docs/decisions/0090-a-provider-rate-is-a-gcra-in-the-fair-queue.md.

use std::time::Duration;

use tokio::time::Instant;

use crate::identity::{ProviderId, TenantId};
use crate::provider_pools::ProviderPools;
use crate::scheduler::{Fallback, Rate, RateOwner, RateReading, RateRefused};

/// A request rate: at most `requests` per `period` on average, and at most
/// `burst` at once after a quiet spell.
///
/// Over any window of length `w`, at most `burst + w × requests / period`
/// requests of the provider are granted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct RateLimit {
    /// Requests per period; at least one.
    pub requests: u32,
    /// The period; at least one nanosecond per request.
    pub period: Duration,
    /// Requests granted at once after a quiet spell; at least one.
    pub burst: u32,
}

impl RateLimit {
    /// `requests` per `period`, with a burst of `burst`.
    pub const fn new(requests: u32, period: Duration, burst: u32) -> Self {
        Self {
            requests,
            period,
            burst,
        }
    }

    /// The time between two grants at the steady rate.
    pub fn interval(&self) -> Duration {
        self.period / self.requests.max(1)
    }

    /// The longest period a rate may have: one day.
    pub const MAX_PERIOD: Duration = Duration::from_secs(86_400);
    /// The largest burst a rate may have.
    pub const MAX_BURST: u32 = 1_000_000;

    /// Checks the rate can be configured: at least one request per
    /// period, a period of at most [`Self::MAX_PERIOD`], a burst of 1 to
    /// [`Self::MAX_BURST`], at least a nanosecond per request.
    ///
    /// # Errors
    ///
    /// [`RateError::Invalid`] otherwise.
    pub fn validate(&self) -> Result<(), RateError> {
        let invalid = self.requests == 0
            || self.period > Self::MAX_PERIOD
            || !(1..=Self::MAX_BURST).contains(&self.burst)
            || self.interval().is_zero();
        if invalid {
            return Err(RateError::Invalid { rate: *self });
        }
        Ok(())
    }

    fn valid(self) -> Result<Rate, RateError> {
        self.validate()?;
        Ok(Rate {
            requests: self.requests,
            period: self.period,
            burst: self.burst,
        })
    }

    pub(crate) fn of(rate: Rate) -> Self {
        Self::new(rate.requests, rate.period, rate.burst)
    }
}

/// A provider's or tenant's rate at one instant
/// ([`ProviderPools::provider_rate`], [`ProviderPools::tenant_rate`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RateInForce {
    /// The rate in force.
    pub rate: RateLimit,
    /// The rate configured: the most any change may set.
    pub configured: RateLimit,
    /// Tokens ready now (at most the burst): requests that could be
    /// granted at once.
    pub tokens: u32,
}

impl RateInForce {
    fn of(reading: RateReading) -> Self {
        Self {
            rate: RateLimit::of(reading.rate),
            configured: RateLimit::of(reading.configured),
            tokens: reading.tokens,
        }
    }

    /// The rate in force, in requests per second.
    pub fn per_second(&self) -> f64 {
        f64::from(self.rate.requests) / self.rate.period.as_secs_f64()
    }
}

/// Why a rate was not configured or changed; nothing changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum RateError {
    /// A rate of no requests, no burst, a burst or period over its bound,
    /// or under a nanosecond per request.
    #[error("invalid rate: {} requests per {:?} with a burst of {}", rate.requests, rate.period, rate.burst)]
    Invalid {
        /// The refused rate.
        rate: RateLimit,
    },
    /// The provider (or tenant) has a configured rate already.
    #[error("a rate is configured already: {} requests per {:?}, burst {}", configured.requests, configured.period, configured.burst)]
    Configured {
        /// The rate configured.
        configured: RateLimit,
    },
    /// The provider (or tenant) has no configured rate to change.
    #[error("no rate is configured to change")]
    Unconfigured,
    /// The rate is faster, or its burst larger, than the configured one.
    #[error("a rate cannot be raised above the configured {} requests per {:?}, burst {}", configured.requests, configured.period, configured.burst)]
    Raised {
        /// The rate configured.
        configured: RateLimit,
    },
    /// Too many providers (or tenants) have a rate already.
    #[error("at most {limit} providers, and as many tenants, may have a rate")]
    Full {
        /// The most providers (or tenants) with a rate.
        limit: u32,
    },
    /// A fallback rate faster, or burstier, than the rate it follows
    /// ([`ProviderPools::set_provider_rate_until`]).
    #[error("a fallback of {} requests per {:?}, burst {}, is above the rate it follows", then.requests, then.period, then.burst)]
    FallbackAbove {
        /// The refused fallback.
        then: RateLimit,
    },
    /// The pools are closed.
    #[error("provider pools are closed")]
    Closed,
}

impl RateError {
    fn of(refused: RateRefused) -> Self {
        match refused {
            RateRefused::Configured(rate) => Self::Configured {
                configured: RateLimit::of(rate),
            },
            RateRefused::Unconfigured => Self::Unconfigured,
            RateRefused::Raised(rate) => Self::Raised {
                configured: RateLimit::of(rate),
            },
            RateRefused::Full { limit } => Self::Full { limit },
            RateRefused::FallbackAbove(then) => Self::FallbackAbove {
                then: RateLimit::of(then),
            },
        }
    }
}

impl ProviderPools {
    /// Configures `provider`'s request rate: in force at once with a full
    /// burst, and the most that [`Self::set_provider_rate`] may set later.
    /// It outlives the provider's idle spells and epochs.
    ///
    /// A provider without a rate is limited by its running ceilings only,
    /// and its admissions pay nothing for the feature.
    ///
    /// # Examples
    ///
    /// ```
    /// # async fn demo(pools: provider_pools_actors::ProviderPools) -> Result<(), Box<dyn std::error::Error>> {
    /// use std::time::Duration;
    /// use provider_pools_actors::{ProviderId, RateLimit};
    ///
    /// let provider = ProviderId::new("payments-api")?;
    /// // 100 requests a second, at most 10 at once.
    /// pools.configure_provider_rate(&provider, RateLimit::new(100, Duration::from_secs(1), 10))?;
    /// // Halved live: never above what was configured.
    /// pools.set_provider_rate(&provider, RateLimit::new(50, Duration::from_secs(1), 10))?;
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    ///
    /// [`RateError::Invalid`], [`RateError::Configured`] when it has one
    /// already, [`RateError::Full`] when 1,024 other providers have one,
    /// [`RateError::Closed`] after retirement. A refusal changes nothing.
    pub fn configure_provider_rate(
        &self,
        provider: &ProviderId,
        rate: RateLimit,
    ) -> Result<(), RateError> {
        self.configure_rate(RateOwner::Provider(provider.clone()), rate)
    }

    /// Changes `provider`'s rate in force, live, to at most the configured
    /// one (its requests per period and its burst). Grants already made
    /// stand: a lowering spaces the grants still to come, and the tokens
    /// already spent count against it; a raise grants what it makes ready.
    ///
    /// # Errors
    ///
    /// [`RateError::Invalid`], [`RateError::Unconfigured`],
    /// [`RateError::Raised`] for a rate faster or burstier than the
    /// configured one, [`RateError::Closed`] after retirement. A refusal
    /// changes nothing.
    pub fn set_provider_rate(
        &self,
        provider: &ProviderId,
        rate: RateLimit,
    ) -> Result<(), RateError> {
        self.set_rate(&RateOwner::Provider(provider.clone()), rate)
    }

    /// `provider`'s rate in force, the configured one and its tokens now;
    /// `None` when it has no rate.
    pub fn provider_rate(&self, provider: &ProviderId) -> Option<RateInForce> {
        let owner = RateOwner::Provider(provider.clone());
        let reading = self.inner.queue.rate_reading(&owner)?;
        Some(RateInForce::of(reading))
    }

    /// Every provider with a rate (at most 1,024), with its reading, by
    /// provider. It takes the admission queue's lock: meant for a scrape
    /// or a report, not for every request.
    pub fn provider_rates(&self) -> Vec<(ProviderId, RateInForce)> {
        let mut rates: Vec<_> = (self.inner.queue.rate_readings().into_iter())
            .map(|(provider, reading)| (provider, RateInForce::of(reading)))
            .collect();
        rates.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        rates
    }

    /// Configures `tenant`'s own request rate: how many of its requests
    /// start per period on this node, over every provider (as its own
    /// running ceiling spans providers). The rules of
    /// [`Self::configure_provider_rate`]: in force at once with a full
    /// burst, the most any change may set, outliving idle spells. A tenant
    /// without a token leaves the rotation until its next one; its
    /// requests need a token of their provider's rate too.
    ///
    /// # Errors
    ///
    /// As [`Self::configure_provider_rate`], [`RateError::Full`] past 1,024
    /// tenants.
    pub fn configure_tenant_rate(
        &self,
        tenant: &TenantId,
        rate: RateLimit,
    ) -> Result<(), RateError> {
        self.configure_rate(RateOwner::Tenant(tenant.clone()), rate)
    }

    /// Changes `tenant`'s own rate in force, live, to at most its
    /// configured one; the rules of [`Self::set_provider_rate`].
    ///
    /// # Errors
    ///
    /// As [`Self::set_provider_rate`].
    pub fn set_tenant_rate(&self, tenant: &TenantId, rate: RateLimit) -> Result<(), RateError> {
        self.set_rate(&RateOwner::Tenant(tenant.clone()), rate)
    }

    /// `tenant`'s own rate in force, the configured one and its tokens
    /// now; `None` when it has no rate of its own.
    pub fn tenant_rate(&self, tenant: &TenantId) -> Option<RateInForce> {
        let owner = RateOwner::Tenant(tenant.clone());
        let reading = self.inner.queue.rate_reading(&owner)?;
        Some(RateInForce::of(reading))
    }

    fn configure_rate(&self, owner: RateOwner, rate: RateLimit) -> Result<(), RateError> {
        let rate = rate.valid()?;
        if !self.is_open() {
            return Err(RateError::Closed);
        }
        (self.inner.queue)
            .configure_rate(owner, rate)
            .map_err(RateError::of)
    }

    /// Gives `provider` the rate `rate` until `until`, and `then` from
    /// that instant on — a share of a global rate held under a lease: a
    /// cluster node's share, valid while its registration surely lives,
    /// falling back to its floor by its own clock.
    ///
    /// The fallback is read at every admission check, not by a timer: a
    /// process stopped past `until` grants at most `then` when it resumes.
    /// The TAT stays across the change, as for [`Self::set_provider_rate`];
    /// a later call (with or without a fallback) replaces this one.
    ///
    /// # Errors
    ///
    /// As [`Self::set_provider_rate`] (both rates at most the configured
    /// one); [`RateError::FallbackAbove`] when `then` is faster or
    /// burstier than `rate`. A refusal changes nothing.
    pub fn set_provider_rate_until(
        &self,
        provider: &ProviderId,
        rate: RateLimit,
        until: Instant,
        then: RateLimit,
    ) -> Result<(), RateError> {
        let then = then.valid()?;
        let fallback = Fallback { until, then };
        self.change_rate(&RateOwner::Provider(provider.clone()), rate, Some(fallback))
    }

    fn set_rate(&self, owner: &RateOwner, rate: RateLimit) -> Result<(), RateError> {
        self.change_rate(owner, rate, None)
    }

    fn change_rate(
        &self,
        owner: &RateOwner,
        rate: RateLimit,
        fallback: Option<Fallback>,
    ) -> Result<(), RateError> {
        let rate = rate.valid()?;
        if !self.is_open() {
            return Err(RateError::Closed);
        }
        (self.inner.queue)
            .set_rate(owner, rate, fallback)
            .map_err(RateError::of)
    }
}
