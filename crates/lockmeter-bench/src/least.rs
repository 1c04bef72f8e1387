//! The least any lock profiler with lockmeter's default features must do
//! per acquisition, written plainly around the bare lock, with no
//! lockmeter code: the floor under the observed and contended rows once
//! those features count (issue 15 measures "with the features of the
//! drop-in, stacks and hangs issues on at their defaults").
//!
//! Each default feature, and the least state it needs per acquisition:
//!
//! | feature | least work |
//! |---|---|
//! | scoped dispatchers honoured | `tracing::dispatcher::get_default`, one compare |
//! | exact TOTAL / NOWAIT / contended counts per site | a one-entry site cache (two compares), one count |
//! | hold timing, sampled one in 64 | the count read as the countdown (every 64th is timed): a clock read before the attempt and one after the unlock |
//! | hangs and deadlocks (`now`: what each thread holds, since when) | a record another thread can read whole: lock, entry, since (a load of the watchdog's clock), then a state word |
//! | BOUNCE | the last owner's token on the lock's line, in one word with the recorder's serial (as lockmeter's since session 28): a load, a store when it changed |
//! | holder sites | the holder's site on the lock's line: a load, a store when it changed |
//! | instances | the recorder's serial on the lock's line, in the owner's word: nothing more |
//!
//! A real profiler also needs a table for more than one site per thread,
//! a stack of held records, and the contended path's bookkeeping; none is
//! here, so these rows are a floor, not a design. `docs/performance.md`
//! ("What misses") reads them.

use std::cell::Cell;
use std::hint::black_box;
use std::panic::Location;
use std::sync::atomic::{fence, AtomicU32, AtomicU64, AtomicUsize, Ordering::*};

use crate::bare::BareSpinLock;
use crate::contended::{lock_pair, Aligned, Take, WORK_ROUNDS};
use crate::measure::{ns_pair, shape_pair, Config, Shape};
use crate::report::{Con, Goal, Row, Unit};
use crate::uncontended::Scoped;

/// One in this many holds is timed, as lockmeter's default.
const SAMPLE_EVERY: u64 = 64;

/// The watchdog's coarse clock: read on every acquisition for the held
/// record's `since` (no thread advances it here; the load is what costs).
static COARSE_NS: AtomicU64 = AtomicU64::new(0);

/// The recorder's serial, as a lock's `instances` note compares it.
const SERIAL: u32 = 1;

/// A thread's state: its one site entry and its held-lock record. Only
/// const-initialised fields without a destructor, so every access is an
/// `%fs`-relative load or store.
struct Thread {
    /// The one-entry site cache's key: class and call site.
    class: Cell<usize>,
    site: Cell<usize>,
    /// The entry's exact counts.
    total: Cell<u64>,
    nowait: Cell<u64>,
    contended: Cell<u64>,
    bounces: Cell<u64>,
    /// The sum of timed holds, in clock ticks.
    held_ticks: Cell<u64>,
    /// A timed hold's start, where the out-of-line acquisition leaves it
    /// ([`part::OUT_OF_LINE`]), so that it returns in two registers.
    start: Cell<u64>,
    /// This thread's token for the lock's owner note (never 0).
    token: Cell<u32>,
    /// The held-lock record another thread reads whole: the words, then
    /// `state` (a generation and a count) as the seqlock's commit.
    rec_lock: AtomicUsize,
    rec_what: AtomicUsize,
    rec_since: AtomicU64,
    state: AtomicU64,
}

thread_local! {
    static THREAD: Thread = const {
        Thread {
            class: Cell::new(0),
            site: Cell::new(0),
            total: Cell::new(0),
            nowait: Cell::new(0),
            contended: Cell::new(0),
            bounces: Cell::new(0),
            held_ticks: Cell::new(0),
            start: Cell::new(0),
            token: Cell::new(0),
            rec_lock: AtomicUsize::new(0),
            rec_what: AtomicUsize::new(0),
            rec_since: AtomicU64::new(0),
            state: AtomicU64::new(0),
        }
    };
}

/// The next thread token.
static NEXT_TOKEN: AtomicU32 = AtomicU32::new(1);

/// Acquisitions and contended acquisitions of the threads that have left
/// a contended run ([`flush`]): the floor's own CON, beside lockmeter's
/// and the bare twin's (`own_con.rs`) in the contended rows.
static FLUSHED: [AtomicU64; 2] = [AtomicU64::new(0), AtomicU64::new(0)];

/// Adds this thread's counts to [`FLUSHED`] and zeroes them; every
/// contended run's threads call it as they leave (nothing to add on a
/// thread that took no [`Least`] lock).
pub fn flush() {
    THREAD.with(|t| {
        FLUSHED[0].fetch_add(t.total.replace(0), Relaxed);
        FLUSHED[1].fetch_add(t.contended.replace(0), Relaxed);
    });
}

/// The CON % of the acquisitions flushed since the last call (NaN for
/// none), and resets the counts.
fn take_con() -> f64 {
    let total = FLUSHED[0].swap(0, Relaxed);
    let contended = FLUSHED[1].swap(0, Relaxed);
    if total == 0 {
        return f64::NAN;
    }
    lockmeter_model::percent(contended, total)
}

impl Thread {
    /// A new site for the one-entry cache (the first acquisition only, in
    /// these one-site loops).
    #[cold]
    fn enter(&self, class: usize, site: usize) {
        self.class.set(class);
        self.site.set(site);
        if self.token.get() == 0 {
            self.token.set(NEXT_TOKEN.fetch_add(1, Relaxed));
        }
    }
}

/// A raw lock the floor wraps: one attempt, and the waiting path.
pub trait Raw: Sync {
    type Guard<'a>: std::ops::DerefMut<Target = u64>
    where
        Self: 'a;
    fn attempt(&self) -> Option<Self::Guard<'_>>;
    fn wait(&self) -> Self::Guard<'_>;
}

/// `Raw` for a lock with `try_lock` and `lock` returning `$guard`.
macro_rules! raw_by_try_lock {
    ($($lock:ty => $guard:ty),*) => {$(
        impl Raw for $lock {
            type Guard<'a> = $guard;
            #[inline]
            fn attempt(&self) -> Option<Self::Guard<'_>> {
                self.try_lock()
            }
            #[inline]
            fn wait(&self) -> Self::Guard<'_> {
                self.lock()
            }
        }
    )*};
}

