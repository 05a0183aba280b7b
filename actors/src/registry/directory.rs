//! The directory of published epochs: provider → current epoch.
//!
//! Readers take a short read lock: a client lookup leases the current epoch
//! under it, so the lease's reference is the only one it takes; other
//! readers clone an `Arc`. The registry actor is the only writer.
//!
//! Invariants:
//! - Publish is atomic: under the write lock the old epoch is retired before
//!   the new one becomes visible, so no reader can lease the old epoch after
//!   it has seen the new one.
//! - A provider has at most one current epoch.

use std::sync::{Arc, PoisonError, RwLock};

use crate::epoch::published::PublishedEpoch;
use crate::identity::{Epoch, IdMap, ProviderId};

#[derive(Debug, Default)]
pub(crate) struct Directory {
    current: RwLock<IdMap<ProviderId, Arc<PublishedEpoch>>>,
}

impl Directory {
    /// The current epoch of `provider`.
    pub(crate) fn current(&self, provider: &ProviderId) -> Option<Arc<PublishedEpoch>> {
        self.current
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .get(provider)
            .cloned()
    }

    /// What `look` makes of `provider`'s current epoch, borrowed under the
    /// read lock: no reference is taken for the look itself. `look` runs
    /// while a publish waits, so it must be short and take no lock of the
    /// directory's.
    pub(crate) fn with_current<R>(
        &self,
        provider: &ProviderId,
        look: impl FnOnce(&Arc<PublishedEpoch>) -> R,
    ) -> Option<R> {
        let current = self.current.read().unwrap_or_else(PoisonError::into_inner);
        current.get(provider).map(look)
    }

    /// The number of `provider`'s current epoch, without taking a
    /// reference to it.
    pub(crate) fn current_epoch(&self, provider: &ProviderId) -> Option<Epoch> {
        self.current
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .get(provider)
            .map(|epoch| epoch.epoch)
    }

    /// Number of providers with a current epoch.
    pub(crate) fn len(&self) -> usize {
        self.current
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
    }

    /// Publishes `epoch` as its provider's current one, retiring and
    /// returning the one it replaces.
    pub(crate) fn publish(&self, epoch: Arc<PublishedEpoch>) -> Option<Arc<PublishedEpoch>> {
        let mut current = self.current.write().unwrap_or_else(PoisonError::into_inner);
        if let Some(old) = current.get(&epoch.provider) {
            old.retire();
        }
        current.insert(epoch.provider.clone(), epoch)
    }

    /// Unpublishes and retires `provider`'s current epoch.
    pub(crate) fn unpublish(&self, provider: &ProviderId) -> Option<Arc<PublishedEpoch>> {
        let mut current = self.current.write().unwrap_or_else(PoisonError::into_inner);
        let epoch = current.remove(provider)?;
        epoch.retire();
        Some(epoch)
    }

    /// Unpublishes and retires every epoch.
    pub(crate) fn clear(&self) -> Vec<Arc<PublishedEpoch>> {
        let mut current = self.current.write().unwrap_or_else(PoisonError::into_inner);
        current
            .drain()
            .map(|(_, epoch)| {
                epoch.retire();
                epoch
            })
            .collect()
    }
}
