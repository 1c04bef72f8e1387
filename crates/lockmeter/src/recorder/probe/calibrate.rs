//! The measurement of what recording costs, per operation.
//!
//! Two parts, both timed with `std::time::Instant` over short batches:
//!
//! - **Once per process** ([`base`]), on a thread of its own with a
//!   private recorder in a scoped dispatcher: an observed `Mutex` and
//!   `SpinLock` taken and released in a loop against the bare lock
//!   (parking_lot's raw mutex; a plain compare-and-swap spinlock), in
//!   interleaved batches, the median of the differences; and the part of it
//!   spent before the attempt (finding the recorder and the entry, the
//!   sampling counter), timed alone. The private lock and recorder are
//!   never seen by the application: no application lock is taken, and the
//!   thread exits (folding its entries into the private recorder, which is
//!   then dropped) before the snapshot returns.
//! - **Per recorder** ([`costs_for`]), on the calling thread, with a
//!   standalone entry on the recorder's clock: a timed hold's clock reads
//!   and distribution update, a contended acquisition's extra counters and
//!   clock reads, and one stack capture at the recorder's depth.
//!
//! The private recorder is found through a scoped dispatcher, which costs a
//! downcast per acquisition; a recorder in the global dispatcher pays one
//! pointer comparison instead. Both lookups are timed, and the difference
//! is taken off for a global recorder.

use std::hint::black_box;
use std::panic::Location;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Instant;

use lockmeter_model::selfcost::{KindCost, OpCosts};
use lockmeter_model::LockKind;
use tracing_subscriber::layer::SubscriberExt;

use crate::class::{Class, Mode, SiteKey};
use crate::recorder::entry::Entry;
use crate::recorder::{self, Recorder, Settings};
use crate::stacks::{StackSettings, MAX_STACK_DEPTH};

/// Operations per timed batch: enough to dwarf `Instant::now()` (~25 ns),
/// few enough that the whole calibration takes milliseconds. Debug builds
/// (the test suite) run ~20× slower and need no precision.
const ITERATIONS: u64 = if cfg!(debug_assertions) {
    2_000
} else {
    20_000
};
/// Interleaved batch pairs per measurement; the median difference is kept.
const REPS: usize = if cfg!(debug_assertions) { 3 } else { 9 };
/// Stack captures timed (each takes microseconds).
const CAPTURES: usize = 5;

/// What is measured once per process.
#[derive(Debug, Clone)]
pub(super) struct Base {
    /// Wall time of the whole measurement.
    took_ns: u64,
    /// Per kind: (observed - bare, the part before the attempt), both
    /// through the scoped lookup.
    kinds: Vec<(LockKind, f64, f64)>,
    /// `recorder::current()` through a scoped dispatcher.
    lookup_scoped_ns: f64,
    /// The global dispatcher's shortcut: `get_default` and a comparison.
    lookup_global_ns: f64,
}

/// ns per run of `op`, over `n` runs (the loop's own cost included:
/// callers subtract an empty loop or the bare lock's).
#[inline(never)]
fn per_op(n: u64, mut op: impl FnMut()) -> f64 {
    let t = Instant::now();
    for _ in 0..n {
        op();
    }
    t.elapsed().as_nanos() as f64 / n as f64
}

/// The median of `xs` (NaN-free input).
fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(f64::total_cmp);
    match xs.len() {
        0 => 0.0,
        n if n % 2 == 1 => xs[n / 2],
        n => (xs[n / 2 - 1] + xs[n / 2]) / 2.0,
    }
}

/// The median over [`REPS`] interleaved batches of `b` minus `a`, in ns
/// per operation.
fn diff(mut a: impl FnMut(), mut b: impl FnMut()) -> f64 {
    // One warm-up batch each: a new site's entry is not steady state.
    per_op(ITERATIONS / 10, &mut a);
    per_op(ITERATIONS / 10, &mut b);
    median(
        (0..REPS)
            .map(|_| {
                let x = per_op(ITERATIONS, &mut a);
                let y = per_op(ITERATIONS, &mut b);
                y - x
            })
            .collect(),
    )
}

