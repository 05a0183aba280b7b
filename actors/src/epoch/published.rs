//! The published face of one epoch: its immutable installation, its
//! configured clients, and the leases that keep it alive once retired.
//!
//! The registry publishes a [`PublishedEpoch`] in the directory; a client
//! lookup reads it without a message hop and takes a [`ClientLease`].
//!
//! Each client's parked connections are reached through it: a park
//! ([`PublishedEpoch::park`]) finds the client's stash, the epoch's retired
//! flag and the node's idle budget, and a closure notice, holding the epoch
//! weakly, evicts from the same stash.
//!
//! Invariants:
//! - Everything here is immutable after install except the lease word, the
//!   actor's mailbox, the checked-out tally ([`ConnTally`]) and each
//!   client's parked connections ([`IdleStash`]).
//! - A lookup checks installation, slot and kind before it takes a lease.
//! - The credential is reachable only through trusted adapter code.

use std::fmt;
use std::sync::{Arc, Mutex, PoisonError, RwLock};

use ractor::ActorId;
use tokio::sync::Notify;
use tokio::time::Instant;

use crate::accounts::Accounts;
use crate::budget::Budget;
use crate::config::{ConfigDigest, ProviderConfig};
use crate::credential::Credential;
use crate::epoch::adapter_state::AdapterState;
use crate::epoch::idle::{park_into, Idle, IdleConn, IdleStash};
use crate::epoch::lease::{Drain, LeaseWord};
use crate::epoch::mux_table::MuxTable;
use crate::epoch::tally::ConnTally;
use crate::epoch::watch::Stashes;
use crate::epoch::Msg as EpochMsg;
use crate::error::LookupError;
use crate::identity::{Authority, Epoch, InstanceId, OriginKind, OriginSlot, ProviderId};
use crate::mailbox::Mailbox;
use crate::tenants::ShareTable;

mod client_lease;

pub use client_lease::ClientLease;

/// The identity of one configured client: a private, monotonic instance.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
pub struct ClientId(u64);

impl ClientId {
    /// The raw instance number.
    pub fn get(self) -> u64 {
        self.0
    }
}

/// An origin slot bound to the installation that minted it.
///
/// Only an [`InstallReceipt`](crate::InstallReceipt) hands these out, so a
/// slot from another provider or another registry is recognised as foreign.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct TypedSlot {
    pub(crate) installation: InstanceId,
    pub(crate) slot: OriginSlot,
}

impl TypedSlot {
    /// The adapter-assigned slot number.
    pub fn slot(&self) -> OriginSlot {
        self.slot
    }
}

#[derive(Debug)]
struct ConfiguredClient {
    slot: OriginSlot,
    kind: OriginKind,
    id: ClientId,
    /// This client's connections, against `connections_per_client`.
    connections: Arc<Budget>,
    /// Each tenant's connections of this client (dialing or checked out),
    /// against `connections_per_tenant`.
    tenants: ShareTable,
    /// What an adapter built for this client, kept for the epoch's life.
    adapter: AdapterState,
    /// This client's parked connections.
    idle: IdleStash,
    /// This client's connections carrying streams.
    mux: MuxTable,
}

/// One installed epoch as the directory publishes it.
pub(crate) struct PublishedEpoch {
    pub(crate) provider: ProviderId,
    pub(crate) epoch: Epoch,
    /// Shared by every epoch of one logical provider's installation.
    pub(crate) installation: InstanceId,
    /// This epoch's own instance.
    pub(crate) instance: InstanceId,
    pub(crate) authority: Authority,
    pub(crate) config: ProviderConfig,
    pub(crate) digest: ConfigDigest,
    clients: Box<[ConfiguredClient]>,
    credential: Credential,
    leases: LeaseWord,
    drain_notice: Mutex<Option<DrainNotice>>,
    conns: ConnTally,
    /// The epoch actor's mailbox: set when the actor is spawned, replaced
    /// when the registry restarts it, taken away when none will follow.
    actor: RwLock<Option<Mailbox<EpochMsg>>>,
    /// Woken whenever `actor` is replaced or taken away.
    actor_changed: Notify,
}

/// Tells the registry that a retired epoch's last lease is gone: built by
/// the registry's handle around a release slot reserved at install, so it
/// never waits and never fails for lack of room. Called at most once, with
/// the epoch's instance.
pub(crate) struct DrainNotice(Box<dyn FnOnce(InstanceId) + Send>);

impl DrainNotice {
    pub(crate) fn new(send: impl FnOnce(InstanceId) + Send + 'static) -> Self {
        Self(Box::new(send))
    }
}

/// What the registry supplies to build a [`PublishedEpoch`].
pub(crate) struct EpochParts {
    pub(crate) provider: ProviderId,
    pub(crate) epoch: Epoch,
    pub(crate) installation: InstanceId,
    pub(crate) authority: Authority,
    pub(crate) config: ProviderConfig,
    pub(crate) credential: Credential,
    pub(crate) drain_notice: DrainNotice,
    pub(crate) connections_per_client: u32,
    /// A tenant's share of each client's connections.
    pub(crate) connections_share: u32,
    pub(crate) accounts: Arc<Accounts>,
}

