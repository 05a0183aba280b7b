//! The typed error of identity validation.

use std::fmt;

use thiserror::Error;

/// Which string identity was being validated.
///
/// Displayed as its name in messages: `provider id`, `service name`,
/// `tenant id` or `authority`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum IdentityKind {
    /// A [`ProviderId`](super::ProviderId).
    ProviderId,
    /// A [`ServiceName`](super::ServiceName).
    ServiceName,
    /// A [`TenantId`](super::TenantId).
    TenantId,
    /// An [`Authority`](super::Authority).
    Authority,
}

impl IdentityKind {
    /// The identity's name, as displayed.
    pub const fn name(self) -> &'static str {
        match self {
            Self::ProviderId => "provider id",
            Self::ServiceName => "service name",
            Self::TenantId => "tenant id",
            Self::Authority => "authority",
        }
    }
}

impl fmt::Display for IdentityKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Why a string was refused as an identity.
///
/// `kind` names the identity ([`IdentityKind`]). Inputs may come from guests, so no variant echoes the input;
/// [`IdentityError::BadChar`] carries only the single offending character.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum IdentityError {
    /// The input was the empty string.
    #[error("{kind} is empty")]
    Empty {
        /// The identity being validated.
        kind: IdentityKind,
    },
    /// The input was longer than the kind allows.
    #[error("{kind} is {len} bytes, more than {max}")]
    TooLong {
        /// The identity being validated.
        kind: IdentityKind,
        /// Length of the input in bytes.
        len: usize,
        /// Largest accepted length in bytes.
        max: usize,
    },
    /// The input contained a character the kind never allows.
    #[error("{kind} has a forbidden character {ch:?} at byte {index}")]
    BadChar {
        /// The identity being validated.
        kind: IdentityKind,
        /// Byte offset of the character in the input.
        index: usize,
        /// The offending character (printed escaped).
        ch: char,
    },
    /// The first character is allowed inside the identity but not at its start.
    #[error("{kind} must start with a letter or digit")]
    BadStart {
        /// The identity being validated.
        kind: IdentityKind,
    },
    /// A `/` separator was first, last or doubled, leaving an empty segment.
    #[error("{kind} has an empty segment: '/' is first, last or doubled")]
    BadSeparator {
        /// The identity being validated.
        kind: IdentityKind,
    },
}

#[cfg(test)]
mod tests {
    use super::{IdentityError, IdentityKind};

    #[test]
    fn messages_are_lowercase_and_exact() {
        let cases = [
            (
                IdentityError::Empty {
                    kind: IdentityKind::TenantId,
                },
                "tenant id is empty",
            ),
            (
                IdentityError::BadStart {
                    kind: IdentityKind::ServiceName,
                },
                "service name must start with a letter or digit",
            ),
            (
                IdentityError::BadChar {
                    kind: IdentityKind::Authority,
                    index: 0,
                    ch: '\n',
                },
                "authority has a forbidden character '\\n' at byte 0",
            ),
            (
                IdentityError::BadSeparator {
                    kind: IdentityKind::ServiceName,
                },
                "service name has an empty segment: '/' is first, last or doubled",
            ),
        ];
        for (error, message) in cases {
            assert_eq!(error.to_string(), message);
        }
    }
}
