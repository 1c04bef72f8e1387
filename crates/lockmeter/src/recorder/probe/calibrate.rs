//! The measurement of what recording costs, per operation.
//!
//! Two parts, both timed with `std::time::Instant` over short batches,
//! each figure the fastest of several batches (noise on a shared machine
//! only ever adds time):
//!
//! - **Per process and lookup** ([`base`]), on a thread of its own, at the
//!   first snapshot and again at up to seven later ones after gaps that
//!   double from a second (`measured.rs`), the measurement whose observed
//!   locks ran fastest kept (noise on a shared host only ever adds time),
//!   through the same lookup the recorder's acquisitions take: for the
//!   recorder of the global dispatcher, that recorder itself (the thread
//!   inherits the global default); for a scoped one, a private recorder in
//!   a scoped dispatcher. An observed `Mutex` and `SpinLock` are taken and
//!   released in a loop against the bare lock (parking_lot's mutex; a plain
//!   compare-and-swap spinlock), in interleaved batches, the difference of
//!   the fastest batches (the *total*); and, each timed alone, the work done before
//!   the attempt (finding the recorder and the entry, the hold sample's check)
//!   and the work done while the lock is held (the counters, the holder and
//!   owner notes, the held-lock table, the release's check). Timed alone
//!   the parts add up to more than the total, because the processor
//!   overlaps them with the lock's own atomic operations; the total is what
//!   a program pays, so it is split between inside and outside in the
//!   proportion of the parts. The calibration locks are lockmeter's own
//!   (classes [`CLASS_PREFIX`]`*`, which snapshots leave out); no
//!   application lock is taken, and the thread exits before the snapshot
//!   returns.
//! - **Per recorder** ([`recorder_part`]), on the calling thread, with a
//!   standalone entry on the recorder's clock, at the same snapshots: a
//!   timed hold's clock reads and distribution update, a contended
//!   acquisition's extra counters and clock reads, its held-lock record
//!   (the wait, then the hold; on a thread of its own), and one stack
//!   capture at the recorder's depth.
//!
//! [`costs_for`] puts the two together at every snapshot.

use std::hint::black_box;
use std::panic::Location;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use lockmeter_model::selfcost::{KindCost, OpCosts};
use lockmeter_model::LockKind;
use tracing_subscriber::layer::SubscriberExt;

use crate::class::{Class, Mode, SiteKey};
use crate::recorder::entry::Entry;
use crate::recorder::{self, Recorder, Settings};
use crate::stacks::{StackSettings, MAX_STACK_DEPTH};

use super::measured::{Measured, Measurement, Taken};

/// Operations per timed batch: enough to dwarf `Instant::now()` (~25 ns),
/// few enough that the whole calibration takes milliseconds. Debug builds
/// (the test suite) run ~20× slower and need no precision.
const ITERATIONS: u64 = if cfg!(debug_assertions) {
    2_000
} else {
    20_000
};
/// Batches per measurement (interleaved for pairs); the fastest is kept.
const REPS: usize = if cfg!(debug_assertions) { 3 } else { 5 };
/// Stack captures timed (each takes microseconds).
const CAPTURES: usize = 5;

