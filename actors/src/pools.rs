//! [`ProviderPools`], the registry handle: the only public face of the
//! registry actor.
//!
//! Invariants:
//! - One registry per [`BrokerGeneration`], ever: the claim is never undone.
//! - Admission is closed as soon as `retire` or `shutdown` is called, or the
//!   registry actor is gone without completing shutdown.
//! - Everything runs on the tokio runtime the host supplied.

use std::sync::Arc;

use ractor::{Actor, ActorCell, ActorStatus};
use tokio::runtime::Handle;
use tokio::sync::oneshot;
use tokio::time::Instant;

use crate::epoch::{ClientLease, TypedSlot};
use crate::error::{InstallError, LookupError, StartError};
use crate::identity::{BrokerGeneration, OriginKind, ProviderId};
use crate::install::{InstallReceipt, Installation, ProviderDescriptor};
use crate::ledger::Ledger;
use crate::limits::Limits;
use crate::mailbox::{Mailbox, MailboxError, MailboxSlots};
use crate::registry::{self, Directory, Msg, RegistryActor, RegistryArgs};
use crate::snapshot::{ControlState, Snapshot};

/// How many times a lookup re-reads the directory when the epoch it found
/// was retired under it by a concurrent rotation.
const LOOKUP_ATTEMPTS: usize = 4;

/// What a registry is started with.
#[derive(Debug, Clone)]
pub struct PoolsConfig {
    /// The runtime every actor and job of the pools runs on.
    pub runtime: Handle,
    /// The broker generation this registry serves; claimed at start.
    pub generation: BrokerGeneration,
    /// The startup limits; `lower_limits` can only lower them.
    pub limits: Limits,
}

impl PoolsConfig {
    /// Default limits on `runtime`, for `generation`.
    pub fn new(runtime: Handle, generation: BrokerGeneration) -> Self {
        Self {
            runtime,
            generation,
            limits: Limits::DEFAULT,
        }
    }
}

/// The handle of one provider registry. Cheap to clone.
#[derive(Debug, Clone)]
pub struct ProviderPools {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    mailbox: Mailbox<Msg>,
    ledger: Arc<Ledger>,
    directory: Arc<Directory>,
    generation: BrokerGeneration,
    limits: Limits,
}

impl ProviderPools {
    /// Starts a standalone registry.
    ///
    /// # Errors
    ///
    /// [`StartError::Limits`] for invalid limits (the generation is not
    /// claimed then), [`StartError::GenerationClaimed`] if the generation
    /// already had a registry — also a retired or failed one —, and
    /// [`StartError::Spawn`] if the actor could not start.
    ///
    /// # Examples
    ///
    /// ```
    /// use provider_pools_actors::{BrokerGeneration, PoolsConfig, ProviderPools, StartError};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let generation = BrokerGeneration::new();
    /// let config = PoolsConfig::new(tokio::runtime::Handle::current(), generation.clone());
    /// let pools = ProviderPools::start(config.clone()).await.expect("first registry");
    /// assert!(matches!(
    ///     ProviderPools::start(config).await,
    ///     Err(StartError::GenerationClaimed { .. })
    /// ));
    /// # let _ = pools;
    /// # }
    /// ```
    pub async fn start(config: PoolsConfig) -> Result<Self, StartError> {
        Self::spawn(config, None).await
    }

    /// Starts a registry linked under the host's own supervisor, which then
    /// receives the registry's supervision events.
    ///
    /// # Errors
    ///
    /// As [`ProviderPools::start`].
    pub async fn start_linked(
        config: PoolsConfig,
        supervisor: ActorCell,
    ) -> Result<Self, StartError> {
        Self::spawn(config, Some(supervisor)).await
    }

    async fn spawn(config: PoolsConfig, supervisor: Option<ActorCell>) -> Result<Self, StartError> {
        let PoolsConfig {
            runtime,
            generation,
            limits,
        } = config;
        limits.validate()?;
        if !generation.try_claim() {
            return Err(StartError::GenerationClaimed {
                generation: generation.id(),
            });
        }
        let ledger = Ledger::new(&limits);
        let directory = Arc::new(Directory::default());
        let slots = MailboxSlots::new(registry::mailbox_bound(limits.retained_configurations));
        let args = RegistryArgs {
            limits,
            ledger: Arc::clone(&ledger),
            directory: Arc::clone(&directory),
            slots: slots.clone(),
        };
        let spawned = runtime
            .spawn(async move {
                match supervisor {
                    Some(supervisor) => {
                        Actor::spawn_linked(None, RegistryActor, args, supervisor).await
                    }
                    None => Actor::spawn(None, RegistryActor, args).await,
                }
            })
            .await;
        let (actor, _join) = match spawned {
            Ok(Ok(started)) => started,
            Ok(Err(err)) => {
                return Err(StartError::Spawn {
                    reason: err.to_string(),
                })
            }
            Err(err) => {
                return Err(StartError::Spawn {
                    reason: err.to_string(),
                })
            }
        };
        Ok(Self {
            inner: Arc::new(Inner {
                mailbox: slots.attach(actor),
                ledger,
                directory,
                generation,
                limits,
            }),
        })
    }

