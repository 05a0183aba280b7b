//! Model checks (loom) of the table of streams: a connection's last
//! stream ending racing a new stream of its tenant, and two last-but-one
//! streams ending at once. The real [`MuxTable`], every interleaving.

use std::sync::Arc;

use loom::thread;

use super::{Closed, MuxTable};
use crate::identity::TenantId;

fn tenant() -> TenantId {
    TenantId::new("a").expect("a valid tenant")
}

/// Opens a stream on a connection of `tenant` with fewer than 2.
fn open(table: &MuxTable) -> Option<u64> {
    table
        .open::<u32, _>(&tenant(), |_, streams| (streams < 2).then_some(()))
        .map(|(id, ())| id)
}

/// A table holding connection 7 of tenant `a`, carrying one stream.
fn carrying_one() -> (Arc<MuxTable>, u64) {
    let table = Arc::new(MuxTable::default());
    let (id, ()) = table
        .insert(&tenant(), 7u32, |_| Some(()))
        .unwrap_or_else(|_| panic!("inserted"));
    (table, id)
}

#[test]
fn a_last_stream_ending_racing_a_new_stream_never_parks_a_connection_in_use() {
    crate::sync::model(
        "a_last_stream_ending_racing_a_new_stream_never_parks_a_connection_in_use",
        None,
        || {
            let (table, id) = carrying_one();
            let opener = {
                let table = Arc::clone(&table);
                thread::spawn(move || open(&table))
            };
            let first_close = table.close::<u32>(id);
            let opened = opener.join().expect("the opener");
            match (first_close, opened) {
                // The close came first: the connection left with it, and
                // the new stream found nothing to join.
                (Closed::Last(conn), None) => {
                    assert_eq!(conn, 7);
                    assert_eq!(table.counts(), (0, 0));
                }
                // The open came first: the connection stays for it, and
                // leaves with it.
                (Closed::Others, Some(opened)) => {
                    assert_eq!(opened, id);
                    assert_eq!(table.counts(), (1, 1));
                    assert!(matches!(table.close::<u32>(id), Closed::Last(7)));
                }
                (Closed::Last(_), Some(_)) => panic!("a stream opened on a parked connection"),
                (Closed::Others, None) => panic!("a connection left behind with no stream"),
            }
        },
    );
}

#[test]
fn two_streams_ending_at_once_hand_the_connection_out_once() {
    crate::sync::model(
        "two_streams_ending_at_once_hand_the_connection_out_once",
        None,
        || {
            let (table, id) = carrying_one();
            assert_eq!(open(&table), Some(id));
            let other = {
                let table = Arc::clone(&table);
                thread::spawn(move || matches!(table.close::<u32>(id), Closed::Last(_)))
            };
            let mine = matches!(table.close::<u32>(id), Closed::Last(_));
            let theirs = other.join().expect("the other close");
            assert!(mine ^ theirs, "exactly one close takes the connection out");
            assert_eq!(table.counts(), (0, 0));
        },
    );
}