raw_by_try_lock!(
    parking_lot::Mutex<u64> => parking_lot::MutexGuard<'a, u64>,
    BareSpinLock<u64> => crate::bare::BareSpinGuard<'a, u64>
);

impl<L: Raw> Raw for crate::placement::Placed<L> {
    type Guard<'a>
        = L::Guard<'a>
    where
        Self: 'a;
    #[inline]
    fn attempt(&self) -> Option<Self::Guard<'_>> {
        self.get().attempt()
    }
    #[inline]
    fn wait(&self) -> Self::Guard<'_> {
        self.get().wait()
    }
}

/// The parts of [`Least`], one bit each, so that a row can leave one out
/// and show what it costs.
pub mod part {
    /// `get_default` and the compare (else the global dispatcher is assumed).
    pub const DISPATCH: u8 = 1;
    /// The held-lock record and its state word.
    pub const RECORD: u8 = 2;
    /// The owner, holder and instance notes on the lock's line.
    pub const NOTES: u8 = 4;
    /// One hold in 64 timed: a test of the count, and two clock reads.
    pub const SAMPLE: u8 = 8;
    /// Every part: what the default features need.
    pub const ALL: u8 = DISPATCH | RECORD | NOTES | SAMPLE;
    /// Not a feature but a code shape: the acquisition, up to the
    /// record's commit, is one out-of-line function that returns the guard
    /// and one word, as lockmeter's observed Mutex has been since session 21.
    /// Inlined, the same work costs more in some callers than in others
    /// (`docs/performance.md`, "Session 21").
    pub const OUT_OF_LINE: u8 = 16;
    /// Under a dispatcher other than the remembered global one, the layer
    /// found by downcasting that dispatcher inside the same `get_default`:
    /// the least any layer can do under a scoped dispatcher, which
    /// `tracing` lends only for the closure's length and by no identity a
    /// layer could remember it by (its address is the thread's slot, the
    /// same for every scoped dispatcher). Only the scoped-against-global
    /// rows ([`super::scoped_vs_global`]).
    pub const SCOPED: u8 = 32;
    /// Not a feature but an order: the attempt first, then every other
    /// part inside the critical section (a timed hold starts once the lock
    /// is taken). A thread that re-takes the lock at once leaves it free
    /// for no longer than the bare lock does, which is what `hammer`
    /// rewards, and every hold is longer, which is what `work` pays for
    /// (`docs/performance.md`, "Session 39").
    pub const AFTER: u8 = 64;
}

/// The bare lock with the least per-instance notes beside it, on its
/// cache line (`repr(C)`, the lock first, as lockmeter's `Meta`), doing
/// the [`part`]s in `PARTS` on every acquisition (the site count always).
#[repr(C)]
pub struct Least<L, const PARTS: u8 = { part::ALL }> {
    raw: L,
    /// The token of the thread that acquired last (BOUNCE) in the low
    /// half, the serial of the recorder that counted this instance
    /// (instances) in the high half: one compare for both.
    last: AtomicU64,
    /// The call site of the current holder (holder sites).
    holder: AtomicUsize,
    /// The class's identity (its name's address).
    class: &'static str,
    /// The remembered global dispatcher.
    global: usize,
    clock: quanta::Clock,
}

impl<L: Raw, const PARTS: u8> Least<L, PARTS> {
    pub fn new(raw: L, clock: quanta::Clock) -> Self {
        Least {
            raw,
            last: AtomicU64::new(0),
            holder: AtomicUsize::new(0),
            class: "bench.least",
            global: dispatcher_in_effect(),
            clock,
        }
    }

    /// One acquisition at `site`, counted, noted and recorded, then
    /// `critical` on the data, then the release.
    #[inline(always)]
    fn with(&self, site: &'static Location<'static>, critical: impl FnOnce(&mut u64)) {
        let (mut guard, held) = if PARTS & part::OUT_OF_LINE != 0 {
            self.acquire_out_of_line(site)
        } else {
            self.acquire(site)
        };
        critical(&mut guard);
        if held == Held::PLAIN {
            return;
        }
        // SAFETY: as in `acquire`.
        let t: &Thread = unsafe { &*THREAD.with(|t| t as *const Thread) };
        if let Some(gen) = held.gen() {
            t.state.store((gen + 1) << 8, Release);
        }
        drop(guard);
        if held.timed() {
            t.held_ticks
                .set(t.held_ticks.get() + self.clock.raw().wrapping_sub(t.start.get()));
        }
    }

    /// [`Least::acquire`], out of line ([`part::OUT_OF_LINE`]).
    #[inline(never)]
    fn acquire_out_of_line(&self, site: &'static Location<'static>) -> (L::Guard<'_>, Held) {
        self.acquire(site)
    }

    /// The acquisition up to the record's commit: the guard, and what the
    /// release must do.
    #[inline(always)]
    fn acquire(&self, site: &'static Location<'static>) -> (L::Guard<'_>, Held) {
        let has = |p: u8| PARTS & p != 0;
        if has(part::AFTER) {
            return self.acquire_after(site);
        }
        // The cheapest call that still honours a scoped dispatcher: a
        // closure that only returns the address lets tracing's fast path
        // inline; a different address takes the plain path, except with
        // `SCOPED`, whose closure downcasts any other dispatcher.
        if has(part::SCOPED) {
            if !layer_in_effect(self.global) {
                return (self.raw.wait(), Held::PLAIN);
            }
        } else if has(part::DISPATCH) && dispatcher_in_effect() != self.global {
            return (self.raw.wait(), Held::PLAIN);
        }
        // The thread's state by address: `LocalKey::with` around all of
        // this was too big for the inliner, and the call it left (its
        // captures spilled to the stack and read back) cost 2 ns a lock
        // on this machine, which no design has to pay.
        let (t, at, timed) = self.count(site);
        // Written ahead of the attempt (out of the critical section); the
        // state word commits it once held.
        self.write_record(t);
        let guard = match self.raw.attempt() {
            Some(g) => {
                t.nowait.set(t.nowait.get() + 1);
                g
            }
            None => {
                t.contended.set(t.contended.get() + 1);
                self.raw.wait()
            }
        };
        self.note_and_commit(t, at, guard, timed)
    }

