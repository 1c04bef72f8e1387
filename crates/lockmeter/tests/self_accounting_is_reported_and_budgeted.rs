//! Every snapshot says what lockmeter itself cost per lock class; a class
//! with a tiny critical section is flagged and one with a long one is not;
//! an overhead budget lowers the sampling rates, says so, and leaves the
//! counts exact. Real threads; no timing is asserted, only what follows
//! from the measured costs and the exact counts.

mod common;

use std::time::{Duration, Instant};

use common::{lock, spawn_observed, table_row};
use lockmeter_model::render::{text_table, TableOptions};
use lockmeter_model::selfcost::SelfCost;
use lockmeter_model::{LockKind, Snapshot};
use tracing_subscriber::prelude::*;

/// A layer from `builder` in effect on this thread while `f` runs with its
/// handle (threads started through `spawn_observed` inherit it).
fn with_layer<R>(builder: lockmeter::LayerBuilder, f: impl FnOnce(&lockmeter::Handle) -> R) -> R {
    let layer = builder.build();
    let handle = layer.handle();
    let dispatch = tracing::Dispatch::new(tracing_subscriber::registry().with(layer));
    tracing::dispatcher::with_default(&dispatch, || f(&handle))
}

/// `threads` threads each take `m` `per_thread` times, holding it for
/// `hold` (spinning) each time.
fn run(threads: usize, per_thread: u64, m: &'static lockmeter::Mutex<u64>, hold: Duration) {
    let workers: Vec<_> = (0..threads)
        .map(|_| {
            spawn_observed(move || {
                for _ in 0..per_thread {
                    let mut g = m.lock();
                    *g += 1;
                    if !hold.is_zero() {
                        let t = Instant::now();
                        while t.elapsed() < hold {
                            std::hint::spin_loop();
                        }
                    }
                }
            })
        })
        .collect();
    for w in workers {
        w.join().unwrap();
    }
}

fn estimate(snap: &Snapshot, id: &str) -> (u64, u64) {
    let e = snap
        .self_cost
        .as_ref()
        .expect("self_cost in every snapshot")
        .lock(id)
        .unwrap_or_else(|| panic!("no estimate for {id}"));
    (e.inside_ns, e.outside_ns)
}

#[test]
fn the_estimate_is_positive_grows_with_acquisitions_and_follows_the_counts() {
    static M: lockmeter::Mutex<u64> = lockmeter::Mutex::named("self.grow", 0);
    let (first, second) = with_layer(lockmeter::Layer::builder(), |handle| {
        run(2, 1_000, &M, Duration::ZERO);
        let first = handle.snapshot();
        run(2, 10_000, &M, Duration::ZERO);
        (first, handle.snapshot())
    });
    let sc = second.self_cost.as_ref().unwrap();
    assert!(sc.costs.calibration_ns > 0);
    assert_eq!(sc.costs.lookup, "scoped");
    assert!(sc.costs.kinds.iter().any(|k| k.kind == LockKind::Mutex));
    let (in1, out1) = estimate(&first, "self.grow");
    let (in2, out2) = estimate(&second, "self.grow");
    assert!(in1 + out1 > 0, "{:?}", first.self_cost);
    assert!(in2 + out2 > in1 + out1);
    assert_eq!(lock(&second, "self.grow").total.acquisitions, 22_000);
    // The estimate is the costs in the snapshot times its exact counts.
    let again = SelfCost::estimate(&sc.costs, lock(&second, "self.grow"), &second.stacks);
    assert_eq!((again.inside_ns, again.outside_ns), (in2, out2));
    // The costs change only with a new measurement: the second snapshot
    // gives the first's unless a second measurement was due by then (one
    // second after the first: a loaded machine can take that long here).
    let costs1 = &first.self_cost.as_ref().unwrap().costs;
    assert!(sc.costs.calibrations >= costs1.calibrations);
    if sc.costs.calibrations == costs1.calibrations {
        assert_eq!(costs1, &sc.costs);
    }
    // And the dump carries it.
    let json = serde_json::to_string(&second).unwrap();
    assert!(json.contains("\"self_cost\""));
}