/// What is measured per process and lookup kind.
#[derive(Debug, Clone)]
pub(super) struct Base {
    /// Wall time of the whole measurement.
    took_ns: u64,
    /// The observed locks' fastest batches, ns per operation, summed over
    /// the kinds and copies: how busy the host kept the core while the
    /// costs were measured (lower is calmer).
    observed_ns: f64,
    /// Per kind, observed - bare.
    kinds: Vec<(LockKind, f64)>,
    /// The work before the attempt, timed alone.
    outside_ns: f64,
    /// The work while the lock is held, timed alone.
    inside_ns: f64,
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

/// The least of `xs`: on a shared machine noise only ever adds time, so
/// the fastest batch is the closest to what the operation itself costs.
fn least(xs: impl Iterator<Item = f64>) -> f64 {
    xs.fold(f64::INFINITY, f64::min)
}

/// The fastest of [`REPS`] batches of `op`, less the fastest empty loop.
fn timed(mut op: impl FnMut()) -> f64 {
    let empty = least((0..REPS).map(|_| {
        per_op(ITERATIONS, || {
            black_box(0);
        })
    }));
    least((0..REPS).map(|_| per_op(ITERATIONS, &mut op))) - empty
}

/// `b`'s cost over `a`'s, in ns per operation: the fastest of [`REPS`]
/// batches each, the batches of the two interleaved.
fn diff(mut a: impl FnMut(), mut b: impl FnMut()) -> Diff {
    // One warm-up batch each: a new site's entry is not steady state.
    per_op(ITERATIONS / 10, &mut a);
    per_op(ITERATIONS / 10, &mut b);
    let (mut fa, mut fb) = (f64::INFINITY, f64::INFINITY);
    for _ in 0..REPS {
        fa = fa.min(per_op(ITERATIONS, &mut a));
        fb = fb.min(per_op(ITERATIONS, &mut b));
    }
    Diff {
        base: fa,
        added: fb - fa,
    }
}

/// [`diff`]'s answer: what `a` took, and what `b` took more.
#[derive(Clone, Copy)]
struct Diff {
    base: f64,
    added: f64,
}

/// The prefix of the classes calibration creates. In a global recorder
/// they are recorded like any other (that is the point: the same lookup as
/// the program's), so snapshots leave them out ([`super::fill`]).
pub(crate) const CLASS_PREFIX: &str = "lockmeter.calibration.";

/// The part measured per process and lookup (`global`: through the
/// global dispatcher, as a global recorder's acquisitions; else through a
/// private recorder in a scoped one), with how many measurements were
/// taken and which is kept; `None` if no thread could be started.
///
/// Measured at the first call and again at later ones ([`Measured`]), the
/// one whose observed locks ran fastest kept: one taken in a burst of the host read
/// twice the calm figure for the rest of the process (the bench's
/// `selfcost` rows, `docs/performance.md`, "Session 30"), and its probe of
/// the host, 1.09 times its best, did not show it. Chosen by the bare
/// locks' times instead, a measurement whose bursts fell on the observed
/// batches alone was kept, at 1.8 times the others.
pub(super) fn base(global: bool) -> Option<(Base, Taken)> {
    static SCOPED: Mutex<Measured<Base>> = Mutex::new(Measured::new());
    static GLOBAL: Mutex<Measured<Base>> = Mutex::new(Measured::new());
    let cell = if global { &GLOBAL } else { &SCOPED };
    // Held while measuring, so that two snapshots measure once; no
    // application lock is ever taken under it.
    let mut measured = cell.lock().unwrap_or_else(|e| e.into_inner());
    measured.get(|| on_own_thread(move || measure_base(global)))
}

impl Measurement for Base {
    fn busy_ns(&self) -> f64 {
        self.observed_ns
    }

    fn took_ns(&self) -> u64 {
        self.took_ns
    }
}

/// Runs `f` on a calibration thread of its own and returns what it
/// returned; `None` if no thread could be started (or it panicked).
fn on_own_thread<R: Send + 'static>(f: impl FnOnce() -> R + Send + 'static) -> Option<R> {
    std::thread::Builder::new()
        .name("lockmeter-calibrate".into())
        .spawn(f)
        .ok()?
        .join()
        .ok()
}