    /// [`Least::acquire`] in the order of [`part::AFTER`]: the lock first,
    /// the same parts after it.
    #[inline(always)]
    fn acquire_after(&self, site: &'static Location<'static>) -> (L::Guard<'_>, Held) {
        let has = |p: u8| PARTS & p != 0;
        let (guard, waited) = match self.raw.attempt() {
            Some(g) => (g, false),
            None => (self.raw.wait(), true),
        };
        if has(part::DISPATCH) && dispatcher_in_effect() != self.global {
            return (guard, Held::PLAIN);
        }
        let (t, at, timed) = self.count(site);
        match waited {
            false => t.nowait.set(t.nowait.get() + 1),
            true => t.contended.set(t.contended.get() + 1),
        }
        self.write_record(t);
        self.note_and_commit(t, at, guard, timed)
    }

    /// The thread's state, the site's key, and whether this hold is timed
    /// (its start taken): the entry found and counted.
    #[inline(always)]
    fn count(&self, site: &'static Location<'static>) -> (&Thread, usize, bool) {
        // SAFETY: a thread-local lives until its thread exits, and `t` is
        // used only within this acquisition and its release, on this
        // thread.
        let t: &Thread = unsafe { &*THREAD.with(|t| t as *const Thread) };
        let (class, at) = (self.class.as_ptr() as usize, site as *const _ as usize);
        if t.class.get() != class || t.site.get() != at {
            t.enter(class, at);
        }
        // The count doubles as the sample's countdown: the site's
        // first hold is timed, then every 64th.
        let total = t.total.get();
        t.total.set(total + 1);
        let timed = PARTS & part::SAMPLE != 0 && total.is_multiple_of(SAMPLE_EVERY);
        if timed {
            t.start.set(self.clock.raw());
        }
        (t, at, timed)
    }

    /// The held-lock record's words ([`part::RECORD`]), seen by other
    /// threads once the state word commits them.
    #[inline(always)]
    fn write_record(&self, t: &Thread) {
        if PARTS & part::RECORD != 0 {
            t.rec_lock.store(self as *const Self as usize, Relaxed);
            t.rec_what.store(t as *const Thread as usize, Relaxed);
            t.rec_since.store(COARSE_NS.load(Relaxed), Relaxed);
            fence(Release);
        }
    }

    /// The lock taken: the notes on its line, then the record's commit.
    #[inline(always)]
    fn note_and_commit<'a>(
        &'a self,
        t: &Thread,
        at: usize,
        guard: L::Guard<'a>,
        timed: bool,
    ) -> (L::Guard<'a>, Held) {
        let has = |p: u8| PARTS & p != 0;
        if has(part::NOTES) {
            let me = u64::from(t.token.get()) | u64::from(SERIAL) << 32;
            if self.last.load(Relaxed) != me {
                self.last.store(me, Relaxed);
                t.bounces.set(t.bounces.get() + 1);
            }
            if self.holder.load(Relaxed) != at {
                self.holder.store(at, Relaxed);
            }
        }
        // The state: a generation above, the count of held records
        // in the low byte; each change is the next generation.
        let gen = has(part::RECORD).then(|| {
            let gen = (t.state.load(Relaxed) >> 8) + 1;
            t.state.store(gen << 8 | 1, Release);
            gen
        });
        (guard, Held::new(gen, timed))
    }
}

/// What a release must do, in one word so that the out-of-line
/// acquisition returns it beside the guard in registers: the record's
/// generation (above two bits), whether there is a record, whether the
/// hold is timed; or the plain path's [`Held::PLAIN`].
#[derive(Clone, Copy, PartialEq, Eq)]
struct Held(u64);

impl Held {
    /// Another dispatcher: nothing to release but the lock.
    const PLAIN: Held = Held(u64::MAX);
    const TIMED: u64 = 1;
    const RECORDED: u64 = 2;

    fn new(gen: Option<u64>, timed: bool) -> Held {
        let recorded = gen.map_or(0, |g| g << 2 | Held::RECORDED);
        Held(recorded | if timed { Held::TIMED } else { 0 })
    }

    fn gen(self) -> Option<u64> {
        (self.0 & Held::RECORDED != 0).then_some(self.0 >> 2)
    }

    fn timed(self) -> bool {
        self.0 & Held::TIMED != 0
    }
}

impl<L: Raw, const PARTS: u8> Take for Least<L, PARTS> {
    #[inline]
    #[track_caller]
    fn take(&self) {
        self.with(Location::caller(), |v| *v += 1);
    }
}

/// The address of the dispatcher in effect now.
fn dispatcher_in_effect() -> usize {
    tracing::dispatcher::get_default(|d| d as *const tracing::Dispatch as usize)
}

/// Whether the dispatcher in effect holds a lockmeter layer: the
/// remembered global one by its address, any other by a downcast.
fn layer_in_effect(global: usize) -> bool {
    tracing::dispatcher::get_default(|d| {
        d as *const tracing::Dispatch as usize == global || d.is::<lockmeter::Layer>()
    })
}

fn row(key: &str, name: &str, unit: Unit, pair: crate::measure::Pair) -> Row {
    Row::new(key, name, unit, Goal::Info).with_pair(pair)
}

/// What a [`part`] set is called in a row's name and key.
fn parts_name(parts: u8) -> (&'static str, &'static str) {
    match parts {
        part::ALL => ("", ""),
        p if p == part::ALL & !part::DISPATCH => ("_no_dispatch", ", without the dispatcher check"),
        p if p == part::ALL & !part::RECORD => ("_no_record", ", without the held-lock record"),
        p if p == part::ALL & !part::NOTES => ("_no_notes", ", without the lock's notes"),
        p if p == part::ALL & !part::SAMPLE => ("_no_sample", ", without hold sampling"),
        p if p == part::ALL | part::OUT_OF_LINE => ("_out_of_line", ", out of line"),
        p if p == part::ALL | part::AFTER => ("_after", ", all after the attempt"),
        0 => ("_count_only", ": the site count alone"),
        _ => ("_other", ", some parts"),
    }
}

