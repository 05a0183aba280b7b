//! Per-client adapter state: one value an adapter builds from a client's
//! immutable configuration and credential (an SDK client, say) and keeps for
//! the life of that client's epoch.
//!
//! Invariants:
//! - The value lives exactly as long as its epoch: a rotation gives the new
//!   epoch's client its own value, built from the new credential, while
//!   calls holding the old epoch keep the old one.
//! - It is built at most once per client in the common case; two racing
//!   first users may both build, and only one value is kept.
//! - It is dropped with the epoch, after every lease is gone.

use std::any::{Any, TypeId};
use std::fmt;
use std::sync::{Arc, OnceLock};

/// The slot a configured client keeps its adapter state in.
#[derive(Default)]
pub(crate) struct AdapterState(OnceLock<Arc<dyn Any + Send + Sync>>);

impl AdapterState {
    /// The kept value if it is a `T`, else a new one from `build`, kept when
    /// nothing is kept yet.
    pub(crate) fn get_or_build<T, E>(
        &self,
        build: impl FnOnce() -> Result<T, E>,
    ) -> Result<Arc<T>, E>
    where
        T: Send + Sync + 'static,
    {
        if let Some(kept) = self.0.get() {
            if let Ok(value) = Arc::clone(kept).downcast::<T>() {
                return Ok(value);
            }
            // Another adapter type keeps this slot: serve without keeping.
            return build().map(Arc::new);
        }
        let built: Arc<T> = Arc::new(build()?);
        let erased: Arc<dyn Any + Send + Sync> = built.clone();
        match self.0.set(erased) {
            Ok(()) => Ok(built),
            // A racing first user won: use its value, drop ours.
            Err(_) => match self.0.get().map(|kept| Arc::clone(kept).downcast::<T>()) {
                Some(Ok(value)) => Ok(value),
                _ => Ok(built),
            },
        }
    }

    fn kept_type(&self) -> Option<TypeId> {
        self.0.get().map(|kept| kept.as_ref().type_id())
    }
}

impl fmt::Debug for AdapterState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AdapterState")
            .field("kept", &self.kept_type().is_some())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builds_once_then_serves_the_kept_value() {
        let state = AdapterState::default();
        let first = state.get_or_build(|| Ok::<_, ()>(7u32)).expect("built");
        let second = state
            .get_or_build(|| -> Result<u32, ()> { panic!("built twice") })
            .expect("kept");
        assert!(Arc::ptr_eq(&first, &second));
    }

    #[test]
    fn a_failed_build_keeps_nothing() {
        let state = AdapterState::default();
        assert_eq!(state.get_or_build(|| Err::<u32, _>("no")), Err("no"));
        let value = state.get_or_build(|| Ok::<_, ()>(3u32)).expect("built");
        assert_eq!(*value, 3);
    }

    #[test]
    fn another_type_is_served_uncached() {
        let state = AdapterState::default();
        state.get_or_build(|| Ok::<_, ()>(1u32)).expect("built");
        let other = state.get_or_build(|| Ok::<_, ()>("x")).expect("built");
        assert_eq!(*other, "x");
        assert_eq!(state.kept_type(), Some(TypeId::of::<u32>()));
    }

    /// Two first users racing: the one that loses the race to keep its
    /// value serves the winner's, so every user shares one value. The race
    /// is made deterministic by winning it from inside the loser's build.
    #[test]
    fn the_loser_of_a_first_build_race_serves_the_kept_value() {
        let state = AdapterState::default();
        let mut winner = None;
        let loser = state
            .get_or_build(|| {
                winner = Some(state.get_or_build(|| Ok::<_, ()>(2u32)).expect("built"));
                Ok::<_, ()>(1u32)
            })
            .expect("served");
        let winner = winner.expect("the inner build ran");
        assert_eq!(*loser, 2, "the loser serves the kept value, not its own");
        assert!(Arc::ptr_eq(&loser, &winner));
    }
}
