//! V1 error bodies: `{"error":{"code","message",..}}` and the HTTP status
//! of each [`ErrorCode`].
//!
//! | code | status | extra fields |
//! | --- | --- | --- |
//! | `invalid` | 400 | `field`, `reason` |
//! | `not_registered` | 404 | |
//! | `lease_held` | 409 | `holder`, `token` |
//! | `lease_lost` | 409 | |
//! | `epoch_exhausted` | 409 | |
//! | `too_large` | 413 | `what`, `limit_bytes` |
//! | `overflow` | 422 | `what` |
//! | `limit_exceeded` | 507 | `limit` |
//! | `corrupt`, `storage`, `insecure_endpoint` | 500 | `what`, `reason` / `operation`, `reason` / `reason` |
//! | `transport`, `status`, `protocol`, `outcome_unknown` | 502 | `reason` / `status` / `reason` / `operation` |
//! | `offline` | 503 | |
//! | `timeout` | 504 | |
//!
//! Invariants:
//! - Every semantic refusal has a status the client never retries; only
//!   failures of the server or of what stands behind it (500, 502, 503,
//!   504) are retried, and a lease mutation answered so is reported as an
//!   unknown outcome.
//! - A label the client does not know (`field`, `what`, `limit`,
//!   `operation`) decodes as `"remote"`; the full text stays in `message`.

use std::io;

use serde::{Deserialize, Serialize};

use crate::error::{ControlPlaneError, ErrorCode};
use crate::lease::FencingToken;
use crate::name::NodeId;

/// The HTTP status a V1 server answers `code` with.
pub fn status_of(code: ErrorCode) -> u16 {
    match code {
        ErrorCode::Invalid => 400,
        ErrorCode::NotRegistered => 404,
        ErrorCode::LeaseHeld | ErrorCode::LeaseLost | ErrorCode::EpochExhausted => 409,
        ErrorCode::TooLarge => 413,
        ErrorCode::Overflow => 422,
        ErrorCode::LimitExceeded => 507,
        ErrorCode::Corrupt | ErrorCode::Storage | ErrorCode::InsecureEndpoint => 500,
        ErrorCode::Offline => 503,
        ErrorCode::Timeout => 504,
        // What stands behind the server failed.
        ErrorCode::Transport
        | ErrorCode::Status
        | ErrorCode::Protocol
        | ErrorCode::OutcomeUnknown => 502,
    }
}

/// The labels the client turns back into `&'static str` fields.
const LABELS: &[&str] = &[
    "node",
    "service",
    "lease",
    "address",
    "ttl",
    "metadata",
    "skew_margin",
    "body",
    "max_records",
    "max_bytes",
    "records",
    "retained bytes",
    "request queue",
    "lease expiry",
    "registration expiry",
    "state",
    "state file",
    "backup",
    "request body",
    "response",
    "open",
    "read",
    "write",
    "sync",
    "rename",
    "acquire",
    "renew",
    "release",
];

fn label(text: Option<&str>) -> &'static str {
    text.and_then(|text| LABELS.iter().find(|known| **known == text).copied())
        .unwrap_or("remote")
}

/// The body of every V1 failure.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ErrorEnvelope {
    /// The failure.
    pub error: WireError,
}

/// One failure on the wire: a stable code, a message for people, and the
/// fields of its [`ControlPlaneError`] variant.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct WireError {
    /// [`ErrorCode::as_str`].
    pub code: String,
    /// The error's `Display`.
    pub message: String,
    /// `lease_held`: the holder.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub holder: Option<NodeId>,
    /// `lease_held`: the holder's token.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token: Option<FencingToken>,
    /// `invalid`: the field.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub field: Option<String>,
    /// Why (`invalid`, `corrupt`, `storage`, `transport`, `protocol`,
    /// `insecure_endpoint`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// What (`overflow`, `too_large`, `corrupt`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub what: Option<String>,
    /// `limit_exceeded`: the limit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<String>,
    /// `too_large`: the limit in bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit_bytes: Option<u64>,
    /// `outcome_unknown`, `storage`: the operation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub operation: Option<String>,
    /// `status`: the status the server's own backend answered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
}