/// The part measured once per process; `None` if no thread could be
/// started for it.
pub(super) fn base() -> Option<&'static Base> {
    static BASE: OnceLock<Option<Base>> = OnceLock::new();
    BASE.get_or_init(|| {
        std::thread::Builder::new()
            .name("lockmeter-calibrate".into())
            .spawn(measure_base)
            .ok()?
            .join()
            .ok()
    })
    .as_ref()
}

/// The settings of the private recorder: `clock`, holds never sampled
/// (only the first at each site is timed), stacks off, nothing slow.
fn private_settings(clock: quanta::Clock) -> Settings {
    Settings {
        clock,
        clock_name: "calibration",
        slow_ns: u64::MAX,
        sample_every: 1 << 31,
        process: lockmeter_model::ProcessInfo::default(),
        stacks: StackSettings::new(0, 1, Vec::new()),
    }
}

/// Runs on the calibration thread.
fn measure_base() -> Base {
    let started = Instant::now();
    // Outside any scoped dispatcher: the global default, whatever it is.
    let lookup_global_ns = per_op(ITERATIONS, || {
        black_box(tracing::dispatcher::get_default(|d| {
            std::ptr::eq(d, black_box(std::ptr::null()))
        }));
    }) - per_op(ITERATIONS, || {
        black_box(0);
    });
    let recorder = Arc::new(Recorder::new(private_settings(quanta::Clock::new())));
    let layer = crate::Layer::with_recorder(Arc::clone(&recorder));
    let dispatch = tracing::Dispatch::new(tracing_subscriber::registry().with(layer));
    let (kinds, lookup_scoped_ns) = tracing::dispatcher::with_default(&dispatch, || {
        let lookup = per_op(ITERATIONS, || {
            black_box(recorder::current());
        }) - per_op(ITERATIONS, || {
            black_box(0);
        });
        let outside = before_attempt();
        let mutex = {
            let bare = parking_lot::Mutex::new(0u64);
            let observed = crate::Mutex::named("lockmeter.calibration.mutex", 0u64);
            let (bare, observed) = (black_box(&bare), black_box(&observed));
            diff(|| *bare.lock() += 1, || *observed.lock() += 1)
        };
        let spin = {
            let bare = BareSpin::default();
            let observed = crate::SpinLock::named("lockmeter.calibration.spinlock", 0u64);
            let (bare, observed) = (black_box(&bare), black_box(&observed));
            diff(|| bare.increment(), || *observed.lock() += 1)
        };
        (
            vec![
                (LockKind::Mutex, mutex, outside),
                (LockKind::Spinlock, spin, outside),
            ],
            lookup,
        )
    });
    drop(dispatch);
    Base {
        took_ns: started.elapsed().as_nanos() as u64,
        kinds,
        lookup_scoped_ns,
        lookup_global_ns,
    }
}

/// A lock's uncontended path with nothing metered: one compare-and-swap,
/// the increment, one release store (what `SpinLock`'s raw part does).
#[derive(Default)]
struct BareSpin {
    locked: AtomicBool,
    value: AtomicU64,
}

impl BareSpin {
    #[inline]
    fn increment(&self) {
        while self
            .locked
            .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            std::hint::spin_loop();
        }
        let v = self.value.load(Ordering::Relaxed);
        self.value.store(v + 1, Ordering::Relaxed);
        self.locked.store(false, Ordering::Release);
    }
}

/// What an observed acquisition does before its attempt, timed alone:
/// the `observing()` test, the recorder lookup, the thread's entry, the
/// sampling counter (`meter::acquire` up to `attempt`).
fn before_attempt() -> f64 {
    static SITE: u8 = 0;
    let raw = [&SITE as *const u8 as usize, 1, 2];
    let key = || SiteKey {
        class: Class::new(Some("lockmeter.calibration.lookup"), Location::caller()),
        kind: LockKind::Mutex,
        site: Location::caller(),
        mode: Mode::Exclusive,
    };
    per_op(ITERATIONS, || {
        if !recorder::observing() {
            return;
        }
        let Some(rec) = recorder::current() else {
            return;
        };
        if let Some(e) = recorder::shard::entry(rec, black_box(raw), key) {
            // SAFETY: an entry lives as long as this thread's slot for the
            // recorder, which outlives this loop (see `shard`).
            black_box(unsafe { &*e }.sample_uncontended());
        }
    }) - per_op(ITERATIONS, || {
        black_box(0);
    })
}

