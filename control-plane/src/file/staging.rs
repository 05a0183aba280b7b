//! [`StagedWrite`]: a mutation applied in memory and written, synced, into
//! a staged file, waiting for [`commit`](StagedWrite::commit) to rename it
//! over the state file.
//!
//! Every mutation of a [`FileClient`] goes through here: the trait's
//! methods stage and commit at once; the `stage_*` methods hand the two
//! phases to the caller (a host that must do something between making a
//! change and making it durable, or a test of a crash between the two).
//!
//! Invariants:
//! - A staged write holds the client's state lock from staging to commit
//!   or drop: no other call sees or changes the state meanwhile.
//! - Before staging, the previous version of the one record the mutation
//!   touches (and any expired registrations swept to make room) is kept
//!   aside; that is all that is kept, never a copy of the state.
//! - A refused mutation, a failed staging or a failed rename puts those
//!   records back; so does dropping the staged write uncommitted. Memory
//!   and disk then both hold the previous state.
//! - A staged generation is only kept once the full-disk reserve covers it
//!   (see [`reserve`](crate::file::reserve)); a release or a deregistration
//!   whose write finds the disk full empties the reserve and writes again,
//!   and the reserve is regrown after its rename.

use std::fmt;
use std::sync::MutexGuard;

use crate::error::ControlPlaneError;
use crate::file::reserve;
use crate::file::staged_file::{CommitFailed, StagedFile};
use crate::file::FileClient;
use crate::lease::{LeaseGrant, LeaseKey, LeaseRequest};
use crate::presence::{PresenceKey, Registration};
use crate::store::{LeaseRecord, PresenceRecord, StoreState};

/// A mutation applied in memory and staged on disk, not yet committed.
///
/// Commit it promptly: it holds the client's state lock, so every other
/// call on the client waits (and a call on the same thread deadlocks).
/// Dropping it uncommitted undoes the mutation and removes the staged file.
#[must_use = "a staged write is undone unless committed"]
pub struct StagedWrite<'a, T> {
    file: Option<StagedFile>,
    client: &'a FileClient,
    pending: Pending<'a>,
    answer: T,
    lease_operation: Option<&'static str>,
}

impl<T> StagedWrite<'_, T> {
    /// Renames the staged file over the state file and syncs its
    /// directory; the mutation is then durable and its answer returned.
    ///
    /// # Errors
    ///
    /// [`ControlPlaneError::Storage`] with operation `rename` when the
    /// rename fails: the mutation is undone, memory and disk keep the
    /// previous state. When only the directory sync after the rename fails,
    /// the new state stands in memory and in the file but may not survive a
    /// power loss: a lease mutation then answers
    /// [`ControlPlaneError::OutcomeUnknown`] (settle it by reading the lease
    /// back), a presence mutation `Storage` with operation `sync directory`.
    pub fn commit(self) -> Result<T, ControlPlaneError> {
        let Self {
            file,
            client,
            mut pending,
            answer,
            lease_operation,
        } = self;
        let Some(file) = file else {
            pending.disarm();
            return Ok(answer);
        };
        let len = file.len();
        match file.commit() {
            Ok(()) => {
                pending.disarm();
                client.regrow_reserve(len);
                Ok(answer)
            }
            // `pending` drops here and puts the previous records back.
            Err(CommitFailed::BeforeRename(error)) => Err(error),
            Err(CommitFailed::AfterRename(error)) => {
                pending.disarm();
                Err(match lease_operation {
                    Some(operation) => ControlPlaneError::OutcomeUnknown { operation },
                    None => error,
                })
            }
        }
    }
}

impl<T> fmt::Debug for StagedWrite<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StagedWrite")
            .field("staged", &self.file.as_ref().map(StagedFile::path))
            .field("lease_operation", &self.lease_operation)
            .finish_non_exhaustive()
    }
}

/// The state lock and what puts the touched records back: the drop guard
/// of a mutation, disarmed once the mutation is durable.
struct Pending<'a> {
    state: MutexGuard<'a, StoreState>,
    undo: Option<Undo>,
}