impl WireError {
    /// The wire form of `error`.
    pub fn from_error(error: &ControlPlaneError) -> Self {
        let mut wire = Self {
            code: error.code().as_str().to_owned(),
            message: error.to_string(),
            ..Self::default()
        };
        match error {
            ControlPlaneError::LeaseHeld { holder, token } => {
                wire.holder = Some(holder.clone());
                wire.token = Some(*token);
            }
            ControlPlaneError::Invalid { field, reason } => {
                wire.field = Some((*field).to_owned());
                wire.reason = Some(reason.clone());
            }
            ControlPlaneError::Overflow { what } => wire.what = Some((*what).to_owned()),
            ControlPlaneError::LimitExceeded { limit } => wire.limit = Some((*limit).to_owned()),
            ControlPlaneError::TooLarge { what, limit } => {
                wire.what = Some((*what).to_owned());
                wire.limit_bytes = Some(*limit);
            }
            ControlPlaneError::Corrupt { what, reason } => {
                wire.what = Some((*what).to_owned());
                wire.reason = Some(reason.clone());
            }
            ControlPlaneError::Storage { operation, source } => {
                wire.operation = Some((*operation).to_owned());
                wire.reason = Some(source.to_string());
            }
            ControlPlaneError::OutcomeUnknown { operation } => {
                wire.operation = Some((*operation).to_owned());
            }
            ControlPlaneError::Status { status } => wire.status = Some(*status),
            ControlPlaneError::Transport(reason)
            | ControlPlaneError::Protocol(reason)
            | ControlPlaneError::InsecureEndpoint { reason } => wire.reason = Some(reason.clone()),
            _ => {}
        }
        wire
    }

    /// The [`ControlPlaneError`] this wire error names.
    ///
    /// # Errors
    ///
    /// Why it names none: an unknown code, or a `lease_held` without its
    /// holder and token.
    pub fn into_error(self) -> Result<ControlPlaneError, String> {
        let code = ErrorCode::parse(&self.code)
            .ok_or_else(|| format!("unknown error code {:?}", self.code))?;
        let reason = || self.reason.clone().unwrap_or_else(|| self.message.clone());
        Ok(match code {
            ErrorCode::Offline => ControlPlaneError::Offline,
            ErrorCode::Timeout => ControlPlaneError::Timeout,
            ErrorCode::Transport => ControlPlaneError::Transport(reason()),
            ErrorCode::Status => ControlPlaneError::Status {
                status: self.status.unwrap_or(0),
            },
            ErrorCode::OutcomeUnknown => ControlPlaneError::OutcomeUnknown {
                operation: label(self.operation.as_deref()),
            },
            ErrorCode::LeaseHeld => match (self.holder, self.token) {
                (Some(holder), Some(token)) => ControlPlaneError::LeaseHeld { holder, token },
                _ => return Err("lease_held without holder and token".to_owned()),
            },
            ErrorCode::LeaseLost => ControlPlaneError::LeaseLost,
            ErrorCode::NotRegistered => ControlPlaneError::NotRegistered,
            ErrorCode::EpochExhausted => ControlPlaneError::EpochExhausted,
            ErrorCode::Overflow => ControlPlaneError::Overflow {
                what: label(self.what.as_deref()),
            },
            ErrorCode::LimitExceeded => ControlPlaneError::LimitExceeded {
                limit: label(self.limit.as_deref()),
            },
            ErrorCode::TooLarge => ControlPlaneError::TooLarge {
                what: label(self.what.as_deref()),
                limit: self.limit_bytes.unwrap_or(0),
            },
            ErrorCode::Invalid => ControlPlaneError::Invalid {
                field: label(self.field.as_deref()),
                reason: reason(),
            },
            ErrorCode::InsecureEndpoint => ControlPlaneError::InsecureEndpoint { reason: reason() },
            ErrorCode::Corrupt => ControlPlaneError::Corrupt {
                what: label(self.what.as_deref()),
                reason: reason(),
            },
            ErrorCode::Protocol => ControlPlaneError::Protocol(reason()),
            ErrorCode::Storage => ControlPlaneError::Storage {
                operation: label(self.operation.as_deref()),
                source: io::Error::other(reason()),
            },
        })
    }
}

