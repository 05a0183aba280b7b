//! Numeric identities: epochs, origin slots, instance ids and broker generations.

use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use serde::Serialize;

/// The epoch of a provider's installation: creation expects [`Epoch::ZERO`],
/// and every replacement must name the installed epoch and advance it.
///
/// Serializes and displays as the bare number.
///
/// # Examples
///
/// ```
/// use provider_pools_actors::Epoch;
///
/// let installed = Epoch::ZERO;
/// assert_eq!(installed.next(), Some(Epoch::new(1)));
/// assert_eq!(Epoch::new(u64::MAX).next(), None);
/// ```
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Serialize)]
#[serde(transparent)]
pub struct Epoch(u64);

impl Epoch {
    /// The epoch a first installation expects.
    pub const ZERO: Epoch = Epoch(0);

    /// The epoch numbered `value`.
    pub const fn new(value: u64) -> Self {
        Self(value)
    }

    /// The epoch's number.
    pub const fn get(self) -> u64 {
        self.0
    }

    /// The following epoch, or `None` once the epochs are exhausted; an
    /// exhausted epoch is never wrapped around and reused.
    pub fn next(self) -> Option<Epoch> {
        self.0.checked_add(1).map(Epoch)
    }
}

impl fmt::Display for Epoch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.0, f)
    }
}

/// The opaque integer slot a trusted adapter assigns to one approved origin.
///
/// The pools never interpret the number; a slot is only meaningful together
/// with its [`OriginKind`](super::OriginKind) and its installation.
///
/// # Examples
///
/// ```
/// use provider_pools_actors::OriginSlot;
///
/// let slot = OriginSlot::new(3);
/// assert_eq!(slot.get(), 3);
/// assert_eq!(slot.to_string(), "3");
/// ```
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(transparent)]
pub struct OriginSlot(u32);

impl OriginSlot {
    /// The slot numbered `value`.
    pub const fn new(value: u32) -> Self {
        Self(value)
    }

    /// The slot's number.
    pub const fn get(self) -> u32 {
        self.0
    }
}

impl fmt::Display for OriginSlot {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.0, f)
    }
}

/// The private, monotonically allocated identity of one client/epoch instance.
///
/// Ids start at 1 and increase with every allocation in the process; an id is
/// never handed out twice (the 64-bit counter cannot wrap within a process's life).
///
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) struct InstanceId(u64);

impl InstanceId {
    /// Allocates the next process-unique instance id.
    pub(crate) fn next() -> InstanceId {
        static NEXT: AtomicU64 = AtomicU64::new(1);
        InstanceId(NEXT.fetch_add(1, Ordering::Relaxed))
    }

    /// The id's number.
    pub(crate) const fn get(self) -> u64 {
        self.0
    }
}

impl fmt::Display for InstanceId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.0, f)
    }
}

/// One broker generation, which at most one registry may ever claim.
///
/// Clones share the claim: [`try_claim`](Self::try_claim) succeeds once over
/// all clones, and a claim is never undone, so a second registry on the same
/// generation is refused, also after the first has retired.
///
/// # Examples
///
/// ```
/// use provider_pools_actors::BrokerGeneration;
///
/// let generation = BrokerGeneration::new();
/// let copy = generation.clone();
/// assert!(generation.try_claim());
/// assert!(!copy.try_claim());
/// assert!(copy.is_claimed());
/// ```
#[derive(Clone)]
pub struct BrokerGeneration {
    id: u64,
    claimed: Arc<AtomicBool>,
}

impl BrokerGeneration {
    /// Allocates a fresh, unclaimed generation with a process-unique id.
    #[allow(
        clippy::new_without_default,
        reason = "every call allocates a new generation; `Default` would hide that"
    )]
    pub fn new() -> Self {
        static NEXT: AtomicU64 = AtomicU64::new(1);
        Self {
            id: NEXT.fetch_add(1, Ordering::Relaxed),
            claimed: Arc::new(AtomicBool::new(false)),
        }
    }

    /// The generation's process-unique id.
    pub fn id(&self) -> u64 {
        self.id
    }

    /// Claims the generation; `true` for exactly one call over all clones, ever.
    #[must_use = "a refused claim means another registry owns this generation"]
    pub fn try_claim(&self) -> bool {
        self.claimed
            .compare_exchange(false, true, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
    }

    /// Whether some registry has claimed the generation.
    pub fn is_claimed(&self) -> bool {
        self.claimed.load(Ordering::Acquire)
    }
}

