//! Seed 003: with the ready list stored in the wait queue and the locked
//! queue operations, every event takes exactly one lock acquisition fewer
//! than with a separate ready-list lock around the queue's own.

mod common;

use common::{acquisitions_at, lock, measured};
use seed_harness::epoll::{self, Variant, QUEUE, QUEUE_LOCK, READY_LOCK};

fn cfg() -> epoll::Config {
    epoll::Config {
        events: 5_000,
        workers: 2,
        connections: 8,
        request_bytes: 64,
        repeats: 1,
        pin: false,
        variants: Variant::ALL.to_vec(),
    }
}

fn run(variant: Variant) -> lockmeter_model::Snapshot {
    measured("epoll run", |h| epoll::run_one(variant, &cfg(), h)).1
}

#[test]
fn locked_ops_save_exactly_one_acquisition_per_event() {
    let c = cfg();
    let (e, k) = (c.events, c.workers as u64);
    let nested = run(Variant::NestedLocks);
    let locked = run(Variant::LockedOps);
    // Nobody sleeps: there are more connections than workers.
    assert_eq!(lock(&nested, QUEUE).total.sleeps, 0);
    assert_eq!(lock(&locked, QUEUE).total.sleeps, 0);
    // Per event: push + pop (+ the queue's own lock to wake, when nested);
    // per worker one last empty check; one closing wake_up_all.
    assert_eq!(epoll::lock_acquisitions(&nested), 3 * e + k + 1);
    assert_eq!(epoll::lock_acquisitions(&locked), 2 * e + k + 1);
    assert_eq!(
        epoll::lock_acquisitions(&nested) - epoll::lock_acquisitions(&locked),
        e
    );
}

#[test]
fn the_event_path_takes_two_locks_nested_and_one_locked() {
    let e = cfg().events;
    let nested = run(Variant::NestedLocks);
    let locked = run(Variant::LockedOps);
    assert_eq!(
        acquisitions_at(lock(&nested, READY_LOCK), "epoll/callback.rs"),
        e
    );
    // wake_up takes the queue's lock inside the library, once per event
    // (and once more for the closing wake_up_all).
    assert_eq!(lock(&nested, QUEUE_LOCK).total.acquisitions, e + 1);
    assert_eq!(
        acquisitions_at(lock(&locked, QUEUE_LOCK), "epoll/callback.rs"),
        e
    );
    assert!(locked
        .lock(READY_LOCK)
        .is_none_or(|l| l.total.acquisitions == 0));
    assert_eq!(lock(&locked, QUEUE).total.wake_calls, e + 1);
}
