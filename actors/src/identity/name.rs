//! String identities: one rule table per kind, one validator, one macro for the shared impls.

use std::hash::{Hash, Hasher};
use std::{cmp::Ordering, fmt, str::FromStr, sync::Arc};

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::keyed::keyed_hash;
use super::{IdentityError, IdentityKind};

/// What one kind of string identity accepts; [`validate`] is the only reader.
struct Rules {
    /// The identity, named in error messages.
    kind: IdentityKind,
    /// Largest accepted length in bytes.
    max: usize,
    /// ASCII bytes allowed anywhere.
    allowed: fn(u8) -> bool,
    /// ASCII bytes allowed as the first byte.
    start: fn(u8) -> bool,
    /// A separator that may not be first, last or doubled.
    separator: Option<u8>,
}

fn is_lower_alnum(byte: u8) -> bool {
    byte.is_ascii_lowercase() || byte.is_ascii_digit()
}

fn is_name_byte(byte: u8) -> bool {
    is_lower_alnum(byte) || matches!(byte, b'-' | b'_' | b'.')
}

fn is_service_byte(byte: u8) -> bool {
    is_name_byte(byte) || byte == b'/'
}

fn is_tenant_byte(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'_' | b'.' | b':')
}

const PROVIDER_ID: Rules = Rules {
    kind: IdentityKind::ProviderId,
    max: 64,
    allowed: is_name_byte,
    start: is_lower_alnum,
    separator: None,
};

const SERVICE_NAME: Rules = Rules {
    kind: IdentityKind::ServiceName,
    max: 128,
    allowed: is_service_byte,
    start: is_lower_alnum,
    separator: Some(b'/'),
};

const TENANT_ID: Rules = Rules {
    kind: IdentityKind::TenantId,
    max: 128,
    allowed: is_tenant_byte,
    start: |byte| byte.is_ascii_alphanumeric(),
    separator: None,
};

const AUTHORITY: Rules = Rules {
    kind: IdentityKind::Authority,
    max: 256,
    // `!` (0x21) through `~` (0x7E): printable ASCII without whitespace,
    // and without `@` or `%`, so no userinfo (`user:pw@host`, or its `%40`
    // spelling) can be made public.
    allowed: |byte| byte.is_ascii_graphic() && byte != b'@' && byte != b'%',
    start: |byte| byte.is_ascii_graphic(),
    separator: None,
};

/// Checks `value` against `rules`: length first, then each character in order.
fn validate(rules: &Rules, value: &str) -> Result<(), IdentityError> {
    let kind = rules.kind;
    if value.is_empty() {
        return Err(IdentityError::Empty { kind });
    }
    if value.len() > rules.max {
        return Err(IdentityError::TooLong {
            kind,
            len: value.len(),
            max: rules.max,
        });
    }
    // A character reaching the separator check is ASCII, so the final one starts at `last`.
    let last = value.len() - 1;
    let mut previous = None;
    for (index, ch) in value.char_indices() {
        if !ch.is_ascii() || !(rules.allowed)(ch as u8) {
            return Err(IdentityError::BadChar { kind, index, ch });
        }
        let byte = ch as u8;
        if rules.separator == Some(byte) {
            if index == 0 || index == last || previous == Some(byte) {
                return Err(IdentityError::BadSeparator { kind });
            }
        } else if index == 0 && !(rules.start)(byte) {
            return Err(IdentityError::BadStart { kind });
        }
        previous = Some(byte);
    }
    Ok(())
}

/// A validated name and its keyed hash, shared by every clone of its
/// identity (one pointer wide).
struct Named {
    hash: u64,
    name: Box<str>,
}

/// Defines a validated string identity over a shared [`Named`] with its shared trait impls.
macro_rules! string_identity {
    (
        $(#[$type_doc:meta])*
        pub struct $name:ident($rules:ident);
        $(#[$new_doc:meta])*
        pub fn new;
    ) => {
        $(#[$type_doc])*
        #[derive(Clone)]
        pub struct $name(Arc<Named>);

        impl $name {
            $(#[$new_doc])*
            pub fn new(value: impl Into<String>) -> Result<Self, IdentityError> {
                Self::parse(&value.into())
            }

            /// The validated identity as a string slice.
            pub fn as_str(&self) -> &str {
                &self.0.name
            }

            fn parse(value: &str) -> Result<Self, IdentityError> {
                validate(&$rules, value)?;
                Ok(Self(Arc::new(Named {
                    hash: keyed_hash(value),
                    name: Box::from(value),
                })))
            }
        }

        impl PartialEq for $name {
            fn eq(&self, other: &Self) -> bool {
                Arc::ptr_eq(&self.0, &other.0)
                    || (self.0.hash == other.0.hash && self.0.name == other.0.name)
            }
        }

        impl Eq for $name {}

        impl PartialOrd for $name {
            fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
                Some(self.cmp(other))
            }
        }

        /// By name.
        impl Ord for $name {
            fn cmp(&self, other: &Self) -> Ordering {
                self.0.name.cmp(&other.0.name)
            }
        }

        /// Feeds the name's keyed hash, one integer, to `state`.
        impl Hash for $name {
            fn hash<H: Hasher>(&self, state: &mut H) {
                state.write_u64(self.0.hash);
            }
        }

        impl fmt::Debug for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.debug_tuple(stringify!($name)).field(&self.as_str()).finish()
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl AsRef<str> for $name {
            fn as_ref(&self) -> &str {
                self.as_str()
            }
        }

        impl TryFrom<String> for $name {
            type Error = IdentityError;

            fn try_from(value: String) -> Result<Self, Self::Error> {
                Self::parse(&value)
            }
        }

        impl FromStr for $name {
            type Err = IdentityError;

            fn from_str(value: &str) -> Result<Self, Self::Err> {
                Self::parse(value)
            }
        }

        impl Serialize for $name {
            fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.serialize_str(self.as_str())
            }
        }

        /// Decodes through the same validation as `new`.
        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                let value = <std::borrow::Cow<'de, str>>::deserialize(deserializer)?;
                Self::parse(&value).map_err(serde::de::Error::custom)
            }
        }
    };
}

