//! Property tests: any snapshot — huge counters, NaN percentages, empty
//! windows, names with commas, quotes, newlines and emoji, parents that
//! loop — renders, diffs and advises without panicking; CSV stays
//! rectangular and round-trips the names; every lock is listed once.

use lockmeter_model::advice::{advise, Thresholds};
use lockmeter_model::diff::diff;
use lockmeter_model::metric::Metric;
use lockmeter_model::render::{csv_table, json, sorted_locks, text_table, SortKey, TableOptions};
use lockmeter_model::render::{diff_csv, diff_text};
use lockmeter_model::{
    Dist, Holder, LockKind, LockStats, ProcessInfo, SiteStats, Snapshot, Stats, Window,
};
use proptest::prelude::*;

fn num() -> impl Strategy<Value = u64> {
    prop_oneof![
        Just(0u64),
        Just(1u64),
        Just(u64::MAX),
        Just(u64::MAX - 1),
        (u64::MAX / 2)..=u64::MAX,
        0u64..100_000,
        any::<u64>(),
    ]
}

fn pct() -> impl Strategy<Value = f64> {
    prop_oneof![
        Just(0.0),
        0.0..200.0f64,
        any::<f64>(),
        Just(f64::NAN),
        Just(f64::INFINITY)
    ]
}

/// Names that stress quoting and layout.
fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-z.]{0,8}",
        "[a,\"\n\r\t ü😀;=\\\\]{0,8}",
        "\\PC{0,12}",
        any::<String>(),
    ]
}

/// Lock ids from a small pool, so parents, duplicates and diff matches happen.
fn id() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("a".to_string()),
        Just("b".to_string()),
        Just("a.lock".to_string()),
        Just("x,\"y\"\nz".to_string()),
        text(),
    ]
}

fn site_name() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("s.rs:1:1".to_string()),
        Just("s.rs:2:2".to_string()),
        text()
    ]
}

fn dist() -> impl Strategy<Value = Dist> {
    (
        prop::collection::vec(num(), 4),
        prop::collection::vec((num(), num()), 0..4),
    )
        .prop_map(|(n, buckets)| Dist {
            count: n[0],
            total: n[1],
            min: n[2],
            max: n[3],
            buckets,
        })
}

fn stats() -> impl Strategy<Value = Stats> {
    (prop::collection::vec(num(), 15), dist(), dist(), dist()).prop_map(|(n, h, w, l)| Stats {
        acquisitions: n[0],
        nowait: n[1],
        contended: n[2],
        rejected: n[3],
        spins: n[4],
        sleeps: n[5],
        bounces: n[6],
        hold_timed: n[0],
        hold_ns: h,
        wait_ns: w,
        wait_untimed: n[14],
        waits: n[7],
        wake_calls: n[8],
        wakeups: n[9],
        spurious_wakeups: n[10],
        exclusive_wakeups: n[11],
        max_waiters: n[12],
        empty_wake_calls: n[13],
        wake_latency_ns: l,
    })
}

fn kind() -> impl Strategy<Value = LockKind> {
    prop_oneof![
        Just(LockKind::Spinlock),
        Just(LockKind::Mutex),
        Just(LockKind::Rwlock),
        Just(LockKind::Semaphore),
        Just(LockKind::Condvar),
        Just(LockKind::Waitqueue),
    ]
}

fn site() -> impl Strategy<Value = SiteStats> {
    (
        site_name(),
        prop::option::of(prop_oneof![
            Just("read".to_string()),
            Just("write".to_string()),
            text()
        ]),
        prop::option::of(any::<u32>()),
        stats(),
    )
        .prop_map(|(site, mode, pid, stats)| SiteStats {
            site,
            mode,
            pid,
            stats,
        })
}

fn lock() -> impl Strategy<Value = LockStats> {
    (
        id(),
        text(),
        kind(),
        num(),
        prop::option::of(id()),
        stats(),
        prop::collection::vec(site(), 0..4),
        prop::collection::vec((site_name(), num(), num()), 0..3),
    )
        .prop_map(
            |(id, name, kind, instances, parent, total, sites, holders)| LockStats {
                id,
                display_name: Some(name),
                kind,
                created_at: "c.rs:1:1".to_string(),
                instances,
                parent,
                total,
                sites,
                holders: holders
                    .into_iter()
                    .map(|(site, contended, wait_ns_total)| Holder {
                        site,
                        contended,
                        wait_ns_total,
                    })
                    .collect(),
            },
        )
}