impl Pending<'_> {
    fn disarm(&mut self) {
        self.undo = None;
    }
}

impl Drop for Pending<'_> {
    fn drop(&mut self) {
        if let Some(undo) = self.undo.take() {
            undo.apply(&mut self.state);
        }
    }
}

/// The previous version of what one mutation touches.
enum Undo {
    Presence {
        key: PresenceKey,
        previous: Option<PresenceRecord>,
        swept: Vec<PresenceRecord>,
    },
    Lease {
        key: LeaseKey,
        previous: Option<LeaseRecord>,
    },
}

impl Undo {
    fn presence(state: &StoreState, key: &PresenceKey) -> Self {
        Self::Presence {
            key: key.clone(),
            previous: state.presence_record(key).cloned(),
            swept: Vec::new(),
        }
    }

    fn lease(state: &StoreState, key: &LeaseKey) -> Self {
        Self::Lease {
            key: key.clone(),
            previous: state.leases.get(key).cloned(),
        }
    }

    /// Whether the state differs from before the mutation.
    fn changed(&self, state: &StoreState) -> bool {
        match self {
            Self::Presence {
                key,
                previous,
                swept,
            } => !swept.is_empty() || state.presence_record(key) != previous.as_ref(),
            Self::Lease { key, previous } => state.leases.get(key) != previous.as_ref(),
        }
    }

    fn apply(self, state: &mut StoreState) {
        match self {
            Self::Presence {
                key,
                previous,
                swept,
            } => {
                state.put_back_presence(&key, previous);
                for record in swept {
                    state.reinstate_presence(record);
                }
            }
            Self::Lease { key, previous } => state.put_back_lease(&key, previous),
        }
    }
}