string_identity! {
    /// The configured logical ID of a provider, the key its pools are kept under.
    ///
    /// 1 to 64 bytes of lowercase ASCII letters, digits, `-`, `_` and `.`,
    /// starting with a letter or digit. Rotating the credential keeps the ID.
    pub struct ProviderId(PROVIDER_ID);
    /// Validates `value` as a provider ID.
    ///
    /// # Errors
    ///
    /// [`IdentityError`] if `value` is empty, longer than 64 bytes, contains a
    /// forbidden character or does not start with a letter or digit.
    ///
    /// # Examples
    ///
    /// ```
    /// use provider_pools_actors::ProviderId;
    ///
    /// let id = ProviderId::new("billing-api")?;
    /// assert_eq!(id.as_str(), "billing-api");
    /// assert!(ProviderId::new("Billing").is_err());
    /// # Ok::<(), provider_pools_actors::IdentityError>(())
    /// ```
    pub fn new;
}

string_identity! {
    /// The public name of a service; it never creates a pool of its own.
    ///
    /// 1 to 128 bytes of lowercase ASCII letters, digits, `-`, `_`, `.` and
    /// `/`, starting with a letter or digit; `/` is never last or doubled.
    pub struct ServiceName(SERVICE_NAME);
    /// Validates `value` as a service name.
    ///
    /// # Errors
    ///
    /// [`IdentityError`] if `value` is empty, longer than 128 bytes, contains a
    /// forbidden character, does not start with a letter or digit, or has a
    /// `/` first, last or doubled.
    ///
    /// # Examples
    ///
    /// ```
    /// use provider_pools_actors::ServiceName;
    ///
    /// let name = ServiceName::new("billing/v1/charges")?;
    /// assert_eq!(name.to_string(), "billing/v1/charges");
    /// assert!(ServiceName::new("billing//charges").is_err());
    /// # Ok::<(), provider_pools_actors::IdentityError>(())
    /// ```
    pub fn new;
}

string_identity! {
    /// The tenant of an activation, as named by the sealed execution plan.
    ///
    /// 1 to 128 bytes of ASCII letters of either case, digits, `-`, `_`, `.`
    /// and `:`, starting with a letter or digit.
    pub struct TenantId(TENANT_ID);
    /// Validates `value` as a tenant ID.
    ///
    /// # Errors
    ///
    /// [`IdentityError`] if `value` is empty, longer than 128 bytes, contains a
    /// forbidden character or does not start with a letter or digit.
    ///
    /// # Examples
    ///
    /// ```
    /// use provider_pools_actors::TenantId;
    ///
    /// let tenant = TenantId::new("Acme:prod")?;
    /// assert_eq!(tenant.as_str(), "Acme:prod");
    /// assert!(TenantId::new("acme prod").is_err());
    /// # Ok::<(), provider_pools_actors::IdentityError>(())
    /// ```
    pub fn new;
}

string_identity! {
    /// The public authority identity of an installation, such as
    /// `https://api.example.com:443` or `vault:kv/app`.
    ///
    /// 1 to 256 bytes of printable ASCII without whitespace (`!` through `~`)
    /// and without `@` or `%`, so it cannot carry userinfo (`user:pw@host`,
    /// `user:pw%40host`). It is public and may be logged: never put a
    /// credential in it.
    pub struct Authority(AUTHORITY);
    /// Validates `value` as an authority.
    ///
    /// # Errors
    ///
    /// [`IdentityError`] if `value` is empty, longer than 256 bytes or contains
    /// whitespace, a control character, `@`, `%` or non-ASCII.
    ///
    /// # Examples
    ///
    /// ```
    /// use provider_pools_actors::Authority;
    ///
    /// let authority = Authority::new("https://api.example.com:443")?;
    /// assert_eq!(authority.as_str(), "https://api.example.com:443");
    /// assert!(Authority::new("https://api example.com").is_err());
    /// assert!(Authority::new("https://user:pw@api.example.com").is_err());
    /// # Ok::<(), provider_pools_actors::IdentityError>(())
    /// ```
    pub fn new;
}

#[cfg(test)]
mod tests;
