//! A third-party adapter: a child actor of the host, on the public adapter API only. Each call
//! (a line to an upper-casing loopback server) is a bounded job admitted per tenant. Exits
//! non-zero unless every answer is right, a connection was reused and shutdown is clean.

#[path = "common/line_server.rs"]
mod line_server;

use std::{sync::Arc, time::Duration};

use provider_pools::{
    AdmitRequest, Authority, BrokerGeneration, Bytes, Credential, DialError, DialErrorKind,
    DialTarget, Dialer, Epoch, ExecutionPlan, Installation, LedgerId, OriginKind, OriginSlot,
    PolicyTable, PoolsConfig, ProviderConfig, ProviderId, ProviderPools, ServiceName, SessionId,
    TenantId, TypedSlot,
};
use ractor::{concurrency::oneshot, Actor, ActorProcessingErr, ActorRef, RpcReplyPort};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufStream};
use tokio::{net::TcpStream, time::timeout_at, time::Instant};

type BoxError = Box<dyn std::error::Error + Send + Sync>;
type Res<T> = Result<T, ActorProcessingErr>;
const WAIT: Duration = Duration::from_secs(5);

/// A tenant's line, answered upper-cased with whether the connection was reused.
struct Call(TenantId, String, Reply);
type Reply = RpcReplyPort<Result<(String, bool), BoxError>>;

/// Dials the slot's `host:port` target; the stream owns the socket.
#[derive(Clone)]
struct LineDialer;
impl Dialer for LineDialer {
    type Conn = BufStream<TcpStream>;
    async fn dial(&self, target: DialTarget<'_>) -> Result<Self::Conn, DialError> {
        let refused = |e: std::io::Error| DialError::new(DialErrorKind::Refused, e.to_string());
        let stream = TcpStream::connect(target.target).await.map_err(refused)?;
        Ok(BufStream::new(stream))
    }
}

/// The adapter actor; its state is what every call's job needs.
struct LineAdapter;
struct Adapter(ProviderPools, ProviderId, TypedSlot, PolicyTable);

async fn serve(a: &Adapter, tenant: TenantId, line: String) -> Result<(String, bool), BoxError> {
    let Adapter(pools, provider, slot, policy) = a;
    let far = Instant::now() + WAIT;
    let plan = ExecutionPlan::seal(tenant, SessionId::new(1), LedgerId::new(1), far, far);
    let input = pools.stage_input(&plan, Bytes::from(line + "\n"))?;
    let ready = pools.admit(AdmitRequest {
        plan,
        provider: provider.clone(),
        slot: *slot,
        kind: OriginKind::Custom,
        input,
    });
    let ready = ready.await?;
    let call = pools.dispatch(policy, ready.plan(), ready.provider())?;
    let running = ready.start(call)?;
    let mut conn = pools.reserve_connection(&running, &LineDialer).await?;
    let (reused, mut answer) = (conn.is_reused(), String::new());
    timeout_at(running.deadline(), async {
        let stream = conn.get_mut();
        stream.write_all(running.input().bytes()).await?;
        stream.flush().await?;
        stream.take(1024).read_line(&mut answer).await
    })
    .await??;
    // Reusable only after a whole answer; a dropped connection is destroyed.
    answer.pop().filter(|c| *c == '\n').ok_or("truncated")?;
    conn.park();
    let staged = running.stage_output(Bytes::from(answer))?;
    Ok((String::from_utf8_lossy(staged.bytes()).into_owned(), reused))
}

impl Actor for LineAdapter {
    type Msg = Call;
    type State = Arc<Adapter>;
    type Arguments = (ProviderPools, String);
    /// Installs the provider: one `Custom` origin, the server's address.
    async fn pre_start(&self, _: ActorRef<Call>, args: Self::Arguments) -> Res<Arc<Adapter>> {
        let (pools, origin) = args;
        let (provider, policy) = (ProviderId::new("upper")?, PolicyTable::new());
        let config = ProviderConfig::new(ServiceName::new("upper/v1")?);
        let receipt = pools.install(Installation {
            provider: provider.clone(),
            authority: Authority::new("https://upper.example")?,
            expected: Epoch::new(0),
            credential: Credential::from_slice(b"unused")?,
            config: config.with_origin(OriginSlot::new(0), OriginKind::Custom, origin),
        });
        let slot = receipt.await?.slot(OriginSlot::new(0)).ok_or("no slot 0")?;
        policy.allow(TenantId::new("alice")?, provider.clone());
        policy.allow(TenantId::new("bob")?, provider.clone());
        Ok(Arc::new(Adapter(pools, provider, slot, policy)))
    }
    /// Hands the call to a bounded job; a refused job drops `reply`.
    async fn handle(&self, _: ActorRef<Call>, call: Call, state: &mut Arc<Adapter>) -> Res<()> {
        let (adapter, Call(tenant, line, reply)) = (Arc::clone(state), call);
        let job = state.0.spawn(move || async move {
            let _ = reply.send(serve(&adapter, tenant, line).await);
        });
        let _job = job.await;
        Ok(())
    }
}

/// The host: supervises the pools and the adapter, both linked under it.
struct Host;
impl Actor for Host {
    type Msg = ();
    type State = ();
    type Arguments = ();
    async fn pre_start(&self, _: ActorRef<()>, _: ()) -> Res<()> {
        Ok(())
    }
}

#[tokio::main]
async fn main() -> Result<(), BoxError> {
    let (origin, accepted) = line_server::start().await?;
    let (host, host_done) = Actor::spawn(None, Host, ()).await?;
    let config = PoolsConfig::new(tokio::runtime::Handle::current(), BrokerGeneration::new());
    let pools = ProviderPools::start_linked(config, host.get_cell()).await?;
    let args = (pools.clone(), origin);
    let (adapter, _) = Actor::spawn_linked(None, LineAdapter, args, host.get_cell()).await?;
    let (mut served, mut right, mut reused) = (0, 0, 0);
    for wave in 0..3 {
        // Four calls at once, two per tenant, through admission.
        let mut replies = Vec::new();
        for (i, tenant) in ["alice", "bob", "alice", "bob"].into_iter().enumerate() {
            let (line, (port, reply)) = (format!("wave {wave} call {i} of {tenant}"), oneshot());
            adapter.cast(Call(TenantId::new(tenant)?, line.clone(), port.into()))?;
            replies.push((line, reply));
        }
        for (line, reply) in replies {
            let (answer, again) = tokio::time::timeout(WAIT, reply).await???;
            println!("{answer} (connection reused: {again})");
            served += 1;
            right += usize::from(answer == line.to_uppercase());
            reused += usize::from(again);
        }
    }
    let dialed = accepted.load(std::sync::atomic::Ordering::SeqCst);
    let report = pools.shutdown(Instant::now() + WAIT).await;
    println!("{served} calls, {right} right, {dialed} dialed, {reused} reused; report: {report:?}");
    // The registry's exit stops the host (ractor's default supervision), the host its child.
    timeout_at(Instant::now() + WAIT, host_done).await??;
    adapter.wait(Some(WAIT)).await?;
    let ok = right == served && dialed + reused == served && reused > 0 && report.is_clean();
    Ok(ok.then_some(()).ok_or("a check failed")?)
}