impl PublishedEpoch {
    pub(crate) fn new(parts: EpochParts) -> Arc<Self> {
        let EpochParts {
            provider,
            epoch,
            installation,
            authority,
            config,
            credential,
            drain_notice,
            connections_per_client,
            connections_share,
            accounts,
        } = parts;
        let mut origins: Vec<(OriginSlot, OriginKind)> =
            config.origins.iter().map(|o| (o.slot, o.kind)).collect();
        origins.sort_unstable_by_key(|(slot, _)| *slot);
        let clients: Vec<ConfiguredClient> = origins
            .into_iter()
            .enumerate()
            .map(|(index, (slot, kind))| ConfiguredClient {
                slot,
                kind,
                id: ClientId(InstanceId::next().get()),
                connections: Budget::new("connections_per_client", connections_per_client),
                tenants: ShareTable::waitable("connections_per_tenant", connections_share),
                adapter: AdapterState::default(),
                idle: IdleStash::new(index, Some(Arc::clone(&accounts))),
                mux: MuxTable::default(),
            })
            .collect();
        Arc::new(Self {
            digest: config.digest(&authority),
            provider,
            epoch,
            installation,
            instance: InstanceId::next(),
            authority,
            config,
            clients: clients.into_boxed_slice(),
            credential,
            leases: LeaseWord::default(),
            drain_notice: Mutex::new(Some(drain_notice)),
            conns: ConnTally::new(accounts),
            actor: RwLock::new(None),
            actor_changed: Notify::new(),
        })
    }

    /// The typed slots of this installation, in slot order.
    pub(crate) fn typed_slots(&self) -> Vec<TypedSlot> {
        self.clients
            .iter()
            .map(|c| TypedSlot {
                installation: self.installation,
                slot: c.slot,
            })
            .collect()
    }

    /// Slots and kinds, in slot order.
    pub(crate) fn origins(&self) -> Vec<(OriginSlot, OriginKind)> {
        self.clients.iter().map(|c| (c.slot, c.kind)).collect()
    }

    /// Looks up the configured client of `slot` and leases this epoch for it.
    pub(crate) fn lease(
        self: &Arc<Self>,
        slot: &TypedSlot,
        kind: OriginKind,
    ) -> Result<ClientLease, LookupError> {
        if slot.installation != self.installation {
            return Err(LookupError::ForeignSlot {
                provider: self.provider.clone(),
                slot: slot.slot,
            });
        }
        let index = self
            .clients
            .binary_search_by_key(&slot.slot, |c| c.slot)
            .map_err(|_| LookupError::UnknownSlot {
                provider: self.provider.clone(),
                slot: slot.slot,
            })?;
        let configured = self.clients[index].kind;
        if configured != kind {
            return Err(LookupError::KindMismatch {
                provider: self.provider.clone(),
                slot: slot.slot,
                configured,
                requested: kind,
            });
        }
        if !self.leases.acquire() {
            return Err(LookupError::Retired {
                provider: self.provider.clone(),
            });
        }
        Ok(ClientLease {
            epoch: Arc::clone(self),
            index,
        })
    }

    /// Records the epoch actor's mailbox, right after a spawn or restart,
    /// and wakes those waiting for a successor.
    pub(crate) fn set_actor(&self, mailbox: Mailbox<EpochMsg>) {
        *self.actor.write().unwrap_or_else(PoisonError::into_inner) = Some(mailbox);
        self.actor_changed.notify_waiters();
    }

    /// No actor will follow the one that stopped (its restart budget is
    /// spent, or its restart failed): wakes those waiting for a successor,
    /// which find none.
    pub(crate) fn no_successor(&self) {
        *self.actor.write().unwrap_or_else(PoisonError::into_inner) = None;
        self.actor_changed.notify_waiters();
    }

    /// The actor that replaced the one named `stopped`, as soon as the
    /// registry has restarted it; `None` when none will, or at `deadline`.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: it holds nothing.
    pub(crate) async fn successor(
        &self,
        stopped: ActorId,
        deadline: Instant,
    ) -> Option<Mailbox<EpochMsg>> {
        loop {
            // Registered before the read, so a replacement between the two
            // still wakes it.
            let changed = self.actor_changed.notified();
            let mut changed = std::pin::pin!(changed);
            changed.as_mut().enable();
            match self.actor() {
                Some(mailbox) if mailbox.actor().get_id() != stopped => return Some(mailbox),
                Some(_) => {}
                None => return None,
            }
            tokio::time::timeout_at(deadline, changed).await.ok()?;
        }
    }

