//! The before/after report of the fixture (every seed problem, then every
//! fix), pinned as insta snapshots, plus the claims a bug report rests on.

mod common;

use lockmeter_model::diff::{diff, AdviceStatus, Presence, SnapshotDiff};
use lockmeter_model::metric::Metric;
use lockmeter_model::render::{diff_csv, diff_text};
use lockmeter_model::render::{SortKey, TableOptions};

/// The fixture program before its fixes compared with after them.
fn fixture_diff() -> SnapshotDiff {
    diff(&common::before(), &common::after())
}

/// Every report of the diff, each pinned under its own name.
#[test]
fn the_reports_are_pinned() {
    let d = fixture_diff();
    let opts = TableOptions {
        sites: false,
        ..TableOptions::default()
    };
    insta::assert_snapshot!("diff_text_default", diff_text(&d, &TableOptions::default()));
    insta::assert_snapshot!("diff_text_locks_only", diff_text(&d, &opts));
    insta::assert_snapshot!("diff_csv_default", diff_csv(&d, &TableOptions::default()));
    insta::assert_snapshot!("diff_json", serde_json::to_string_pretty(&d).unwrap());
}

#[test]
fn the_semaphores_inner_lock_is_reported_gone_with_its_contention() {
    let d = fixture_diff();
    let inner = d.locks.iter().find(|l| l.id == "pipe.sem.lock").unwrap();
    assert_eq!(inner.presence, Presence::Removed);
    let con = *inner.total.get(Metric::Con);
    assert!(con.before.unwrap() > 30.0 && con.after.is_none(), "{con:?}");
    let new = d.locks.iter().find(|l| l.id == "pipe.lock").unwrap();
    assert_eq!(new.presence, Presence::Added);
    let text = diff_text(&d, &TableOptions::default());
    assert!(
        text.contains("pipe.sem.lock (spinlock)  [removed]"),
        "{text}"
    );
}

#[test]
fn the_big_locks_utilisation_drop_is_measured() {
    let d = fixture_diff();
    let bkl = d.locks.iter().find(|l| l.id == "bkl").unwrap();
    let util = *bkl.total.get(Metric::Util);
    assert_eq!(bkl.presence, Presence::Both);
    assert!(
        util.before.unwrap() > 90.0 && util.after.unwrap() < 40.0,
        "{util:?}"
    );
    assert!(util.delta.unwrap() < -50.0);
}

#[test]
fn the_locked_wait_queue_takes_one_acquisition_per_event_instead_of_two() {
    let d = fixture_diff();
    let wait = d.locks.iter().find(|l| l.id == "ep.wait").unwrap();
    let lock = d.locks.iter().find(|l| l.id == "ep.wait.lock").unwrap();
    let per_event = |acq: Option<f64>, events: Option<f64>| acq.unwrap() / events.unwrap();
    let (b, a) = (
        *lock.total.get(Metric::Acquisitions),
        *wait.total.get(Metric::Wakeups),
    );
    assert_eq!(per_event(b.before, a.before), 2.0);
    assert_eq!(per_event(b.after, a.after), 1.0);
    // Windows differ (2.0 s vs 1.9 s): the rate is compared too.
    let rate = *lock.total.get(Metric::AcquisitionsPerSec);
    assert_eq!(rate.before, Some(20_000.0));
    assert_eq!(rate.after, Some(10_000.0));
    assert_eq!(rate.delta_pct, Some(-50.0));
}

#[test]
fn advisories_of_the_problems_are_resolved_by_the_fixes() {
    let d = fixture_diff();
    let status = |id: &str| {
        d.advice
            .iter()
            .find(|a| a.advisory.lock_id == id)
            .map(|a| a.status)
    };
    for id in ["pipe.sem", "bkl", "accept.wait", "udp.rx.wait"] {
        assert_eq!(status(id), Some(AdviceStatus::Resolved), "{id}");
    }
    assert!(d.advice.iter().all(|a| a.status == AdviceStatus::Resolved));
}

#[test]
fn diff_is_sorted_by_the_larger_side_and_filters_like_the_table() {
    let d = fixture_diff();
    let opts = TableOptions {
        sort: SortKey::By(Metric::Con),
        filter: Some("pipe".into()),
        ..TableOptions::default()
    };
    let text = diff_text(&d, &opts);
    let heads: Vec<&str> = text
        .lines()
        .filter(|l| {
            l.contains("(semaphore)") || l.contains("(spinlock)") || l.contains("(waitqueue)")
        })
        .map(str::trim)
        .collect();
    assert_eq!(
        heads,
        [
            "pipe.sem (semaphore)  [removed]",
            "pipe.sem.lock (spinlock)  [removed]",
            "pipe.sem.wait (waitqueue)  [removed]",
            "pipe.lock (spinlock)  [added]",
        ]
    );
}
