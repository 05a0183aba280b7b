//! Model checks (loom) of the idle stash: a park racing its epoch's
//! retirement, a park racing a reclaim scan and a checkout (expiry), a
//! checkout racing parks of the same client, and a park racing its
//! connection's closure notice (`watch.rs`). The real [`IdleStash`],
//! `park_into`, [`LeaseWord`](crate::epoch::lease::LeaseWord) and
//! [`Budget`]s, every interleaving.

use std::any::TypeId;
use std::sync::Arc;
use std::time::Duration;

use loom::sync::atomic::Ordering::SeqCst;
use loom::thread;
use tokio::time::Instant;

use super::{park_into, IdleConn, IdleStash};
use crate::budget::Budget;
use crate::epoch::lease::LeaseWord;
use crate::epoch::watch::{close_watch, Stashes};

#[test]
fn a_park_racing_retirement_never_leaves_a_retired_epoch_an_idle_connection() {
    crate::sync::model(
        "a_park_racing_retirement_never_leaves_a_retired_epoch_an_idle_connection",
        None,
        || {
            let node = Budget::new("connections", 1);
            let client = Budget::new("connections_per_client", 1);
            let idle = Budget::new("idle_connections", 1);
            let stash = Arc::new(IdleStash::new(0, None));
            let word = Arc::new(LeaseWord::default());
            let entry = IdleConn::charged(7u32, &node, &client, None);
            let parker = {
                let (stash, word, idle) =
                    (Arc::clone(&stash), Arc::clone(&word), Arc::clone(&idle));
                thread::spawn(move || {
                    park_into(&stash, &|| word.is_retired(), &idle, entry, |_| {});
                })
            };
            // Retirement as the engine does it: the flag first, then the
            // epoch actor empties the stash.
            let _ = word.retire();
            stash.clear();
            parker.join().expect("parker");
            assert!(
                stash
                    .take(TypeId::of::<u32>(), std::time::Duration::from_secs(60))
                    .is_none(),
                "a retired epoch kept an idle connection"
            );
            assert_eq!(
                (node.used(), client.used(), idle.used()),
                (0, 0, 0),
                "the destroyed connection returned every charge once"
            );
        },
    );
}

/// A connection that counts its destructions.
struct Conn {
    id: u32,
    destroyed: Arc<loom::sync::atomic::AtomicUsize>,
}

impl Drop for Conn {
    fn drop(&mut self) {
        let before = self.destroyed.fetch_add(1, SeqCst);
        assert_eq!(before, 0, "connection {} destroyed twice", self.id);
    }
}

type Destroyed = Arc<loom::sync::atomic::AtomicUsize>;

/// Connection `id`, charged to `node` and `client` (and `idle` if given).
fn conn(
    id: u32,
    node: &Arc<Budget>,
    client: &Arc<Budget>,
    idle: Option<&Arc<Budget>>,
) -> (IdleConn, Destroyed) {
    let destroyed = Destroyed::default();
    let conn = Conn {
        id,
        destroyed: Arc::clone(&destroyed),
    };
    (IdleConn::charged(conn, node, client, idle), destroyed)
}

fn id_of(entry: &IdleConn) -> Option<u32> {
    entry.conn.downcast_ref::<Conn>().map(|conn| conn.id)
}

const AGE: Duration = Duration::from_secs(60);

#[test]
fn a_park_racing_a_reclaim_scan_and_a_checkout_never_hands_out_an_expired_connection() {
    crate::sync::model(
        "a_park_racing_a_reclaim_scan_and_a_checkout_never_hands_out_an_expired_connection",
        None,
        || {
            let node = Budget::new("connections", 2);
            let client = Budget::new("connections_per_client", 2);
            let idle = Budget::new("idle_connections", 2);
            let stash = Arc::new(IdleStash::new(0, None));
            let (mut stale, stale_gone) = conn(1, &node, &client, Some(&idle));
            stale.since = Instant::now()
                .checked_sub(2 * AGE)
                .expect("the clock reaches two idle ages back");
            stash.restore(stale);
            let (fresh, fresh_gone) = conn(2, &node, &client, None);
            let parker = {
                let (stash, idle) = (Arc::clone(&stash), Arc::clone(&idle));
                thread::spawn(move || park_into(&stash, &|| false, &idle, fresh, |_| {}))
            };
            let reclaimer = {
                let stash = Arc::clone(&stash);
                thread::spawn(move || stash.reclaim(AGE, 2))
            };
            // A checkout racing both.
            let taken = stash.take(TypeId::of::<Conn>(), AGE);
            assert!(
                taken.as_ref().is_none_or(|entry| id_of(entry) == Some(2)),
                "an expired connection was handed out"
            );
            parker.join().expect("parker");
            reclaimer.join().expect("reclaimer");
            assert_eq!(
                stale_gone.load(SeqCst),
                1,
                "the expired connection is destroyed"
            );
            assert_eq!(fresh_gone.load(SeqCst), 0, "the fresh one lives");
            assert_eq!(
                stash.len() + usize::from(taken.is_some()),
                1,
                "the fresh connection is parked or taken, not both"
            );
            assert_eq!(
                (node.used(), client.used(), idle.used()),
                (1, 1, 1),
                "the expired connection returned its charges once; the fresh one keeps its own"
            );
            drop(taken);
            stash.clear();
            assert_eq!((node.used(), client.used(), idle.used()), (0, 0, 0));
        },
    );
}

