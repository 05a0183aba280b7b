//! Standalone node startup from a TOML configuration.
//!
//! A node file declares limits, capabilities and providers:
//!
//! ```toml
//! [limits]
//! pending_requests = 64
//! queue_age_ms = 2000
//!
//! [[capability]]            # declaring a capability constructs nothing
//! name = "weather.read"
//! provider = "weather"
//!
//! [[provider]]              # a provider section opts in: it is installed
//! id = "weather"
//! kind = "http"
//! service = "weather/v1"
//! authority = "http://127.0.0.1:8080"
//! origins = ["http://127.0.0.1:8080"]
//! credential_env = "WEATHER_TOKEN"
//! settings = { auth_header = "authorization" }
//!
//! [[provider]]
//! id = "files"
//! kind = "blob"
//! service = "files/v1"
//! authority = "file:local"
//! origins = ["/var/lib/node/blobs"]
//! ```
//!
//! A `[cluster]` section makes the node a cluster member ([`NodeConfig::cluster`]).
//! An `[admission]` section chooses the fairness policy and the priority
//! classes' minimum shares ([`NodeConfig::fairness`], [`NodeConfig::min_shares`]):
//!
//! ```toml
//! [admission]
//! fairness = "least_held"   # or "rotation", the default
//! min_shares = { system = 0, interactive = 50, batch = 10 }   # percent
//! ```
//!
//! Invariants:
//! - Only `[[provider]]` sections construct clients; capabilities are names.
//! - Every error names the key and the line it was found on; none carries a
//!   credential.
//! - An HTTP origin is accepted only if [`ApprovedOrigin::parse`] (the code
//!   the HTTP adapter dials with) accepts it: scheme, host and port only.
//!   An HTTP provider's connection settings (`max_head_bytes`,
//!   `idle_timeout_ms`, `max_connection_age_ms`, `max_connection_requests`)
//!   are checked by [`ConnectionSettings::read`], as its calls check them.
//! - Everything is validated, duplicates included, before the pools start;
//!   [`NodeConfig::start`] is all or nothing: when an install fails, the
//!   started registry is shut down before the error is returned.
//! - `Debug` never shows userinfo or a secret-named setting: values go
//!   through `provider_pools_redact`, and the file's text is not printed.

use std::collections::BTreeMap;
use std::ops::Range;
use std::time::Duration;

use provider_pools_adapters::http_origin::{ApprovedOrigin, ConnectionSettings, RESERVED_HEADERS};
use provider_pools_cluster::ClusterSection;
mod cluster;
mod redacted;
mod start;

pub use start::{Node, NodeError, ROLLBACK_DEADLINE};

use provider_pools_redact::redact_urls_in;
use serde::Deserialize;
use toml::Spanned;

use crate::{
    Authority, Credential, Epoch, Fairness, Installation, Limits, MinShares, OriginKind,
    OriginSlot, ProviderConfig, ProviderId, RateLimit, ServiceName,
};

/// A parsed node file.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NodeConfig {
    /// The startup limits; missing keys take their defaults.
    #[serde(default)]
    pub limits: Limits,
    /// Declared capabilities: names only.
    #[serde(default, rename = "capability")]
    pub capabilities: Vec<CapabilityDecl>,
    /// Providers to install.
    #[serde(default, rename = "provider")]
    pub providers: Vec<ProviderDecl>,
    /// The cluster this node takes part in, if any: its members, etcd
    /// endpoints and the global ceilings of providers (see
    /// [`NodeConfig::cluster`]).
    #[serde(default)]
    pub cluster: Option<Spanned<ClusterSection>>,
    /// How the admission queue orders grants; missing keys keep what the
    /// caller's [`PoolsConfig`](crate::PoolsConfig) says.
    #[serde(default)]
    pub admission: AdmissionDecl,
    #[serde(skip)]
    text: String,
}

/// A declared capability, bound to a provider by name.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CapabilityDecl {
    /// The capability's name.
    pub name: String,
    /// The provider it would use.
    pub provider: String,
}

/// The protocol of a provider section.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum ProviderKind {
    /// HTTP origins.
    Http,
    /// A local blob root.
    Blob,
}

/// One provider to install.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProviderDecl {
    /// The logical provider id.
    pub id: Spanned<String>,
    /// Its protocol.
    pub kind: ProviderKind,
    /// The public service name.
    pub service: Spanned<String>,
    /// The public authority identity.
    pub authority: Spanned<String>,
    /// Approved origins (HTTP) or the root directory (blob), slots 0..n.
    pub origins: Spanned<Vec<String>>,
    /// Environment variable holding the credential, if any.
    #[serde(default)]
    pub credential_env: Option<Spanned<String>>,
    /// Public, protocol-specific settings.
    #[serde(default)]
    pub settings: BTreeMap<String, String>,
    /// The provider's request rate, if it has one: configured right after
    /// its install (see [`crate::ProviderPools::configure_provider_rate`]).
    #[serde(default)]
    pub rate: Option<Spanned<RateDecl>>,
}

