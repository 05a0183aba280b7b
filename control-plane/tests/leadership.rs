//! Leadership guards, settling unknown outcomes by reading back, and the
//! fencing gate — on the in-memory client and tokio's paused clock.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use provider_pools_control_plane::client::{acquire_guarded, renew_guarded};
use provider_pools_control_plane::{
    BoxFuture, CallResult, ControlPlane, ControlPlaneError, FencingGate, LeadershipGuard,
    LeaseGrant, LeaseKey, LeaseName, LeaseRequest, LeaseState, MemoryClient, NodeId, PresenceKey,
    Registration, ServiceGroup, SkewMargin,
};
use tokio::time::Instant;

const TTL: Duration = Duration::from_secs(10);
const SKEW: SkewMargin = SkewMargin(Duration::from_millis(500));
const LATENCY: Duration = Duration::from_millis(300);

fn key() -> LeaseKey {
    LeaseKey::Global(LeaseName::new("scheduler").expect("name"))
}

fn request(holder: &str) -> LeaseRequest {
    LeaseRequest::new(key(), NodeId::new(holder).expect("node"), TTL).expect("request")
}

/// What a wrapped lease mutation does after reaching the store.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Answer {
    /// Answers normally.
    Normally,
    /// Applies it, then loses the answer.
    ApplyThenLose,
    /// Never applies it, and reports the outcome unknown.
    LoseBeforeApplying,
}

/// A client in front of a memory store, `LATENCY` away each way, which
/// can lose the answers of lease mutations.
#[derive(Debug)]
struct Remote {
    store: Arc<MemoryClient>,
    answer: std::sync::Mutex<Answer>,
    mutations: AtomicUsize,
}

impl Remote {
    fn new(store: Arc<MemoryClient>) -> Self {
        Self {
            store,
            answer: std::sync::Mutex::new(Answer::Normally),
            mutations: AtomicUsize::new(0),
        }
    }

    fn answer(&self, answer: Answer) {
        *self.answer.lock().expect("lock") = answer;
    }

    fn mutation<'a, T: Send + 'a>(
        &'a self,
        operation: &'static str,
        apply: BoxFuture<'a, CallResult<T>>,
    ) -> BoxFuture<'a, CallResult<T>> {
        let answer = *self.answer.lock().expect("lock");
        Box::pin(async move {
            self.mutations.fetch_add(1, Ordering::SeqCst);
            tokio::time::sleep(LATENCY).await;
            match answer {
                Answer::LoseBeforeApplying => {
                    drop(apply);
                    tokio::time::sleep(LATENCY).await;
                    Err(ControlPlaneError::OutcomeUnknown { operation })
                }
                Answer::ApplyThenLose => {
                    let _ = apply.await;
                    tokio::time::sleep(LATENCY).await;
                    Err(ControlPlaneError::OutcomeUnknown { operation })
                }
                Answer::Normally => {
                    let result = apply.await;
                    tokio::time::sleep(LATENCY).await;
                    result
                }
            }
        })
    }
}

impl ControlPlane for Remote {
    fn register(&self, registration: Registration) -> BoxFuture<'_, CallResult<()>> {
        self.store.register(registration)
    }

    fn heartbeat(&self, key: PresenceKey) -> BoxFuture<'_, CallResult<()>> {
        self.store.heartbeat(key)
    }

    fn deregister(&self, key: PresenceKey) -> BoxFuture<'_, CallResult<()>> {
        self.store.deregister(key)
    }

    fn discover(&self, service: ServiceGroup) -> BoxFuture<'_, CallResult<Vec<Registration>>> {
        self.store.discover(service)
    }

    fn acquire(&self, request: LeaseRequest) -> BoxFuture<'_, CallResult<LeaseGrant>> {
        self.mutation("acquire", self.store.acquire(request))
    }

    fn renew(&self, grant: LeaseGrant) -> BoxFuture<'_, CallResult<LeaseGrant>> {
        self.mutation("renew", self.store.renew(grant))
    }

    fn release(&self, grant: LeaseGrant) -> BoxFuture<'_, CallResult<()>> {
        self.mutation("release", self.store.release(grant))
    }

    fn read_lease(&self, key: LeaseKey) -> BoxFuture<'_, CallResult<Option<LeaseState>>> {
        Box::pin(async move {
            tokio::time::sleep(LATENCY).await;
            let state = self.store.read_lease(key).await;
            tokio::time::sleep(LATENCY).await;
            state
        })
    }
}

