//! A host actor that owns the provider pools as a supervised child.
//!
//! The host starts the registry linked under itself, installs a provider,
//! rotates its credential while a lease holds the first epoch, shuts the pools
//! down and receives the registry's supervision event when it stops. The
//! process exits non-zero unless the shutdown report is clean.
//!
//! Run with `cargo run --example embedded`.

use std::process::ExitCode;
use std::time::Duration;

use provider_pools::{
    Authority, BrokerGeneration, Credential, Epoch, Installation, OriginKind, OriginSlot,
    PoolsConfig, ProviderConfig, ProviderId, ProviderPools, ServiceName, Snapshot,
};
use ractor::{Actor, ActorProcessingErr, ActorRef, SupervisionEvent};
use tokio::sync::oneshot;

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// The host runtime's actor; the pools run as its child.
struct Host;

struct HostState {
    pools: ProviderPools,
    report: Option<oneshot::Sender<Snapshot>>,
    last: Option<Snapshot>,
}

enum HostMsg {
    /// Exercise the pools, then shut them down.
    Run,
}

fn installation(expected: u64, token: &[u8]) -> Result<Installation, BoxError> {
    let config = ProviderConfig::new(ServiceName::new("weather/v1")?)
        .with_origin(
            OriginSlot::new(0),
            OriginKind::Http,
            "https://api.weather.example:443",
        )
        .with_origin(
            OriginSlot::new(1),
            OriginKind::Http,
            "https://backup.weather.example:443",
        );
    Ok(Installation {
        provider: ProviderId::new("weather")?,
        authority: Authority::new("https://api.weather.example")?,
        expected: Epoch::new(expected),
        credential: Credential::from_slice(token)?,
        config,
    })
}

async fn exercise(pools: &ProviderPools) -> Result<Snapshot, BoxError> {
    let provider = ProviderId::new("weather")?;
    let first = pools.install(installation(0, b"token-one")?).await?;
    println!(
        "installed {} epoch {} digest {}",
        first.provider, first.epoch, first.digest
    );

    let slot = first
        .slot(OriginSlot::new(0))
        .ok_or("slot 0 is configured")?;
    let in_flight = pools.client(&provider, &slot, OriginKind::Http)?;
    println!("leased {:?}", in_flight);

    let second = pools
        .install(installation(first.epoch.get(), b"token-two")?)
        .await?;
    println!(
        "rotated to epoch {} (same digest: {})",
        second.epoch,
        first.digest == second.digest
    );
    println!("while epoch 1 is leased: {:?}", pools.snapshot());
    drop(in_flight);

    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    Ok(pools.shutdown(deadline).await)
}

impl Actor for Host {
    type Msg = HostMsg;
    type State = HostState;
    type Arguments = oneshot::Sender<Snapshot>;

    async fn pre_start(
        &self,
        myself: ActorRef<HostMsg>,
        report: oneshot::Sender<Snapshot>,
    ) -> Result<HostState, ActorProcessingErr> {
        let config = PoolsConfig::new(tokio::runtime::Handle::current(), BrokerGeneration::new());
        let pools = ProviderPools::start_linked(config, myself.get_cell()).await?;
        Ok(HostState {
            pools,
            report: Some(report),
            last: None,
        })
    }

    async fn handle(
        &self,
        _myself: ActorRef<HostMsg>,
        msg: HostMsg,
        state: &mut HostState,
    ) -> Result<(), ActorProcessingErr> {
        match msg {
            HostMsg::Run => {
                let report = exercise(&state.pools).await?;
                println!("shutdown report: {report:?}");
                state.last = Some(report);
            }
        }
        Ok(())
    }

    async fn handle_supervisor_evt(
        &self,
        myself: ActorRef<HostMsg>,
        event: SupervisionEvent,
        state: &mut HostState,
    ) -> Result<(), ActorProcessingErr> {
        match event {
            SupervisionEvent::ActorTerminated(cell, _, reason) => {
                println!(
                    "supervision: registry {} terminated ({reason:?})",
                    cell.get_id()
                );
                let report = state.last.unwrap_or_else(|| state.pools.snapshot());
                if let Some(tx) = state.report.take() {
                    let _ = tx.send(report);
                }
                myself.stop(None);
            }
            SupervisionEvent::ActorFailed(cell, err) => {
                println!("supervision: registry {} failed: {err}", cell.get_id());
                if let Some(tx) = state.report.take() {
                    let _ = tx.send(state.pools.snapshot());
                }
                myself.stop(None);
            }
            _ => {}
        }
        Ok(())
    }
}

#[tokio::main]
async fn main() -> ExitCode {
    let (report_tx, report_rx) = oneshot::channel();
    let (host, join) = match Actor::spawn(None, Host, report_tx).await {
        Ok(spawned) => spawned,
        Err(err) => {
            eprintln!("host failed to start: {err}");
            return ExitCode::FAILURE;
        }
    };
    if host.send_message(HostMsg::Run).is_err() {
        eprintln!("host stopped before running");
        return ExitCode::FAILURE;
    }
    let report = tokio::time::timeout(Duration::from_secs(10), report_rx).await;
    let _ = join.await;
    match report {
        Ok(Ok(report)) if report.is_clean() => {
            println!("clean shutdown");
            ExitCode::SUCCESS
        }
        Ok(Ok(report)) => {
            eprintln!("shutdown not clean: {report:?}");
            ExitCode::FAILURE
        }
        _ => {
            eprintln!("no shutdown report within 10 s");
            ExitCode::FAILURE
        }
    }
}
