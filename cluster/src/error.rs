//! [`ClusterError`]: everything the cluster agent can refuse or fail at,
//! each naming what was wrong.

use provider_pools_actors::{LowerError, RateError};
use provider_pools_control_plane::ControlPlaneError;

/// A cluster agent's error.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ClusterError {
    /// A configuration value that does not validate.
    #[error("cluster configuration: `{key}`: {message}")]
    Config {
        /// The key, e.g. `cluster.ceiling.floor`.
        key: &'static str,
        /// What is wrong.
        message: String,
    },
    /// A value could not be encoded for the board.
    #[error("cannot encode the {what}: {reason}")]
    Encode {
        /// `report` or `table`.
        what: &'static str,
        /// Why.
        reason: String,
    },
    /// A value read from the board does not decode.
    #[error("the {what} read from the board does not decode: {reason}")]
    Decode {
        /// `report` or `table`.
        what: &'static str,
        /// Why.
        reason: String,
    },
    /// The control plane refused or failed a call.
    #[error("the control plane refused or failed a call")]
    ControlPlane(#[from] ControlPlaneError),
    /// The engine refused a ceiling.
    #[error("the engine refused a ceiling")]
    Engine(#[from] LowerError),
    /// The engine refused a rate.
    #[error("the engine refused a rate")]
    Rate(#[from] RateError),
    /// The agent has stopped.
    #[error("the cluster agent has stopped")]
    Stopped,
}

impl ClusterError {
    pub(crate) fn config(key: &'static str, message: impl Into<String>) -> Self {
        Self::Config {
            key,
            message: message.into(),
        }
    }

    pub(crate) fn decode(what: &'static str, reason: impl Into<String>) -> Self {
        Self::Decode {
            what,
            reason: reason.into(),
        }
    }
}
