//! "Now": what every thread holds and waits on at this moment, the
//! deadlocks that form, stalls, and the order locks are nested in.
//!
//! Counting (the rest of the crate) records an acquisition when it ends,
//! so a hung program shows nothing. This module keeps, per thread, the
//! locks it holds and the one it waits on ([`table`]: a seqlock a reader
//! never blocks). A snapshot reads them into `now`; the [`watchdog`]
//! thread reads them every half detection interval, reports cycles of
//! waiting threads (confirmed on two scans in which no thread of the cycle
//! changed) and holds or waits past the stall threshold; [`order`] counts
//! which locks are acquired while which are held.
//!
//! The primitives call the hooks below through `meter`: a hold is recorded
//! after the lock is taken and forgotten before it is released, and a wait
//! is recorded before the thread blocks, so a record always understates
//! what is held and a cycle read from them is a real one.
//!
//! | file | what it is |
//! |---|---|
//! | [`table`] | one thread's held locks and waits, the seqlock |
//! | [`thread`] | every thread's table, registration and exit |
//! | [`picture`] | tables → the model: `now`, chains, cycles |
//! | [`order`] | lock-order edges and inversions |
//! | [`watchdog`] | the thread that finds deadlocks and stalls |

mod order;
mod picture;
pub(crate) mod table;
pub(crate) mod thread;
mod watchdog;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use lockmeter_model::Snapshot;

use self::table::{FirstHold, HeadWords, Rec};
use crate::recorder::entry::Entry;
use crate::recorder::Recorder;
use crate::thread_ptrs::OwnHead;

pub(crate) use self::table::{MAX_HELD, UNTRACKED};
pub(crate) use self::thread::exiting;
pub(crate) use self::watchdog::{forget_recorder, remember_dispatch};

/// The default interval within which a deadlock is reported.
pub const DEFAULT_DEADLOCK_INTERVAL: Duration = Duration::from_secs(1);

/// Deadlock interval in ns; 0 is off.
static DETECT_NS: AtomicU64 = AtomicU64::new(1_000_000_000);
/// Stall threshold in ns; 0 is off.
static STALL_NS: AtomicU64 = AtomicU64::new(0);
/// Whether lock-order edges are recorded.
static ORDER: AtomicBool = AtomicBool::new(false);

/// Process-wide settings of the watchdog and the order recording, from a
/// layer's builder; `None` leaves a setting as it is.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Settings {
    /// `Some(None)` turns detection off.
    pub(crate) deadlock: Option<Option<Duration>>,
    pub(crate) stall: Option<Option<Duration>>,
    pub(crate) lock_order: Option<bool>,
}

fn ns(d: Option<Duration>) -> u64 {
    d.map_or(0, |d| {
        u64::try_from(d.as_nanos()).unwrap_or(u64::MAX).max(1)
    })
}

/// Applies `s` (environment variables win) and starts the watchdog.
pub(crate) fn configure(s: Settings) {
    let (s, warnings) = crate::env::now_overrides(s, &|name| std::env::var_os(name));
    for w in warnings {
        crate::report::warn(w);
    }
    if let Some(d) = s.deadlock {
        DETECT_NS.store(ns(d), Relaxed);
    }
    if let Some(d) = s.stall {
        STALL_NS.store(ns(d), Relaxed);
    }
    if let Some(on) = s.lock_order {
        ORDER.store(on, Relaxed);
    }
    watchdog::start();
}

pub(crate) fn lock_order_on() -> bool {
    ORDER.load(Relaxed)
}

fn detect_ns() -> u64 {
    DETECT_NS.load(Relaxed)
}

fn stall_ns() -> u64 {
    STALL_NS.load(Relaxed)
}

/// The watchdog clock: nanoseconds since the first layer, advanced by the
/// watchdog every [`watchdog::TICK`], so that recording a hold reads one
/// shared word instead of the time (a clock read costs more than an
/// uncontended acquisition).
static COARSE: AtomicU64 = AtomicU64::new(0);
static EPOCH: OnceLock<Instant> = OnceLock::new();

fn precise_ns() -> u64 {
    EPOCH.get_or_init(Instant::now).elapsed().as_nanos() as u64
}