/// Runs `f` with a private recorder on `clock` ([`private_settings`]) as
/// the calling thread's scoped dispatcher, and gives `f` that recorder.
fn with_private_recorder<R>(clock: quanta::Clock, f: impl FnOnce(&Recorder) -> R) -> R {
    let recorder = Arc::new(Recorder::new(private_settings(clock)));
    let layer = crate::Layer::with_recorder(recorder.clone());
    let dispatch = tracing::Dispatch::new(tracing_subscriber::registry().with(layer));
    tracing::dispatcher::with_default(&dispatch, || f(&recorder))
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

/// Runs on the calibration thread: through the global dispatcher, or a
/// private recorder's scoped one.
fn measure_base(global: bool) -> Base {
    let started = Instant::now();
    let mut base = if global {
        measure()
    } else {
        with_private_recorder(quanta::Clock::new(), |_| measure())
    };
    base.took_ns = started.elapsed().as_nanos() as u64;
    base
}

/// The totals per kind, the parts before the attempt and while held, and
/// the bare locks' times.
fn measure() -> Base {
    let (outside, entry) = before_attempt();
    let inside = while_held(entry);
    let mutex = {
        let bare = Spread::new(|| parking_lot::Mutex::new(0u64));
        let observed = Spread::new(|| crate::Mutex::named("lockmeter.calibration.mutex", 0u64));
        each_copy!(mutex_copy(&bare, &observed))
    };
    let spin = {
        let bare = Spread::new(BareSpin::default);
        let observed =
            Spread::new(|| crate::SpinLock::named("lockmeter.calibration.spinlock", 0u64));
        each_copy!(spin_copy(&bare, &observed))
    };
    Base {
        took_ns: 0,
        observed_ns: mutex.base + spin.base + OFFSETS as f64 * (mutex.added + spin.added),
        kinds: vec![
            (LockKind::Mutex, mutex.added),
            (LockKind::Spinlock, spin.added),
        ],
        outside_ns: outside,
        inside_ns: inside,
    }
}

/// The cache-line offsets a calibration lock is measured at, one 8-byte
/// step apart: what an observed lock adds moves with where the lock sits
/// in its line (the bench's `placement` rows: an observed Mutex +0.5 to
/// +3.7 ns over the eight on an Intel host), and a lone calibration lock
/// sat wherever the build put it (`docs/performance.md`, "Session 20").
const OFFSETS: usize = 8;

/// A lock and a word after it: in an array, each element sits one word
/// further into its line than the one before, when its size is an odd
/// number of words (checked in [`Spread::new`]).
#[repr(C)]
struct Padded<T> {
    lock: T,
    _pad: u64,
}

/// [`OFFSETS`] locks, the first line-aligned, the others at each other
/// offset of a line in turn.
#[repr(C, align(64))]
struct Spread<T>([Padded<T>; OFFSETS]);

impl<T> Spread<T> {
    fn new(lock: impl Fn() -> T) -> Box<Spread<T>> {
        const {
            assert!(std::mem::align_of::<Padded<T>>() == 8);
            assert!(std::mem::size_of::<Padded<T>>() / 8 % 2 == 1);
        }
        Box::new(Spread(std::array::from_fn(|_| Padded {
            lock: lock(),
            _pad: 0,
        })))
    }

    fn at(&self, i: usize) -> &T {
        &self.0[i].lock
    }
}

/// The mean added cost over [`OFFSETS`] copies of a calibration pair,
/// copy `K` of its code measured on the locks at offset `K` of their
/// [`Spread`]s (`$copy::<K>(&bare, &observed)` for each `K`), and the sum
/// of the bare sides' times.
///
/// Distinct copies of the code because what an observed lock adds moves
/// with where its loop's code lands, too: two builds of the same source
/// measured one calibration loop at +3.5 and +6.5 ns while the bench's
/// own loop read +7 in both (session 20). Each copy adds `K + 1` to the
/// data, so no two copies are the same function for the compiler to
/// merge.
macro_rules! each_copy {
    ($copy:ident($bare:expr, $observed:expr)) => {{
        let (bare, observed) = ($bare, $observed);
        let costs = [
            $copy::<0>(bare, observed),
            $copy::<1>(bare, observed),
            $copy::<2>(bare, observed),
            $copy::<3>(bare, observed),
            $copy::<4>(bare, observed),
            $copy::<5>(bare, observed),
            $copy::<6>(bare, observed),
            $copy::<7>(bare, observed),
        ];
        const { assert!(OFFSETS == 8) };
        Diff {
            base: costs.iter().map(|d| d.base).sum::<f64>(),
            added: costs.iter().map(|d| d.added).sum::<f64>() / OFFSETS as f64,
        }
    }};
}
use each_copy;

/// An observed `Mutex`'s cost over parking_lot's, copy `K` (see
/// [`each_copy!`]).
fn mutex_copy<const K: u64>(
    bare: &Spread<parking_lot::Mutex<u64>>,
    observed: &Spread<crate::Mutex<u64>>,
) -> Diff {
    let i = K as usize;
    let (bare, observed) = (black_box(bare.at(i)), black_box(observed.at(i)));
    diff(
        move || *bare.lock() += K + 1,
        move || *observed.lock() += K + 1,
    )
}

/// An observed `SpinLock`'s cost over [`BareSpin`], copy `K` (see
/// [`each_copy!`]).
fn spin_copy<const K: u64>(
    bare: &Spread<BareSpin>,
    observed: &Spread<crate::SpinLock<u64>>,
) -> Diff {
    let i = K as usize;
    let (bare, observed) = (black_box(bare.at(i)), black_box(observed.at(i)));
    diff(move || bare.add(K + 1), move || *observed.lock() += K + 1)
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
    fn add(&self, n: u64) {
        while self
            .locked
            .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            std::hint::spin_loop();
        }
        let v = self.value.load(Ordering::Relaxed);
        self.value.store(v + n, Ordering::Relaxed);
        self.locked.store(false, Ordering::Release);
    }
}

