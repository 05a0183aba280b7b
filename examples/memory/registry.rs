//! The set-up: a loopback listener, a dialer, and registries whose
//! providers hold the queued requests and the idle connections.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use provider_pools::{
    AdmitRequest, Authority, BrokerGeneration, Bytes, Credential, DialError, DialErrorKind,
    DialTarget, Dialer, Epoch, ExecutionPlan, InstallReceipt, Installation, LedgerId, Limits,
    OriginKind, OriginSlot, PolicyTable, PoolsConfig, ProviderConfig, ProviderId, ProviderPools,
    RunningRequest, ServiceName, SessionId, TenantId,
};
use tokio::net::TcpStream;
use tokio::time::Instant;

use crate::{BoxError, Counts, CLIENTS, PROVIDERS};

/// A loopback listener on its own thread that accepts and holds sockets.
pub(crate) struct Listener {
    pub(crate) addr: std::net::SocketAddr,
    stop: Arc<AtomicBool>,
    thread: std::thread::JoinHandle<usize>,
}

impl Listener {
    pub(crate) fn start() -> Result<Self, BoxError> {
        let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
        let addr = listener.local_addr()?;
        let stop = Arc::new(AtomicBool::new(false));
        let stopping = Arc::clone(&stop);
        let thread = std::thread::spawn(move || {
            let mut held = Vec::with_capacity(16_384);
            while let Ok((socket, _)) = listener.accept() {
                if stopping.load(Ordering::Acquire) {
                    break;
                }
                held.push(socket);
            }
            held.len()
        });
        Ok(Self { addr, stop, thread })
    }

    /// Stops accepting and closes every accepted socket; returns how many.
    pub(crate) fn stop(self) -> usize {
        self.stop.store(true, Ordering::Release);
        // Wake the blocking accept.
        let _ = std::net::TcpStream::connect(self.addr);
        self.thread.join().unwrap_or(0)
    }
}

/// Dials real loopback TCP connections.
#[derive(Debug, Clone)]
pub(crate) struct Loopback;

impl Dialer for Loopback {
    type Conn = TcpStream;

    async fn dial(&self, target: DialTarget<'_>) -> Result<TcpStream, DialError> {
        TcpStream::connect(target.target)
            .await
            .map_err(|e| DialError::new(DialErrorKind::Other, e.to_string()))
    }
}

/// One registry with the provider whose four clients hold the connections.
pub(crate) struct Registry {
    pub(crate) pools: ProviderPools,
    policy: PolicyTable,
    conn: InstallReceipt,
    /// The first registry's waiters' providers.
    pub(crate) queued: Vec<InstallReceipt>,
}

pub(crate) fn installation(name: &str, origins: &[String]) -> Result<Installation, BoxError> {
    let config = origins.iter().enumerate().try_fold(
        ProviderConfig::new(ServiceName::new(name)?),
        |config, (slot, target)| -> Result<_, BoxError> {
            Ok(config.with_origin(
                OriginSlot::new(u32::try_from(slot)?),
                OriginKind::Http,
                target.clone(),
            ))
        },
    )?;
    Ok(Installation {
        provider: ProviderId::new(name)?,
        authority: Authority::new(format!("http://{name}.example"))?,
        expected: Epoch::ZERO,
        credential: Credential::from_slice(b"memory")?,
        config,
    })
}

pub(crate) fn plan(tenant: &TenantId, session: u64) -> ExecutionPlan {
    let far = Instant::now() + Duration::from_secs(3_600);
    ExecutionPlan::seal(
        tenant.clone(),
        SessionId::new(session),
        LedgerId::new(1),
        far,
        far,
    )
}

impl Registry {
    pub(crate) async fn start(
        counts: Counts,
        listener: &str,
        with_queue: bool,
    ) -> Result<Self, BoxError> {
        let per_registry = (CLIENTS * counts.per_client) as u32;
        let limits = Limits {
            connections: per_registry,
            connections_per_client: counts.per_client as u32,
            // One tenant stands for every caller here.
            connections_per_tenant: counts.per_client as u32,
            idle_connections: per_registry,
            pending_requests: Limits::CEILING.pending_requests,
            requests_per_tenant: Limits::CEILING.requests_per_tenant,
            requests_per_provider: Limits::CEILING.requests_per_provider,
            running_requests: CLIENTS as u32,
            running_per_tenant: CLIENTS as u32,
            running_per_provider: CLIENTS as u32,
            queue_age: Limits::CEILING.queue_age,
            idle_age: Limits::CEILING.idle_age,
            ..Limits::DEFAULT
        };
        let pools = ProviderPools::start(PoolsConfig {
            limits,
            ..PoolsConfig::new(tokio::runtime::Handle::current(), BrokerGeneration::new())
        })
        .await?;
        let conn = pools
            .install(installation("conn", &vec![listener.to_string(); CLIENTS])?)
            .await?;
        let mut queued = Vec::new();
        if with_queue {
            for p in 0..PROVIDERS {
                let origin = ["127.0.0.1:1".to_string()];
                queued.push(
                    pools
                        .install(installation(&format!("p{p}"), &origin)?)
                        .await?,
                );
            }
        }
        let policy = PolicyTable::new();
        policy.allow(TenantId::new("holder")?, conn.provider.clone());
        Ok(Self {
            pools,
            policy,
            conn,
            queued,
        })
    }

    /// One running request on each of the connection provider's clients.
    pub(crate) async fn hold_running(&self) -> Result<Vec<RunningRequest>, BoxError> {
        let mut running = Vec::new();
        let holder = TenantId::new("holder")?;
        for (i, slot) in self.conn.slots.iter().enumerate() {
            let plan = plan(&holder, i as u64);
            let ready = self
                .pools
                .admit(AdmitRequest {
                    plan: plan.clone(),
                    provider: self.conn.provider.clone(),
                    slot: *slot,
                    kind: OriginKind::Http,
                    input: self.pools.stage_input(&plan, Bytes::new())?,
                })
                .await?;
            let call = self
                .pools
                .dispatch(&self.policy, &plan, &self.conn.provider)?;
            running.push(ready.start(call)?);
        }
        Ok(running)
    }

    /// Dials `per_client` connections on each running request's client,
    /// holding them all, then parks them all.
    pub(crate) async fn park_connections(
        &self,
        running: &[RunningRequest],
        per_client: usize,
    ) -> Result<(), BoxError> {
        let mut held = Vec::with_capacity(running.len() * per_client);
        for request in running {
            for _ in 0..per_client {
                held.push(self.pools.reserve_connection(request, &Loopback).await?);
            }
        }
        for conn in held {
            conn.park();
        }
        let expected = (running.len() * per_client) as u32;
        wait_for("idle connections parked", || {
            self.pools.snapshot().connections.idle == expected
        })
        .await
    }
}

/// Polls `condition` every few milliseconds for at most 30 s.
pub(crate) async fn wait_for(
    what: &str,
    mut condition: impl FnMut() -> bool,
) -> Result<(), BoxError> {
    let deadline = Instant::now() + Duration::from_secs(30);
    while !condition() {
        if Instant::now() >= deadline {
            return Err(format!("timed out waiting for: {what}").into());
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    Ok(())
}