/// One thread: `bare` against the same kind of lock with the `PARTS` of
/// the least features, in the loop of `shape`.
fn uncontended<L: Raw, const PARTS: u8>(
    cfg: &Config,
    name: &str,
    shape: Shape,
    (bare, least): (L, L),
    clock: &quanta::Clock,
) -> Row {
    let least = Box::new(crate::contended::Aligned(Least::<L, PARTS>::new(
        least,
        clock.clone(),
    )));
    let bare = Box::new(crate::contended::Aligned(bare));
    let pair = shape_pair!(cfg, shape, (&bare.0, &least.0), b => *b.wait() += 1, l => l.take());
    let (key, label) = parts_name(PARTS);
    let (shape_key, shape_label) = shape.names();
    row(
        &format!("least_{}_uncontended{shape_key}{key}", name.to_lowercase()),
        &format!("least features: bare {name}, uncontended{shape_label}{label}"),
        Unit::NsPerOp,
        pair,
    )
}

/// The uncontended rows of one lock: every part, every part but one, and
/// the site count alone; in the main rows' loop also out of line and
/// after the attempt.
fn uncontended_set<L: Raw>(cfg: &Config, name: &str, new: impl Fn() -> L) -> Vec<Row> {
    use part::*;
    let c = quanta::Clock::new();
    let (r, t) = (Shape::Reload, Shape::Tight);
    vec![
        uncontended::<L, ALL>(cfg, name, r, (new(), new()), &c),
        uncontended::<L, { ALL & !DISPATCH }>(cfg, name, r, (new(), new()), &c),
        uncontended::<L, { ALL & !RECORD }>(cfg, name, r, (new(), new()), &c),
        uncontended::<L, { ALL & !NOTES }>(cfg, name, r, (new(), new()), &c),
        uncontended::<L, { ALL & !SAMPLE }>(cfg, name, r, (new(), new()), &c),
        uncontended::<L, 0>(cfg, name, r, (new(), new()), &c),
        uncontended::<L, ALL>(cfg, name, t, (new(), new()), &c),
        uncontended::<L, { ALL | OUT_OF_LINE }>(cfg, name, t, (new(), new()), &c),
        uncontended::<L, { ALL | AFTER }>(cfg, name, t, (new(), new()), &c),
        uncontended::<L, 0>(cfg, name, t, (new(), new()), &c),
    ]
}

/// `threads` threads on one lock in `mix` (`work` rounds between
/// acquisitions): the bare lock against the same kind with `PARTS`.
fn contended<L: Raw + Take, const PARTS: u8>(
    cfg: &Config,
    name: &str,
    threads: usize,
    (mix, work): (&str, u64),
    new: impl Fn() -> L,
    clock: &quanta::Clock,
) -> Row {
    let least = Least::<L, PARTS>::new(new(), clock.clone());
    take_con();
    let pair = lock_pair(cfg, threads, work, false, new(), least);
    let con = take_con();
    let (key, label) = parts_name(PARTS);
    row(
        &format!("least_{}_{threads}t_{mix}{key}", name.to_lowercase()),
        &format!("least features: bare {name}, {threads} threads, {mix}{label}"),
        Unit::MopsPerSec,
        pair,
    )
    .note(format!("CON {con:.1}% (the floor's own count)"))
    .with_con(Con {
        observed_pct: con,
        bare_pct: f64::NAN,
    })
}

/// One lock's contended rows: every part in `hammer` and `work` at 2 and
/// 8 threads, inline, out of line and after the attempt, and 2-thread
/// `hammer` (where the gap between a thread's unlock and its next attempt
/// decides the row) with each part left out.
fn contended_set<L: Raw + Take>(cfg: &Config, name: &str, new: impl Fn() -> L + Copy) -> Vec<Row> {
    use part::*;
    let c = quanta::Clock::new();
    let (hammer, work) = (("hammer", 0), ("work", WORK_ROUNDS));
    let mut rows = Vec::new();
    for mix in [hammer, work] {
        for threads in [2, 8] {
            rows.push(contended::<L, ALL>(cfg, name, threads, mix, new, &c));
            rows.push(contended::<L, { ALL | OUT_OF_LINE }>(
                cfg, name, threads, mix, new, &c,
            ));
            rows.push(contended::<L, { ALL | AFTER }>(
                cfg, name, threads, mix, new, &c,
            ));
        }
    }
    rows.extend([
        contended::<L, { ALL & !DISPATCH }>(cfg, name, 2, hammer, new, &c),
        contended::<L, { ALL & !RECORD }>(cfg, name, 2, hammer, new, &c),
        contended::<L, { ALL & !NOTES }>(cfg, name, 2, hammer, new, &c),
        contended::<L, { ALL & !SAMPLE }>(cfg, name, 2, hammer, new, &c),
        contended::<L, 0>(cfg, name, 2, hammer, new, &c),
    ]);
    rows
}

/// lockmeter's observed lock (`ours`) against the least features around
/// the bare one (the "bare" side of these rows), in one run, uncontended
/// and at 2 threads in `hammer` and `work`: how far lockmeter's design is
/// from the floor.
fn against_lockmeter<L: Raw, M: Take>(
    cfg: &Config,
    name: &str,
    raw: impl Fn() -> L,
    ours: impl Fn() -> M,
) -> Vec<Row> {
    let c = quanta::Clock::new();
    let row_of = |what: &str, unit, pair| {
        row(
            &format!("least_vs_lockmeter_{}_{what}", name.to_lowercase()),
            &format!(
                "lockmeter observed against the least features: {name}, {}",
                what.replace("2t_", "2 threads, ")
            ),
            unit,
            pair,
        )
    };
    let least = Box::new(crate::contended::Aligned(Least::<L>::new(raw(), c.clone())));
    let mine = Box::new(crate::contended::Aligned(ours()));
    let (least, mine) = (&least.0, &mine.0);
    let pair = ns_pair(
        cfg,
        |n| (0..n).for_each(|_| black_box(least).take()),
        |n| (0..n).for_each(|_| black_box(mine).take()),
    );
    let mut rows = vec![row_of("uncontended", Unit::NsPerOp, pair)];
    for (mix, work) in [("hammer", 0), ("work", WORK_ROUNDS)] {
        let least = Least::<L>::new(raw(), c.clone());
        take_con();
        let pair = lock_pair(cfg, 2, work, false, least, ours());
        let con = take_con();
        let r = row_of(&format!("2t_{mix}"), Unit::MopsPerSec, pair);
        rows.push(r.note(format!("the floor's CON {con:.1}%")));
    }
    rows
}