/// What an observed acquisition does before its attempt, timed alone:
/// the `observing()` test, the recorder lookup, the thread's entry guessed
/// from its site, the sampling check, the held-lock record written ahead
/// (`meter::acquire` up to `attempt`); and that entry.
fn before_attempt() -> (f64, Option<(*const Recorder, *const Entry)>) {
    static CLASS: u8 = 0;
    let site = Location::caller();
    let mode = Mode::Exclusive.key_bits();
    let raw = [
        &CLASS as *const u8 as usize,
        site as *const _ as usize,
        mode,
    ];
    let key = || SiteKey {
        class: Class::new(Some("lockmeter.calibration.lookup"), Location::caller()),
        kind: LockKind::Mutex,
        site,
        mode: Mode::Exclusive,
    };
    // Made and remembered once, so that the timed guess finds it.
    if let Some(rec) = recorder::current() {
        recorder::shard::entry(rec, raw, key);
    }
    let mut found = None;
    let ns = timed(|| {
        if !recorder::observing() {
            return;
        }
        let Some(rec) = recorder::current() else {
            return;
        };
        let guess = recorder::shard::guess_entry(rec, black_box(raw[1]), black_box(mode));
        if let Some(e) = guess.or_else(|| recorder::shard::entry(rec, raw, key)) {
            // SAFETY: an entry lives as long as this thread's slot for the
            // recorder, which outlives this loop (see `shard`).
            let e = unsafe { &*e };
            black_box(e.picks(e.nowait_so_far()));
            black_box(crate::now::prepare_hold(raw[0], e, rec));
            found = Some((rec, e as *const Entry));
        }
    });
    (ns, found)
}

/// What an observed acquisition does while it holds the lock, timed
/// alone on `found`'s entry: the check of the guessed entry against the
/// lock's class, NOWAIT, the owner, holder and instance notes
/// on the lock (`meter::Probe::note_owner`'s loads and stores, on a copy of
/// those words), the held-lock table's count of the record written ahead
/// and its release. (The record
/// written ahead is timed with it and then taken out: it is
/// [`before_attempt`]'s.)
fn while_held(found: Option<(*const Recorder, *const Entry)>) -> f64 {
    let Some((rec, entry)) = found else {
        return 0.0;
    };
    // SAFETY: as in `before_attempt`, on the same thread.
    let e = unsafe { &*entry };
    let (last, holder) = (AtomicU64::new(0), AtomicUsize::new(0));
    let lock = &last as *const AtomicU64 as usize;
    let mine = black_box(e.tokens().0);
    let (class, tag) = (AtomicUsize::new(0), AtomicUsize::new(0));
    // The NOWAIT count as the acquisition read it before its attempt.
    let mut nowait = e.nowait_so_far();
    let with_record = timed(|| {
        let prepared = crate::now::prepare_hold(lock, entry, rec);
        black_box(e.counts_key(class.load(Ordering::Relaxed), tag.load(Ordering::Relaxed)));
        e.count_nowait_after(nowait);
        nowait += 1;
        if last.load(Ordering::Relaxed) != mine {
            last.store(mine, Ordering::Relaxed);
        }
        if holder.load(Ordering::Relaxed) != lock {
            holder.store(black_box(lock), Ordering::Relaxed);
        }
        let held = crate::now::hold_prepared(prepared, lock, entry, rec);
        crate::now::hold_ends(held);
    });
    let record = timed(|| {
        black_box(crate::now::prepare_hold(lock, entry, rec));
    });
    (with_record - record).max(0.0)
}