impl fmt::Debug for BrokerGeneration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BrokerGeneration")
            .field("id", &self.id)
            .field("claimed", &self.is_claimed())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;
    use std::sync::{Arc, Barrier};
    use std::thread;

    use super::{BrokerGeneration, Epoch, InstanceId, OriginSlot};

    #[test]
    fn epoch_advances_and_refuses_overflow() {
        assert_eq!(Epoch::default(), Epoch::ZERO);
        assert_eq!(Epoch::ZERO.next(), Some(Epoch::new(1)));
        assert_eq!(Epoch::new(u64::MAX - 1).next(), Some(Epoch::new(u64::MAX)));
        assert_eq!(Epoch::new(u64::MAX).next(), None);
        assert_eq!(Epoch::new(42).get(), 42);
        assert_eq!(Epoch::new(42).to_string(), "42");
        assert!(Epoch::ZERO < Epoch::new(1));
    }

    #[test]
    fn origin_slot_is_its_number() {
        assert_eq!(OriginSlot::new(7).get(), 7);
        assert_eq!(OriginSlot::new(7).to_string(), "7");
        assert!(OriginSlot::new(1) < OriginSlot::new(2));
    }

    #[test]
    fn instance_ids_start_at_one_and_increase() {
        let first = InstanceId::next();
        let second = InstanceId::next();
        assert!(first.get() >= 1);
        assert!(second > first);
        assert_eq!(second.to_string(), second.get().to_string());
    }

    #[test]
    fn instance_ids_are_unique_across_threads() {
        let handles: Vec<_> = (0..8)
            .map(|_| thread::spawn(|| (0..1000).map(|_| InstanceId::next()).collect::<Vec<_>>()))
            .collect();
        let mut seen = HashSet::new();
        for handle in handles {
            for id in handle.join().expect("allocating thread") {
                assert!(seen.insert(id), "{id} allocated twice");
            }
        }
        assert_eq!(seen.len(), 8000);
    }

    #[test]
    fn broker_generation_ids_are_unique() {
        let ids: HashSet<u64> = (0..100).map(|_| BrokerGeneration::new().id()).collect();
        assert_eq!(ids.len(), 100);
    }

    #[test]
    fn broker_generation_claims_once_across_clones() {
        let generation = BrokerGeneration::new();
        let copy = generation.clone();
        assert_eq!(copy.id(), generation.id());
        assert!(!generation.is_claimed());
        assert!(copy.try_claim());
        assert!(!generation.try_claim());
        assert!(!copy.try_claim());
        assert!(generation.is_claimed());
        // A generation made later is independent.
        assert!(BrokerGeneration::new().try_claim());
    }

    #[test]
    fn broker_generation_claims_once_across_threads() {
        let generation = BrokerGeneration::new();
        let start = Arc::new(Barrier::new(8));
        let racers: Vec<_> = (0..8)
            .map(|_| {
                let generation = generation.clone();
                let start = Arc::clone(&start);
                thread::spawn(move || {
                    start.wait();
                    generation.try_claim()
                })
            })
            .collect();
        let winners = racers
            .into_iter()
            .map(|racer| racer.join().expect("racing thread"))
            .filter(|won| *won)
            .count();
        assert_eq!(winners, 1);
        assert!(generation.is_claimed());
    }

    #[test]
    fn broker_generation_debug_shows_id_and_claim() {
        let generation = BrokerGeneration::new();
        let expected = format!(
            "BrokerGeneration {{ id: {}, claimed: false }}",
            generation.id()
        );
        assert_eq!(format!("{generation:?}"), expected);
        assert!(generation.try_claim());
        assert!(format!("{generation:?}").ends_with("claimed: true }"));
    }
}
