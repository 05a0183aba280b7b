//! The node file's `[cluster]` section: checked against the file's own
//! providers, and shown in `Debug` without userinfo.

use std::fmt;

use provider_pools_cluster::{ClusterConfig, ClusterError, ClusterSection};
use provider_pools_redact::redact_userinfo;

use super::{line_of, NodeConfig, NodeConfigError};

impl NodeConfig {
    /// The `[cluster]` section, checked: `None` when the node runs alone.
    /// Each `[[cluster.ceiling]]` must name a declared provider, and each
    /// `[[cluster.rate]]` a declared provider with a `rate`.
    ///
    /// ```
    /// use provider_pools::node::NodeConfig;
    ///
    /// let config = NodeConfig::parse(r#"
    /// [[provider]]
    /// id = "weather"
    /// kind = "http"
    /// service = "weather/v1"
    /// authority = "http://127.0.0.1:8080"
    /// origins = ["http://127.0.0.1:8080"]
    ///
    /// [cluster]
    /// node = "node-a"
    /// members = ["node-a", "node-b"]
    /// endpoints = ["http://127.0.0.1:2379"]
    ///
    /// [[cluster.ceiling]]
    /// provider = "weather"
    /// running = 100
    /// floor = 10
    /// "#)?;
    /// let cluster = config.cluster()?.expect("a cluster section");
    /// assert_eq!(cluster.ceilings[0].running, 100);
    ///
    /// let config = NodeConfig::parse(r#"
    /// [[provider]]
    /// id = "weather"
    /// kind = "http"
    /// service = "weather/v1"
    /// authority = "http://127.0.0.1:8080"
    /// origins = ["http://127.0.0.1:8080"]
    /// rate = { requests = 50, period_ms = 1000, burst = 5 }
    ///
    /// [cluster]
    /// node = "node-a"
    /// members = ["node-a", "node-b"]
    /// endpoints = ["http://127.0.0.1:2379"]
    ///
    /// [[cluster.rate]]
    /// provider = "weather"
    /// requests = 60
    /// period_ms = 1000
    /// floor = 10
    /// "#)?;
    /// let cluster = config.cluster()?.expect("a cluster section");
    /// assert_eq!(cluster.rates[0].dynamic_pool(2), 40);
    /// # Ok::<(), provider_pools::node::NodeConfigError>(())
    /// ```
    ///
    /// # Errors
    ///
    /// [`NodeConfigError::Invalid`] naming the `cluster.…` key and the
    /// section's line.
    pub fn cluster(&self) -> Result<Option<ClusterConfig>, NodeConfigError> {
        let Some(section) = &self.cluster else {
            return Ok(None);
        };
        let line = line_of(&self.text, &section.span());
        let invalid = |key, message| NodeConfigError::Invalid { key, line, message };
        let config = section.get_ref().check().map_err(|error| match error {
            ClusterError::Config { key, message } => invalid(key, message),
            other => invalid("cluster", other.to_string()),
        })?;
        for ceiling in &config.ceilings {
            let declared = self
                .providers
                .iter()
                .any(|p| p.id.get_ref() == ceiling.provider.as_str());
            if !declared {
                return Err(invalid(
                    "cluster.ceiling.provider",
                    format!("{} is not a declared [[provider]]", ceiling.provider),
                ));
            }
        }
        for rate in &config.rates {
            let with_rate = self
                .providers
                .iter()
                .any(|p| p.id.get_ref() == rate.provider.as_str() && p.rate.is_some());
            if !with_rate {
                return Err(invalid(
                    "cluster.rate.provider",
                    format!(
                        "{} is not a declared [[provider]] with a rate",
                        rate.provider
                    ),
                ));
            }
        }
        Ok(Some(config))
    }
}

/// A cluster section in `Debug`: endpoints through `provider_pools_redact`.
pub(super) struct Shown<'a>(pub(super) &'a ClusterSection);

impl fmt::Debug for Shown<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let endpoints: Vec<_> = self
            .0
            .endpoints
            .iter()
            .map(|e| redact_userinfo(e))
            .collect();
        f.debug_struct("ClusterSection")
            .field("node", &self.0.node)
            .field("members", &self.0.members)
            .field("endpoints", &endpoints)
            .field("ceilings", &self.0.ceilings)
            .field("rates", &self.0.rates)
            .finish_non_exhaustive()
    }
}
