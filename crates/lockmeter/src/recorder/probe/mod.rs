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
    /// its first snapshot and again at later ones (`measured.rs`).
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

/// The snapshot hook: adds `self_cost` to a cumulative snapshot of `rec`
/// (calibrating first at its first snapshot, and again at up to seven
/// later ones after gaps that double from a second: `measured.rs`), lets the
/// budget re-evaluate the rates, and states the rates in effect.
pub(crate) fn fill(rec: &Recorder, snap: &mut Snapshot) {
    // A global recorder also recorded the calibration's own locks.
    snap.locks
        .retain(|l| !l.id.starts_with(calibrate::CLASS_PREFIX));
    let part = rec
        .probe
        .costs
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .get(|| calibrate::recorder_part(rec));
    let Some((part, taken)) = part else {
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
