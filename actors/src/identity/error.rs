//! The typed error of identity validation.

use thiserror::Error;

/// Why a string was refused as an identity.
///
/// `kind` names the identity (`"provider id"`, `"service name"`, `"tenant id"`,
/// `"authority"`). Inputs may come from guests, so no variant echoes the input;
/// [`IdentityError::BadChar`] carries only the single offending character.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum IdentityError {
    /// The input was the empty string.
    #[error("{kind} is empty")]
    Empty {
        /// The identity being validated.
        kind: &'static str,
    },
    /// The input was longer than the kind allows.
    #[error("{kind} is {len} bytes, more than {max}")]
    TooLong {
        /// The identity being validated.
        kind: &'static str,
        /// Length of the input in bytes.
        len: usize,
        /// Largest accepted length in bytes.
        max: usize,
    },
    /// The input contained a character the kind never allows.
    #[error("{kind} has a forbidden character {ch:?} at byte {index}")]
    BadChar {
        /// The identity being validated.
        kind: &'static str,
        /// Byte offset of the character in the input.
        index: usize,
        /// The offending character (printed escaped).
        ch: char,
    },
    /// The first character is allowed inside the identity but not at its start.
    #[error("{kind} must start with a letter or digit")]
    BadStart {
        /// The identity being validated.
        kind: &'static str,
    },
    /// A `/` separator was first, last or doubled, leaving an empty segment.
    #[error("{kind} has an empty segment: '/' is first, last or doubled")]
    BadSeparator {
        /// The identity being validated.
        kind: &'static str,
    },
}

#[cfg(test)]
mod tests {
    use super::IdentityError;

    #[test]
    fn messages_are_lowercase_and_exact() {
        let cases = [
            (
                IdentityError::Empty { kind: "tenant id" },
                "tenant id is empty",
            ),
            (
                IdentityError::BadStart {
                    kind: "service name",
                },
                "service name must start with a letter or digit",
            ),
            (
                IdentityError::BadChar {
                    kind: "authority",
                    index: 0,
                    ch: '\n',
                },
                "authority has a forbidden character '\\n' at byte 0",
            ),
            (
                IdentityError::BadSeparator {
                    kind: "service name",
                },
                "service name has an empty segment: '/' is first, last or doubled",
            ),
        ];
        for (error, message) in cases {
            assert_eq!(error.to_string(), message);
        }
    }
}