/// The watchdog clock now, in ns (0 until it first ticks): a shared load,
/// not a clock read. Two readings differ only if a tick of
/// [`TICK_NS`] passed between them, so a wait that lasted a tick or more
/// always shows a difference.
#[inline(always)]
pub(crate) fn coarse_ns() -> u64 {
    COARSE.load(Relaxed)
}

/// The watchdog's tick in ns: the resolution of [`coarse_ns`].
pub(crate) const TICK_NS: u64 = watchdog::TICK.as_nanos() as u64;

fn tick() {
    COARSE.store(precise_ns(), Relaxed);
}

#[inline(always)]
fn rec(lock: usize, entry: *const Entry, recorder: *const Recorder) -> Rec {
    Rec {
        lock,
        what: entry as usize,
        recorder: recorder as usize,
        since: COARSE.load(Relaxed),
    }
}

/// A lock was just taken without waiting: returns the index that
/// [`hold_ends`] forgets, [`UNTRACKED`] if it is not recorded. Out of line:
/// the hot path records a thread's first hold with [`prepare_hold`] and
/// [`hold_prepared`], and comes here for the others.
#[inline(never)]
pub(crate) fn hold_begins(lock: usize, entry: *const Entry, recorder: *const Recorder) -> u32 {
    thread::with_slot(|s| {
        let r = rec(lock, entry, recorder);
        match s.table.holds() {
            0 => s.table.hold(r),
            _ => hold_nested(s, &r, 0),
        }
    })
    .unwrap_or(UNTRACKED)
}

/// A hold about to be attempted, recorded as far as it can be before the
/// lock is taken (see [`prepare_hold`]): the state [`hold_prepared`]
/// stores, one word.
#[derive(Clone, Copy)]
pub(crate) struct Prepared(Option<FirstHold>);

/// The part of [`hold_begins`] that can run before the lock's attempt:
/// for a thread that holds nothing (the common case), the whole record,
/// which no reader sees until [`hold_prepared`] counts it after the lock is
/// taken. So that the critical section holds one store of `now`'s instead
/// of the record's lookup, loads and stores (`docs/performance.md`,
/// "Session 10"). If the attempt fails nothing needs undoing.
#[inline(always)]
pub(crate) fn prepare_hold(
    lock: usize,
    entry: *const Entry,
    recorder: *const Recorder,
) -> Prepared {
    let lone = prepare_lone(lock, entry, recorder);
    if lone.is_some() || OwnHead.is_live() {
        // Written ahead, or a hold among others: [`hold_begins`]'s, with
        // no call here (the observed upgrade's nested write hold paid one:
        // `docs/performance.md`, "Session 35").
        return lone;
    }
    prepare_registering(lock, entry, recorder)
}

/// [`prepare_hold`] for a thread not registered yet (registered now), or
/// exiting.
#[cold]
#[inline(never)]
fn prepare_registering(lock: usize, entry: *const Entry, recorder: *const Recorder) -> Prepared {
    Prepared(thread::with_slot(|s| s.table.prepare_first(rec(lock, entry, recorder))).flatten())
}

/// [`prepare_hold`] for a registered thread that holds nothing, with no
/// call: the state word and record 0 in the thread's own thread-local, no
/// pointer on the way. Not [`Prepared::is_some`], writing nothing,
/// otherwise (then the caller uses [`prepare_hold`]); a thread not
/// registered has a head whose count says so (`table::NOT_LIVE`). A
/// `Prepared`, not an `Option` of one: the caller's test of it is the one
/// [`hold_prepared`] makes, so the compiler drops the second.
#[inline(always)]
pub(crate) fn prepare_lone(
    lock: usize,
    entry: *const Entry,
    recorder: *const Recorder,
) -> Prepared {
    Prepared(OwnHead.prepare_first(rec(lock, entry, recorder)))
}

impl Prepared {
    /// Whether the record was written ahead.
    #[inline(always)]
    pub(crate) fn is_some(&self) -> bool {
        self.0.is_some()
    }
}

/// The lock whose hold `prepared` prepared was just taken without
/// waiting, with no other change of the thread's table in between: like
/// [`hold_begins`], the index that [`hold_ends`] forgets.
#[inline(always)]
pub(crate) fn hold_prepared(
    prepared: Prepared,
    lock: usize,
    entry: *const Entry,
    recorder: *const Recorder,
) -> u32 {
    match prepared.0 {
        // This thread's head, which wrote the record a moment ago, in
        // this same acquisition.
        Some(first) => OwnHead.commit_first(first),
        None => hold_begins(lock, entry, recorder),
    }
}