/// A provider's request rate in a node file:
/// `rate = { requests = 100, period_ms = 1000, burst = 10 }`.
#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RateDecl {
    /// Requests per period.
    pub requests: u32,
    /// The period, in milliseconds.
    pub period_ms: u64,
    /// Requests granted at once after a quiet spell.
    pub burst: u32,
}

/// The `[admission]` section of a node file.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AdmissionDecl {
    /// `"rotation"` or `"least_held"` (see [`Fairness`]).
    #[serde(default)]
    pub fairness: Option<Spanned<String>>,
    /// Each priority class's minimum share of the running slots, in
    /// percent: `{ system = 0, interactive = 50, batch = 10 }`; a class
    /// left out keeps none (see [`MinShares`]).
    #[serde(default)]
    pub min_shares: Option<Spanned<MinSharesDecl>>,
}

/// The classes' minimum shares in a node file, in percent.
#[derive(Debug, Clone, Copy, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MinSharesDecl {
    /// The system class's share.
    #[serde(default)]
    pub system: u8,
    /// The interactive class's share.
    #[serde(default)]
    pub interactive: u8,
    /// The batch class's share.
    #[serde(default)]
    pub batch: u8,
}

/// A node file that could not be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum NodeConfigError {
    /// Not valid TOML, or an unknown or mistyped key.
    #[error("node configuration, line {line}: {message}")]
    Syntax {
        /// 1-based line.
        line: usize,
        /// The parser's message.
        message: String,
    },
    /// A value that does not validate.
    #[error("node configuration, line {line}: `{key}`: {message}")]
    Invalid {
        /// The key, e.g. `provider.id`.
        key: &'static str,
        /// 1-based line.
        line: usize,
        /// What is wrong.
        message: String,
    },
    /// The limits are invalid.
    #[error("node configuration, [limits]")]
    Limits(#[source] crate::LimitsError),
    /// The file is larger than [`MAX_NODE_FILE_BYTES`]; refused before
    /// parsing.
    #[error("node configuration is larger than {max} bytes")]
    TooLarge {
        /// The bound, in bytes.
        max: usize,
    },
    /// The file could not be opened or read; the I/O error is the source.
    #[error("node configuration could not be read")]
    Read(#[source] std::io::Error),
    /// The file is not UTF-8.
    #[error("node configuration is not UTF-8")]
    NotUtf8,
}

/// Equal when the variant and its fields are; two `Read` errors are equal
/// when their I/O errors have the same kind and text (`io::Error` itself
/// is not comparable).
impl PartialEq for NodeConfigError {
    fn eq(&self, other: &Self) -> bool {
        use NodeConfigError as E;
        match (self, other) {
            (
                E::Syntax { line, message },
                E::Syntax {
                    line: l,
                    message: m,
                },
            ) => line == l && message == m,
            (
                E::Invalid { key, line, message },
                E::Invalid {
                    key: k,
                    line: l,
                    message: m,
                },
            ) => key == k && line == l && message == m,
            (E::Limits(a), E::Limits(b)) => a == b,
            (E::TooLarge { max }, E::TooLarge { max: m }) => max == m,
            (E::Read(a), E::Read(b)) => a.kind() == b.kind() && a.to_string() == b.to_string(),
            (E::NotUtf8, E::NotUtf8) => true,
            _ => false,
        }
    }
}

impl Eq for NodeConfigError {}

/// The largest node file parsed: 1 MiB. [`NodeConfig::read`] reads at most
/// one byte more; [`NodeConfig::parse`] refuses longer text before parsing.
pub const MAX_NODE_FILE_BYTES: usize = 1024 * 1024;

/// Header names an `auth_header` setting may not choose: they frame the
/// message or the connection, and the adapter sets them itself (the HTTP
/// adapter's own list).
pub const RESERVED_AUTH_HEADERS: &[&str] = &RESERVED_HEADERS;

/// True when `name` is reserved ([`RESERVED_AUTH_HEADERS`] or `proxy-*`),
/// ignoring ASCII case.
pub fn is_reserved_header(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    RESERVED_AUTH_HEADERS.contains(&lower.as_str()) || lower.starts_with("proxy-")
}

impl NodeConfig {
    /// Parses a node file.
    ///
    /// # Errors
    ///
    /// [`NodeConfigError::Syntax`] with the line of the problem (a value it
    /// quotes is shown without userinfo);
    /// [`NodeConfigError::TooLarge`] above [`MAX_NODE_FILE_BYTES`].
    pub fn parse(text: &str) -> Result<Self, NodeConfigError> {
        if text.len() > MAX_NODE_FILE_BYTES {
            return Err(NodeConfigError::TooLarge {
                max: MAX_NODE_FILE_BYTES,
            });
        }
        let mut config: NodeConfig = toml::from_str(text).map_err(|e| NodeConfigError::Syntax {
            line: e.span().map_or(1, |span| line_of(text, &span)),
            message: redact_urls_in(e.message()).into_owned(),
        })?;
        config.limits.validate().map_err(NodeConfigError::Limits)?;
        config.text = text.to_owned();
        config.fairness()?;
        config.min_shares()?;
        Ok(config)
    }

    /// The fairness policy the `[admission]` section chooses, if it does.
    ///
    /// # Errors
    ///
    /// [`NodeConfigError::Invalid`] naming `admission.fairness` and its line
    /// for a name other than `rotation` and `least_held`.
    pub fn fairness(&self) -> Result<Option<Fairness>, NodeConfigError> {
        let Some(name) = &self.admission.fairness else {
            return Ok(None);
        };
        match name.get_ref().as_str() {
            "rotation" => Ok(Some(Fairness::Rotation)),
            "least_held" => Ok(Some(Fairness::LeastHeld)),
            other => Err(NodeConfigError::Invalid {
                key: "admission.fairness",
                line: line_of(&self.text, &name.span()),
                message: format!("{other:?} is not \"rotation\" or \"least_held\""),
            }),
        }
    }

    /// The classes' minimum shares the `[admission]` section sets, if it
    /// does.
    ///
    /// # Errors
    ///
    /// [`NodeConfigError::Invalid`] naming `admission.min_shares` and its
    /// line when the shares add up to more than 100 %.
    pub fn min_shares(&self) -> Result<Option<MinShares>, NodeConfigError> {
        let Some(decl) = &self.admission.min_shares else {
            return Ok(None);
        };
        let MinSharesDecl {
            system,
            interactive,
            batch,
        } = *decl.get_ref();
        MinShares::new([system, interactive, batch])
            .map(Some)
            .map_err(|e| NodeConfigError::Invalid {
                key: "admission.min_shares",
                line: line_of(&self.text, &decl.span()),
                message: e.to_string(),
            })
    }

    /// Reads and parses the node file at `path`, reading at most
    /// [`MAX_NODE_FILE_BYTES`] + 1 bytes.
    ///
    /// # Errors
    ///
    /// [`NodeConfigError::Read`] when it cannot be opened or read (the I/O
    /// error as its source), [`NodeConfigError::NotUtf8`],
    /// [`NodeConfigError::TooLarge`], then as [`NodeConfig::parse`].
    pub fn read(path: &std::path::Path) -> Result<Self, NodeConfigError> {
        use std::io::Read as _;
        let read = NodeConfigError::Read;
        let file = std::fs::File::open(path).map_err(read)?;
        let mut bytes = Vec::new();
        file.take(MAX_NODE_FILE_BYTES as u64 + 1)
            .read_to_end(&mut bytes)
            .map_err(read)?;
        let text = String::from_utf8(bytes).map_err(|_| NodeConfigError::NotUtf8)?;
        Self::parse(&text)
    }

    /// The installations the provider sections declare, validated, with
    /// credentials read from their environment variables.
    ///
    /// # Errors
    ///
    /// [`NodeConfigError::Invalid`] naming the key and its line, also for a
    /// provider id or service declared twice, and for an HTTP origin
    /// [`ApprovedOrigin::parse`] refuses (userinfo, port 0 or above 65535,
    /// a path, a query, a fragment, CR or LF, another scheme) or a blob
    /// root that is not an absolute directory without control characters.
    pub fn installations(&self) -> Result<Vec<Installation>, NodeConfigError> {
        let mut ids = std::collections::BTreeSet::new();
        let mut services = std::collections::BTreeSet::new();
        for decl in &self.providers {
            let duplicate =
                |key: &'static str, span: Range<usize>, what: &str| NodeConfigError::Invalid {
                    key,
                    line: line_of(&self.text, &span),
                    message: format!("{what} is declared twice"),
                };
            if !ids.insert(decl.id.get_ref().as_str()) {
                return Err(duplicate("provider.id", decl.id.span(), "this id"));
            }
            if !services.insert(decl.service.get_ref().as_str()) {
                return Err(duplicate(
                    "provider.service",
                    decl.service.span(),
                    "this service",
                ));
            }
        }
        self.providers
            .iter()
            .map(|p| self.installation(p))
            .collect()
    }

    /// The request rate of every provider section that has one, in file
    /// order.
    ///
    /// # Errors
    ///
    /// [`NodeConfigError::Invalid`] naming `provider.rate` and its line for
    /// a rate [`RateLimit::validate`] refuses, or a provider id that does
    /// not validate.
    pub fn rates(&self) -> Result<Vec<(ProviderId, RateLimit)>, NodeConfigError> {
        let mut rates = Vec::new();
        for decl in &self.providers {
            let Some(rate) = &decl.rate else {
                continue;
            };
            let invalid = |span: Range<usize>, message: String| NodeConfigError::Invalid {
                key: "provider.rate",
                line: line_of(&self.text, &span),
                message,
            };
            let provider = ProviderId::new(decl.id.get_ref().clone())
                .map_err(|e| invalid(decl.id.span(), e.to_string()))?;
            let RateDecl {
                requests,
                period_ms,
                burst,
            } = *rate.get_ref();
            let limit = RateLimit::new(requests, Duration::from_millis(period_ms), burst);
            limit
                .validate()
                .map_err(|e| invalid(rate.span(), e.to_string()))?;
            rates.push((provider, limit));
        }
        Ok(rates)
    }

    fn installation(&self, decl: &ProviderDecl) -> Result<Installation, NodeConfigError> {
        let invalid =
            |key: &'static str, span: Range<usize>, message: String| NodeConfigError::Invalid {
                key,
                line: line_of(&self.text, &span),
                message,
            };
        let provider = ProviderId::new(decl.id.get_ref().as_str())
            .map_err(|e| invalid("provider.id", decl.id.span(), e.to_string()))?;
        let service = ServiceName::new(decl.service.get_ref().as_str())
            .map_err(|e| invalid("provider.service", decl.service.span(), e.to_string()))?;
        let authority = Authority::new(decl.authority.get_ref().as_str())
            .map_err(|e| invalid("provider.authority", decl.authority.span(), e.to_string()))?;
        let kind = match decl.kind {
            ProviderKind::Http => OriginKind::Http,
            ProviderKind::Blob => OriginKind::Blob,
        };
        let origins = decl.origins.get_ref();
        if origins.is_empty() {
            return Err(invalid(
                "provider.origins",
                decl.origins.span(),
                "no origin".into(),
            ));
        }
        let mut config = ProviderConfig::new(service);
        for (slot, target) in origins.iter().enumerate() {
            let slot = u32::try_from(slot).unwrap_or(u32::MAX);
            check_origin(decl.kind, target).map_err(|why| {
                let message = format!("origin {slot}: {why}");
                invalid("provider.origins", decl.origins.span(), message)
            })?;
            config = config.with_origin(OriginSlot::new(slot), kind, target.clone());
        }
        if let Some(name) = decl.settings.get("auth_header") {
            if is_reserved_header(name) {
                let message = format!("{name:?} is a reserved header");
                return Err(invalid("provider.settings", decl.id.span(), message));
            }
        }
        if decl.kind == ProviderKind::Http {
            // The HTTP connection settings, with the same refusal a call
            // would meet, at start-up instead.
            ConnectionSettings::read(|key| decl.settings.get(key).map(String::as_str))
                .map_err(|e| invalid("provider.settings", decl.id.span(), e.to_string()))?;
        }
        config.settings = decl.settings.clone();
        let credential = match &decl.credential_env {
            None => Credential::empty(),
            Some(var) => {
                let bytes = std::env::var_os(var.get_ref())
                    .ok_or_else(|| {
                        invalid(
                            "provider.credential_env",
                            var.span(),
                            "variable is not set".into(),
                        )
                    })?
                    .into_encoded_bytes();
                Credential::new(bytes)
                    .map_err(|e| invalid("provider.credential_env", var.span(), e.to_string()))?
            }
        };
        Ok(Installation {
            provider,
            authority,
            expected: Epoch::ZERO,
            credential,
            config,
        })
    }
}

/// Checks one origin of a `kind` section: HTTP origins by
/// [`ApprovedOrigin::parse`], blob roots as absolute paths without control
/// characters. The reason never quotes the origin.
fn check_origin(kind: ProviderKind, target: &str) -> Result<(), String> {
    match kind {
        ProviderKind::Http => ApprovedOrigin::parse(target)
            .map(|_| ())
            .map_err(|e| e.to_string()),
        ProviderKind::Blob if !target.starts_with('/') => {
            Err("is not an absolute directory".into())
        }
        ProviderKind::Blob if target.chars().any(char::is_control) => {
            Err("contains a control character".into())
        }
        ProviderKind::Blob => Ok(()),
    }
}

/// The 1-based line of `span`'s start in `text`.
fn line_of(text: &str, span: &Range<usize>) -> usize {
    text.get(..span.start).map_or(1, |before| {
        before.bytes().filter(|b| *b == b'\n').count() + 1
    })
}
