//! The coordinator actor itself: `Msg`, `State`, and `handle` as a match.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use provider_pools_mailbox::Envelope;
use ractor::{Actor, ActorProcessingErr, ActorRef, MessagingErr};
use tokio::sync::{oneshot, watch};
use tokio::task::JoinHandle;

use crate::client::ControlPlane;
use crate::coordinator::campaign::Campaign;
use crate::coordinator::config::{CoordinatorConfig, Leadership};
use crate::error::ControlPlaneError;
use crate::lease::LeaseKey;

pub(crate) struct CoordinatorActor;

pub(crate) struct Args {
    pub(crate) client: Arc<dyn ControlPlane>,
    pub(crate) config: CoordinatorConfig,
}

type Reply<T> = oneshot::Sender<T>;

/// The actor's messages.
pub(crate) enum Msg {
    /// Start (or join) the campaign for a lease.
    Campaign {
        key: LeaseKey,
        reply: Reply<Result<watch::Receiver<Leadership>, ControlPlaneError>>,
    },
    /// End the campaign for a lease, releasing it if held.
    Resign {
        key: LeaseKey,
        reply: Reply<Result<(), ControlPlaneError>>,
    },
    /// Every campaign's standing.
    Status {
        reply: Reply<Vec<(LeaseKey, Leadership)>>,
    },
    /// Resign every campaign, then stop.
    Stop {
        reply: Reply<Vec<(LeaseKey, Result<(), ControlPlaneError>)>>,
    },
    /// A campaign's next step is due (self-sent; one in flight per campaign).
    Step { key: LeaseKey, generation: u64 },
}

type Tick = JoinHandle<Result<(), MessagingErr<Envelope<Msg>>>>;

pub(crate) struct State {
    client: Arc<dyn ControlPlane>,
    config: CoordinatorConfig,
    campaigns: BTreeMap<LeaseKey, (Campaign, Option<Tick>)>,
    generations: u64,
}

impl State {
    async fn campaign(
        &mut self,
        myself: &ActorRef<Envelope<Msg>>,
        key: LeaseKey,
    ) -> Result<watch::Receiver<Leadership>, ControlPlaneError> {
        if let Some((campaign, _)) = self.campaigns.get(&key) {
            return Ok(campaign.subscribe());
        }
        if self.campaigns.len() >= self.config.max_campaigns {
            return Err(ControlPlaneError::LimitExceeded { limit: "campaigns" });
        }
        self.generations += 1;
        let campaign = Campaign::new(key.clone(), self.generations);
        let receiver = campaign.subscribe();
        self.campaigns.insert(key.clone(), (campaign, None));
        self.step(myself, key, self.generations).await;
        Ok(receiver)
    }

    async fn step(&mut self, myself: &ActorRef<Envelope<Msg>>, key: LeaseKey, generation: u64) {
        let Some((campaign, tick)) = self.campaigns.get_mut(&key) else {
            return;
        };
        if campaign.generation != generation {
            return;
        }
        let next = campaign.step(&self.client, &self.config).await;
        *tick = Some(schedule(myself, next, key, generation));
    }

    async fn resign(&mut self, key: &LeaseKey) -> Result<(), ControlPlaneError> {
        let Some((mut campaign, tick)) = self.campaigns.remove(key) else {
            return Ok(());
        };
        if let Some(tick) = tick {
            tick.abort();
        }
        campaign.resign(&self.client).await
    }

    fn status(&self) -> Vec<(LeaseKey, Leadership)> {
        self.campaigns
            .iter()
            .map(|(key, (campaign, _))| (key.clone(), campaign.leadership()))
            .collect()
    }

    async fn stop(&mut self) -> Vec<(LeaseKey, Result<(), ControlPlaneError>)> {
        let keys: Vec<LeaseKey> = self.campaigns.keys().cloned().collect();
        let mut results = Vec::with_capacity(keys.len());
        for key in keys {
            let result = self.resign(&key).await;
            results.push((key, result));
        }
        results
    }
}

fn schedule(
    myself: &ActorRef<Envelope<Msg>>,
    after: Duration,
    key: LeaseKey,
    generation: u64,
) -> Tick {
    myself.send_after(after, move || Envelope::tick(Msg::Step { key, generation }))
}

impl Actor for CoordinatorActor {
    type Msg = Envelope<Msg>;
    type State = State;
    type Arguments = Args;

    async fn pre_start(
        &self,
        _myself: ActorRef<Self::Msg>,
        args: Args,
    ) -> Result<State, ActorProcessingErr> {
        Ok(State {
            client: args.client,
            config: args.config,
            campaigns: BTreeMap::new(),
            generations: 0,
        })
    }

    async fn handle(
        &self,
        myself: ActorRef<Self::Msg>,
        msg: Self::Msg,
        state: &mut State,
    ) -> Result<(), ActorProcessingErr> {
        match msg.open() {
            Msg::Campaign { key, reply } => {
                let _ = reply.send(state.campaign(&myself, key).await);
            }
            Msg::Resign { key, reply } => {
                let _ = reply.send(state.resign(&key).await);
            }
            Msg::Status { reply } => {
                let _ = reply.send(state.status());
            }
            Msg::Stop { reply } => {
                let _ = reply.send(state.stop().await);
                myself.stop(None);
            }
            Msg::Step { key, generation } => state.step(&myself, key, generation).await,
        }
        Ok(())
    }

    async fn post_stop(
        &self,
        _myself: ActorRef<Self::Msg>,
        state: &mut State,
    ) -> Result<(), ActorProcessingErr> {
        for (_, tick) in state.campaigns.values_mut() {
            if let Some(tick) = tick.take() {
                tick.abort();
            }
        }
        Ok(())
    }
}
