//! [`ClientLease`]: one use of a configured client, keeping its epoch
//! alive (with every reservation) until the lease is dropped, even after a
//! rotation retired the epoch.

use std::fmt;
use std::sync::Arc;

use super::{ClientId, ConfiguredClient, PublishedEpoch, TypedSlot};
use crate::credential::Credential;
use crate::identity::{Epoch, OriginKind, OriginSlot, ProviderId};

/// A configured client, leased for the duration of one use.
///
/// While any lease is held its epoch stays alive, with all its reservations,
/// even after a rotation retired it. Dropping the lease returns it.
#[must_use = "dropping a lease ends the use of its client at once"]
pub struct ClientLease {
    pub(super) epoch: Arc<PublishedEpoch>,
    pub(super) index: usize,
}

impl ClientLease {
    fn client(&self) -> &ConfiguredClient {
        &self.epoch.clients[self.index]
    }

    /// The epoch and client index this lease reaches.
    pub(crate) fn epoch_entry(&self) -> (&Arc<PublishedEpoch>, usize) {
        (&self.epoch, self.index)
    }

    /// The configured client this lease reaches.
    pub fn client_id(&self) -> ClientId {
        self.client().id
    }

    /// The origin slot of the client.
    pub fn slot(&self) -> OriginSlot {
        self.client().slot
    }

    /// The slot this lease was taken for, bound to its installation (the
    /// same for every epoch of it).
    pub(crate) fn typed_slot(&self) -> TypedSlot {
        TypedSlot {
            installation: self.epoch.installation,
            slot: self.slot(),
        }
    }

    /// The origin's protocol kind.
    pub fn kind(&self) -> OriginKind {
        self.client().kind
    }

    /// The logical provider.
    pub fn provider(&self) -> &ProviderId {
        &self.epoch.provider
    }

    /// The epoch this lease keeps alive.
    pub fn epoch(&self) -> Epoch {
        self.epoch.epoch
    }

    /// True once the leased epoch has been retired.
    pub(crate) fn is_retired(&self) -> bool {
        self.epoch.is_retired()
    }

    /// The origin's public target, as configured.
    pub fn target(&self) -> &str {
        self.epoch.client_target(self.index)
    }

    /// The epoch's credential, for trusted adapter code building a request or
    /// a connection. Never log or return what this yields.
    pub fn credential_for_adapter(&self) -> &Credential {
        &self.epoch.credential
    }

    /// The value the adapter keeps for this client and epoch — built by
    /// `build` from the client's target, settings and credential on first
    /// use, then shared by every later call on the same epoch.
    ///
    /// This is where an adapter keeps what it builds from the epoch's
    /// immutable configuration, such as an SDK client holding the epoch's
    /// credential: a rotation's new epoch builds its own, and calls still
    /// holding the old epoch keep using the old one until they finish. The
    /// value is dropped with its epoch, after the last lease. Two racing
    /// first calls may both build; one value is kept. A client already
    /// keeping a value of another type serves `build`'s value uncached.
    ///
    /// # Errors
    ///
    /// Whatever `build` returns; nothing is kept then.
    pub fn adapter_state<T, E>(
        &self,
        build: impl FnOnce(&ClientLease) -> Result<T, E>,
    ) -> Result<Arc<T>, E>
    where
        T: Send + Sync + 'static,
    {
        self.client().adapter.get_or_build(|| build(self))
    }

    /// A public setting of the leased epoch's configuration (for example an
    /// adapter's `auth_header`); `None` when not configured.
    pub fn setting(&self, key: &str) -> Option<&str> {
        self.epoch.config.settings.get(key).map(String::as_str)
    }
}

impl Drop for ClientLease {
    fn drop(&mut self) {
        self.epoch.release();
    }
}

impl fmt::Debug for ClientLease {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClientLease")
            .field("provider", &self.epoch.provider)
            .field("epoch", &self.epoch.epoch)
            .field("slot", &self.slot())
            .field("client", &self.client_id())
            .finish()
    }
}
