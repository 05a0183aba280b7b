//! Validated identities of the pools: who is configured, which epoch, which tenant.
//!
//! Invariants, one per line:
//! - A string identity exists only if it passed its kind's rules; it is never re-checked.
//! - Validation errors name the kind and a byte position, never the whole input.
//! - `Epoch` arithmetic is checked: an exhausted epoch is never wrapped or reused.
//! - `InstanceId` and `BrokerGeneration` ids are process-unique and never reused.
//! - A `BrokerGeneration` is claimed at most once, over all clones, for the life of the process.
//! - A string identity's hash is keyed per process and computed once, at validation.
//! - `OriginKind` names are stable lowercase strings, used in `Display` and serialization alike.

mod error;
mod keyed;
mod kind;
mod name;
mod numeric;

pub use error::{IdentityError, IdentityKind};
pub(crate) use keyed::{IdHasher, IdMap, IdSet};
pub use kind::OriginKind;
pub use name::{Authority, ProviderId, ServiceName, TenantId};
pub(crate) use numeric::InstanceId;
pub use numeric::{BrokerGeneration, Epoch, OriginSlot};