/// A hold taken while others are held: a lock-order edge from each.
/// Inline in [`hold_begins`]: out of line, it was one more call, with its
/// saved registers, on every nested acquisition.
#[inline]
fn hold_nested(s: &thread::ThreadSlot, r: &Rec, wait_ns: u64) -> u32 {
    if ORDER.load(Relaxed) {
        order::record(s, r, wait_ns);
    }
    s.table.hold_among_others(r)
}

/// The hold at `ix` is about to be released.
#[inline(always)]
pub(crate) fn hold_ends(ix: u32) {
    if ix != UNTRACKED {
        hold_ends_tracked(ix);
    }
}

#[inline(always)]
fn hold_ends_tracked(ix: u32) {
    thread::with_slot(|s| s.table.release(ix));
}

/// [`hold_ends`] for the common case alone, with no call: the hold at
/// `ix` is its thread's only one (or untracked). False, having done
/// nothing, otherwise: then the caller calls [`hold_ends`]. So that an
/// observed release inside the critical section needs no saved registers
/// (`meter::hold`).
#[inline(always)]
pub(crate) fn hold_ends_if_lone(ix: u32) -> bool {
    // The lone hold's index (0) first: the inlined SpinLock release then
    // makes one compare fewer. Testing index 0 alone (an untracked hold
    // sent the nested way) saved the out-of-line release two more, and
    // read the Mutex 0.1-0.2 of bare slower in sessions 30 and 32 alike
    // (`docs/performance.md`, "Session 32").
    if ix == 0 {
        return OwnHead.release_lone(0);
    }
    ix == UNTRACKED
}

/// The thread is about to block waiting for `lock`. A thread that holds
/// and waits on nothing (a contended acquisition's common case) records
/// it in its head, with no call (`table::HeadWords::begin_head_wait`).
#[inline(always)]
pub(crate) fn wait_begins(lock: usize, entry: *const Entry, recorder: *const Recorder) {
    if !OwnHead.begin_head_wait(rec(lock, entry, recorder)) {
        wait_begins_in_table(lock, entry, recorder);
    }
}

/// [`wait_begins`] among other holds or waits, or on a thread not
/// registered yet.
#[inline(never)]
fn wait_begins_in_table(lock: usize, entry: *const Entry, recorder: *const Recorder) {
    thread::with_slot(|s| s.table.wait(rec(lock, entry, recorder)));
}

/// The wait just begun is on a semaphore whose permits also move by
/// `down`/`up`: any thread may end it, so it is no part of a deadlock.
pub(crate) fn wait_is_loose() {
    thread::with_slot(|s| s.table.flag_wait(Rec::LOOSE));
}

/// The wait gave up.
pub(crate) fn wait_ends() {
    if !OwnHead.end_head_wait() {
        thread::with_slot(|s| s.table.wait_over());
    }
}

/// The wait ended with the lock taken after `wait_ns`.
pub(crate) fn wait_ends_held(
    lock: usize,
    entry: *const Entry,
    recorder: *const Recorder,
    wait_ns: u64,
) -> u32 {
    // The wait the head kept: nothing else was held, so no lock-order edge.
    if let Some(ix) = OwnHead.head_wait_held(rec(lock, entry, recorder)) {
        return ix;
    }
    thread::with_slot(|s| {
        let r = rec(lock, entry, recorder);
        if s.table.holds() != 0 && ORDER.load(Relaxed) {
            order::record(s, &r, wait_ns);
        }
        s.table.wait_over_held(r)
    })
    .unwrap_or(UNTRACKED)
}

/// Fills `now`, `deadlocks` and `lock_order` of a snapshot of `recorder`.
/// Takes no lock an application thread can hold while it waits.
pub(crate) fn fill(snap: &mut Snapshot, recorder: *const Recorder) {
    let recorder = recorder as usize;
    let (p, order) = picture::gather(Some(recorder));
    snap.now = picture::now(
        &p,
        recorder,
        precise_ns(),
        stall_ns(),
        snap.window.end_unix_ns,
    );
    snap.deadlocks = watchdog::deadlocks_of(recorder);
    snap.lock_order = order.unwrap_or_default();
}
