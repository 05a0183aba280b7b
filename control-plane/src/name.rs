//! The names the control plane keys on: [`NodeId`], [`ServiceGroup`],
//! [`LeaseName`] and [`TopicName`], and [`NameError`], what was wrong with
//! a refused one.
//!
//! Invariants:
//! - A name is 1–253 bytes of ASCII letters, digits, `.`, `_`, `-` and `:`;
//!   anything else is refused when the name is made or decoded, so a name is
//!   always safe in a URL path segment, an etcd key and a log line.
//! - `.` and `..` are refused: as a path segment they would change the URL
//!   path (`leases/..` is `leases/`'s parent).

use std::fmt;

use serde::{Deserialize, Serialize};

/// Longest name, in bytes.
pub const MAX_NAME_BYTES: usize = 253;

/// A refused name: which kind of name, and why.
///
/// It converts into [`ControlPlaneError::Invalid`](crate::ControlPlaneError::Invalid)
/// with the same field and reason.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid {field}: {reason}")]
pub struct NameError {
    /// The kind of name: `node`, `service`, `lease` or `topic`.
    pub field: &'static str,
    /// Why it was refused.
    pub reason: String,
}

fn check(field: &'static str, name: &str) -> Result<(), NameError> {
    let refused = |reason: String| NameError { field, reason };
    if name.is_empty() {
        return Err(refused("empty".into()));
    }
    if name == "." || name == ".." {
        return Err(refused(format!("{name:?} is a relative path segment")));
    }
    if name.len() > MAX_NAME_BYTES {
        return Err(refused(format!(
            "{} bytes, at most {MAX_NAME_BYTES}",
            name.len()
        )));
    }
    match name
        .bytes()
        .find(|byte| !(byte.is_ascii_alphanumeric() || b"._-:".contains(byte)))
    {
        Some(byte) => Err(refused(format!(
            "byte 0x{byte:02x} is not a letter, digit, '.', '_', '-' or ':'"
        ))),
        None => Ok(()),
    }
}

macro_rules! name_type {
    ($(#[$doc:meta])* $name:ident, $field:literal) => {
        $(#[$doc])*
        #[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
        #[serde(try_from = "String", into = "String")]
        pub struct $name(String);

        impl $name {
            /// Checks and wraps `name`.
            ///
            /// # Errors
            ///
            /// [`NameError`] naming the field when `name` is empty, `.` or
            /// `..`, longer than 253 bytes or holds a byte outside
            /// `[A-Za-z0-9._:-]`.
            pub fn new(name: impl Into<String>) -> Result<Self, NameError> {
                let name = name.into();
                check($field, &name)?;
                Ok(Self(name))
            }

            /// The name as text.
            pub fn as_str(&self) -> &str {
                &self.0
            }
        }

        impl TryFrom<String> for $name {
            type Error = NameError;

            fn try_from(name: String) -> Result<Self, Self::Error> {
                Self::new(name)
            }
        }

        impl From<$name> for String {
            fn from(name: $name) -> Self {
                name.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl fmt::Debug for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                fmt::Debug::fmt(&self.0, f)
            }
        }
    };
}

name_type!(
    /// One node (a process taking part in the control plane).
    NodeId,
    "node"
);
name_type!(
    /// A service group: the name nodes register under, are discovered by
    /// and hold a service's leadership under. Not the engine's
    /// `ServiceName`, the public name of a provider's service, whose
    /// syntax differs.
    ServiceGroup,
    "service"
);
name_type!(
    /// The name of a global lease.
    LeaseName,
    "lease"
);
name_type!(
    /// A topic instances post on (see [`crate::Board`]).
    TopicName,
    "topic"
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_refuse_empty_long_and_foreign_bytes_naming_the_field() {
        assert!(NodeId::new("node-1.a_b:c").is_ok());
        for (bad, why) in [
            ("", "empty"),
            ("a/b", "0x2f"),
            ("a b", "0x20"),
            ("é", "0xc3"),
        ] {
            let error = NodeId::new(bad).expect_err(bad);
            assert!(
                error.to_string().starts_with("invalid node: ") && error.to_string().contains(why),
                "{bad:?}: {error}"
            );
        }
        let long = "a".repeat(MAX_NAME_BYTES + 1);
        assert!(ServiceGroup::new(&long[..MAX_NAME_BYTES]).is_ok());
        let error = ServiceGroup::new(long).expect_err("too long");
        assert_eq!(error.to_string(), "invalid service: 254 bytes, at most 253");
    }

    #[test]
    fn dot_segments_are_refused_in_every_name_type() {
        for bad in [".", ".."] {
            assert!(NodeId::new(bad).is_err(), "node {bad:?}");
            assert!(ServiceGroup::new(bad).is_err(), "service {bad:?}");
            let error = LeaseName::new(bad).expect_err(bad);
            assert!(
                error.to_string().contains("relative path segment"),
                "{error}"
            );
            let json = format!("{bad:?}");
            assert!(
                serde_json::from_str::<LeaseName>(&json).is_err(),
                "decoded {bad:?}"
            );
        }
        assert!(LeaseName::new("...").is_ok());
        assert!(LeaseName::new(".a").is_ok());
    }

    #[test]
    fn decoding_checks_the_name() {
        let error = serde_json::from_str::<LeaseName>("\"a/b\"").expect_err("refused");
        assert!(error.to_string().contains("invalid lease"), "{error}");
        let name: LeaseName = serde_json::from_str("\"leader\"").expect("valid");
        assert_eq!(name.as_str(), "leader");
    }
}