fn remote() -> (Arc<MemoryClient>, Remote) {
    let store = Arc::new(MemoryClient::new());
    let remote = Remote::new(store.clone());
    (store, remote)
}

#[tokio::test(start_paused = true)]
async fn safe_until_counts_from_when_the_acquire_was_sent_minus_the_skew() {
    let (_store, remote) = remote();
    let sent = Instant::now();
    let guard = acquire_guarded(&remote, request("node-a"), SKEW)
        .await
        .expect("acquired");
    assert_eq!(
        Instant::now() - sent,
        LATENCY * 2,
        "the answer took a round trip"
    );
    assert_eq!(guard.safe_until(), sent + TTL - SKEW.0);
    assert_eq!(guard.token().get(), 1);
}

#[tokio::test(start_paused = true)]
async fn a_guard_reports_loss_before_the_store_can_expire_the_lease() {
    let (store, remote) = remote();
    let guard = acquire_guarded(&remote, request("node-a"), SKEW)
        .await
        .expect("acquired");
    let before = guard.safe_until() - Duration::from_millis(1);
    assert_eq!(guard.check_at(before), Ok(guard.token()));
    guard.expired().await;
    assert_eq!(
        Instant::now(),
        guard.safe_until(),
        "expired() wakes at safe_until"
    );
    assert_eq!(guard.check(), Err(guard.lost_error()));
    let state = store.read_lease(key()).await.expect("read").expect("slot");
    assert!(
        state.is_held_by(&NodeId::new("node-a").expect("node"), guard.token()),
        "the store still holds it when the guard gives up: {state:?}"
    );
    // The store started the lease one latency after the request was sent.
    assert_eq!(state.remaining, Some(SKEW.0 + LATENCY));
}

#[tokio::test(start_paused = true)]
async fn a_skew_margin_not_shorter_than_the_ttl_is_refused() {
    let (_store, remote) = remote();
    let error = acquire_guarded(&remote, request("node-a"), SkewMargin(TTL))
        .await
        .expect_err("never safe");
    assert!(
        matches!(
            error,
            ControlPlaneError::Invalid {
                field: "skew_margin",
                ..
            }
        ),
        "{error:?}"
    );
    assert_eq!(
        remote.mutations.load(Ordering::SeqCst),
        0,
        "refused before sending"
    );
}

#[tokio::test(start_paused = true)]
async fn renewal_extends_safety_from_when_it_was_sent() {
    let (_store, remote) = remote();
    let mut guard = acquire_guarded(&remote, request("node-a"), SKEW)
        .await
        .expect("acquired");
    tokio::time::advance(Duration::from_secs(3)).await;
    let sent = Instant::now();
    renew_guarded(&remote, &mut guard).await.expect("renewed");
    assert_eq!(guard.safe_until(), sent + TTL - SKEW.0);
}

#[tokio::test(start_paused = true)]
async fn a_refused_renewal_marks_the_guard_lost_at_once() {
    let (store, remote) = remote();
    let mut guard = acquire_guarded(&remote, request("node-a"), SKEW)
        .await
        .expect("acquired");
    store
        .release(guard.grant().clone())
        .await
        .expect("released behind its back");
    let error = renew_guarded(&remote, &mut guard).await.expect_err("lost");
    assert!(matches!(error, ControlPlaneError::LeaseLost), "{error:?}");
    assert!(Instant::now() < guard.safe_until());
    assert_eq!(
        guard.check(),
        Err(guard.lost_error()),
        "lost before safe_until"
    );
}