impl FileClient {
    /// Captures what `input` will touch, runs `mutation` on the locked
    /// state and stages the result; undoes it when it is refused or cannot
    /// be staged.
    fn stage<I, T>(
        &self,
        input: I,
        capture: fn(&mut StoreState, &I, u64) -> Undo,
        mutation: fn(&mut StoreState, I, u64) -> Result<T, ControlPlaneError>,
        lease_operation: Option<&'static str>,
        draws_on_reserve: bool,
    ) -> Result<StagedWrite<'_, T>, ControlPlaneError> {
        let now_ms = self.clock.now_ms();
        let mut pending = Pending {
            state: self.lock(),
            undo: None,
        };
        pending.undo = Some(capture(&mut pending.state, &input, now_ms));
        let answer = mutation(&mut pending.state, input, now_ms)?;
        let changed = pending
            .undo
            .as_ref()
            .is_some_and(|undo| undo.changed(&pending.state));
        let file = if changed {
            Some(self.stage_file(&pending.state, draws_on_reserve)?)
        } else {
            None
        };
        Ok(StagedWrite {
            file,
            client: self,
            pending,
            answer,
            lease_operation,
        })
    }

    /// Writes and syncs the next generation of `state`, covered by the
    /// reserve; a release or a deregistration (`draws_on_reserve`) that
    /// finds the disk full empties the reserve and writes once more.
    fn stage_file(
        &self,
        state: &StoreState,
        draws_on_reserve: bool,
    ) -> Result<StagedFile, ControlPlaneError> {
        let write = || {
            let file = StagedFile::encode(&self.path, state, self.max_file_bytes, "state file")?;
            file.sync()?;
            Ok::<_, ControlPlaneError>(file)
        };
        let mut reserve = self.reserve();
        let file = match write() {
            Err(error) if draws_on_reserve && reserve::is_full(&error) => {
                tracing::warn!(%error, "the disk is full: drawing on the reserve");
                reserve.draw()?;
                write()?
            }
            written => written?,
        };
        match reserve.ensure(file.len()) {
            Ok(()) => Ok(file),
            // Regrown after the rename frees the old generation.
            Err(_) if draws_on_reserve => Ok(file),
            Err(error) => Err(error),
        }
    }

    /// Regrows the reserve after a committed write, as far as the disk
    /// allows; a shortfall is logged (the next mutation that needs the
    /// reserve refuses without it).
    fn regrow_reserve(&self, state_len: u64) {
        if let Err(error) = self.reserve().ensure(state_len) {
            tracing::warn!(%error, "the full-disk reserve is short");
        }
    }

    /// Registers (or replaces) an instance and stages the new state.
    ///
    /// # Errors
    ///
    /// As [`ControlPlane::register`](crate::ControlPlane::register), plus
    /// `TooLarge` when the state file would pass its limit and `Storage`
    /// when staging fails; the state is then as before.
    pub fn stage_register(
        &self,
        registration: Registration,
    ) -> Result<StagedWrite<'_, ()>, ControlPlaneError> {
        self.stage(
            registration,
            |state, registration, now_ms| {
                let mut undo = Undo::presence(state, registration.key());
                if let Undo::Presence { swept, .. } = &mut undo {
                    *swept = state.make_room_for(registration, now_ms);
                }
                undo
            },
            |state, registration, now_ms| state.register(registration, now_ms),
            None,
            false,
        )
    }

    /// Extends a live registration and stages the new state.
    ///
    /// # Errors
    ///
    /// As [`ControlPlane::heartbeat`](crate::ControlPlane::heartbeat), plus
    /// the staging errors of [`stage_register`](Self::stage_register).
    pub fn stage_heartbeat(
        &self,
        key: PresenceKey,
    ) -> Result<StagedWrite<'_, ()>, ControlPlaneError> {
        self.stage(
            key,
            |state, key, _| Undo::presence(state, key),
            |state, key, now_ms| state.heartbeat(&key, now_ms),
            None,
            false,
        )
    }

    /// Removes a registration and stages the new state (nothing is staged
    /// when it was absent). On a full disk it draws on the state file's
    /// reserve (see [the module docs](crate::file)), so it still succeeds.
    ///
    /// # Errors
    ///
    /// The staging errors of [`stage_register`](Self::stage_register).
    pub fn stage_deregister(
        &self,
        key: PresenceKey,
    ) -> Result<StagedWrite<'_, ()>, ControlPlaneError> {
        self.stage(
            key,
            |state, key, _| Undo::presence(state, key),
            |state, key, _| {
                let _removed = state.deregister(&key);
                Ok(())
            },
            None,
            true,
        )
    }

    /// Acquires a lease and stages the new state.
    ///
    /// # Errors
    ///
    /// As [`ControlPlane::acquire`](crate::ControlPlane::acquire), plus the
    /// staging errors of [`stage_register`](Self::stage_register).
    pub fn stage_acquire(
        &self,
        request: LeaseRequest,
    ) -> Result<StagedWrite<'_, LeaseGrant>, ControlPlaneError> {
        self.stage(
            request,
            |state, request, _| Undo::lease(state, &request.key),
            |state, request, now_ms| state.acquire(request, now_ms),
            Some("acquire"),
            false,
        )
    }

    /// Renews a held lease and stages the new state.
    ///
    /// # Errors
    ///
    /// As [`ControlPlane::renew`](crate::ControlPlane::renew), plus the
    /// staging errors of [`stage_register`](Self::stage_register).
    pub fn stage_renew(
        &self,
        grant: LeaseGrant,
    ) -> Result<StagedWrite<'_, LeaseGrant>, ControlPlaneError> {
        self.stage(
            grant,
            |state, grant, _| Undo::lease(state, &grant.key),
            |state, grant, now_ms| state.renew(grant, now_ms),
            Some("renew"),
            false,
        )
    }

    /// Releases a held lease and stages the new state. On a full disk it
    /// draws on the state file's reserve (see [the module
    /// docs](crate::file)), so it still succeeds.
    ///
    /// # Errors
    ///
    /// As [`ControlPlane::release`](crate::ControlPlane::release), plus the
    /// staging errors of [`stage_register`](Self::stage_register).
    pub fn stage_release(
        &self,
        grant: LeaseGrant,
    ) -> Result<StagedWrite<'_, ()>, ControlPlaneError> {
        self.stage(
            grant,
            |state, grant, _| Undo::lease(state, &grant.key),
            |state, grant, now_ms| state.release(&grant, now_ms),
            Some("release"),
            true,
        )
    }
}
