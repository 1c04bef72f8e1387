//! Self-accounting checked: the cost lockmeter says it added, per
//! operation, against the cost it was measured to add.
//!
//! Each row runs the bare lock and the observed one in interleaved batches
//! (the same loop as the `uncontended` rows, in the same run) and takes the
//! added cost per operation as the difference of the medians. Around the
//! observed batches it takes two cumulative snapshots; the window between
//! them holds exactly those acquisitions, and its `self_cost` estimate for
//! the class (inside + outside the critical section), divided by its
//! acquisitions, is the estimate per operation. The row's `bare` column is
//! the measured added cost, `instr` the estimate, `ratio` estimate /
//! measured; the goal is a ratio within 0.70–1.30 (since session 33 a
//! goal of the table, so that the summary counts these rows and a SHARED
//! one runs again, `steps.rs`). The estimate rests on costs timed
//! once, at the recorder's first snapshot: a row whose host probe differs
//! from the probe around that calibration by [`host::SHARED_CORE`] or more
//! compares costs taken on differently shared cores and is SHARED, not
//! judged, as is one measured on a shared core (see `host.rs`). A
//! recorder measures its costs again at later snapshots and keeps the
//! calmest measurement (`lockmeter`'s `probe/measured.rs`); the rows
//! track the probe around each ([`CalibrationProbes`]).

use std::cell::RefCell;
use std::hint::black_box;

use lockmeter_model::Snapshot;

use crate::bare::BareSpinLock;
use crate::host;
use crate::measure::{ns_pair, Config, Pair};
use crate::placement::{self, Copied};
use crate::report::{Goal, Row, Unit};

/// The goal: the estimate within this share of the measured added cost.
const WITHIN: f64 = 0.30;

/// The bare (`$bare`) and metered (`$inst`) increment loops, timed side by
/// side: the same loop for every lock type, which share no trait.
macro_rules! increment_loops {
    ($cfg:expr, $bare:expr, $inst:expr) => {
        ns_pair(
            $cfg,
            |n| {
                for _ in 0..n {
                    *$bare.lock() += 1;
                }
            },
            |n| {
                for _ in 0..n {
                    *$inst.lock() += 1;
                }
            },
        )
    };
}

/// The estimate per acquisition of class `id` in the window `later` minus
/// `earlier`: (inside, outside) ns, and the acquisitions it is over.
fn estimate_per_op(earlier: &Snapshot, later: &Snapshot, id: &str) -> Option<(f64, f64, u64)> {
    let window = later.since(earlier);
    let acquisitions = window.lock(id)?.total.acquisitions;
    let e = window.self_cost.as_ref()?.lock(id)?;
    (acquisitions > 0).then(|| {
        let n = acquisitions as f64;
        (
            e.inside_ns as f64 / n,
            e.outside_ns as f64 / n,
            acquisitions,
        )
    })
}

/// The host probe around each measurement of a recorder's process-wide
/// costs, by its number (`OpCosts::calibrations`): the first snapshot
/// measures them and later ones may measure again (up to seven, after
/// gaps that double from a second), keeping the calmest
/// (`OpCosts::calibration_kept`).
#[derive(Default)]
struct CalibrationProbes(RefCell<Vec<f64>>);

impl CalibrationProbes {
    /// Probes already known: the first measurement's, taken by the caller.
    fn starting_with(first: f64) -> CalibrationProbes {
        CalibrationProbes(RefCell::new(vec![first]))
    }

    /// A snapshot from `read`, between two host probes, whose mean is
    /// noted for every measurement that snapshot took.
    fn read(&self, read: &dyn Fn() -> Snapshot) -> (Snapshot, f64) {
        let (snap, probe) = host::around(read);
        let taken = snap
            .self_cost
            .as_ref()
            .map_or(0, |sc| sc.costs.calibrations);
        let mut probes = self.0.borrow_mut();
        while probes.len() < taken as usize {
            probes.push(probe);
        }
        (snap, probe)
    }

    /// The probe around the measurement `snap`'s costs come from, and its
    /// number and the count taken; `None` for an older recorder that says
    /// neither.
    fn of(&self, snap: &Snapshot) -> Option<(f64, u32, u32)> {
        let costs = &snap.self_cost.as_ref()?.costs;
        let kept = costs.calibration_kept;
        let probe = self
            .0
            .borrow()
            .get(kept.checked_sub(1)? as usize)
            .copied()?;
        Some((probe, kept, costs.calibrations))
    }
}