fn snapshot() -> impl Strategy<Value = Snapshot> {
    (
        any::<u32>(),
        text(),
        num(),
        num(),
        num(),
        text(),
        prop::collection::vec(lock(), 0..6),
    )
        .prop_map(|(pid, name, start, end, elapsed, clock, locks)| {
            let mut s = Snapshot::empty(ProcessInfo { pid, name }, &clock);
            s.window = Window {
                start_unix_ns: start,
                end_unix_ns: end,
                elapsed_ns: elapsed,
            };
            s.dropped_records = end;
            s.locks = locks;
            s
        })
}

fn options() -> impl Strategy<Value = TableOptions> {
    (
        prop::sample::select(SortKey::all()),
        any::<bool>(),
        prop::option::of(0usize..4),
        any::<bool>(),
        any::<bool>(),
        prop::option::of(prop_oneof![
            Just("a".to_string()),
            Just(String::new()),
            text()
        ]),
        any::<bool>(),
    )
        .prop_map(
            |(sort, descending, top, sites, holders, filter, advice)| TableOptions {
                sort,
                descending,
                top,
                sites,
                holders,
                filter,
                advice,
            },
        )
}

/// Parses `text` as CSV and checks every record has the header's width.
fn assert_rectangular(text: &str) -> Result<Vec<csv::StringRecord>, TestCaseError> {
    let mut reader = csv::ReaderBuilder::new().from_reader(text.as_bytes());
    let width = reader
        .headers()
        .map_err(|e| TestCaseError::fail(e.to_string()))?
        .len();
    let mut rows = Vec::new();
    for r in reader.records() {
        let r = r.map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert_eq!(r.len(), width);
        rows.push(r);
    }
    Ok(rows)
}

/// No control character but the line ends reaches the terminal.
fn assert_printable(text: &str) -> Result<(), TestCaseError> {
    let bad = text.chars().find(|&c| c != '\n' && c.is_control());
    prop_assert!(bad.is_none(), "control character {:?} in output", bad);
    Ok(())
}

/// 128 cases by default (generation is slow in debug builds); set
/// `PROPTEST_CASES` for a longer run.
fn config() -> ProptestConfig {
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(128);
    ProptestConfig {
        cases,
        ..ProptestConfig::default()
    }
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn text_table_never_panics_and_prints_no_control_characters(snap in snapshot(), opts in options()) {
        let text = text_table(&snap, &opts);
        assert_printable(&text)?;
        prop_assert!(text.contains("*TOTAL*"));
        let _ = json(&snap);
    }

    #[test]
    fn csv_table_is_rectangular_and_round_trips_names(snap in snapshot(), opts in options()) {
        let text = csv_table(&snap, &opts);
        let rows = assert_rectangular(&text)?;
        let names: Vec<&str> = rows.iter().filter(|r| &r[0] == "lock").map(|r| &r[2]).collect();
        let want: Vec<&str> = sorted_locks(&snap, &opts).iter().map(|l| l.name()).collect();
        prop_assert_eq!(names, want);
    }

    #[test]
    fn every_lock_is_listed_exactly_once_whatever_the_parents(snap in snapshot(), sort in prop::sample::select(SortKey::all())) {
        let opts = TableOptions { sort, ..TableOptions::default() };
        let listed = sorted_locks(&snap, &opts);
        prop_assert_eq!(listed.len(), snap.locks.len());
        for lock in &snap.locks {
            prop_assert_eq!(listed.iter().filter(|l| std::ptr::eq(**l, lock)).count(), 1);
        }
    }

    #[test]
    fn diff_never_panics_and_its_csv_is_rectangular(before in snapshot(), after in snapshot(), opts in options()) {
        let d = diff(&before, &after);
        let text = diff_text(&d, &opts);
        assert_printable(&text)?;
        assert_rectangular(&diff_csv(&d, &opts))?;
        prop_assert!(serde_json::to_string(&d).is_ok());
        // Every lock of either side is kept, matched ones once.
        prop_assert!(d.locks.len() >= before.locks.len().max(after.locks.len()));
        prop_assert!(d.locks.len() <= before.locks.len() + after.locks.len());
    }

    #[test]
    fn a_snapshot_diffed_with_itself_changes_nothing(snap in snapshot()) {
        let d = diff(&snap, &snap);
        prop_assert!(d.locks.iter().all(|l| l.presence == lockmeter_model::diff::Presence::Both));
        for l in &d.locks {
            let c = *l.total.get(Metric::Acquisitions);
            prop_assert_eq!(c.delta, Some(0.0));
        }
    }

    #[test]
    fn advise_never_panics(snap in snapshot(), min_events in num(), pct in pct()) {
        let _ = advise(&snap, &Thresholds::default());
        let t = Thresholds { min_events, hot_util_pct: pct, spurious_pct: pct, ..Thresholds::default() };
        for a in advise(&snap, &t) {
            prop_assert!(snap.locks.iter().any(|l| l.id == a.lock_id));
        }
    }
}