    /// Installs a provider's first epoch (`expected` zero) or replaces its
    /// current one (`expected` the installed epoch), publishing atomically.
    ///
    /// # Cancel safety
    ///
    /// Once the request is queued, dropping the future does not undo it: the
    /// installation completes or is refused, and only the answer is lost.
    /// [`ProviderPools::describe`] tells which epoch is installed.
    ///
    /// # Errors
    ///
    /// Every [`InstallError`]; on any of them the previous epoch, if any,
    /// stays installed and usable.
    pub async fn install(
        &self,
        installation: Installation,
    ) -> Result<InstallReceipt, InstallError> {
        if !self.is_open() {
            return Err(InstallError::Closed);
        }
        let (reply, answer) = oneshot::channel();
        let msg = Msg::Install {
            installation: Box::new(installation),
            reply: reply.into(),
        };
        self.inner.mailbox.try_send(msg).map_err(|err| match err {
            MailboxError::Busy(_) | MailboxError::Timeout(_) => InstallError::Busy,
            MailboxError::Closed => InstallError::Closed,
        })?;
        answer.await.map_err(|_| InstallError::Closed)?
    }

    /// Leases the configured client of `slot` on `provider`'s current epoch,
    /// without a message hop. The same slot always reaches the same client.
    ///
    /// # Errors
    ///
    /// [`LookupError::ForeignSlot`] for a slot minted by another
    /// installation, [`LookupError::KindMismatch`] when the slot is
    /// configured for another protocol, and the other [`LookupError`]s.
    pub fn client(
        &self,
        provider: &ProviderId,
        slot: &TypedSlot,
        kind: OriginKind,
    ) -> Result<ClientLease, LookupError> {
        for _ in 0..LOOKUP_ATTEMPTS {
            if !self.is_open() {
                return Err(LookupError::Closed);
            }
            let epoch = self.inner.directory.current(provider).ok_or_else(|| {
                LookupError::UnknownProvider {
                    provider: provider.clone(),
                }
            })?;
            match epoch.lease(slot, kind) {
                Err(LookupError::Retired { .. }) => continue,
                other => return other,
            }
        }
        Err(LookupError::Retired {
            provider: provider.clone(),
        })
    }

    /// The public description of `provider`'s current epoch.
    pub fn describe(&self, provider: &ProviderId) -> Option<ProviderDescriptor> {
        self.inner
            .directory
            .current(provider)
            .map(|epoch| ProviderDescriptor::of(&epoch))
    }

    /// Aggregate counts of everything the pools own.
    pub fn snapshot(&self) -> Snapshot {
        let mut snapshot = self.inner.ledger.snapshot();
        if self.registry_lost() {
            snapshot.control = ControlState::Failed;
        }
        snapshot
    }

    /// Closes admission at once and retires every installed epoch; work
    /// already accepted finishes on its epoch.
    ///
    /// # Cancel safety
    ///
    /// Admission is closed on the first poll; dropping the future later may
    /// leave epochs unretired until the next `retire` or `shutdown`.
    pub async fn retire(&self) {
        self.inner.ledger.close();
        let (reply, done) = oneshot::channel();
        if self
            .send_control(
                Msg::Retire {
                    reply: reply.into(),
                },
                None,
            )
            .await
        {
            let _ = done.await;
        }
    }

    /// Retires, then waits until `deadline` for every retained epoch to be
    /// released, and returns what remains.
    ///
    /// The returned snapshot is clean only if everything was released and
    /// the registry completed; on timeout it reports what is still owned,
    /// and a later call may still complete.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: dropping the future stops only the waiting; admission
    /// stays closed and the drain goes on.
    pub async fn shutdown(&self, deadline: Instant) -> Snapshot {
        self.inner.ledger.close();
        let (reply, done) = oneshot::channel();
        if self
            .send_control(
                Msg::Shutdown {
                    reply: reply.into(),
                },
                Some(deadline),
            )
            .await
        {
            let _ = tokio::time::timeout_at(deadline, done).await;
            let actor = self.inner.mailbox.actor();
            let remaining = deadline.saturating_duration_since(Instant::now());
            let _ = actor
                .wait(Some(remaining.max(std::time::Duration::from_millis(1))))
                .await;
        }
        self.snapshot()
    }

    /// The startup limits.
    pub fn limits(&self) -> &Limits {
        &self.inner.limits
    }

    /// The broker generation this registry serves.
    pub fn generation(&self) -> &BrokerGeneration {
        &self.inner.generation
    }

    /// The registry actor, for a host that supervises or monitors it.
    pub fn registry_cell(&self) -> ActorCell {
        self.inner.mailbox.actor().get_cell()
    }

    fn is_open(&self) -> bool {
        !self.inner.ledger.is_closed() && !self.registry_lost()
    }

    /// True when the registry actor stopped without completing shutdown.
    fn registry_lost(&self) -> bool {
        let status = self.inner.mailbox.actor().get_status();
        status >= ActorStatus::Stopping && self.inner.ledger.control() != ControlState::Completed
    }

    async fn send_control(&self, msg: Msg, deadline: Option<Instant>) -> bool {
        let mailbox = &self.inner.mailbox;
        let sent = match deadline {
            Some(deadline) => mailbox.send_within(msg, deadline).await,
            None => {
                mailbox
                    .send_within(msg, Instant::now() + CONTROL_WAIT)
                    .await
            }
        };
        sent.is_ok()
    }
}

/// How long `retire` waits for room in the registry's mailbox.
const CONTROL_WAIT: std::time::Duration = std::time::Duration::from_secs(5);
