//! `Failover` over several control-plane endpoints: a call that got no
//! answer returns its error and the next call goes to the next endpoint;
//! an answer (even a refusal) is the cluster's and moves nothing; nothing
//! is replayed.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use provider_pools_cluster::Failover;
use provider_pools_control_plane::{
    Board, BoxFuture, CallResult, ControlPlane, ControlPlaneError, FencedRecord, LeaseGrant,
    LeaseKey, LeaseRequest, LeaseState, MemoryClient, NodeId, Post, PresenceKey, Registration,
    ServiceGroup, TopicName,
};

/// An endpoint that never answers: every call is `Timeout`, and counted.
#[derive(Debug, Default)]
struct Silent {
    calls: AtomicUsize,
}

impl Silent {
    fn fail<T: Send + 'static>(&self) -> BoxFuture<'_, CallResult<T>> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        Box::pin(async { Err(ControlPlaneError::Timeout) })
    }
}

impl ControlPlane for Silent {
    fn register(&self, _: Registration) -> BoxFuture<'_, CallResult<()>> {
        self.fail()
    }
    fn heartbeat(&self, _: PresenceKey) -> BoxFuture<'_, CallResult<()>> {
        self.fail()
    }
    fn deregister(&self, _: PresenceKey) -> BoxFuture<'_, CallResult<()>> {
        self.fail()
    }
    fn discover(&self, _: ServiceGroup) -> BoxFuture<'_, CallResult<Vec<Registration>>> {
        self.fail()
    }
    fn acquire(&self, _: LeaseRequest) -> BoxFuture<'_, CallResult<LeaseGrant>> {
        self.fail()
    }
    fn renew(&self, _: LeaseGrant) -> BoxFuture<'_, CallResult<LeaseGrant>> {
        self.fail()
    }
    fn release(&self, _: LeaseGrant) -> BoxFuture<'_, CallResult<()>> {
        self.fail()
    }
    fn read_lease(&self, _: LeaseKey) -> BoxFuture<'_, CallResult<Option<LeaseState>>> {
        self.fail()
    }
}

impl Board for Silent {
    fn post(&self, _: PresenceKey, _: TopicName, _: Vec<u8>) -> BoxFuture<'_, CallResult<()>> {
        self.fail()
    }
    fn read_posts(&self, _: ServiceGroup, _: TopicName) -> BoxFuture<'_, CallResult<Vec<Post>>> {
        self.fail()
    }
    fn write_fenced(&self, _: LeaseGrant, _: Vec<u8>) -> BoxFuture<'_, CallResult<()>> {
        self.fail()
    }
    fn read_fenced(&self, _: LeaseKey) -> BoxFuture<'_, CallResult<Option<FencedRecord>>> {
        self.fail()
    }
}

fn registration() -> Registration {
    Registration::new(
        ServiceGroup::new("pools").expect("valid"),
        NodeId::new("a").expect("valid"),
        "a",
        Duration::from_secs(3),
    )
    .expect("valid")
}

#[tokio::test]
async fn an_unanswered_call_fails_once_and_the_next_goes_to_the_next_endpoint() {
    let silent = Arc::new(Silent::default());
    let memory = Arc::new(MemoryClient::new());
    let failover = Failover::new(vec![
        Arc::clone(&silent) as Arc<dyn Board>,
        Arc::clone(&memory) as Arc<dyn Board>,
    ])
    .expect("two endpoints");
    let first = failover.register(registration()).await;
    assert!(
        matches!(first, Err(ControlPlaneError::Timeout)),
        "{first:?}"
    );
    assert_eq!(silent.calls.load(Ordering::SeqCst), 1, "not replayed");
    assert_eq!(failover.current(), 1);
    failover
        .register(registration())
        .await
        .expect("the next endpoint answers");
    assert_eq!(
        memory
            .discover(ServiceGroup::new("pools").expect("valid"))
            .await
            .expect("reads")
            .len(),
        1
    );
}

#[tokio::test]
async fn a_refusal_is_an_answer_and_moves_nothing() {
    let memory = Arc::new(MemoryClient::new());
    let silent = Arc::new(Silent::default());
    let failover = Failover::new(vec![
        Arc::clone(&memory) as Arc<dyn Board>,
        Arc::clone(&silent) as Arc<dyn Board>,
    ])
    .expect("two endpoints");
    let refused = failover.heartbeat(registration().key().clone()).await;
    assert!(
        matches!(refused, Err(ControlPlaneError::NotRegistered)),
        "{refused:?}"
    );
    assert_eq!(
        failover.current(),
        0,
        "NotRegistered is the cluster's answer"
    );
    assert_eq!(silent.calls.load(Ordering::SeqCst), 0);
}

#[test]
fn no_endpoint_is_refused_naming_the_key() {
    let error = Failover::new(Vec::new()).expect_err("none");
    assert!(error.to_string().contains("cluster.endpoints"), "{error}");
}