    /// The epoch actor's current mailbox.
    pub(crate) fn actor(&self) -> Option<Mailbox<EpochMsg>> {
        self.actor
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    pub(crate) fn conn_tally(&self) -> &ConnTally {
        &self.conns
    }

    /// The node's accounts this epoch charges.
    pub(crate) fn accounts(&self) -> &Arc<Accounts> {
        self.conns.accounts()
    }

    /// The parked connections of client `index`.
    pub(crate) fn idle(&self, index: usize) -> Option<&IdleStash> {
        self.clients.get(index).map(|c| &c.idle)
    }

    /// The client's connections carrying streams.
    pub(crate) fn mux(&self, index: usize) -> Option<&MuxTable> {
        self.clients.get(index).map(|c| &c.mux)
    }

    /// Every client's parked connections.
    pub(crate) fn all_idle(&self) -> impl Iterator<Item = &IdleStash> {
        self.clients.iter().map(|c| &c.idle)
    }

    /// Parks `entry`, a connection of client `client` that adapter code
    /// verified reusable: it joins the client's stash with one of the
    /// node's `idle_connections`, or is destroyed — the epoch is retired,
    /// the idle pool is full, or the client is unknown.
    ///
    /// An entry that already holds its idle charge (one a departed waiter
    /// was handed) keeps it.
    pub(crate) fn park(self: &Arc<Self>, client: usize, entry: IdleConn) {
        self.park_keeping(client, entry, None);
    }

    /// [`park`](Self::park), charging the idle charge (when the entry needs
    /// one) through `kept`, a reference to the node's `idle_connections`
    /// budget the connection held since its checkout, instead of taking a
    /// new reference.
    pub(crate) fn park_keeping(
        self: &Arc<Self>,
        client: usize,
        entry: IdleConn,
        kept: Option<Arc<Budget>>,
    ) {
        let Some(stash) = self.idle(client) else {
            return; // dropping `entry` destroys, then releases
        };
        let retired = || self.is_retired();
        let idle = Idle {
            budget: &self.accounts().idle,
            kept,
        };
        park_into(stash, &retired, idle, entry, |watch| {
            watch.set_home(self, client);
        });
    }

    /// Its actor stopped: the callers it kept waiting heard `Closed` as
    /// their replies were dropped with it, so none is counted any more.
    /// Only while no actor of this epoch runs (one that starts sets the
    /// counts itself).
    pub(crate) fn forget_waiters(&self) {
        for stash in self.all_idle() {
            stash.notice().set_waiting(0);
        }
    }

    /// Number of configured clients.
    pub(crate) fn client_count(&self) -> usize {
        self.clients.len()
    }

    /// The connection budget of client `index`.
    pub(crate) fn client_connections(&self, index: usize) -> Option<&Arc<Budget>> {
        self.clients.get(index).map(|c| &c.connections)
    }

    /// Each tenant's share of client `index`'s connections.
    pub(crate) fn client_tenants(&self, index: usize) -> Option<&ShareTable> {
        self.clients.get(index).map(|c| &c.tenants)
    }

    /// Every client's per-tenant connection shares.
    pub(crate) fn all_client_tenants(&self) -> impl Iterator<Item = &ShareTable> {
        self.clients.iter().map(|c| &c.tenants)
    }

    /// Every client's connection budget.
    pub(crate) fn all_client_connections(&self) -> impl Iterator<Item = &Arc<Budget>> {
        self.clients.iter().map(|c| &c.connections)
    }

    /// The public target of client `index`.
    pub(crate) fn client_target(&self, index: usize) -> &str {
        self.clients
            .get(index)
            .and_then(|c| self.config.origins.iter().find(|o| o.slot == c.slot))
            .map_or("", |o| o.target.as_str())
    }

    pub(crate) fn credential(&self) -> &Credential {
        &self.credential
    }

    /// Retires this epoch: no new lease; the drain notice goes out when the
    /// last lease is returned (now, if there is none).
    pub(crate) fn retire(&self) {
        self.conns.retire();
        if self.leases.retire() == Drain::Notify {
            self.send_drain_notice();
        }
    }

    pub(crate) fn is_retired(&self) -> bool {
        self.leases.is_retired()
    }

    fn release(&self) {
        if self.leases.release() == Drain::Notify {
            self.send_drain_notice();
        }
    }

    fn send_drain_notice(&self) {
        let slot = self
            .drain_notice
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take();
        if let Some(notice) = slot {
            (notice.0)(self.instance);
        }
    }
}

/// A parked connection's closure notice reaches its client's stash through
/// the epoch (held weakly by the notice).
impl Stashes for PublishedEpoch {
    /// Destroys client `client`'s parked connections whose closure notice
    /// fired: called by a [`CloseNotifier`](crate::CloseNotifier) as it
    /// fires, in the task of the socket's owner.
    fn evict_closed(&self, client: usize) {
        if let Some(stash) = self.idle(client) {
            let evicted = stash.evict_closed();
            if evicted > 0 {
                tracing::debug!(client, evicted, "closed idle connections destroyed");
            }
        }
    }
}

impl fmt::Debug for PublishedEpoch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PublishedEpoch")
            .field("provider", &self.provider)
            .field("epoch", &self.epoch)
            .field("instance", &self.instance)
            .field("digest", &self.digest)
            .field("clients", &self.clients.len())
            .field("leases", &self.leases)
            .finish_non_exhaustive()
    }
}
