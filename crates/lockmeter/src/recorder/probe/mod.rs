//! Self-accounting: what this recorder itself costs, in every snapshot,
//! and the overhead budget that lowers its sampling rates to fit.
//!
//! Recording costs time inside critical sections (counters, the holder and
//! owner notes, the held-lock table, a waiter's stack capture) and on the
//! acquisition path (finding the thread's entry, the clock reads of timed
//! holds). Neither is measured per acquisition, which would cost more than
//! it measures: [`calibrate`] times the recording paths once, on a private
//! lock under a private recorder, and every snapshot multiplies those
//! per-operation costs by its exact counts (`lockmeter_model::selfcost`).
//!
//! | file | what |
//! |---|---|
//! | `mod.rs` | [`ProbeState`], kept by each recorder, and [`fill`], the snapshot hook |
//! | `calibrate.rs` | the measurement of the per-operation costs |
//! | `measured.rs` | each measurement taken again at later snapshots, the calmest kept |
//! | `budget.rs` | `LOCKMETER_BUDGET`: the rates lowered to stay under it |

mod budget;
mod calibrate;
mod measured;

use std::sync::atomic::Ordering::Relaxed;
use std::sync::atomic::{AtomicU32, AtomicU64};
use std::sync::Mutex;

use lockmeter_model::selfcost::SelfCost;
use lockmeter_model::Snapshot;

use super::Recorder;

pub(crate) use self::budget::{parse_budget, start_ticks};

/// What a recorder keeps for self-accounting: its measured costs, the
/// sampling rates in effect (lowered by a budget) and the budget's state.
pub(crate) struct ProbeState {
    /// The costs measured on this recorder's clock and stack depth, at
    /// its first snapshot and again at later ones (`measured.rs`), when
    /// its clock is a test's mock; otherwise the process's [`SHARED`] are
    /// used.
    costs: Mutex<measured::Measured<calibrate::RecorderPart>>,
    /// The uncontended hold sampling in effect (a power of two).
    hold_every: AtomicU32,
    /// The stack sampling rate in effect, in ns (0: stacks off).
    stack_rate_ns: AtomicU64,
    /// The overhead budget, when one was set.
    budget: Mutex<Option<budget::State>>,
}

impl ProbeState {
    /// The state of a recorder configured with `sample_every` and
    /// `stack_rate_ns`.
    pub(crate) fn new(sample_every: u32, stack_rate_ns: u64) -> ProbeState {
        ProbeState {
            costs: Mutex::new(measured::Measured::new()),
            hold_every: AtomicU32::new(sample_every),
            stack_rate_ns: AtomicU64::new(stack_rate_ns),
            budget: Mutex::new(None),
        }
    }

    /// Keeps the recorder's estimated cost under `fraction` of its
    /// threads' time (see `budget.rs`); `None` leaves the rates alone.
    pub(crate) fn set_budget(&self, fraction: Option<f64>) {
        *self.budget.lock().unwrap_or_else(|e| e.into_inner()) = fraction.map(budget::State::new);
    }

    /// The uncontended hold sampling in effect, for new entries: the
    /// configured one unless a budget lowered it.
    pub(crate) fn hold_every(&self) -> u32 {
        self.hold_every.load(Relaxed)
    }

    /// The stack sampling rate in effect: the configured one unless a
    /// budget raised it. Read on the contended path by the waiter's capture.
    #[inline]
    pub(crate) fn stack_rate_ns(&self) -> u64 {
        self.stack_rate_ns.load(Relaxed)
    }
}

/// What recorders on one of the process's real clocks measure (the
/// recorder part of the costs: a timed hold, the contended paths, a stack
/// capture), shared by every recorder with the same clock and stack depth.
/// Those are the same operations on the same clock, so they are measured
/// for the process, not for each recorder: a scoped layer made for a
/// request or a test pays no calibration of its own (30-150 ms) and gets
/// the calmest of all measurements so far at once, where its own first one
/// or two, when a burst of the host took them, read the every-hold-timed
/// row up to 1.75 times the measured cost (the bench's `selfcost` rows,
/// `docs/performance.md`, "Session 33").
static SHARED: Mutex<Vec<(PartKey, measured::Measured<calibrate::RecorderPart>)>> =
    Mutex::new(Vec::new());

/// What [`SHARED`] is keyed by: the clock's name and the stack depth
/// captured (`None`: stacks off).
#[derive(Clone, Copy, PartialEq, Eq)]
struct PartKey {
    clock: &'static str,
    stack_depth: Option<usize>,
}

/// The recorder part of `rec`'s costs, measured first if a measurement is
/// due (`measured.rs`), and how many were taken: the process's [`SHARED`]
/// one for `rec`'s clock, or `rec`'s own on a mock clock (whose cost is
/// whatever the test made it). The lock is held while measuring, so that
/// two snapshots measure once; measuring takes no other lock of the
/// recorder's and no application lock.
fn recorder_part(rec: &Recorder) -> Option<(calibrate::RecorderPart, measured::Taken)> {
    let measure = || calibrate::recorder_part(rec);
    if rec.clock_name == crate::clock::MOCK_CLOCK {
        let mut own = rec.probe.costs.lock().unwrap_or_else(|e| e.into_inner());
        return own.get(measure);
    }
    let key = PartKey {
        clock: rec.clock_name,
        stack_depth: (rec.stacks.rate_ns != 0).then_some(rec.stacks.depth),
    };
    let mut shared = SHARED.lock().unwrap_or_else(|e| e.into_inner());
    let i = match shared.iter().position(|(k, _)| *k == key) {
        Some(i) => i,
        None => {
            shared.push((key, measured::Measured::new()));
            shared.len() - 1
        }
    };
    shared[i].1.get(measure)
}

/// The snapshot hook: adds `self_cost` to a cumulative snapshot of `rec`
/// (calibrating first at its first snapshot, and again at up to seven
/// later ones after gaps that double from a second: `measured.rs`), lets the
/// budget re-evaluate the rates, and states the rates in effect.
pub(crate) fn fill(rec: &Recorder, snap: &mut Snapshot) {
    // A global recorder also recorded the calibration's own locks.
    snap.locks
        .retain(|l| !l.id.starts_with(calibrate::CLASS_PREFIX));
    let Some((part, taken)) = recorder_part(rec) else {
        return;
    };
    let Some(costs) = calibrate::costs_for(rec, &part, taken.took_ns) else {
        return;
    };
    let mut sc = SelfCost {
        costs,
        ..SelfCost::default()
    };
    sc.refresh(&snap.locks, &snap.stacks);
    sc.budget = budget::evaluate(rec, snap, &sc);
    snap.sampling.uncontended_hold_every = rec.probe.hold_every.load(Relaxed);
    snap.sampling.contended_wait_every =
        rec.contended_wait_every(snap.sampling.uncontended_hold_every);
    if snap.stacks.rate_ns != 0 {
        snap.stacks.rate_ns = rec.probe.stack_rate_ns();
    }
    snap.self_cost = Some(Box::new(sc));
}
