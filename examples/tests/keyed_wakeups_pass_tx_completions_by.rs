//! Seed 001: with plain wakeups every TX completion wakes the blocked
//! receiver for nothing (two per round trip); keyed wakeups let it sleep
//! through them (none), whatever the placement.

mod common;

use common::{lock, measured};
use seed_harness::affinity;
use seed_harness::keyed::{self, Placement, Variant, QUEUE};

const ROUNDS: u64 = 100;

fn run(variant: Variant, cpus: Option<(usize, usize)>) -> (keyed::Row, lockmeter_model::Snapshot) {
    measured("ping-pong run", |h| {
        keyed::run_one(variant, Placement::SameCpu, cpus, ROUNDS, h)
    })
}

#[test]
fn plain_wakeups_wake_the_receiver_twice_per_round_trip_for_nothing() {
    let (row, snap) = run(Variant::Plain, None);
    assert_eq!(row.spurious_wakeups, 2 * ROUNDS);
    assert_eq!(row.spurious_per_round_trip, 2.0);
    // ping, pong and two completions per round trip, and the closing FIN.
    assert_eq!(lock(&snap, QUEUE).total.wakeups, 4 * ROUNDS + 1);
}

#[test]
fn keyed_wakeups_let_the_receiver_sleep_through_tx_completions() {
    let (row, snap) = run(Variant::Keyed, None);
    assert_eq!(row.spurious_wakeups, 0);
    let q = &lock(&snap, QUEUE).total;
    assert_eq!(q.wakeups, 2 * ROUNDS + 1);
    // The completions still happened: twice as many wake calls as wakeups.
    assert_eq!(q.wake_calls, 4 * ROUNDS + 1);
}

#[test]
fn pinned_to_one_cpu_the_counts_are_the_same() {
    let allowed = affinity::allowed_cpus();
    let cpus = allowed.first().map(|&c| (c, c));
    let (plain, _) = run(Variant::Plain, cpus);
    let (keyed, _) = run(Variant::Keyed, cpus);
    assert_eq!(plain.spurious_wakeups, 2 * ROUNDS);
    assert_eq!(keyed.spurious_wakeups, 0);
    if cpus.is_some() && !plain.pinned {
        eprintln!("note: pinning is not permitted here; ran unpinned");
    }
}