#[tokio::test(start_paused = true)]
async fn an_unknown_acquire_that_applied_is_settled_by_reading_back_not_replaying() {
    let (store, remote) = remote();
    remote.answer(Answer::ApplyThenLose);
    let sent = Instant::now();
    let guard = acquire_guarded(&remote, request("node-a"), SKEW)
        .await
        .expect("settled held");
    assert_eq!(
        remote.mutations.load(Ordering::SeqCst),
        1,
        "one acquire, never replayed"
    );
    assert_eq!(guard.token().get(), 1);
    assert_eq!(guard.safe_until(), sent + TTL - SKEW.0);
    let state = store.read_lease(key()).await.expect("read").expect("slot");
    assert_eq!(state.token, guard.token());
}

#[tokio::test(start_paused = true)]
async fn an_unknown_acquire_that_did_not_apply_is_not_held() {
    let (store, remote) = remote();
    remote.answer(Answer::LoseBeforeApplying);
    let error = acquire_guarded(&remote, request("node-a"), SKEW)
        .await
        .expect_err("not held");
    assert!(matches!(error, ControlPlaneError::LeaseLost), "{error:?}");
    assert_eq!(remote.mutations.load(Ordering::SeqCst), 1);
    assert_eq!(store.read_lease(key()).await.expect("read"), None);

    remote.answer(Answer::Normally);
    let other = acquire_guarded(&remote, request("node-b"), SKEW)
        .await
        .expect("node-b");
    remote.answer(Answer::LoseBeforeApplying);
    let error = acquire_guarded(&remote, request("node-a"), SKEW)
        .await
        .expect_err("held by b");
    match error {
        ControlPlaneError::LeaseHeld { holder, token } => {
            assert_eq!((holder.as_str(), token), ("node-b", other.token()));
        }
        other => panic!("expected LeaseHeld, got {other:?}"),
    }
}

#[tokio::test(start_paused = true)]
async fn an_unknown_renewal_is_settled_by_the_time_the_store_reports() {
    let (_store, remote) = remote();
    let mut guard = acquire_guarded(&remote, request("node-a"), SKEW)
        .await
        .expect("acquired");
    tokio::time::advance(Duration::from_secs(4)).await;
    remote.answer(Answer::ApplyThenLose);
    let renew_sent = Instant::now();
    renew_guarded(&remote, &mut guard)
        .await
        .expect("settled held");
    assert_eq!(
        remote.mutations.load(Ordering::SeqCst),
        2,
        "acquire + one renew"
    );
    // The renewal applied one latency after it was sent; the read-back,
    // sent two latencies after the renewal, reached the store one latency
    // later and saw TTL − 2 × LATENCY left: the guard extends to the read's
    // send instant plus that, minus the skew.
    let read_sent = renew_sent + LATENCY * 2;
    let remaining = TTL - LATENCY * 2;
    assert_eq!(guard.safe_until(), read_sent + remaining - SKEW.0);
    assert!(guard.safe_until() <= renew_sent + TTL - SKEW.0);
}

#[tokio::test(start_paused = true)]
async fn an_unknown_renewal_that_did_not_apply_does_not_extend_safety() {
    let (_store, remote) = remote();
    let mut guard = acquire_guarded(&remote, request("node-a"), SKEW)
        .await
        .expect("acquired");
    let before = guard.safe_until();
    tokio::time::advance(Duration::from_secs(4)).await;
    remote.answer(Answer::LoseBeforeApplying);
    renew_guarded(&remote, &mut guard)
        .await
        .expect("still held, by the old expiry");
    assert_eq!(
        guard.safe_until(),
        before,
        "the old lease's end still bounds it"
    );
}

#[tokio::test(start_paused = true)]
async fn a_fencing_gate_refuses_the_deposed_leaders_token() {
    let (_store, remote) = remote();
    let gate = FencingGate::new();
    let old: LeadershipGuard = acquire_guarded(&remote, request("node-a"), SKEW)
        .await
        .expect("a");
    gate.admit(old.check().expect("safe"))
        .expect("first writer");
    tokio::time::advance(TTL).await;
    let new = acquire_guarded(&remote, request("node-b"), SKEW)
        .await
        .expect("b takes over");
    assert!(new.token() > old.token());
    gate.admit(new.check().expect("safe"))
        .expect("new leader writes");
    let stale = gate.admit(old.token()).expect_err("deposed leader refused");
    assert_eq!((stale.token, stale.highest), (old.token(), new.token()));
}