#[test]
fn a_tiny_critical_section_is_flagged_and_a_long_one_is_not() {
    static TINY: lockmeter::Mutex<u64> = lockmeter::Mutex::named("self.tiny", 0);
    static LONG: lockmeter::Mutex<u64> = lockmeter::Mutex::named("self.long", 0);
    // Every hold timed, so that both hold totals are measured, not scaled.
    let builder = lockmeter::Layer::builder().sample_uncontended_holds(1);
    let snap = with_layer(builder, |handle| {
        run(2, 20_000, &TINY, Duration::ZERO);
        run(2, 20, &LONG, Duration::from_micros(500));
        handle.snapshot()
    });
    let tiny = snap.self_share_pct("self.tiny").expect("a share for tiny");
    let long = snap.self_share_pct("self.long").expect("a share for long");
    assert!(tiny > 5.0, "tiny share {tiny}%: {:?}", snap.self_cost);
    assert!(long < 5.0, "long share {long}%");
    assert!(tiny > long);
    let table = text_table(&snap, &TableOptions::default());
    assert!(
        table_row(&table, "self.tiny (mutex)").contains("[self "),
        "{table}"
    );
    assert!(
        !table_row(&table, "self.long (mutex)").contains("[self "),
        "{table}"
    );
    assert!(table.contains("[self N%]: lockmeter's own work"), "{table}");
}

#[test]
fn a_tiny_budget_lowers_the_rates_says_so_and_keeps_counts_exact() {
    static M: lockmeter::Mutex<u64> = lockmeter::Mutex::named("self.budget", 0);
    // Every hold timed: the sampled part the budget can lower is large.
    let builder = lockmeter::Layer::builder()
        .sample_uncontended_holds(1)
        .overhead_budget(Some(1e-9));
    let (lowered, window) = with_layer(builder, |handle| {
        // The first evaluation starts the budget's period; the second,
        // after a workload of more than its minimum period, judges it.
        drop(handle.snapshot());
        let t = Instant::now();
        let mut ops = 0;
        while t.elapsed() < Duration::from_millis(120) {
            run(2, 2_000, &M, Duration::ZERO);
            ops += 4_000;
        }
        let lowered = handle.snapshot();
        assert_eq!(lock(&lowered, "self.budget").total.acquisitions, ops);
        // A window at the lowered rate: counted exactly, timed rarely.
        handle.reset();
        run(2, 5_000, &M, Duration::ZERO);
        (lowered, handle.snapshot())
    });
    let budget = lowered
        .self_cost
        .as_ref()
        .and_then(|sc| sc.budget.as_ref())
        .expect("a budget in the snapshot");
    assert_eq!(budget.fraction, 1e-9);
    assert_eq!(budget.basis, "thread_time");
    assert!(!budget.met, "a budget of 1e-9 cannot be met: {budget:?}");
    let hold = budget
        .lowered
        .iter()
        .find(|l| l.what == "uncontended_hold_every")
        .unwrap_or_else(|| panic!("hold sampling not lowered: {budget:?}"));
    assert_eq!(hold.from, 1);
    assert!(hold.to > 1);
    assert_eq!(lowered.sampling.uncontended_hold_every as u64, hold.to);
    let table = text_table(&lowered, &TableOptions::default());
    assert!(
        table.contains(&format!("lowered hold sampling 1/1 -> 1/{}", hold.to)),
        "{table}"
    );

    let total = &lock(&window, "self.budget").total;
    assert_eq!(total.acquisitions, 10_000, "counts stay exact");
    assert_eq!(total.hold_ns.count, 10_000, "every hold is still counted");
    assert!(
        total.hold_timed * 2 < total.acquisitions,
        "the lowered rate applies to the existing entries: {} of {} timed",
        total.hold_timed,
        total.acquisitions
    );
}

/// The recorder part of the costs (a timed hold, the contended paths) is
/// the process's for a clock, not each recorder's: a layer made after
/// another has measured starts from that measurement, where one of its
/// own would read a different figure (noise alone moves the last digits).
#[test]
fn a_new_recorder_on_the_same_clock_shares_the_measured_costs() {
    let part = |h: &lockmeter::Handle| {
        let snap = h.cumulative();
        let c = &snap.self_cost.as_ref().expect("self_cost").costs;
        (
            c.timed_hold_ns,
            c.contended_inside_ns,
            c.contended_outside_ns,
        )
    };
    let first = lockmeter::Layer::new();
    let first = first.handle();
    let measured = part(&first);
    assert!(measured.0 > 0.0, "{measured:?}");
    let second = lockmeter::Layer::new();
    let second = second.handle();
    // Another test's snapshot may take a due measurement in between: the
    // two read the same part within a few tries. Measured per recorder,
    // the second keeps its own and never reads the first's.
    let same = (0..5).any(|_| part(&second) == part(&first));
    assert!(same, "{:?} against {:?}", part(&second), part(&first));
}