/// The uncontended and contended rows of the bare Mutex and SpinLock
/// against the same lock with the least the default features cost.
/// Needs a lockmeter layer installed as the global default (so
/// `get_default` finds one dispatcher, and the same one every time).
pub fn rows(cfg: &Config) -> Vec<Row> {
    let mutex = || parking_lot::Mutex::new(0u64);
    let spin = || BareSpinLock::new(0u64);
    let mut rows = uncontended_set(cfg, "Mutex", mutex);
    rows.extend(uncontended_set(cfg, "SpinLock", spin));
    rows.extend(contended_set(cfg, "Mutex", mutex));
    rows.extend(contended_set(cfg, "SpinLock", spin));
    if let Some(r) = rows.first_mut() {
        r.note = "no profiler in these rows: ratio = bare lock with the least lockmeter's \
                  default features cost per acquisition (dispatcher check, one site count, \
                  1/64 hold timing, a held-lock record, the owner/holder/instance notes; \
                  least.rs) / bare lock"
            .to_string();
    }
    let first = rows.len();
    rows.extend(against_lockmeter(cfg, "Mutex", mutex, || {
        lockmeter::Mutex::named("bench.least.mutex", 0u64)
    }));
    rows.extend(against_lockmeter(cfg, "SpinLock", spin, || {
        lockmeter::SpinLock::named("bench.least.spinlock", 0u64)
    }));
    rows[first].note = "ratio = lockmeter's observed lock / the least features around the \
                        bare lock (the 'bare' column); above 1 (ns/op) or below 1 (Mops/s) \
                        is what lockmeter's design costs over that floor"
        .to_string();
    rows
}

/// The least features with [`part::SCOPED`], under a scoped dispatcher
/// holding a lockmeter layer, against the same loop under the global one,
/// each side where `runner` runs it (the main rows' `Scoped`): the floor
/// of what a scoped dispatcher adds, beside the "scoped dispatcher vs
/// global" goal rows ([`note_floors`] notes it on them).
///
/// And the same scoped loop against the least features' cheapest global
/// form ([`part::ALL`]: the dispatcher check inline, tracing's fast path):
/// what honouring a scoped dispatcher costs a design whose global path is
/// as cheap as it can be. The [`part::SCOPED`] form's global side calls
/// `get_default` on every acquisition (its closure downcasts, too big for
/// tracing's fast path to inline), so the first pair leaves out part of
/// what a scoped dispatcher costs over a global path like lockmeter's.
pub fn scoped_vs_global(runner: &Scoped<'_>) -> Vec<Row> {
    use part::{ALL, SCOPED};
    let c = quanta::Clock::new();
    let mutex = Least::<_, { ALL | SCOPED }>::new(parking_lot::Mutex::new(0u64), c.clone());
    let spin = Least::<_, { ALL | SCOPED }>::new(BareSpinLock::new(0u64), c.clone());
    let mutex_global = Least::<_, ALL>::new(parking_lot::Mutex::new(0u64), c.clone());
    let spin_global = Least::<_, ALL>::new(BareSpinLock::new(0u64), c);
    let (mutex, spin) = (Box::new(Aligned(mutex)), Box::new(Aligned(spin)));
    let (mutex_global, spin_global) = (
        Box::new(Aligned(mutex_global)),
        Box::new(Aligned(spin_global)),
    );
    let (mutex, spin) = (&mutex.0, &spin.0);
    let (mutex_global, spin_global) = (&mutex_global.0, &spin_global.0);
    let spin_loop = move |n: u64| (0..n).for_each(|_| black_box(spin).take());
    let mutex_loop = move |n: u64| (0..n).for_each(|_| black_box(mutex).take());
    // (key, name, note, SpinLock pair, Mutex pair): the global side first.
    let forms = [
        (
            "scoped_vs_global",
            "scoped dispatcher vs global",
            "no lockmeter code: the least features under a scoped dispatcher holding a \
             lockmeter layer (get_default's thread-local path, one downcast) / the same \
             loop under the global one",
            runner.pair_against(spin_loop, spin_loop),
            runner.pair_against(mutex_loop, mutex_loop),
        ),
        (
            "scoped_vs_inline_global",
            "scoped dispatcher vs their inline global check",
            "no lockmeter code: the least features under a scoped dispatcher holding a \
             lockmeter layer, as in the row above / their cheapest form under the global \
             dispatcher (get_default's fast path inline, one compare)",
            runner.pair_against(
                move |n: u64| (0..n).for_each(|_| black_box(spin_global).take()),
                spin_loop,
            ),
            runner.pair_against(
                move |n: u64| (0..n).for_each(|_| black_box(mutex_global).take()),
                mutex_loop,
            ),
        ),
    ];
    forms
        .into_iter()
        .flat_map(|(key, name, note, spin, mutex)| {
            [("spinlock", "SpinLock", spin), ("mutex", "Mutex", mutex)].map(|(what, lock, pair)| {
                row(
                    &format!("least_{what}_{key}"),
                    &format!("least features: {lock}, {name}"),
                    Unit::NsPerOp,
                    pair,
                )
                .note(note)
            })
        })
        .collect()
}

/// A loop of `n` operations, as `--callgrind` runs it.
pub type OpsLoop<'a> = &'a mut dyn FnMut(u64);