/// The costs of `rec`: the process-wide part with the lookup `rec` pays,
/// and the parts measured on its clock and stack depth.
pub(super) fn costs_for(rec: &Recorder) -> Option<OpCosts> {
    let base = base()?;
    let started = Instant::now();
    let global = std::ptr::eq(
        recorder::GLOBAL_RECORDER.load(Ordering::Relaxed),
        rec as *const Recorder,
    );
    // What a scoped lookup costs beyond the global shortcut.
    let correction = if global {
        (base.lookup_scoped_ns - base.lookup_global_ns).max(0.0)
    } else {
        0.0
    };
    let kinds = base
        .kinds
        .iter()
        .map(|&(kind, total, outside)| {
            let outside = (outside - correction).max(0.0);
            // Lockmeter costs at least what it does before the attempt;
            // a noisy difference below that is taken as that.
            let total = (total - correction).max(outside);
            KindCost {
                kind,
                inside_ns: total - outside,
                outside_ns: outside,
            }
        })
        .collect();
    let (timed_hold_ns, contended_inside_ns, contended_outside_ns) = entry_costs(&rec.clock);
    let stack_capture_ns = if rec.stacks.rate_ns == 0 {
        0.0
    } else {
        capture_cost(rec.stacks.depth)
    };
    Some(OpCosts {
        calibration_ns: base.took_ns + started.elapsed().as_nanos() as u64,
        iterations: ITERATIONS,
        lookup: if global { "global" } else { "scoped" }.to_string(),
        kinds,
        timed_hold_ns,
        contended_inside_ns,
        contended_outside_ns,
        stack_capture_ns,
    })
}

/// (timed hold, contended inside, contended outside) on a standalone entry
/// that belongs to no shard: only this thread writes it.
fn entry_costs(clock: &quanta::Clock) -> (f64, f64, f64) {
    let key = SiteKey {
        class: Class::new(Some("lockmeter.calibration.entry"), Location::caller()),
        kind: LockKind::Mutex,
        site: Location::caller(),
        mode: Mode::Exclusive,
    };
    let e = Entry::new(key, clock.clone(), u64::MAX, 1);
    let empty = || {
        per_op(ITERATIONS, || {
            black_box(0);
        })
    };
    // A sampled uncontended hold: a clock read before the attempt, one
    // after the unlock, the distribution.
    let timed = per_op(ITERATIONS, || {
        let start = clock.raw();
        e.hold_started();
        let end = clock.raw();
        e.end_sampled_hold(clock.delta_as_nanos(start, end));
    }) - empty();
    // The clock read that ends a wait, and its counters, under the lock.
    let inside = per_op(ITERATIONS, || {
        black_box(clock.raw());
        e.count_contended(0, 0);
    }) - empty();
    // The clock reads that start the wait and end the hold, the wait and
    // hold distributions and the holder table, after the unlock.
    let outside = per_op(ITERATIONS, || {
        let start = clock.raw();
        e.hold_started();
        let end = clock.raw();
        let ns = clock.delta_as_nanos(start, end);
        e.end_contended_hold(Some(ns), ns, std::ptr::null_mut());
    }) - empty();
    (timed.max(0.0), inside.max(0.0), outside.max(0.0))
}

/// One stack capture of `depth` frames, from `depth` frames deep (so that
/// the unwinder walks all of them, as in a program's deep call stacks).
fn capture_cost(depth: usize) -> f64 {
    #[inline(never)]
    fn deep(n: usize, depth: usize) -> f64 {
        if n > 0 {
            return black_box(deep(black_box(n - 1), depth));
        }
        let mut buf = [0usize; MAX_STACK_DEPTH];
        let t = Instant::now();
        for _ in 0..CAPTURES {
            black_box(crate::stacks::capture(&mut buf[..depth]));
        }
        t.elapsed().as_nanos() as f64 / CAPTURES as f64
    }
    let depth = depth.clamp(1, MAX_STACK_DEPTH);
    deep(depth, depth)
}
