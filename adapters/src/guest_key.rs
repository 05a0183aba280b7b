//! What the validated key types a guest names (`BlobKey`, `ObjectKey`,
//! `SecretName`) share: the length bound their `parse` checks first, and
//! how they read and print ([`guest_key!`]).
//!
//! Invariants:
//! - A key type is a newtype over the `String` its `parse` validated;
//!   nothing else builds one.
//! - Keys are names, never secrets: `Debug` shows the type and the quoted
//!   key, `Display` the key alone.

/// `Err(len)` unless `key` is 1 to `max` bytes long.
pub(crate) fn length_within(key: &str, max: usize) -> Result<(), usize> {
    if key.is_empty() || key.len() > max {
        return Err(key.len());
    }
    Ok(())
}

/// Implements `as_str`, `Debug` (`Name("key")`) and `Display` (the key)
/// for the validated key newtype `$name` over a `String`.
macro_rules! guest_key {
    ($name:ident) => {
        impl $name {
            /// The key as text.
            pub fn as_str(&self) -> &str {
                &self.0
            }
        }

        impl ::std::fmt::Debug for $name {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                write!(f, concat!(stringify!($name), "({:?})"), self.0)
            }
        }

        impl ::std::fmt::Display for $name {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                f.write_str(&self.0)
            }
        }
    };
}

pub(crate) use guest_key;
