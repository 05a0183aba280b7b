//! A node file in `Debug`: its declarations with every URL-like value
//! through `provider_pools_redact`, and never the file's text.

use std::collections::BTreeMap;
use std::fmt;

use provider_pools_redact::{redact_setting, redact_userinfo};

use super::{cluster, NodeConfig, ProviderDecl};

impl fmt::Debug for NodeConfig {
    /// The declarations, redacted; the file's text is not printed.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("NodeConfig")
            .field("limits", &self.limits)
            .field("capabilities", &self.capabilities)
            .field("providers", &self.providers)
            .field(
                "cluster",
                &self.cluster.as_ref().map(|c| cluster::Shown(c.get_ref())),
            )
            .field("text_bytes", &self.text.len())
            .finish()
    }
}

impl fmt::Debug for ProviderDecl {
    /// Authority, origins and settings through `provider_pools_redact`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let origins: Vec<_> = self
            .origins
            .get_ref()
            .iter()
            .map(|o| redact_userinfo(o))
            .collect();
        let settings: BTreeMap<_, _> = self
            .settings
            .iter()
            .map(|(key, value)| (key, redact_setting(key, value)))
            .collect();
        f.debug_struct("ProviderDecl")
            .field("id", self.id.get_ref())
            .field("kind", &self.kind)
            .field("service", self.service.get_ref())
            .field("authority", &redact_userinfo(self.authority.get_ref()))
            .field("origins", &origins)
            .field(
                "credential_env",
                &self.credential_env.as_ref().map(|v| v.get_ref()),
            )
            .field("settings", &settings)
            .finish()
    }
}