/// What is measured per recorder, on its clock and stack depth.
#[derive(Clone)]
pub(super) struct RecorderPart {
    /// Wall time it took.
    took_ns: u64,
    entry: EntryCosts,
    /// [`timed_hold_in_place`], or the entry's figure when that was lost
    /// in noise.
    timed_hold_ns: f64,
    stack_capture_ns: f64,
    /// [`wait_record_costs`]: outside and inside, ns.
    wait_record: (f64, f64),
}

/// The part of `rec`'s costs measured on its clock and stack depth;
/// `None` where no calibration can run (Miri, loom).
pub(super) fn recorder_part(rec: &Recorder) -> Option<RecorderPart> {
    // Under Miri a calibration would take minutes and measure nothing
    // real; loom's atomics work only inside a model.
    if cfg!(any(miri, lockmeter_loom)) {
        return None;
    }
    let started = Instant::now();
    let entry = entry_costs(&rec.clock);
    // A difference lost in noise falls back on the parts timed alone.
    let timed_hold_ns = match timed_hold_in_place(&rec.clock) {
        Some(ns) if ns > 0.0 => ns,
        _ => entry.timed_hold_ns,
    };
    let stack_capture_ns = if rec.stacks.rate_ns == 0 {
        0.0
    } else {
        capture_cost(rec.stacks.depth)
    };
    let wait_record = wait_record_costs(&rec.clock).unwrap_or((0.0, 0.0));
    Some(RecorderPart {
        took_ns: started.elapsed().as_nanos() as u64,
        entry,
        timed_hold_ns,
        stack_capture_ns,
        wait_record,
    })
}

impl Measurement for RecorderPart {
    fn busy_ns(&self) -> f64 {
        let e = &self.entry;
        self.timed_hold_ns
            + e.contended_inside_ns
            + e.contended_outside_ns
            + e.contended_untimed_inside_ns
            + e.contended_untimed_outside_ns
            + self.stack_capture_ns
            + self.wait_record.0
            + self.wait_record.1
    }

    fn took_ns(&self) -> u64 {
        self.took_ns
    }
}

/// The costs of `rec`: the process-wide part with the lookup `rec` pays
/// ([`base`], which may measure again), and `part`, measured on its clock
/// and stack depth (`part_took_ns` in all).
pub(super) fn costs_for(rec: &Recorder, part: &RecorderPart, part_took_ns: u64) -> Option<OpCosts> {
    let global = is_global(rec);
    let (base, taken) = base(global)?;
    let timed_hold_ns = part.timed_hold_ns;
    // Through the global recorder, one hold in `every` was timed in the
    // loop: that is `timed_hold_ns`'s, counted apart.
    let timed_in_loop = if global {
        timed_hold_ns / f64::from(rec.probe.hold_every().max(1))
    } else {
        0.0
    };
    let outside = base.outside_ns.max(0.0);
    let inside = base.inside_ns.max(0.0);
    let (wait_outside, wait_inside) = part.wait_record;
    let kinds = base
        .kinds
        .iter()
        .map(|&(kind, total)| {
            // A difference lost in noise falls back on the parts' sum.
            let total = match total - timed_in_loop {
                t if t > 0.0 => t,
                _ => inside + outside,
            };
            let share = if inside + outside > 0.0 {
                inside / (inside + outside)
            } else {
                0.5
            };
            KindCost {
                kind,
                inside_ns: total * share,
                outside_ns: total * (1.0 - share),
            }
        })
        .collect();
    Some(OpCosts {
        calibration_ns: taken.took_ns + part_took_ns,
        iterations: ITERATIONS,
        lookup: if global { "global" } else { "scoped" }.to_string(),
        kinds,
        timed_hold_ns,
        // Every contended acquisition records its wait, timed or not.
        contended_inside_ns: part.entry.contended_inside_ns + wait_inside,
        contended_outside_ns: part.entry.contended_outside_ns + wait_outside,
        contended_untimed_inside_ns: part.entry.contended_untimed_inside_ns + wait_inside,
        contended_untimed_outside_ns: part.entry.contended_untimed_outside_ns + wait_outside,
        stack_capture_ns: part.stack_capture_ns,
        calibrations: taken.count,
        calibration_kept: taken.kept,
    })
}

