//! Model check (loom) of the cleanup pool's sizing: its cleanup slots (a
//! [`Budget`](crate::budget::Budget)) racing the release slots of its
//! actor's mailbox (a real [`SlotPool`], on loom's atomics in every
//! `--cfg loom` build of `provider-pools-mailbox`).

use loom::thread;
use provider_pools_mailbox::SlotPool;

/// The worker and cleanup pools size their actor's release slots by their
/// slot budget (one per worker slot; two per cleanup slot, `Run` and
/// `Finished`), and treat running out of release slots as a sizing bug
/// (`Busy`). This holds because a job's release slots come back (its
/// envelopes are opened) before the actor frees its slot after the join:
/// an admission that got the freed slot also finds the release slots.
#[test]
fn a_cleanup_slot_freed_racing_an_admission_always_leaves_its_release_slots() {
    crate::sync::model(
        "a_cleanup_slot_freed_racing_an_admission_always_leaves_its_release_slots",
        None,
        || {
            let slots = crate::budget::Budget::new("cleanup_jobs", 1);
            let releases = SlotPool::new(2);
            // A running cleanup: its `Run` envelope already opened, its
            // `Finished` one held by the task.
            let running = slots.try_reserve(1).expect("the only cleanup slot");
            let run = releases.try_take().expect("room for Run");
            let finish = releases.try_take().expect("room for Finished");
            drop(run);
            // The actor: opens `Finished`, joins the task, frees the slot.
            let actor = thread::spawn(move || {
                drop(finish);
                drop(running);
            });
            // An admission racing it, in `CleanupPool::admit`'s order.
            let admitted = slots
                .try_reserve(1)
                .ok()
                .map(|slot| (slot, releases.try_take(), releases.try_take()));
            if let Some((_, run, finish)) = &admitted {
                assert!(
                    run.is_some() && finish.is_some(),
                    "a cleanup slot admitted without its release slots"
                );
            }
            actor.join().expect("actor");
            drop(admitted);
            assert_eq!(
                (slots.used(), releases.free()),
                (0, 2),
                "everything returned once"
            );
        },
    );
}
