//! Starting a node from its file: the pools, then every provider, all or
//! nothing.

use std::collections::BTreeMap;
use std::time::Duration;

use super::{NodeConfig, NodeConfigError};
use crate::{InstallReceipt, PoolsConfig, ProviderId, ProviderPools, Snapshot};

/// How long [`NodeConfig::start`] waits for the registry it started to shut
/// down after an install failed: 5 s.
pub const ROLLBACK_DEADLINE: Duration = Duration::from_secs(5);

/// Starting a node failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum NodeError {
    /// The configuration is unusable.
    #[error(transparent)]
    Config(#[from] NodeConfigError),
    /// The pools did not start.
    #[error(transparent)]
    Start(#[from] crate::StartError),
    /// A provider was refused; the registry started for the node was then
    /// shut down, so no provider stays installed.
    #[error("installing provider {provider} failed")]
    Install {
        /// The provider.
        provider: String,
        /// Why.
        source: crate::InstallError,
        /// The report of the rollback's shutdown, taken after it: clean
        /// when every provider installed before the failure is gone and
        /// the registry stopped within [`ROLLBACK_DEADLINE`].
        rollback: Box<Snapshot>,
    },
    /// A provider's rate was refused after its install; the registry was
    /// then shut down, as for [`NodeError::Install`].
    #[error("configuring provider {provider}'s rate failed")]
    Rate {
        /// The provider.
        provider: String,
        /// Why.
        source: crate::RateError,
        /// The report of the rollback's shutdown.
        rollback: Box<Snapshot>,
    },
}

impl NodeConfig {
    /// Starts the pools with this file's limits, and its fairness policy
    /// and minimum shares where its `[admission]` section sets them (the
    /// rest of `base` as given), and installs every provider section, all
    /// or nothing.
    /// Capabilities construct nothing.
    ///
    /// The steps: validate every section ([`NodeConfig::installations`],
    /// [`NodeConfig::rates`], nothing started yet), start the pools,
    /// install each provider in file order, then configure the rates of
    /// those that have one. When an install fails, the registry is shut down
    /// (waiting at most [`ROLLBACK_DEADLINE`]) before the error is
    /// returned, so no provider stays installed on a registry no handle
    /// reaches.
    ///
    /// # Cancel safety
    ///
    /// Not cancel safe: call it to completion. Dropping the future while
    /// the pools start behaves as a dropped [`ProviderPools::start`] (the
    /// generation may stay claimed); dropping it during the installs or the
    /// rollback leaves the started registry running (or draining), with
    /// the providers installed so far, and no handle to shut it down.
    ///
    /// # Errors
    ///
    /// [`NodeError::Config`] before anything starts; [`NodeError::Start`]
    /// when the pools do not start; [`NodeError::Install`] (or
    /// [`NodeError::Rate`]) naming the provider refused, after the
    /// rollback, with the rollback's report.
    pub async fn start(&self, base: PoolsConfig) -> Result<Node, NodeError> {
        let installations = self.installations()?;
        let rates = self.rates()?;
        let fairness = self.fairness()?.unwrap_or(base.fairness);
        let min_shares = self.min_shares()?.unwrap_or(base.min_shares);
        let pools = ProviderPools::start(PoolsConfig {
            limits: self.limits,
            fairness,
            min_shares,
            ..base
        })
        .await?;
        let mut receipts = BTreeMap::new();
        for installation in installations {
            let provider = installation.provider.clone();
            match pools.install(installation).await {
                Ok(receipt) => {
                    receipts.insert(provider, receipt);
                }
                Err(source) => {
                    let deadline = tokio::time::Instant::now() + ROLLBACK_DEADLINE;
                    let rollback = Box::new(pools.shutdown(deadline).await);
                    return Err(NodeError::Install {
                        provider: provider.to_string(),
                        source,
                        rollback,
                    });
                }
            }
        }
        for (provider, rate) in rates {
            if let Err(source) = pools.configure_provider_rate(&provider, rate) {
                let deadline = tokio::time::Instant::now() + ROLLBACK_DEADLINE;
                let rollback = Box::new(pools.shutdown(deadline).await);
                return Err(NodeError::Rate {
                    provider: provider.to_string(),
                    source,
                    rollback,
                });
            }
        }
        Ok(Node { pools, receipts })
    }
}

/// A started node: its pools and the receipts of the providers it
/// installed, whose typed slots its adapters use.
#[derive(Debug)]
pub struct Node {
    /// The registry.
    pub pools: ProviderPools,
    /// One receipt per installed provider.
    pub receipts: BTreeMap<ProviderId, InstallReceipt>,
}