/// The `least` side of a `--callgrind` child for row `what` (`mutex` or
/// `spinlock`): the least features around the bare lock, one loop handed
/// to `measure` (warm-up, then the counted run). With `scoped`, their
/// [`part::SCOPED`] form, run under that dispatcher as a scoped default
/// (the lock made before it, under the global one, as in
/// [`scoped_vs_global`]).
pub fn callgrind_loop(
    what: &str,
    scoped: Option<&tracing::Dispatch>,
    measure: &mut dyn FnMut(OpsLoop<'_>),
) -> Result<(), String> {
    use part::{ALL, SCOPED};
    let (mutex, spin) = (|| parking_lot::Mutex::new(0u64), || BareSpinLock::new(0u64));
    match (what, scoped) {
        ("mutex", None) => least_loop::<_, ALL>(mutex(), None, measure),
        ("mutex", Some(d)) => least_loop::<_, { ALL | SCOPED }>(mutex(), Some(d), measure),
        ("spinlock", None) => least_loop::<_, ALL>(spin(), None, measure),
        ("spinlock", Some(d)) => least_loop::<_, { ALL | SCOPED }>(spin(), Some(d), measure),
        _ => {
            return Err(format!(
                "no least-features loop for {what:?} (mutex, spinlock)"
            ))
        }
    }
    Ok(())
}

/// [`callgrind_loop`] of one lock and part set.
fn least_loop<L: Raw, const PARTS: u8>(
    raw: L,
    scoped: Option<&tracing::Dispatch>,
    measure: &mut dyn FnMut(OpsLoop<'_>),
) {
    let least = Box::new(Aligned(Least::<L, PARTS>::new(raw, quanta::Clock::new())));
    let mut run = || measure(&mut |n| (0..n).for_each(|_| black_box(&least.0).take()));
    match scoped {
        Some(d) => tracing::dispatcher::with_default(d, run),
        None => run(),
    }
}

/// The least-features row of this run that is the floor under the
/// goal row `key`, if that row is one of those [`rows`] has a floor for.
fn floor_key(key: &str) -> Option<String> {
    if let Some(lock) = key.strip_prefix("uncontended_observed_") {
        // The uncontended rows run in the main rows' (tight) loop.
        return matches!(lock, "mutex" | "spinlock")
            .then(|| format!("least_{lock}_uncontended_tight"));
    }
    let rest = key.strip_prefix("contended_observed_")?;
    matches!(
        rest,
        "mutex_2t_hammer"
            | "mutex_8t_hammer"
            | "mutex_2t_work"
            | "mutex_8t_work"
            | "spinlock_2t_hammer"
            | "spinlock_8t_hammer"
            | "spinlock_2t_work"
            | "spinlock_8t_work"
    )
    .then(|| format!("least_{rest}"))
}

/// Notes on each goal row the floor of the same run: what the least
/// implementation of the default features reads against the same bare
/// lock. A goal under it is one no design meets on this host and build;
/// the verdict itself is left as it is.
///
/// Of the inline and the out-of-line form of the floor
/// ([`part::OUT_OF_LINE`]), the one that cost less in this run: the floor
/// is the least any design pays. Beside it, the same parts after the
/// attempt ([`part::AFTER`]), the order that trades the `work` rows for
/// the `hammer` ones: a row is judged against both orders, since one
/// design has to choose one for all rows.
pub fn note_floors(rows: &mut [Row]) {
    note_scoped_floors(rows);
    let floors: Vec<Floor> = rows
        .iter()
        .filter(|r| r.key.starts_with("least_"))
        .filter_map(|r| {
            Some(Floor {
                key: r.key.clone(),
                ratio: r.ratio?,
                unit: r.unit,
                con: r.con,
                shared: shared_core_warning(r),
            })
        })
        .collect();
    let floor_of = |key: &str| floors.iter().find(|f| f.key == key);
    for row in rows.iter_mut() {
        let Some(inline) = floor_key(&row.key) else {
            continue;
        };
        let out_of_line = format!("{inline}_out_of_line");
        let after = format!("{inline}_after");
        let floor = match (floor_of(&inline), floor_of(&out_of_line)) {
            (Some(a), Some(b)) => {
                let ool_better = if a.unit.higher_is_better() {
                    b.ratio > a.ratio
                } else {
                    b.ratio < a.ratio
                };
                if ool_better {
                    b
                } else {
                    a
                }
            }
            (Some(f), None) | (None, Some(f)) => f,
            (None, None) => continue,
        };
        let sep = if row.note.is_empty() { "" } else { "; " };
        row.note = format!(
            "{}{sep}least-features floor in this run: {}",
            row.note,
            floor.quoted()
        );
        if let Some(after) = floor_of(&after) {
            row.note = format!(
                "{}; the same parts after the attempt: {}",
                row.note,
                after.quoted()
            );
        }
    }
}

/// A least-features row, as a goal row's note quotes it.
struct Floor {
    key: String,
    ratio: f64,
    unit: Unit,
    con: Option<Con>,
    /// [`shared_core_warning`] of the row.
    shared: String,
}

impl Floor {
    /// Its ratio, key, CON and any shared-core warning.
    fn quoted(&self) -> String {
        format!(
            "{:.2} (`{}`{}{})",
            self.ratio,
            self.key,
            floor_con(self.con),
            self.shared
        )
    }
}

/// A warning for a floor row that ran on a shared core
/// ([`Row::shared_core`], the goal rows' own test), else empty. A goal row measured
/// so is SHARED and retried; a floor is an info row, and its note would
/// otherwise quote it as if it were calm.
fn shared_core_warning(row: &Row) -> String {
    row.host_factor()
        .filter(|_| row.shared_core())
        .map_or(String::new(), |f| {
            format!(", measured on a shared core (host {f:.2}): not a floor to judge by")
        })
}

/// A floor row's own CON, for the goal row's note beside lockmeter's and
/// the bare twin's (which the contended row's note already gives); empty
/// for an uncontended row.
fn floor_con(con: Option<Con>) -> String {
    con.filter(|c| c.observed_pct.is_finite())
        .map_or(String::new(), |c| {
            format!(", its CON {:.1}%", c.observed_pct)
        })
}

/// Notes on each "scoped dispatcher vs global" goal row what the least
/// features add under a scoped dispatcher in this run ([`scoped_vs_global`]),
/// in ns, and the ratio that addition alone makes over lockmeter's own
/// global cost (the row's bare column): the least this row can read
/// without making the global path slower. Twice: over the least features'
/// global form that calls `get_default` as their scoped form does, and over
/// their cheapest global form (the check inline), which is the one a
/// global path as fast as lockmeter's has to be compared with.
fn note_scoped_floors(rows: &mut [Row]) {
    let added = |rows: &[Row], key: &str| {
        let r = rows.iter().find(|r| r.key == key)?;
        Some((r.instrumented? - r.bare?, shared_core_warning(r)))
    };
    for what in ["spinlock", "mutex"] {
        let floors: Vec<(String, (f64, String))> = ["scoped_vs_global", "scoped_vs_inline_global"]
            .into_iter()
            .filter_map(|form| {
                let key = format!("least_{what}_{form}");
                Some((key.clone(), added(rows, &key)?))
            })
            .collect();
        let key = format!("observed_scoped_vs_global_{what}");
        let Some(row) = rows.iter_mut().find(|r| r.key == key) else {
            continue;
        };
        let Some(global) = row.bare.filter(|g| *g > 0.0) else {
            continue;
        };
        for (key, (floor_ns, shared)) in floors {
            let sep = if row.note.is_empty() { "" } else { "; " };
            row.note = format!(
                "{}{sep}least-features floor in this run: a scoped dispatcher adds \
                 {floor_ns:+.2} ns (`{key}`{shared}), {:.2} over this row's global cost",
                row.note,
                (global + floor_ns) / global
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Here rather than in `bare.rs`, which the library's criterion
    /// benches also compile (where a test module is dead code).
    #[test]
    fn a_failed_try_lock_leaves_the_holders_lock_held() {
        let lock = BareSpinLock::new(0u64);
        let held = lock.lock();
        assert!(lock.try_lock().is_none());
        // Still held: a second attempt fails too.
        assert!(lock.try_lock().is_none());
        drop(held);
        assert!(lock.try_lock().is_some());
    }

    /// Two threads each take `lock` `per_thread` times at once.
    fn hammer<T: Take>(lock: &T, per_thread: u64) {
        std::thread::scope(|s| {
            for _ in 0..2 {
                s.spawn(|| (0..per_thread).for_each(|_| lock.take()));
            }
        });
    }

    /// A floor that lets two threads into the critical section is no
    /// floor: it counts as faster what merely lost the lock (the bench's
    /// spinlock's failed `try_lock` once unlocked the holder's lock, and
    /// these rows read it as throughput). Every increment must survive.
    #[test]
    fn the_floor_keeps_its_lock_exclusive() {
        const PER_THREAD: u64 = 200_000;
        let clock = quanta::Clock::new();
        let spin = Least::<BareSpinLock<u64>>::new(BareSpinLock::new(0), clock.clone());
        hammer(&spin, PER_THREAD);
        assert_eq!(*spin.raw.wait(), 2 * PER_THREAD);
        let mutex =
            Least::<parking_lot::Mutex<u64>>::new(parking_lot::Mutex::new(0), clock.clone());
        hammer(&mutex, PER_THREAD);
        assert_eq!(*mutex.raw.wait(), 2 * PER_THREAD);
        // The lock taken first, the parts after it.
        use part::{AFTER, ALL};
        let spin = Least::<_, { ALL | AFTER }>::new(BareSpinLock::new(0), clock.clone());
        hammer(&spin, PER_THREAD);
        assert_eq!(*spin.raw.wait(), 2 * PER_THREAD);
        let mutex = Least::<_, { ALL | AFTER }>::new(parking_lot::Mutex::new(0), clock);
        hammer(&mutex, PER_THREAD);
        assert_eq!(*mutex.raw.wait(), 2 * PER_THREAD);
        let twin = crate::own_con::CountingTwin(BareSpinLock::new(0u64));
        hammer(&twin, PER_THREAD);
        assert_eq!(*twin.0.wait(), 2 * PER_THREAD);
    }

    #[test]
    fn goal_rows_find_their_floor_rows() {
        assert_eq!(
            floor_key("uncontended_observed_spinlock").as_deref(),
            Some("least_spinlock_uncontended_tight")
        );
        assert_eq!(
            floor_key("contended_observed_mutex_8t_work").as_deref(),
            Some("least_mutex_8t_work")
        );
        assert_eq!(floor_key("uncontended_observed_rwlock_read"), None);
        assert_eq!(
            floor_key("contended_observed_mutex_2t_work_many_sites"),
            None
        );
    }

    #[test]
    fn a_floor_is_noted_on_its_goal_row_only() {
        let mut rows = vec![
            Row::new("uncontended_observed_mutex", "m", Unit::NsPerOp, Goal::Info),
            Row::new(
                "uncontended_observed_sync_mutex",
                "s",
                Unit::NsPerOp,
                Goal::Info,
            ),
            Row::new("least_mutex_uncontended", "l", Unit::NsPerOp, Goal::Info),
            Row::new(
                "least_mutex_uncontended_tight",
                "t",
                Unit::NsPerOp,
                Goal::Info,
            ),
        ];
        rows[2].ratio = Some(1.07);
        rows[3].ratio = Some(1.35);
        note_floors(&mut rows);
        // The goal row runs in the main rows' loop: that loop's floor.
        assert!(rows[0].note.contains("floor in this run: 1.35"));
        assert!(rows[1].note.is_empty());
    }

    #[test]
    fn the_floor_is_the_cheaper_of_the_inline_and_out_of_line_forms() {
        let row = |key: &str, unit, ratio| {
            let mut r = Row::new(key, key, unit, Goal::Info);
            r.ratio = ratio;
            r
        };
        let mut rows = vec![
            row("uncontended_observed_mutex", Unit::NsPerOp, None),
            row("least_mutex_uncontended_tight", Unit::NsPerOp, Some(1.35)),
            row(
                "least_mutex_uncontended_tight_out_of_line",
                Unit::NsPerOp,
                Some(1.30),
            ),
            row("contended_observed_mutex_8t_hammer", Unit::MopsPerSec, None),
            row("least_mutex_8t_hammer", Unit::MopsPerSec, Some(0.40)),
            row(
                "least_mutex_8t_hammer_out_of_line",
                Unit::MopsPerSec,
                Some(0.38),
            ),
        ];
        note_floors(&mut rows);
        // Time: the lower ratio; throughput: the higher.
        assert!(rows[0]
            .note
            .contains("1.30 (`least_mutex_uncontended_tight_out_of_line`)"));
        assert!(rows[3].note.contains("0.40 (`least_mutex_8t_hammer`)"));
    }

    #[test]
    fn the_order_after_the_attempt_is_noted_beside_the_floor() {
        let row = |key: &str, ratio| {
            let mut r = Row::new(key, key, Unit::MopsPerSec, Goal::Info);
            r.ratio = ratio;
            r
        };
        let mut rows = vec![
            row("contended_observed_mutex_2t_hammer", None),
            row("least_mutex_2t_hammer", Some(0.58)),
            row("least_mutex_2t_hammer_out_of_line", Some(0.66)),
            row("least_mutex_2t_hammer_after", Some(0.91)),
            row("contended_observed_mutex_2t_work", None),
            row("least_mutex_2t_work", Some(0.95)),
        ];
        note_floors(&mut rows);
        // The better of the two forms in the order of every row, then the
        // other order, not chosen for it: a design has one order.
        assert!(rows[0].note.contains(
            "floor in this run: 0.66 (`least_mutex_2t_hammer_out_of_line`); \
             the same parts after the attempt: 0.91 (`least_mutex_2t_hammer_after`)"
        ));
        assert!(rows[4].note.contains("0.95 (`least_mutex_2t_work`)"));
        assert!(!rows[4].note.contains("after the attempt"));
    }

    /// A floor that ran on a shared core is quoted with a warning, the
    /// scoped floor too; a calm one without.
    #[test]
    fn a_floor_measured_on_a_shared_core_is_quoted_with_a_warning() {
        crate::host::probe();
        // Far slower and far faster than any real best (see report.rs).
        let (slow, fast) = (Some(1e12), Some(1e-12));
        let row = |key: &str, ratio, host| {
            let mut r = Row::new(key, key, Unit::MopsPerSec, Goal::Info);
            r.ratio = ratio;
            r.host_probe = host;
            r
        };
        let mut scoped_floor = row("least_mutex_scoped_vs_global", None, slow);
        (scoped_floor.bare, scoped_floor.instrumented) = (Some(5.0), Some(7.0));
        let mut scoped_goal = row("observed_scoped_vs_global_mutex", None, fast);
        scoped_goal.bare = Some(6.0);
        let mut rows = vec![
            row("contended_observed_mutex_2t_hammer", None, None),
            row("least_mutex_2t_hammer", Some(0.58), slow),
            row("least_mutex_2t_hammer_after", Some(0.91), fast),
            scoped_goal,
            scoped_floor,
        ];
        note_floors(&mut rows);
        assert!(
            rows[0]
                .note
                .contains("0.58 (`least_mutex_2t_hammer`, measured on a shared core (host ")
                && rows[0].note.contains("not a floor to judge by)"),
            "{}",
            rows[0].note
        );
        assert!(
            rows[0]
                .note
                .ends_with("after the attempt: 0.91 (`least_mutex_2t_hammer_after`)"),
            "{}",
            rows[0].note
        );
        assert!(
            rows[3].note.contains(
                "adds +2.00 ns (`least_mutex_scoped_vs_global`, measured on a shared core"
            ),
            "{}",
            rows[3].note
        );
    }

    #[test]
    fn a_contended_goal_row_gives_its_floors_con() {
        let mut rows = vec![
            Row::new(
                "contended_observed_mutex_2t_work",
                "m",
                Unit::MopsPerSec,
                Goal::Info,
            ),
            Row::new("least_mutex_2t_work", "l", Unit::MopsPerSec, Goal::Info).with_con(Con {
                observed_pct: 4.25,
                bare_pct: f64::NAN,
            }),
        ];
        rows[1].ratio = Some(1.66);
        note_floors(&mut rows);
        assert!(rows[0]
            .note
            .contains("1.66 (`least_mutex_2t_work`, its CON 4.2%)"));
    }

    /// A row of `ns/op` with a ratio goal, timed `bare` and `instrumented`.
    fn timed_row(key: &str, bare: Option<f64>, instrumented: Option<f64>) -> Row {
        let mut r = Row::new(key, key, Unit::NsPerOp, Goal::RatioAtMost(1.5));
        (r.bare, r.instrumented) = (bare, instrumented);
        r
    }

    #[test]
    fn the_scoped_floor_is_noted_as_what_it_adds_over_the_rows_global_cost() {
        let row = timed_row;
        let mut rows = vec![
            row("observed_scoped_vs_global_mutex", Some(10.0), Some(16.0)),
            row("least_mutex_scoped_vs_global", Some(6.0), Some(9.5)),
            // No floor row for it in this run: no note.
            row("observed_scoped_vs_global_spinlock", Some(8.0), Some(12.0)),
        ];
        note_floors(&mut rows);
        // +3.5 ns over the row's own 10 ns global side: 1.35.
        assert!(rows[0].note.contains("adds +3.50 ns"), "{}", rows[0].note);
        assert!(rows[0].note.contains("1.35 over this row's global cost"));
        assert!(rows[2].note.is_empty());
    }

    #[test]
    fn the_scoped_floor_over_the_inline_global_check_is_noted_beside_the_other() {
        let row = timed_row;
        let mut rows = vec![
            row("observed_scoped_vs_global_spinlock", Some(5.0), Some(8.0)),
            row("least_spinlock_scoped_vs_global", Some(5.5), Some(7.5)),
            row(
                "least_spinlock_scoped_vs_inline_global",
                Some(4.0),
                Some(7.5),
            ),
        ];
        note_floors(&mut rows);
        let note = &rows[0].note;
        // +2.0 over the call-form global side: 1.40; +3.5 over the inline
        // one: 1.70, so the goal lies under this floor.
        assert!(
            note.contains("adds +2.00 ns (`least_spinlock_scoped_vs_global`), 1.40"),
            "{note}"
        );
        assert!(
            note.contains("adds +3.50 ns (`least_spinlock_scoped_vs_inline_global`), 1.70"),
            "{note}"
        );
    }
}
