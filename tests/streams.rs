//! Multiplexed connections (`ProviderPools::reserve_stream`): streams of
//! one tenant share a connection up to its `max_streams`, tenants never
//! share one, a connection leaves with its last stream (parked while
//! reusable, destroyed once going away), an idle connection that opens
//! no stream is destroyed and another reserved (a dialed one that opens
//! none is `NoStream`), and each stream holds only its own request. A dialer of in-memory connections whose stream limit and
//! GOAWAY the test sets; paused clock.

mod support;

use std::sync::atomic::{AtomicBool, AtomicU32, AtomicUsize, Ordering};
use std::sync::Arc;

use provider_pools::{
    ConnectError, DialError, DialTarget, Dialer, Limits, Multiplexed, PooledStream, ProviderPools,
    RunningRequest,
};
use support::{bounded, running, with_mem};

/// An in-memory connection: `max` streams at once; `away` stops new
/// streams (a GOAWAY); dropping it counts in `destroyed`.
struct Muxed {
    id: usize,
    max: Arc<AtomicU32>,
    away: Arc<AtomicBool>,
    destroyed: Arc<AtomicUsize>,
}

impl Multiplexed for Muxed {
    type Stream = usize;

    fn max_streams(&self) -> u32 {
        self.max.load(Ordering::SeqCst)
    }

    fn open_stream(&self) -> Option<usize> {
        (!self.away.load(Ordering::SeqCst)).then_some(self.id)
    }

    fn is_reusable(&self) -> bool {
        !self.away.load(Ordering::SeqCst)
    }
}

impl Drop for Muxed {
    fn drop(&mut self) {
        self.destroyed.fetch_add(1, Ordering::SeqCst);
    }
}

/// Dials [`Muxed`] connections numbered from 0; every one shares the
/// dialer's stream limit, GOAWAY flag and count of destroyed ones.
#[derive(Clone)]
struct MuxDialer {
    dials: Arc<AtomicUsize>,
    max: Arc<AtomicU32>,
    away: Arc<AtomicBool>,
    destroyed: Arc<AtomicUsize>,
}

impl MuxDialer {
    fn new(max: u32) -> Self {
        Self {
            dials: Arc::default(),
            max: Arc::new(AtomicU32::new(max)),
            away: Arc::default(),
            destroyed: Arc::default(),
        }
    }

    fn dials(&self) -> usize {
        self.dials.load(Ordering::SeqCst)
    }
}

impl Dialer for MuxDialer {
    type Conn = Muxed;

    async fn dial(&self, _: DialTarget<'_>) -> Result<Muxed, DialError> {
        Ok(Muxed {
            id: self.dials.fetch_add(1, Ordering::SeqCst),
            max: Arc::clone(&self.max),
            away: Arc::clone(&self.away),
            destroyed: Arc::clone(&self.destroyed),
        })
    }
}

async fn stream(
    pools: &ProviderPools,
    request: &RunningRequest,
    dialer: &MuxDialer,
) -> PooledStream<Muxed> {
    bounded("a stream", pools.reserve_stream(request, dialer))
        .await
        .expect("a stream")
}

#[tokio::test(start_paused = true)]
async fn one_tenants_streams_share_a_connection_up_to_its_stream_limit() {
    let (pools, receipt) = with_mem(Limits::DEFAULT).await;
    let dialer = MuxDialer::new(2);
    let (r1, r2, r3) = (
        running(&pools, &receipt, "a", 1).await,
        running(&pools, &receipt, "a", 2).await,
        running(&pools, &receipt, "a", 3).await,
    );
    let mut s1 = stream(&pools, &r1, &dialer).await;
    let mut s2 = stream(&pools, &r2, &dialer).await;
    assert_eq!((*s1.stream(), *s2.stream()), (0, 0), "both on connection 0");
    assert!(!s1.is_reused() && s2.is_reused());
    let mut s3 = stream(&pools, &r3, &dialer).await;
    assert_eq!(*s3.stream(), 1, "connection 0 is full at 2: a second dial");
    assert_eq!(dialer.dials(), 2);
    assert_eq!(pools.snapshot().connections.active, 2);
    drop(s1);
    let r4 = running(&pools, &receipt, "a", 4).await;
    let mut s4 = stream(&pools, &r4, &dialer).await;
    assert_eq!(*s4.stream(), 0, "the stream that ended left room on 0");
    assert_eq!(dialer.dials(), 2);
    drop((s2, s3, s4));
}

