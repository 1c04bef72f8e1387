//! A thread that holds more locks than its held-lock table has room for:
//! the holds beyond are counted as untracked while held, and every
//! release, tracked or not and in either order, leaves the table as it
//! was, so the thread's next lone hold is shown and released again.
//! (The observed release takes a lone hold's way by its index alone; an
//! untracked hold goes the nested way, which must skip it.)

use lockmeter::Mutex;
use lockmeter_model::Snapshot;
use tracing_subscriber::layer::SubscriberExt;

/// More than the table's 16 records.
const HELD: usize = 20;
const TABLE: usize = 16;

fn held_here(snap: &Snapshot) -> (usize, u64) {
    (snap.now.locks.len(), snap.now.untracked_holds)
}

fn nothing_held(snap: &Snapshot, what: &str) {
    assert!(snap.now.is_empty(), "{what}: {:?}", snap.now);
}

fn hold_all_then_release(reverse: bool) {
    let layer = lockmeter::Layer::new();
    let handle = layer.handle();
    let _in_effect = tracing::subscriber::set_default(tracing_subscriber::registry().with(layer));
    let locks: Vec<Mutex<u64>> = (0..HELD as u64).map(Mutex::new).collect();

    let mut guards: Vec<_> = locks.iter().map(|l| l.lock()).collect();
    assert_eq!(
        held_here(&handle.snapshot()),
        (TABLE, (HELD - TABLE) as u64),
        "while all are held: the table's records shown, the rest counted"
    );
    if reverse {
        guards.reverse();
    }
    drop(guards);
    nothing_held(
        &handle.snapshot(),
        &format!("every hold released (reverse: {reverse})"),
    );

    let lone = locks[0].lock();
    assert_eq!(held_here(&handle.snapshot()), (1, 0), "a lone hold after");
    drop(lone);
    let last = handle.snapshot();
    nothing_held(&last, "the lone hold released");
    let acquisitions: u64 = last.locks.iter().map(|l| l.total.acquisitions).sum();
    assert_eq!(acquisitions, HELD as u64 + 1, "every acquisition counted");
}

/// One test for both orders: a snapshot counts the untracked holds of
/// every thread, so two tests at once would see each other's.
#[test]
fn released_in_either_order() {
    hold_all_then_release(false);
    hold_all_then_release(true);
}
