//! [`FencingToken`]: the number that stamps each acquisition of a lease,
//! and [`TokenExhausted`], the end of a lease's tokens.
//!
//! Invariants:
//! - Tokens of one lease strictly increase across acquisitions.
//! - The token after `u64::MAX` does not exist: an exhausted token is never
//!   reused.

use std::fmt;

use serde::{Deserialize, Serialize};

/// A fencing token: strictly increasing per lease across acquisitions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct FencingToken(pub u64);

/// A lease's tokens ran out: there is no token after `u64::MAX`.
///
/// It converts into
/// [`ControlPlaneError::EpochExhausted`](crate::ControlPlaneError::EpochExhausted).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("lease fencing epoch is exhausted")]
pub struct TokenExhausted;

impl FencingToken {
    /// The token as a number.
    pub fn get(self) -> u64 {
        self.0
    }

    /// The token after this one: an exhausted token is never reused.
    ///
    /// # Errors
    ///
    /// [`TokenExhausted`] at `u64::MAX`.
    pub fn next(self) -> Result<Self, TokenExhausted> {
        self.0.checked_add(1).map(Self).ok_or(TokenExhausted)
    }
}

impl fmt::Display for FencingToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}