#[tokio::test(start_paused = true)]
async fn tenants_never_share_a_connection() {
    let (pools, receipt) = with_mem(Limits::DEFAULT).await;
    let dialer = MuxDialer::new(100);
    let a = running(&pools, &receipt, "a", 1).await;
    let b = running(&pools, &receipt, "b", 1).await;
    let mut sa = stream(&pools, &a, &dialer).await;
    let mut sb = stream(&pools, &b, &dialer).await;
    assert_ne!(
        *sa.stream(),
        *sb.stream(),
        "b gets its own connection though a's has room"
    );
    assert_eq!(dialer.dials(), 2);
}

#[tokio::test(start_paused = true)]
async fn the_last_stream_parks_its_connection_and_the_next_stream_reuses_it() {
    let (pools, receipt) = with_mem(Limits::DEFAULT).await;
    let dialer = MuxDialer::new(4);
    let a = running(&pools, &receipt, "a", 1).await;
    let first = stream(&pools, &a, &dialer).await;
    drop(first);
    let counts = pools.snapshot().connections;
    assert_eq!(
        (counts.active, counts.idle),
        (0, 1),
        "parked, not destroyed"
    );
    let b = running(&pools, &receipt, "b", 1).await;
    let mut again = stream(&pools, &b, &dialer).await;
    assert_eq!(*again.stream(), 0, "the parked connection, now b's");
    assert!(again.is_reused());
    assert_eq!(dialer.dials(), 1);
    assert_eq!(dialer.destroyed.load(Ordering::SeqCst), 0);
}

#[tokio::test(start_paused = true)]
async fn an_idle_connection_that_opens_no_stream_is_destroyed_and_another_reserved() {
    let (pools, receipt) = with_mem(Limits::DEFAULT).await;
    let dialer = MuxDialer::new(4);
    let r1 = running(&pools, &receipt, "a", 1).await;
    drop(stream(&pools, &r1, &dialer).await);
    assert_eq!(pools.snapshot().connections.idle, 1);
    // Its peer now allows no stream, nor does a fresh one's.
    dialer.max.store(0, Ordering::SeqCst);
    let r2 = running(&pools, &receipt, "a", 2).await;
    let refused = pools.reserve_stream(&r2, &dialer).await;
    assert!(
        matches!(refused, Err(ConnectError::NoStream)),
        "{refused:?}"
    );
    assert_eq!(dialer.dials(), 2, "the idle one destroyed, then a dial");
    assert_eq!(dialer.destroyed.load(Ordering::SeqCst), 2);
    assert_eq!(pools.snapshot().connections.idle, 0, "nothing parked");
}

#[tokio::test(start_paused = true)]
async fn a_connection_going_away_opens_no_stream_and_is_destroyed_with_its_last() {
    let (pools, receipt) = with_mem(Limits::DEFAULT).await;
    let dialer = MuxDialer::new(4);
    let r1 = running(&pools, &receipt, "a", 1).await;
    let r2 = running(&pools, &receipt, "a", 2).await;
    let s1 = stream(&pools, &r1, &dialer).await;
    // GOAWAY: connection 0 takes no new stream; s1 runs on.
    dialer.away.store(true, Ordering::SeqCst);
    let refused = pools.reserve_stream(&r2, &dialer).await;
    assert!(
        matches!(refused, Err(ConnectError::NoStream)),
        "every connection going away, even the fresh one: {refused:?}"
    );
    assert_eq!(dialer.dials(), 2, "a dial, not a stream on connection 0");
    assert_eq!(
        dialer.destroyed.load(Ordering::SeqCst),
        1,
        "the fresh one that opened nothing"
    );
    drop(s1);
    let counts = pools.snapshot().connections;
    assert_eq!(
        (
            counts.active,
            counts.idle,
            dialer.destroyed.load(Ordering::SeqCst)
        ),
        (0, 0, 2),
        "connection 0 is destroyed with its last stream, not parked"
    );
}

#[tokio::test(start_paused = true)]
async fn a_stream_holds_only_its_own_request() {
    let (pools, receipt) = with_mem(Limits::DEFAULT).await;
    let dialer = MuxDialer::new(4);
    let first = running(&pools, &receipt, "a", 1).await;
    let second = running(&pools, &receipt, "a", 2).await;
    let s1 = stream(&pools, &first, &dialer).await;
    let s2 = stream(&pools, &second, &dialer).await;
    drop(first);
    drop(s1);
    support::quiesce().await;
    assert_eq!(
        pools.snapshot().running_requests,
        1,
        "the connection the first request dialed keeps nothing of it"
    );
    assert_eq!(pools.snapshot().connections.active, 1);
    drop((second, s2));
    support::quiesce().await;
    assert_eq!(pools.snapshot().running_requests, 0);
    assert_eq!(pools.snapshot().connections.idle, 1);
}