/// What timing an uncontended hold adds, measured in place: an observed
/// `Mutex` whose every hold is timed against one whose holds are not,
/// interleaved, through a private recorder on `clock`, on a thread of its
/// own (it leaves the private recorder's shard behind). Timed alone, the
/// two clock reads and the distribution update cost up to twice what they
/// add to a real acquisition, where the processor overlaps them with the
/// lock's own work (the bench's every-hold-timed self-accounting row:
/// 1.6-1.8× high on a quiet machine); under load, less than they add.
/// `None` if no thread could be started.
fn timed_hold_in_place(clock: &quanta::Clock) -> Option<f64> {
    let clock = clock.clone();
    on_own_thread(move || {
        with_private_recorder(clock, |recorder| {
            let untimed = crate::Mutex::named("lockmeter.calibration.untimed", 0u64);
            let timed = crate::Mutex::named(TIMED_CLASS, 0u64);
            let (untimed, timed) = (black_box(&untimed), black_box(&timed));
            let mut untimed_op = || *untimed.lock() += 1;
            let mut timed_op = || *timed.lock() += 1;
            // Each site's entry exists after a first batch run by the
            // measuring loop itself: the same call site inlined into
            // another function may be another `Location` static, hence
            // another entry of the same key, which the rate set below
            // would miss (it did in session 20's build: the in-place
            // figure read 0 and the estimate fell back on, or worse,
            // used it).
            per_op(1, &mut untimed_op);
            per_op(1, &mut timed_op);
            recorder.for_each_live_entry(|e| {
                if e.key().class.name == Some(TIMED_CLASS) {
                    e.set_sample_every(1);
                }
            });
            diff(untimed_op, timed_op).added
        })
    })
}

/// The class of [`timed_hold_in_place`]'s lock whose every hold is timed.
const TIMED_CLASS: &str = "lockmeter.calibration.timed";

/// Whether `rec` is the recorder of the global default dispatcher: asked on
/// a new thread, where no scoped dispatcher is in effect.
fn is_global(rec: &Recorder) -> bool {
    let me = rec as *const Recorder as usize;
    on_own_thread(move || recorder::current().map(|r| r as usize) == Some(me)).unwrap_or(false)
}

/// What the entry's own recording costs, each part as [`OpCosts`] says.
#[derive(Clone)]
struct EntryCosts {
    timed_hold_ns: f64,
    contended_inside_ns: f64,
    contended_outside_ns: f64,
    contended_untimed_inside_ns: f64,
    contended_untimed_outside_ns: f64,
}

/// An entry of class `name` (a [`CLASS_PREFIX`] one) that belongs to no
/// shard: only the calling thread writes it, and no snapshot counts it.
fn standalone_entry(name: &'static str, clock: quanta::Clock) -> Entry {
    let key = SiteKey {
        class: Class::new(Some(name), Location::caller()),
        kind: LockKind::Mutex,
        site: Location::caller(),
        mode: Mode::Exclusive,
    };
    Entry::new(key, [0; 3], 0, clock, u64::MAX, 1)
}

/// [`EntryCosts`], on a standalone entry that belongs to no shard: only
/// this thread writes it.
fn entry_costs(clock: &quanta::Clock) -> EntryCosts {
    let e = standalone_entry("lockmeter.calibration.entry", clock.clone());
    // A sampled uncontended hold: a clock read before the attempt, one
    // after the unlock, the distribution.
    let hold = timed(|| {
        let start = clock.raw();
        e.hold_started();
        let end = clock.raw();
        e.end_sampled_hold(clock.delta_as_nanos(start, end));
    });
    // The clock read that ends a wait, and its counters, under the lock.
    let inside = timed(|| {
        black_box(clock.raw());
        e.count_contended(0, 0);
    });
    // The clock reads that start the wait and end the hold, the wait and
    // hold distributions and the holder table, after the unlock.
    let outside = timed(|| {
        let start = clock.raw();
        e.hold_started();
        let end = clock.raw();
        let ns = clock.delta_as_nanos(start, end);
        e.end_contended_hold(Some(ns), ns, std::ptr::null_mut());
    });
    // A contended acquisition the sample leaves untimed: its counters and
    // the holder table's count under the lock; before the wait, the clock
    // read that starts it (the sample decides after the wait).
    let untimed_inside = timed(|| {
        e.count_wait_eligible();
        e.count_contended(0, 0);
        e.charge_untimed_wait(std::ptr::null_mut());
    });
    let untimed_outside = timed(|| {
        black_box(clock.raw());
    });
    EntryCosts {
        timed_hold_ns: hold.max(0.0),
        contended_inside_ns: inside.max(0.0),
        contended_outside_ns: outside.max(0.0),
        contended_untimed_inside_ns: untimed_inside.max(0.0),
        contended_untimed_outside_ns: untimed_outside.max(0.0),
    }
}

