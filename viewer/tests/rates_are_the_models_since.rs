//! Regression test: the viewer's rates (the interval between two cumulative
//! snapshots of a recording, the demo or an endpoint) are the model's
//! `Snapshot::since`, not a copy of it. The copy the viewer once had
//! dropped `hold_timed` (so an interval written with `d` in rates mode
//! claimed no hold was timed), bounded a window's minimum by another rule,
//! and matched the last of two rows with one id where the model matches
//! the first.

use lockmeter_model::{Dist, LockKind, LockStats, ProcessInfo, SiteStats, Snapshot, Stats, Window};
use lockmeter_viewer::state::playback::frames_from;

fn lock(id: &str, acquisitions: u64, holds: &[u64], hold_timed: u64) -> LockStats {
    let stats = Stats {
        acquisitions,
        nowait: acquisitions,
        hold_ns: Dist::of_samples(holds),
        hold_timed,
        ..Stats::default()
    };
    let site = SiteStats::at("x.rs:2:2", stats.clone());
    LockStats::new(id, LockKind::Mutex, stats, vec![site])
}

/// A cumulative snapshot of one growing window (start fixed at 100).
fn cumulative(elapsed: u64, locks: Vec<LockStats>) -> Snapshot {
    let mut s = Snapshot::empty(
        ProcessInfo {
            pid: 1,
            name: "t".into(),
        },
        "mock",
    );
    s.window = Window {
        start_unix_ns: 100,
        end_unix_ns: 100 + elapsed,
        elapsed_ns: elapsed,
    };
    s.locks = locks;
    s
}

#[test]
fn a_recordings_rates_are_the_models_since() {
    // Sampled holds: 4 timed of 8, then 10 timed of 20.
    let before = cumulative(
        1_000,
        vec![
            lock("a", 8, &[300, 300, 300, 300], 4),
            // A second row with the same id: the model matches the first.
            lock("a", 80, &[900; 8], 8),
        ],
    );
    let after = cumulative(
        3_000,
        vec![
            // New holds of 10 ns: a minimum set inside the window.
            lock("a", 20, &[300, 300, 300, 300, 10, 10, 10, 10, 10, 10], 10),
            lock("a", 90, &[900; 9], 9),
        ],
    );
    let frames = frames_from(vec![before.clone(), after.clone()]);
    let interval = &frames[1].interval;
    assert_eq!(*interval, after.since(&before));

    let first = &interval.locks[0].total;
    assert_eq!(first.hold_timed, 6, "the interval lost hold_timed");
    assert_eq!(first.acquisitions, 12, "matched the wrong row of id `a`");
    assert_eq!(first.hold_ns.min, 10, "the window's minimum was bounded");
}

#[test]
fn an_interval_keeps_its_timed_holds_and_the_models_minimum_bound() {
    // The window's holds are all 300 ns; the 10 ns minimum is older.
    let before = cumulative(1_000, vec![lock("a", 4, &[10, 300], 2)]);
    let after = cumulative(3_000, vec![lock("a", 10, &[10, 300, 300, 300, 300], 5)]);
    let frames = frames_from(vec![before.clone(), after.clone()]);
    let interval = &frames[1].interval;
    let want = after.since(&before);
    assert_eq!(*interval, want);
    let hold = &interval.locks[0].total;
    assert_eq!(hold.hold_timed, 3, "the interval lost hold_timed");
    assert_eq!(hold.hold_ns.count, 3);
    // Bounded below by the bucket the window's samples fell in.
    assert!(
        hold.hold_ns.min > 10 && hold.hold_ns.min <= 300,
        "{}",
        hold.hold_ns.min
    );
    assert_eq!(hold.hold_ns.min, want.locks[0].total.hold_ns.min);
}