/// One row: `measure` runs the interleaved pair under the layer `read`
/// snapshots; the estimate is over the acquisitions of class `id` it made.
/// `probes`: the host probes around the recorder's calibrations so far.
fn row(
    key: &str,
    label: &str,
    id: &str,
    read: &dyn Fn() -> Snapshot,
    probes: &CalibrationProbes,
    measure: impl FnOnce() -> Pair,
) -> Row {
    // A snapshot may calibrate: not inside the pair.
    let (before, first_read) = probes.read(read);
    let pair = measure();
    let (after, _) = probes.read(read);
    // The estimate is the later snapshot's costs on the window's counts.
    let (calibrated_at, kept, taken) = probes.of(&after).unwrap_or((first_read, 0, 0));
    let measured = pair.instrumented - pair.bare;
    let mut row = Row::new(
        &format!("selfcost_{key}"),
        &format!("self-accounting, {label}: measured vs estimated +ns/op"),
        Unit::NsPerOp,
        Goal::RatioWithin(1.0 - WITHIN, 1.0 + WITHIN),
    );
    let Some((inside, outside, n)) = estimate_per_op(&before, &after, id) else {
        return row.note(format!("no self_cost estimate for {id} in the snapshot"));
    };
    let estimate = inside + outside;
    let ratio = estimate / measured;
    // The row's core against the calibration's, either way round.
    let shift = pair.host_probe / calibrated_at;
    let incomparable = shift.max(1.0 / shift) >= host::SHARED_CORE;
    row.incomparable = incomparable;
    let costs = after.self_cost.as_ref().map(|sc| &sc.costs);
    row.bare = Some(measured);
    row.instrumented = Some(estimate);
    row.ratio = ratio.is_finite().then_some(ratio);
    row.host_probe = pair.host_probe.is_finite().then_some(pair.host_probe);
    row.note(format!(
        "bare = measured added cost ({:.2} observed - {:.2} bare ns/op, medians), instr = \
         self_cost estimate over the {n} observed acquisitions ({inside:.2} inside + \
         {outside:.2} outside the critical section), lookup {}, calibrated in {:.1} ms \
         (measurement {kept} of {taken} kept); host probe {:.3} ns/round against \
         {calibrated_at:.3} around that measurement{}",
        pair.instrumented,
        pair.bare,
        costs.map_or("?", |c| c.lookup.as_str()),
        costs.map_or(f64::NAN, |c| c.calibration_ns as f64 / 1e6),
        pair.host_probe,
        match incomparable {
            true => " (calibrated and measured on differently shared cores)",
            false => "",
        },
    ))
}

/// The rows: SpinLock and Mutex under the global layer (`handle`'s), and
/// Mutex with every hold timed under a scoped layer of its own.
/// `calibrated_at`: the host probe around the global recorder's first
/// snapshot ([`host::around`]).
pub fn rows(cfg: &Config, handle: &lockmeter::Handle, calibrated_at: f64) -> Vec<Row> {
    use tracing_subscriber::prelude::*;

    let global = || handle.cumulative();
    let probes = CalibrationProbes::starting_with(calibrated_at);
    let mut rows = Vec::new();

    const SPIN: &str = "bench.selfcost.spinlock";
    let bare = BareSpinLock::new(0u64);
    let inst = lockmeter::SpinLock::named(SPIN, 0u64);
    let (b, i) = (black_box(&bare), black_box(&inst));
    rows.push(row("spinlock", "SpinLock", SPIN, &global, &probes, || {
        increment_loops!(cfg, b, i)
    }));

    const MUTEX: &str = "bench.selfcost.mutex";
    let bare = parking_lot::Mutex::new(0u64);
    let inst = lockmeter::Mutex::named(MUTEX, 0u64);
    let (b, i) = (black_box(&bare), black_box(&inst));
    rows.push(row("mutex", "Mutex", MUTEX, &global, &probes, || {
        increment_loops!(cfg, b, i)
    }));

    // The estimate is a lock placed anywhere in code placed anywhere (the
    // calibration's is the mean of eight copies of its loop, at eight line
    // offsets); the two rows above measure one copy each. These measure
    // the eight copies of the `placement` rows, in one window.
    for lock in Copied::ALL {
        let (what, name, class) = lock.names();
        rows.push(row(
            &format!("{what}_copies"),
            &format!("{name}, 8 copies of the code at 8 line offsets"),
            class,
            &global,
            &probes,
            || placement::mean_pair(&lock.copies(cfg)),
        ));
    }

    // Every hold timed, in a scoped dispatcher: the two clock reads per
    // acquisition and the scoped lookup are in the estimate too.
    const TIMED: &str = "bench.selfcost.mutex_timed";
    let layer = lockmeter::Layer::builder()
        .sample_uncontended_holds(1)
        .build();
    let scoped = layer.handle();
    let dispatch = tracing::Dispatch::new(tracing_subscriber::registry().with(layer));
    tracing::dispatcher::with_default(&dispatch, || {
        let bare = parking_lot::Mutex::new(0u64);
        let inst = lockmeter::Mutex::named(TIMED, 0u64);
        let (b, i) = (black_box(&bare), black_box(&inst));
        let read = || scoped.cumulative();
        rows.push(row(
            "scoped_every_hold_timed_mutex",
            "Mutex, scoped, every hold timed",
            TIMED,
            &read,
            &CalibrationProbes::default(),
            || {
                ns_pair(
                    cfg,
                    |n| {
                        for _ in 0..n {
                            *b.lock() += 1;
                        }
                    },
                    |n| {
                        for _ in 0..n {
                            *i.lock() += 1;
                        }
                    },
                )
            },
        ));
    });
    rows
}