impl ErrorEnvelope {
    /// The envelope of `error`.
    pub fn of(error: &ControlPlaneError) -> Self {
        Self {
            error: WireError::from_error(error),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::retry::Failure;

    fn samples() -> Vec<ControlPlaneError> {
        vec![
            ControlPlaneError::Offline,
            ControlPlaneError::Timeout,
            ControlPlaneError::Transport("reset".into()),
            ControlPlaneError::Status { status: 418 },
            ControlPlaneError::OutcomeUnknown { operation: "renew" },
            ControlPlaneError::LeaseHeld {
                holder: NodeId::new("node-a").expect("name"),
                token: FencingToken(7),
            },
            ControlPlaneError::LeaseLost,
            ControlPlaneError::NotRegistered,
            ControlPlaneError::EpochExhausted,
            ControlPlaneError::Overflow {
                what: "lease expiry",
            },
            ControlPlaneError::LimitExceeded { limit: "records" },
            ControlPlaneError::TooLarge {
                what: "request body",
                limit: 65_536,
            },
            ControlPlaneError::invalid("ttl", "0 ms"),
            ControlPlaneError::InsecureEndpoint {
                reason: "http off loopback".into(),
            },
            ControlPlaneError::Corrupt {
                what: "state file",
                reason: "truncated".into(),
            },
            ControlPlaneError::Protocol("bad".into()),
            ControlPlaneError::Storage {
                operation: "rename",
                source: io::Error::other("disk full"),
            },
        ]
    }

    #[test]
    fn every_code_round_trips_through_json_with_its_fields() {
        let samples = samples();
        assert_eq!(samples.len(), ErrorCode::ALL.len(), "one sample per code");
        for error in samples {
            let json = serde_json::to_vec(&ErrorEnvelope::of(&error)).expect("encodes");
            let back: ErrorEnvelope = serde_json::from_slice(&json).expect("decodes");
            let decoded = back.error.into_error().expect("known code");
            assert_eq!(decoded.code(), error.code());
            assert_eq!(decoded.to_string(), error.to_string());
        }
    }

    #[test]
    fn semantic_refusals_never_carry_a_retried_status() {
        for code in [
            ErrorCode::Invalid,
            ErrorCode::NotRegistered,
            ErrorCode::LeaseHeld,
            ErrorCode::LeaseLost,
            ErrorCode::EpochExhausted,
            ErrorCode::TooLarge,
            ErrorCode::Overflow,
            ErrorCode::LimitExceeded,
        ] {
            let status = status_of(code);
            assert!(
                !Failure::Status(status).is_retryable(),
                "{code:?} -> {status}"
            );
        }
        assert_eq!(status_of(ErrorCode::LeaseHeld), 409);
        assert_eq!(status_of(ErrorCode::NotRegistered), 404);
        assert_eq!(status_of(ErrorCode::TooLarge), 413);
        assert_eq!(status_of(ErrorCode::LimitExceeded), 507);
    }

    #[test]
    fn unknown_labels_and_codes_are_named() {
        let wire = WireError {
            code: "invalid".into(),
            message: "invalid color: red".into(),
            field: Some("color".into()),
            reason: Some("red".into()),
            ..WireError::default()
        };
        let error = wire.into_error().expect("invalid");
        assert!(matches!(
            error,
            ControlPlaneError::Invalid {
                field: "remote",
                ..
            }
        ));
        let unknown = WireError {
            code: "teapot".into(),
            ..WireError::default()
        };
        assert!(unknown
            .into_error()
            .expect_err("unknown")
            .contains("teapot"));
    }
}
