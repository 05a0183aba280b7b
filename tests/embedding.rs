//! The pools run as a child of the host's own supervision tree.

mod support;

use provider_pools::{BrokerGeneration, PoolsConfig, ProviderPools};
use ractor::{Actor, ActorProcessingErr, ActorRef, SupervisionEvent};
use tokio::sync::mpsc;

use support::{bounded, deadline};

/// A host that starts the pools under itself and forwards what it hears.
struct Host;

enum Heard {
    Terminated(ractor::ActorId, Option<String>),
    Failed(ractor::ActorId),
}

impl Actor for Host {
    type Msg = Ping;
    type State = (mpsc::Sender<Heard>, Option<ProviderPools>);
    type Arguments = mpsc::Sender<Heard>;

    async fn pre_start(
        &self,
        _: ActorRef<Ping>,
        heard: Self::Arguments,
    ) -> Result<Self::State, ActorProcessingErr> {
        Ok((heard, None))
    }

    async fn handle(
        &self,
        _: ActorRef<Ping>,
        Ping::Ask(reply): Ping,
        _: &mut Self::State,
    ) -> Result<(), ActorProcessingErr> {
        let _ = reply.send(());
        Ok(())
    }

    async fn handle_supervisor_evt(
        &self,
        _: ActorRef<Ping>,
        event: SupervisionEvent,
        (heard, _): &mut Self::State,
    ) -> Result<(), ActorProcessingErr> {
        let _ = match event {
            SupervisionEvent::ActorTerminated(cell, _, reason) => {
                heard.try_send(Heard::Terminated(cell.get_id(), reason))
            }
            SupervisionEvent::ActorFailed(cell, _) => heard.try_send(Heard::Failed(cell.get_id())),
            _ => Ok(()),
        };
        Ok(())
    }
}

async fn host_with_pools() -> (ActorRef<Ping>, ProviderPools, mpsc::Receiver<Heard>) {
    let (tx, rx) = mpsc::channel(16);
    let (host, _join) = Actor::spawn(None, Host, tx).await.expect("host starts");
    let config = PoolsConfig::new(tokio::runtime::Handle::current(), BrokerGeneration::new());
    let pools = ProviderPools::start_linked(config, host.get_cell())
        .await
        .expect("pools start under the host");
    (host, pools, rx)
}

#[tokio::test]
async fn the_registry_is_a_child_of_the_host() {
    let (host, pools, _heard) = host_with_pools().await;
    let children: Vec<_> = host.get_children().iter().map(|c| c.get_id()).collect();
    assert_eq!(children, vec![pools.registry_cell().get_id()]);
}

#[tokio::test]
async fn the_host_hears_a_clean_shutdown_as_termination() {
    let (_host, pools, mut heard) = host_with_pools().await;
    let report = pools.shutdown(deadline()).await;
    assert!(report.is_clean(), "{report:?}");
    match bounded("supervision event", heard.recv()).await {
        Some(Heard::Terminated(id, reason)) => {
            assert_eq!(id, pools.registry_cell().get_id());
            assert_eq!(reason.as_deref(), Some("shut down"));
        }
        Some(Heard::Failed(_)) => panic!("a clean shutdown is not a failure"),
        None => panic!("host dropped its channel"),
    }
}

#[tokio::test]
async fn the_host_hears_a_killed_registry() {
    let (_host, pools, mut heard) = host_with_pools().await;
    pools.registry_cell().kill();
    let event = bounded("supervision event", heard.recv()).await;
    assert!(
        matches!(&event, Some(Heard::Terminated(id, _)) | Some(Heard::Failed(id)) if *id == pools.registry_cell().get_id()),
        "the host must hear about its registry"
    );
    assert!(!pools.snapshot().is_clean());
}

/// The host above handles its registry's termination itself, so a routine
/// shutdown leaves it running (the documented way to embed under a host).
#[tokio::test]
async fn a_routine_shutdown_leaves_a_host_that_handles_its_registrys_termination_running() {
    let (host, pools, mut heard) = host_with_pools().await;
    let report = pools.shutdown(deadline()).await;
    assert!(report.is_clean(), "{report:?}");
    let event = bounded("supervision event", heard.recv()).await;
    assert!(matches!(event, Some(Heard::Terminated(..))));
    // The host answers a message after the event: it is still running.
    let alive = ractor::call_t!(host, Ping::Ask, 5_000);
    assert!(alive.is_ok(), "the host answers after its registry stopped");
    assert_eq!(host.get_status(), ractor::ActorStatus::Running);
}

/// A host that keeps ractor's default supervision handler.
struct DefaultHost;

/// Messages of both hosts: a ping answered while the host runs.
enum Ping {
    Ask(ractor::RpcReplyPort<()>),
}

impl Actor for DefaultHost {
    type Msg = Ping;
    type State = ();
    type Arguments = ();

    async fn pre_start(&self, _: ActorRef<Ping>, _: ()) -> Result<(), ActorProcessingErr> {
        Ok(())
    }

    async fn handle(
        &self,
        _: ActorRef<Ping>,
        Ping::Ask(reply): Ping,
        _: &mut (),
    ) -> Result<(), ActorProcessingErr> {
        let _ = reply.send(());
        Ok(())
    }
}

/// The trap the docs of `start_linked` warn about: ractor's default
/// `handle_supervisor_evt` stops a supervisor when a child terminates, so
/// a host that does not handle its registry's termination is stopped by a
/// routine shutdown.
#[tokio::test]
async fn a_host_with_ractors_default_handler_stops_when_its_registry_shuts_down() {
    let (host, join) = Actor::spawn(None, DefaultHost, ())
        .await
        .expect("host starts");
    let config = PoolsConfig::new(tokio::runtime::Handle::current(), BrokerGeneration::new());
    let pools = ProviderPools::start_linked(config, host.get_cell())
        .await
        .expect("pools start under the host");
    let report = pools.shutdown(deadline()).await;
    assert!(report.is_clean(), "{report:?}");
    bounded("the default handler stops the host", join)
        .await
        .expect("the host's task ends without panicking");
    assert_eq!(host.get_status(), ractor::ActorStatus::Stopped);
}
