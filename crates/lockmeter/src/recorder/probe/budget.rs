//! The overhead budget (`LOCKMETER_BUDGET=1%`, `LayerBuilder::overhead_budget`):
//! the sampling rates lowered so that the estimated cost stays under a
//! fraction of the threads' time.
//!
//! **Basis.** The budget is a fraction of *thread time*: the wall time
//! since the last evaluation times the threads that recorded into this
//! recorder and are alive (its live shards). That is an upper bound of the
//! CPU time those threads could have spent, so the budget is lax for
//! threads that mostly sleep; it needs no OS call and means the same on
//! every platform.
//!
//! **What it can lower.** Counts are exact whatever the budget: every
//! acquisition still pays its lookup and counters, and that floor is
//! reported (`floor_fraction`) rather than hidden. Only timing is sampled,
//! so the budget lowers the two sampling rates: uncontended hold timing
//! (one hold in N, N doubled) and the waiter-side stack sampling rate (a
//! wait of d captured with probability d / rate, rate doubled), both by the
//! same power of two, enough to bring the sampled part under what the
//! budget leaves after the floor. Rates are only ever lowered, never
//! raised back; the snapshot lists each one lowered (`budget.lowered`).
//!
//! **When.** At every cumulative snapshot (so every `Handle::snapshot`,
//! dump, endpoint reply and recorded interval) at most every
//! [`MIN_PERIOD_NS`], and, so that a program that takes no snapshot is
//! held to its budget too, from a thread of its own every [`TICK`], which
//! takes one snapshot and drops it.

use std::sync::atomic::Ordering::Relaxed;
use std::sync::{Arc, Weak};
use std::time::Duration;

use lockmeter_model::selfcost::{Budget, Lowered, SelfCost};
use lockmeter_model::stacks::Side;
use lockmeter_model::Snapshot;

use crate::recorder::Recorder;

/// The shortest period the budget judges: shorter ones say little.
pub(super) const MIN_PERIOD_NS: u64 = 50_000_000;
/// How often the budget's own thread looks when nobody takes snapshots.
const TICK: Duration = Duration::from_secs(1);
/// The coarsest hold sampling the budget goes to: one hold in 2^20.
const MAX_HOLD_EVERY: u32 = 1 << 20;
/// The coarsest stack rate it goes to: a wait of d in ~18 min of waiting.
const MAX_STACK_RATE_NS: u64 = 1 << 40;

/// The budget of one recorder between evaluations.
pub(super) struct State {
    fraction: f64,
    /// The rates it was built with.
    configured: Option<(u32, u64)>,
    /// Where the last evaluation was: window elapsed ns and the cumulative
    /// (sampled, total) estimates then.
    last: Option<(u64, f64, f64)>,
    /// The last verdict, repeated until the next evaluation.
    report: Budget,
}

impl State {
    pub(super) fn new(fraction: f64) -> State {
        State {
            fraction,
            configured: None,
            last: None,
            report: Budget {
                fraction,
                basis: "thread_time".to_string(),
                met: true,
                ..Budget::default()
            },
        }
    }
}

/// `LOCKMETER_BUDGET` and `LayerBuilder::overhead_budget` values: `1%`,
/// `0.5 %`, or a bare number of percent (`2`); `off`/`0` → `Some(None)`;
/// anything else (or over 100 %) → `None`.
pub(crate) fn parse_budget(v: &str) -> Option<Option<f64>> {
    let v = v.trim();
    if matches!(v, "off" | "0" | "none" | "no" | "false") {
        return Some(None);
    }
    let pct: f64 = v.strip_suffix('%').unwrap_or(v).trim().parse().ok()?;
    (pct > 0.0 && pct <= 100.0).then_some(Some(pct / 100.0))
}

/// The part of the estimates that the budget's rates lower: timed
/// uncontended holds and waiters' captured stacks, in ns, summed over
/// every class. (A holder's capture is sampled at the configured rate,
/// which the budget leaves alone: it counts in the floor.)
fn sampled_ns(snap: &Snapshot, sc: &SelfCost) -> f64 {
    let holds: u64 = snap
        .locks
        .iter()
        .map(|l| l.total.uncontended_holds_timed())
        .sum();
    let captured: u64 = snap
        .stacks
        .samples
        .iter()
        .filter(|s| s.side == Side::Waiter)
        .map(|s| s.captured)
        .sum();
    holds as f64 * sc.costs.timed_hold_ns + captured as f64 * sc.costs.stack_capture_ns
}

