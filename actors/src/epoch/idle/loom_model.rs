//! Model check (loom) of a park racing its epoch's retirement: the real
//! [`IdleStash`], [`LeaseWord`](crate::epoch::lease::LeaseWord) and
//! [`Budget`]s, every interleaving.

use std::any::TypeId;
use std::sync::Arc;

use loom::thread;

use super::{park_into, IdleStash};
use crate::budget::Budget;
use crate::connection::IdleConn;
use crate::epoch::lease::LeaseWord;

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
                    park_into(&stash, &|| word.is_retired(), &idle, entry, || {});
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
