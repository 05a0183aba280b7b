//! The protocol kind of an approved origin.

use std::fmt;

use serde::{Serialize, Serializer};

/// The protocol of an approved origin; an [`OriginSlot`](super::OriginSlot) is
/// looked up together with its kind, so a slot of one kind never serves another.
///
/// Serializes as its [`name`](OriginKind::name).
///
/// # Examples
///
/// ```
/// use provider_pools_actors::OriginKind;
///
/// assert_eq!(OriginKind::S3.name(), "s3");
/// assert_eq!(OriginKind::Vault.to_string(), "vault");
/// ```
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum OriginKind {
    /// An HTTP or HTTPS origin.
    Http,
    /// A local blob store.
    Blob,
    /// An S3-compatible bucket.
    S3,
    /// A Vault KV-v2 mount.
    Vault,
    /// A NATS JetStream server.
    Nats,
    /// A local secret source.
    Secret,
    /// A protocol served by an adapter outside this workspace (see
    /// `examples/custom_adapter.rs`). The engine never reads a target, so
    /// any adapter may use this kind; the connection's Rust type keeps
    /// different adapters' idle connections apart.
    Custom,
}

impl OriginKind {
    /// The stable lowercase name of the kind: `"http"`, `"blob"`, `"s3"`,
    /// `"vault"`, `"nats"`, `"secret"` or `"custom"`.
    pub const fn name(self) -> &'static str {
        match self {
            Self::Http => "http",
            Self::Blob => "blob",
            Self::S3 => "s3",
            Self::Vault => "vault",
            Self::Nats => "nats",
            Self::Secret => "secret",
            Self::Custom => "custom",
        }
    }
}

impl fmt::Display for OriginKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl Serialize for OriginKind {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::OriginKind;

    #[test]
    fn names_are_distinct_and_displayed() {
        let all = [
            OriginKind::Http,
            OriginKind::Blob,
            OriginKind::S3,
            OriginKind::Vault,
            OriginKind::Nats,
            OriginKind::Secret,
            OriginKind::Custom,
        ];
        let names: Vec<_> = all.iter().map(|kind| kind.name()).collect();
        assert_eq!(
            names,
            ["http", "blob", "s3", "vault", "nats", "secret", "custom"]
        );
        for kind in all {
            assert_eq!(kind.to_string(), kind.name());
        }
    }
}
