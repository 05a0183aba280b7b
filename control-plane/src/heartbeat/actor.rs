//! The heartbeat actor itself: `Msg`, `State`, and `handle` as a match.

use std::sync::Arc;

use provider_pools_mailbox::Envelope;
use ractor::{Actor, ActorProcessingErr, ActorRef};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

use crate::client::ControlPlane;
use crate::error::ControlPlaneError;
use crate::heartbeat::policy::{HeartbeatPolicy, HeartbeatStatus};
use crate::presence::Registration;

pub(crate) struct HeartbeatActor;

pub(crate) struct Args {
    pub(crate) client: Arc<dyn ControlPlane>,
    pub(crate) registration: Registration,
    pub(crate) policy: HeartbeatPolicy,
}

/// The actor's messages.
pub(crate) enum Msg {
    /// Time to register or heartbeat (self-sent; one in flight).
    Tick,
    /// Report the status.
    Status {
        reply: oneshot::Sender<HeartbeatStatus>,
    },
    /// Deregister and stop.
    Stop {
        reply: oneshot::Sender<Result<(), ControlPlaneError>>,
    },
}

pub(crate) struct State {
    client: Arc<dyn ControlPlane>,
    registration: Registration,
    policy: HeartbeatPolicy,
    status: HeartbeatStatus,
    next_tick: Option<JoinHandle<Result<(), ractor::MessagingErr<Envelope<Msg>>>>>,
}

impl State {
    async fn tick(&mut self, myself: &ActorRef<Envelope<Msg>>) {
        let result = if self.status.registered {
            match self.client.heartbeat(self.registration.key().clone()).await {
                Ok(()) => {
                    self.status.beats += 1;
                    Ok(())
                }
                Err(ControlPlaneError::NotRegistered) => self.register().await,
                Err(error) => Err(error),
            }
        } else {
            self.register().await
        };
        match result {
            Ok(()) => {
                self.status.registered = true;
                self.status.consecutive_failures = 0;
            }
            Err(error) => {
                tracing::warn!(
                    target: "provider_pools::control_plane::heartbeat",
                    service = %self.registration.service(),
                    node = %self.registration.node(),
                    code = error.code().as_str(),
                    "heartbeat failed"
                );
                self.status.registered =
                    !matches!(error, ControlPlaneError::NotRegistered) && self.status.registered;
                self.status.failures += 1;
                self.status.consecutive_failures =
                    self.status.consecutive_failures.saturating_add(1);
                self.status.last_error = Some(error.code());
            }
        }
        self.schedule(myself);
    }

    async fn register(&mut self) -> Result<(), ControlPlaneError> {
        self.client.register(self.registration.clone()).await?;
        self.status.registrations += 1;
        Ok(())
    }

    fn schedule(&mut self, myself: &ActorRef<Envelope<Msg>>) {
        self.next_tick =
            Some(myself.send_after(self.policy.interval, || Envelope::tick(Msg::Tick)));
    }

    async fn stop(
        &mut self,
        myself: &ActorRef<Envelope<Msg>>,
        reply: oneshot::Sender<Result<(), ControlPlaneError>>,
    ) {
        if let Some(tick) = self.next_tick.take() {
            tick.abort();
        }
        let result = self
            .client
            .deregister(self.registration.key().clone())
            .await;
        self.status.registered = false;
        let _ = reply.send(result);
        myself.stop(None);
    }
}

impl Actor for HeartbeatActor {
    type Msg = Envelope<Msg>;
    type State = State;
    type Arguments = Args;

    /// Registers before the start returns: a started heartbeat has made its
    /// first attempt (its failure is counted, not fatal).
    async fn pre_start(
        &self,
        myself: ActorRef<Self::Msg>,
        args: Args,
    ) -> Result<State, ActorProcessingErr> {
        let mut state = State {
            client: args.client,
            registration: args.registration,
            policy: args.policy,
            status: HeartbeatStatus::default(),
            next_tick: None,
        };
        state.tick(&myself).await;
        Ok(state)
    }

    async fn handle(
        &self,
        myself: ActorRef<Self::Msg>,
        msg: Self::Msg,
        state: &mut State,
    ) -> Result<(), ActorProcessingErr> {
        match msg.open() {
            Msg::Tick => state.tick(&myself).await,
            Msg::Status { reply } => {
                let _ = reply.send(state.status);
            }
            Msg::Stop { reply } => state.stop(&myself, reply).await,
        }
        Ok(())
    }

    async fn post_stop(
        &self,
        _myself: ActorRef<Self::Msg>,
        state: &mut State,
    ) -> Result<(), ActorProcessingErr> {
        if let Some(tick) = state.next_tick.take() {
            tick.abort();
        }
        Ok(())
    }
}