#[test]
fn a_checkout_racing_parks_of_the_same_client_moves_each_connection_once_within_the_idle_bound() {
    crate::sync::model(
        "a_checkout_racing_parks_of_the_same_client_moves_each_connection_once_within_the_idle_bound",
        None,
        || {
            let node = Budget::new("connections", 2);
            let client = Budget::new("connections_per_client", 2);
            let idle = Budget::new("idle_connections", 1);
            let stash = Arc::new(IdleStash::new(0, None));
            let (parked, first_gone) = conn(1, &node, &client, Some(&idle));
            stash.restore(parked);
            let (second, second_gone) = conn(2, &node, &client, None);
            // The epoch actor hands the parked connection to a waiter that
            // left: the waiter's side parks it again, idle charge and all.
            let handover = {
                let (stash, idle) = (Arc::clone(&stash), Arc::clone(&idle));
                thread::spawn(move || {
                    if let Some(entry) = stash.take(TypeId::of::<Conn>(), AGE) {
                        park_into(&stash, &|| false, &idle, entry, |_| {});
                    }
                })
            };
            // A request parks another connection of the same client.
            let parker = {
                let (stash, idle) = (Arc::clone(&stash), Arc::clone(&idle));
                thread::spawn(move || park_into(&stash, &|| false, &idle, second, |_| {}))
            };
            // A checkout that keeps what it takes: reused, the connection
            // returns its idle charge.
            let mine = stash.take(TypeId::of::<Conn>(), AGE).map(|mut entry| {
                drop(entry.idle.take());
                entry
            });
            handover.join().expect("handover");
            parker.join().expect("parker");
            let destroyed = first_gone.load(SeqCst) + second_gone.load(SeqCst);
            let live = stash.len() + usize::from(mine.is_some());
            assert_eq!(live + destroyed, 2, "each connection in exactly one place");
            assert!(stash.len() <= 1, "idle connections above the bound");
            assert_eq!(idle.used() as usize, stash.len(), "one idle charge per parked connection");
            assert_eq!(
                (node.used() as usize, client.used() as usize),
                (live, live),
                "connection charges follow the live connections"
            );
            drop(mine);
            stash.clear();
            assert_eq!((node.used(), client.used(), idle.used()), (0, 0, 0));
            assert_eq!((first_gone.load(SeqCst), second_gone.load(SeqCst)), (1, 1));
        },
    );
}

/// An epoch as a closure notice reaches it: one client's stash.
struct Home(IdleStash);

impl Stashes for Home {
    fn evict_closed(&self, _client: usize) {
        self.0.evict_closed();
    }
}

#[test]
fn a_park_racing_its_connections_closure_notice_never_leaves_it_parked() {
    crate::sync::model(
        "a_park_racing_its_connections_closure_notice_never_leaves_it_parked",
        None,
        || {
            let node = Budget::new("connections", 1);
            let client = Budget::new("connections_per_client", 1);
            let idle = Budget::new("idle_connections", 1);
            let home = Arc::new(Home(IdleStash::new(0, None)));
            let (watch, notifier) = close_watch();
            let (mut entry, gone) = conn(1, &node, &client, None);
            entry.watch = Some(watch.clone());
            let parker = {
                let (home, idle) = (Arc::clone(&home), Arc::clone(&idle));
                thread::spawn(move || {
                    park_into(&home.0, &|| false, &idle, entry, |watch| {
                        watch.set_home(&home, 0);
                    });
                })
            };
            // The socket's driver sees the peer close it.
            notifier.closed();
            parker.join().expect("parker");
            assert_eq!(home.0.len(), 0, "a closed connection stayed parked");
            assert_eq!(gone.load(SeqCst), 1, "destroyed once");
            assert_eq!(
                (node.used(), client.used(), idle.used()),
                (0, 0, 0),
                "every charge returned once"
            );
        },
    );
}
