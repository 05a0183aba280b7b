//! Ingress: JetStream deliveries admitted as
//! [`IngressRequest`](provider_pools_actors::IngressRequest)s under their
//! tenants' limits, handled by the host, and acknowledged only after.
//!
//! [`ingress_step`] is one turn of a delivery loop that the host drives —
//! the library starts no task, timer or loop of its own. A turn fetches a
//! batch from a durable pull consumer (an outbound call of the host's
//! consumer request) and, for every message at once, asks the host's
//! [`IngressHost::route`] whose event it is, takes an `IngressRequest` for
//! it with [`ProviderPools::ingress`](provider_pools_actors::ProviderPools::ingress),
//! runs [`IngressHost::handle`], and acknowledges the message.
//!
//! Invariants:
//! - A message is acknowledged only after its handler returned `Ok`, and
//!   its `IngressRequest` is dropped only after that acknowledgement.
//! - An event the pools refused (capacity, busy, deadline, revoked) or
//!   whose handler failed is refused back to the server (`nak`, with the
//!   host's delay), so JetStream delivers it again; it held nothing.
//! - A message no route claims is terminated (`term`): never acknowledged
//!   as handled, never delivered again.
//! - An acknowledgement that fails leaves the message to be redelivered after
//!   the consumer's ack wait: delivery is at least once, never lost.
//! - At most `max_messages` events of one turn are in flight; admission
//!   bounds how many of them run and wait.

use std::future::Future;
use std::time::Duration;

use futures_util::stream::{FuturesUnordered, StreamExt};
use provider_pools_actors::{
    AdmitError, DispatchAuthority, ExecutionPlan, IngressEvent, IngressRequest, OriginKind,
    ProviderId, ProviderPools, RunningRequest, TypedSlot,
};

use crate::nats::dialer::NatsDialer;
use crate::nats::error::NatsError;
use crate::nats::fetch::{fetch, Delivery, FetchedMessage};
use crate::nats::names::ConsumerName;
use crate::nats::NatsLimits;

/// Whose event a delivery is: the plan of the activation that handles it,
/// and the provider and NATS slot it is admitted through.
#[derive(Debug, Clone)]
pub struct IngressRoute {
    /// The handling activation's sealed plan (tenant, session, deadlines).
    pub plan: ExecutionPlan,
    /// The logical provider the event is charged to.
    pub provider: ProviderId,
    /// Its NATS origin slot, from the install receipt.
    pub slot: TypedSlot,
}

/// What the host supplies to an ingress loop: the tenant mapping and the
/// handler.
pub trait IngressHost: Send + Sync {
    /// Why a handler failed; reported back, never inspected.
    type Error: Send;

    /// The route of `message`, or `None` when no tenant claims it (it is
    /// then terminated).
    fn route(&self, message: &FetchedMessage) -> Option<IngressRoute>;

    /// Handles one admitted event. `Ok` means handled: the message is then
    /// acknowledged. Work that must outlive this call keeps a clone of
    /// `event.running()`, and with it the event's capacity.
    ///
    /// # Cancel safety
    ///
    /// [`ingress_step`] drops this future when its own future is dropped:
    /// the event's capacity returns (except what a kept clone of
    /// `event.running()` holds) and the message, never acknowledged, is
    /// delivered again after the consumer's ack wait. Work that must not
    /// be cut in half belongs in a job that owns its own request.
    ///
    /// # Errors
    ///
    /// The host's own [`Error`](IngressHost::Error): the message is then
    /// refused (`nak`) and delivered again after the retry delay; the
    /// error comes back in [`Handling::Failed`].
    fn handle(
        &self,
        event: &IngressRequest,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send;
}

/// How an ingress loop reads its consumer.
#[derive(Debug, Clone)]
pub struct IngressConsumer {
    /// The durable pull consumer of the provider's `stream`.
    pub consumer: ConsumerName,
    /// Most deliveries per turn (at most [`MAX_FETCH`](crate::nats::MAX_FETCH)).
    pub max_messages: usize,
    /// Longest wait of a turn for its first delivery.
    pub expires: Duration,
    /// How long the server waits before delivering a refused event again.
    pub retry_delay: Duration,
    /// Size limits of the fetch.
    pub limits: NatsLimits,
}

/// What became of one delivery.
#[derive(Debug)]
pub enum Handling<E> {
    /// Admitted and handled.
    Handled,
    /// Not admitted; the pools' answer.
    Refused(AdmitError),
    /// Admitted; the handler failed.
    Failed(E),
    /// No route claimed it.
    Unroutable,
}

/// How a delivery was acknowledged to the server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Acknowledgement {
    /// Acknowledged: handled, never delivered again.
    Acked,
    /// Refused: delivered again after the retry delay.
    Naked,
    /// Terminated: never delivered again, not handled.
    Termed,
}

