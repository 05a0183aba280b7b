//! One campaign: the steps of winning, keeping and losing one lease.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;
use tokio::time::Instant;

use crate::client::ControlPlane;
use crate::client::{acquire_guarded, renew_guarded};
use crate::coordinator::config::{CoordinatorConfig, Leadership};
use crate::error::ControlPlaneError;
use crate::lease::{LeadershipGuard, LeaseKey, LeaseRequest};

/// A lease campaigned for, its guard when leading, and its publisher.
pub(crate) struct Campaign {
    pub(crate) key: LeaseKey,
    pub(crate) generation: u64,
    guard: Option<LeadershipGuard>,
    publisher: watch::Sender<Leadership>,
}

impl Campaign {
    pub(crate) fn new(key: LeaseKey, generation: u64) -> Self {
        let (publisher, _) = watch::channel(Leadership::Follower { holder: None });
        Self {
            key,
            generation,
            guard: None,
            publisher,
        }
    }

    pub(crate) fn subscribe(&self) -> watch::Receiver<Leadership> {
        self.publisher.subscribe()
    }

    pub(crate) fn leadership(&self) -> Leadership {
        self.publisher.borrow().clone()
    }

    /// One step: renew when leading, acquire when not; returns when the
    /// next step is due.
    pub(crate) async fn step(
        &mut self,
        client: &Arc<dyn ControlPlane>,
        config: &CoordinatorConfig,
    ) -> Duration {
        if let Some(guard) = &self.guard {
            if guard.check().is_err() {
                self.step_down(None);
            }
        }
        match self.guard.as_mut() {
            Some(guard) => match renew_guarded(client.as_ref(), guard).await {
                Ok(()) => {
                    self.publish_leader();
                    config.renew_every
                }
                Err(ControlPlaneError::LeaseLost) => {
                    self.step_down(None);
                    Duration::ZERO
                }
                Err(error) => {
                    tracing::warn!(
                        target: "provider_pools::control_plane::coordinator",
                        lease = %self.key,
                        code = error.code().as_str(),
                        "renewal failed; leading until safe_until unless one succeeds"
                    );
                    let left = guard.safe_until().saturating_duration_since(Instant::now());
                    config.renew_every.min(left)
                }
            },
            None => self.campaign(client, config).await,
        }
    }

    async fn campaign(
        &mut self,
        client: &Arc<dyn ControlPlane>,
        config: &CoordinatorConfig,
    ) -> Duration {
        let request = LeaseRequest {
            key: self.key.clone(),
            holder: config.node.clone(),
            ttl: config.ttl,
        };
        match acquire_guarded(client.as_ref(), request, config.skew).await {
            Ok(guard) => {
                self.guard = Some(guard);
                self.publish_leader();
                config.renew_every
            }
            Err(ControlPlaneError::LeaseHeld { holder, .. }) => {
                self.publish(Leadership::Follower {
                    holder: Some(holder),
                });
                config.retry_every
            }
            Err(error) => {
                tracing::warn!(
                    target: "provider_pools::control_plane::coordinator",
                    lease = %self.key,
                    code = error.code().as_str(),
                    "acquisition failed"
                );
                self.publish(Leadership::Follower { holder: None });
                config.retry_every
            }
        }
    }

    /// Releases the lease if leading; the campaign ends either way.
    pub(crate) async fn resign(
        &mut self,
        client: &Arc<dyn ControlPlane>,
    ) -> Result<(), ControlPlaneError> {
        let Some(guard) = self.guard.take() else {
            self.publish(Leadership::Follower { holder: None });
            return Ok(());
        };
        self.publish(Leadership::Follower { holder: None });
        client.release(guard.grant().clone()).await
    }

    fn step_down(&mut self, holder: Option<crate::name::NodeId>) {
        self.guard = None;
        self.publish(Leadership::Follower { holder });
    }

    fn publish_leader(&self) {
        if let Some(guard) = &self.guard {
            self.publish(Leadership::Leader {
                token: guard.token(),
                safe_until: guard.safe_until(),
            });
        }
    }

    fn publish(&self, leadership: Leadership) {
        self.publisher.send_if_modified(|current| {
            let changed = *current != leadership;
            *current = leadership;
            changed
        });
    }
}