/// Re-evaluates `rec`'s budget against the cumulative snapshot `snap` and
/// its estimates `sc`, lowering rates if needed; the verdict for the
/// snapshot, or `None` without a budget.
pub(super) fn evaluate(rec: &Recorder, snap: &Snapshot, sc: &SelfCost) -> Option<Budget> {
    let mut guard = rec.probe.budget.lock().unwrap_or_else(|e| e.into_inner());
    let state = guard.as_mut()?;
    let probe = &rec.probe;
    let configured = *state
        .configured
        .get_or_insert((rec.sample_every, rec.stacks.rate_ns));
    let sampled = sampled_ns(snap, sc);
    let total: f64 = sc
        .locks
        .iter()
        .map(|l| l.inside_ns as f64 + l.outside_ns as f64)
        .sum();
    let now = snap.window.elapsed_ns;
    let Some((then, sampled_then, total_then)) = state.last else {
        state.last = Some((now, sampled, total));
        return Some(state.report.clone());
    };
    if now.saturating_sub(then) < MIN_PERIOD_NS {
        return Some(state.report.clone());
    }
    state.last = Some((now, sampled, total));
    let threads = rec.state().live.len().max(1) as f64;
    let basis = (now - then) as f64 * threads;
    let sampled = (sampled - sampled_then).max(0.0);
    let floor = (total - total_then - sampled).max(0.0);
    let allowed = state.fraction * basis - floor;
    let mut estimate = floor + sampled;
    if estimate > state.fraction * basis && sampled > 0.0 {
        // Lower both rates by the power of two that fits the sampled part
        // into what the floor leaves (or as far as they go).
        let factor = if allowed > 0.0 {
            (sampled / allowed).ceil().min(f64::from(MAX_HOLD_EVERY))
        } else {
            f64::from(MAX_HOLD_EVERY)
        };
        let k = (factor as u32).max(2).next_power_of_two();
        let every = probe.hold_every.load(Relaxed);
        let new_every = every.saturating_mul(k).min(MAX_HOLD_EVERY).max(every);
        let rate = probe.stack_rate_ns();
        let new_rate = match rate {
            0 => 0,
            r => r.saturating_mul(u64::from(k)).min(MAX_STACK_RATE_NS).max(r),
        };
        let shrink = f64::from(every) / f64::from(new_every);
        estimate = floor + sampled * shrink;
        probe.hold_every.store(new_every, Relaxed);
        probe.stack_rate_ns.store(new_rate, Relaxed);
    }
    // Entries made since the last evaluation started at the configured
    // rate: every live entry gets the rate in effect.
    let every = probe.hold_every.load(Relaxed);
    if every != configured.0 {
        rec.for_each_live_entry(|e| e.set_sample_every(u64::from(every)));
    }
    let mut lowered = Vec::new();
    if every != configured.0 {
        lowered.push(Lowered {
            what: "uncontended_hold_every".to_string(),
            from: u64::from(configured.0),
            to: u64::from(every),
        });
    }
    let rate = probe.stack_rate_ns();
    if rate != configured.1 {
        lowered.push(Lowered {
            what: "stack_rate_ns".to_string(),
            from: configured.1,
            to: rate,
        });
    }
    state.report = Budget {
        fraction: state.fraction,
        basis: "thread_time".to_string(),
        estimated_fraction: estimate / basis,
        floor_fraction: floor / basis,
        met: estimate <= state.fraction * basis,
        lowered,
    };
    Some(state.report.clone())
}

/// Starts the thread that evaluates `rec`'s budget every [`TICK`] while
/// the recorder lives (it holds only a weak reference).
pub(crate) fn start_ticks(rec: &Arc<Recorder>) {
    let weak: Weak<Recorder> = Arc::downgrade(rec);
    let spawned = std::thread::Builder::new()
        .name("lockmeter-budget".into())
        .spawn(move || loop {
            std::thread::sleep(TICK);
            let Some(rec) = weak.upgrade() else { return };
            drop(rec.cumulative());
        });
    if let Err(e) = spawned {
        crate::report::warn(format_args!(
            "cannot start the budget thread ({e}); the budget is checked at snapshots only"
        ));
    }
}