/// One delivery's outcome.
#[derive(Debug)]
pub struct EventOutcome<E> {
    /// The delivery.
    pub delivery: Delivery,
    /// What the pools and the handler made of it.
    pub handling: Handling<E>,
    /// The server's confirmation, or why acknowledging failed (the message is
    /// then redelivered after the consumer's ack wait).
    pub acknowledgement: Result<Acknowledgement, NatsError>,
}

/// Runs one turn of an ingress loop: fetches up to `consumer.max_messages`
/// deliveries with `running` (the host's own consumer request) and
/// admits, handles and acknowledges each, all concurrently. Returns when every
/// delivery of the turn is acknowledged.
///
/// `running` holds the batch's connection for the whole turn, and its
/// deadline bounds the turn's acknowledgements: one after it
/// fails, and the message is delivered again after the ack wait.
///
/// # Cancel safety
///
/// Dropping the future drops every event in flight: their
/// `IngressRequest`s return their capacity, and their messages, never
/// acknowledged, are delivered again after the consumer's ack wait.
///
/// # Errors
///
/// Those of [`fetch`]; a failed turn acknowledged nothing.
pub async fn ingress_step<H: IngressHost>(
    pools: &ProviderPools,
    running: &RunningRequest,
    dialer: &NatsDialer,
    authority: &dyn DispatchAuthority,
    host: &H,
    consumer: &IngressConsumer,
) -> Result<Vec<EventOutcome<H::Error>>, NatsError> {
    let batch = fetch(
        pools,
        running,
        dialer,
        &consumer.consumer,
        consumer.max_messages,
        consumer.expires,
        consumer.limits,
    )
    .await?;
    let mut in_flight: FuturesUnordered<_> = batch
        .into_iter()
        .map(|message| deliver(pools, authority, host, message, consumer.retry_delay))
        .collect();
    let mut outcomes = Vec::with_capacity(in_flight.len());
    while let Some(outcome) = in_flight.next().await {
        outcomes.push(outcome);
    }
    Ok(outcomes)
}

/// Admits, handles and acknowledges one delivery.
async fn deliver<H: IngressHost>(
    pools: &ProviderPools,
    authority: &dyn DispatchAuthority,
    host: &H,
    message: FetchedMessage,
    retry_delay: Duration,
) -> EventOutcome<H::Error> {
    let delivery = message.delivery();
    let Some(route) = host.route(&message) else {
        let acknowledgement = message.term().await.map(|()| Acknowledgement::Termed);
        return EventOutcome {
            delivery,
            handling: Handling::Unroutable,
            acknowledgement,
        };
    };
    let event = IngressEvent {
        plan: route.plan,
        provider: route.provider,
        slot: route.slot,
        kind: OriginKind::Nats,
        payload: message.payload().bytes().clone(),
    };
    let request = match pools.ingress(authority, event).await {
        Ok(request) => request,
        Err(refused) => {
            let acknowledgement = message
                .nak(Some(retry_delay))
                .await
                .map(|()| Acknowledgement::Naked);
            return EventOutcome {
                delivery,
                handling: Handling::Refused(refused),
                acknowledgement,
            };
        }
    };
    let (handling, acknowledgement) = match host.handle(&request).await {
        Ok(()) => (
            Handling::Handled,
            message.ack().await.map(|()| Acknowledgement::Acked),
        ),
        Err(failed) => (
            Handling::Failed(failed),
            message
                .nak(Some(retry_delay))
                .await
                .map(|()| Acknowledgement::Naked),
        ),
    };
    // Ownership ends only after the server has the acknowledgement.
    drop(request);
    EventOutcome {
        delivery,
        handling,
        acknowledgement,
    }
}
