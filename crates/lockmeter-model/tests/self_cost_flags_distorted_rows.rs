//! Self-accounting in the model: the table flags a class whose lockmeter
//! share of held time passes 5 %, and only that class; windows recompute
//! the estimate from their own counts; old dumps load without it and
//! print as before; the budget's footer says what it lowered.

mod common;

use common::{acq, before, lock, site};
use lockmeter_model::render::{text_table, TableOptions};
use lockmeter_model::selfcost::{Budget, KindCost, Lowered, OpCosts, SelfCost};
use lockmeter_model::{parse_snapshot, LockKind, Snapshot};

/// Costs of 2 ns inside and 1 ns outside per acquisition.
fn costs() -> OpCosts {
    OpCosts {
        lookup: "global".into(),
        kinds: vec![KindCost {
            kind: LockKind::Mutex,
            inside_ns: 2.0,
            outside_ns: 1.0,
        }],
        timed_hold_ns: 20.0,
        ..OpCosts::default()
    }
}

/// Two classes of 1000 acquisitions each: `tiny` holds 20 ns per hold (so
/// 2 ns of lockmeter's is 10 %), `long` 10 µs (0.02 %).
fn snapshot() -> Snapshot {
    let mut snap = before();
    snap.locks = vec![
        lock(
            "tiny",
            LockKind::Mutex,
            None,
            vec![site("src/a.rs:1:1", None, acq(1000, 0, &[(20, 1000)], &[]))],
            vec![],
        ),
        lock(
            "long",
            LockKind::Mutex,
            None,
            vec![site(
                "src/b.rs:1:1",
                None,
                acq(1000, 0, &[(10_000, 1000)], &[]),
            )],
            vec![],
        ),
    ];
    snap.self_cost = Some(Box::new(SelfCost {
        costs: costs(),
        ..SelfCost::default()
    }));
    snap.refresh_self_cost();
    snap
}

#[test]
fn a_tiny_critical_section_is_flagged_and_a_long_one_is_not() {
    let snap = snapshot();
    let sc = snap.self_cost.as_ref().unwrap();
    assert_eq!(sc.lock("tiny").unwrap().inside_ns, 2000);
    assert_eq!(sc.lock("tiny").unwrap().outside_ns, 1000);
    assert_eq!(snap.self_share_pct("tiny"), Some(10.0));
    assert!(snap.self_share_pct("long").unwrap() < 0.1);

    let table = text_table(&snap, &TableOptions::default());
    let row = |id: &str| {
        table
            .lines()
            .find(|l| l.contains(&format!("{id} (mutex)")))
            .unwrap_or_else(|| panic!("no row for {id} in\n{table}"))
            .to_string()
    };
    assert!(row("tiny").ends_with("[self 10.0%]"), "{table}");
    assert!(!row("long").contains("[self"), "{table}");
    assert_eq!(
        table.matches("[self N%]: lockmeter's own work").count(),
        1,
        "{table}"
    );
}

#[test]
fn without_a_flagged_row_the_table_is_unchanged() {
    let mut snap = snapshot();
    let plain = {
        let mut s = snap.clone();
        s.self_cost = None;
        text_table(&s, &TableOptions::default())
    };
    // Long holds only: nothing passes 5 %, nothing is added.
    snap.locks.retain(|l| l.id == "long");
    let mut plain_long = snap.clone();
    plain_long.self_cost = None;
    assert_eq!(
        text_table(&snap, &TableOptions::default()),
        text_table(&plain_long, &TableOptions::default())
    );
    assert!(!plain.contains("[self"));
}

#[test]
fn the_share_is_written_derived_and_recomputed_when_read() {
    let snap = snapshot();
    let text = serde_json::to_string(&snap).unwrap();
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    let locks = &v["self_cost"]["locks"];
    assert_eq!(locks[0]["id"], "tiny");
    assert_eq!(locks[0]["held_pct"], 10.0);
    // A reader ignores the stored share and recomputes it.
    let tampered = text.replace("\"held_pct\":10.0", "\"held_pct\":99.0");
    assert_ne!(tampered, text);
    let back = parse_snapshot(&tampered).unwrap();
    assert_eq!(back, snap);
    assert_eq!(back.self_share_pct("tiny"), Some(10.0));
}

#[test]
fn old_dumps_load_without_self_accounting() {
    let snap = parse_snapshot(include_str!("fixtures/v1-demo.json")).unwrap();
    assert!(snap.self_cost.is_none());
    let text = serde_json::to_string(&snap).unwrap();
    assert!(!text.contains("self_cost"));
}

#[test]
fn a_window_is_estimated_from_its_own_counts() {
    let earlier = snapshot();
    let mut later = snapshot();
    for l in &mut later.locks {
        let more = l.total.clone();
        l.total.merge(&more);
        for s in &mut l.sites {
            let more = s.stats.clone();
            s.stats.merge(&more);
        }
    }
    later.window.elapsed_ns += 1_000_000_000;
    later.window.end_unix_ns += 1_000_000_000;
    later.refresh_self_cost();
    assert_eq!(
        later
            .self_cost
            .as_ref()
            .unwrap()
            .lock("tiny")
            .unwrap()
            .inside_ns,
        4000
    );
    let window = later.since(&earlier);
    let tiny = window.self_cost.as_ref().unwrap().lock("tiny").unwrap();
    assert_eq!((tiny.inside_ns, tiny.outside_ns), (2000, 1000));
    assert_eq!(window.self_share_pct("tiny"), Some(10.0));
}

#[test]
fn the_footer_says_what_the_budget_lowered() {
    let mut snap = snapshot();
    snap.locks.retain(|l| l.id == "long");
    snap.refresh_self_cost();
    snap.self_cost.as_mut().unwrap().budget = Some(Budget {
        fraction: 0.01,
        basis: "thread_time".into(),
        estimated_fraction: 0.004,
        floor_fraction: 0.003,
        met: true,
        lowered: vec![
            Lowered {
                what: "uncontended_hold_every".into(),
                from: 64,
                to: 1024,
            },
            Lowered {
                what: "stack_rate_ns".into(),
                from: 1_000_000,
                to: 16_000_000,
            },
        ],
    });
    let table = text_table(&snap, &TableOptions::default());
    let last = table.lines().last().unwrap();
    assert!(
        last.starts_with("budget 1.0%: lowered hold sampling 1/64 -> 1/1024;"),
        "{table}"
    );
    assert!(
        last.contains("stack sampling (rate 1.0ms -> 16.0ms)"),
        "{last}"
    );
    assert!(
        last.contains("estimated cost 0.4% of thread time"),
        "{last}"
    );
    // A budget that lowered nothing and is met says nothing.
    let b = snap.self_cost.as_mut().unwrap().budget.as_mut().unwrap();
    b.lowered.clear();
    assert!(!text_table(&snap, &TableOptions::default()).contains("budget"));
}
