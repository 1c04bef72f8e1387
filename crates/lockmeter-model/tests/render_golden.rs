//! The text table, CSV and JSON of a fixture snapshot, pinned as insta
//! snapshots (`tests/snapshots/`). They are the spec of the layout: a
//! change to one must be reviewed, not just accepted.

mod common;

use lockmeter_model::metric::Metric;
use lockmeter_model::render::{csv_table, json, text_table, SortKey, TableOptions};
use lockmeter_model::{parse_snapshot, Snapshot};

#[test]
fn text_table_default() {
    insta::assert_snapshot!(text_table(&common::before(), &TableOptions::default()));
}

#[test]
fn text_table_after_the_fixes() {
    insta::assert_snapshot!(text_table(&common::after(), &TableOptions::default()));
}

#[test]
fn text_table_locks_only_sorted_by_name_ascending() {
    let opts = TableOptions {
        sort: SortKey::Name,
        descending: false,
        sites: false,
        holders: false,
        advice: false,
        ..TableOptions::default()
    };
    insta::assert_snapshot!(text_table(&common::before(), &opts));
}

#[test]
fn text_table_filtered_to_the_pipe_and_its_inner_locks() {
    let opts = TableOptions {
        filter: Some("PIPE.SEM".into()),
        ..TableOptions::default()
    };
    let text = text_table(&common::before(), &opts);
    assert!(text.contains("pipe.sem.lock (spinlock)"), "{text}");
    assert!(!text.contains("bkl"), "{text}");
    insta::assert_snapshot!(text);
}

#[test]
fn text_table_top_two_by_contention() {
    let opts = TableOptions {
        sort: SortKey::By(Metric::Con),
        top: Some(2),
        ..TableOptions::default()
    };
    insta::assert_snapshot!(text_table(&common::before(), &opts));
}

#[test]
fn text_table_of_an_empty_snapshot() {
    let snap = Snapshot::empty(Default::default(), "mock");
    insta::assert_snapshot!(text_table(&snap, &TableOptions::default()));
}

#[test]
fn csv_table_default() {
    insta::assert_snapshot!(csv_table(&common::before(), &TableOptions::default()));
}

#[test]
fn csv_rows_follow_the_table_order_and_all_have_the_header_width() {
    let text = csv_table(&common::before(), &TableOptions::default());
    let mut reader = csv::ReaderBuilder::new().from_reader(text.as_bytes());
    let width = reader.headers().unwrap().len();
    let rows: Vec<csv::StringRecord> = reader.records().map(Result::unwrap).collect();
    assert!(rows.iter().all(|r| r.len() == width));
    let locks: Vec<&str> = rows
        .iter()
        .filter(|r| &r[0] == "lock")
        .map(|r| &r[2])
        .collect();
    assert_eq!(
        locks,
        [
            // UTIL 91%, 5.1%, 0.9% (the inner locks follow their parent)
            "bkl",
            "cache.rw",
            "pipe.sem",
            "pipe.sem.lock",
            "pipe.sem.wait",
            // wait queues: no UTIL, ties broken by name
            "accept.wait",
            "ep.wait",
            "ep.wait.lock",
            "udp.rx.wait"
        ]
    );
    // 9 locks and 16 sites.
    assert_eq!(rows.len(), 9 + 16);
}

#[test]
fn json_round_trips_through_the_reader() {
    let snap = common::before();
    let text = json(&snap);
    assert_eq!(parse_snapshot(&text).unwrap(), snap);
}

#[test]
fn filter_matches_call_sites_case_insensitively() {
    let snap = common::before();
    let opts = TableOptions {
        filter: Some("APACHE.rs:412".into()),
        ..TableOptions::default()
    };
    let names: Vec<&str> = lockmeter_model::render::sorted_locks(&snap, &opts)
        .iter()
        .map(|l| l.name())
        .collect();
    assert_eq!(names, ["bkl"]);
}

#[test]
fn sorted_lock_rows_give_the_nesting_depth() {
    let snap = common::before();
    let rows = lockmeter_model::render::sorted_lock_rows(&snap, &TableOptions::default());
    let depth = |name: &str| rows.iter().find(|r| r.lock.name() == name).map(|r| r.depth);
    assert_eq!(depth("pipe.sem"), Some(0));
    assert_eq!(depth("pipe.sem.lock"), Some(1));
    assert_eq!(depth("ep.wait.lock"), Some(1));
}
