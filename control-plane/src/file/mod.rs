//! [`FileClient`]: the control plane of one node, persisted in one JSON
//! file so registrations, leases and their fencing tokens survive restarts.
//!
//! Only one process may own a state file: the client takes an exclusive
//! advisory lock on `<state>.lock` and a second client is refused. The
//! storage must honour that lock, `fsync` and atomic `rename` (a local
//! filesystem): the file profile requires certified locks and storage.
//!
//! Invariants:
//! - The state file is a version-2 document,
//!   `{"version":2,"registrations":[…],"leases":[…],"sha256":"…"}`, of at
//!   most 16 MiB ([`MAX_STATE_FILE_BYTES`]); backups are the same document.
//!   The SHA-256 digest of every byte before the `sha256` field is verified
//!   before anything is decoded, on open and on restore: any changed byte is
//!   `Corrupt`, never a silently different state (a fencing token moved
//!   back). A version-1 document (no checksum, written before it existed)
//!   is still read, and rewritten as version 2 by the open that reads it.
//! - Decoding reads through a bounded reader (never more than the limit plus
//!   one byte) and restores record by record, refusing more than 262,144
//!   records or 64 MiB of estimated state ([`StoreLimits::FILE_DECODED`]).
//! - A mutation checks, then changes the one record it touches, then
//!   serializes the whole state straight into a new, exclusive temporary
//!   file beside the state file, syncs it, renames it over the state file and
//!   syncs the directory. No encoded copy of the state is held in memory.
//! - A mutation that cannot be persisted before the rename is undone: the
//!   call fails and memory and disk both keep the previous state.
//! - A backup or restore streams one bounded file into a staged generation
//!   beside its destination, decodes that exact generation back under the
//!   caps, syncs it, and only then renames it over the destination.
//! - Lease expiry and fencing-token arithmetic fail closed: an exhausted
//!   token is never reused and a restore never moves a token back.
//! - A temporary file left by a writer that died before its rename is
//!   ignored and removed when the state is next opened.
//! - `<state>.reserve` keeps room for one more generation of the state
//!   file: a release or a deregistration succeeds on a full disk by
//!   drawing on it, and a mutation that cannot keep it is refused.
//!
//! [`StoreLimits::FILE_DECODED`]: crate::StoreLimits::FILE_DECODED

mod backup;
mod checksum;
mod client;
mod document;
mod lock;
mod options;
mod reserve;
mod staged_file;
mod staging;

pub use client::FileClient;
pub use options::{FileOptions, MAX_STATE_FILE_BYTES};
pub use staging::StagedWrite;