/// What a contended acquisition's held-lock record (`now`) adds to the
/// record the uncontended path writes (which [`before_attempt`] and
/// [`while_held`] time): the wait recorded before the thread blocks
/// (outside the critical section) and, once the lock is taken, the wait's
/// end and the hold recorded in one change (inside). Without it the
/// contended estimates left out the hangs feature's work (`docs/
/// performance.md`, "Session 36").
///
/// Timed on a thread of its own, whose table holds nothing else, so that
/// the caller's held locks get no lock-order edge to the calibration's
/// and its table is never touched; the records name a recorder address no
/// recorder has, so no snapshot shows them, and an entry that outlives
/// them (readers resolve every record's entry). `(outside, inside)`, ns.
fn wait_record_costs(clock: &quanta::Clock) -> Option<(f64, f64)> {
    let clock = clock.clone();
    on_own_thread(move || {
        static NO_RECORDER: u8 = 0;
        let rec = &NO_RECORDER as *const u8 as *const Recorder;
        let entry = standalone_entry("lockmeter.calibration.wait", clock);
        let e = &entry as *const Entry;
        let lock = black_box(e as usize + 1);
        // A wait that begins and ends: half of it is the wait's record.
        let wait = timed(|| {
            crate::now::wait_begins(lock, e, rec);
            crate::now::wait_ends();
        });
        // A contended acquisition's whole record, and the uncontended one's.
        let contended = timed(|| {
            crate::now::wait_begins(lock, e, rec);
            let held = crate::now::wait_ends_held(lock, e, rec, 0);
            crate::now::hold_ends(held);
        });
        let lone = timed(|| {
            let prepared = crate::now::prepare_hold(lock, e, rec);
            let held = crate::now::hold_prepared(prepared, lock, e, rec);
            crate::now::hold_ends(held);
        });
        let prepare = timed(|| {
            black_box(crate::now::prepare_hold(lock, e, rec));
        });
        // The contended path also prepares (its attempt failed after) and
        // releases as the uncontended one does, both counted for every
        // acquisition already; what it adds is the rest.
        let added = (contended - lone + prepare).max(0.0);
        let outside = (wait / 2.0).clamp(0.0, added);
        drop(entry);
        (outside, added - outside)
    })
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

#[cfg(all(test, not(any(miri, lockmeter_loom))))]
mod tests {
    use super::*;

    /// The wait record is timed on a thread of its own: the caller's
    /// table, holding a record of its own, keeps its generation (every
    /// change of a table moves it), so no reader ever saw the caller
    /// waiting on, or holding, the calibration's lock.
    #[test]
    fn the_wait_record_is_timed_off_the_calling_thread() {
        let view = || crate::now::thread::with_slot(|s| s.table.read()).flatten();
        static HELD: u8 = 0;
        let entry = standalone_entry("lockmeter.calibration.test", quanta::Clock::new());
        let rec = &HELD as *const u8 as *const Recorder;
        let lock = &HELD as *const u8 as usize;
        let held = crate::now::hold_begins(lock, &entry, rec);
        let before = view().expect("this thread's table");
        assert_eq!(before.held.len(), 1);

        let (outside, inside) = wait_record_costs(&quanta::Clock::new()).expect("measured");

        assert!(outside.is_finite() && outside >= 0.0, "{outside}");
        assert!(inside.is_finite() && inside >= 0.0, "{inside}");
        assert_eq!(view(), Some(before), "the caller's table changed");
        crate::now::hold_ends(held);
    }
}
