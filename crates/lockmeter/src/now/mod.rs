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
//! what is held and a cycle read from them is a real one. One exception,
//! to keep the critical section short: a guard's drop forgets a
//! [`FIRST_HOLD`], taken while its thread held nothing and waited for
//! nothing else, just *after* the unlock. For those few nanoseconds the
//! record overstates, but only on a thread that is releasing a lock and
//! waits on nothing (a wait queue's own lock, released inside a wait, is
//! never a first hold), and every edge of a cycle leaves a waiting thread,
//! so no cycle passes through it.
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
mod thread;
mod watchdog;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use lockmeter_model::Snapshot;

use self::table::{FirstHold, Rec};
use crate::recorder::entry::Entry;
use crate::recorder::Recorder;

pub(crate) use self::table::UNTRACKED;
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
            _ => hold_nested(s, r, 0),
        }
    })
    .unwrap_or(UNTRACKED)
}

/// A hold about to be attempted, recorded as far as it can be before the
/// lock is taken (see [`prepare_hold`]).
#[derive(Clone, Copy)]
pub(crate) struct Prepared(Option<(*const thread::ThreadSlot, FirstHold, u32)>);

/// The part of [`hold_begins`] that can run before the lock's attempt:
/// for a thread that holds nothing (the common case), the whole record,
/// which no reader sees until [`hold_prepared`] counts it after the lock is
/// taken. So that the critical section holds one store of `now`'s instead
/// of the record's lookup, loads and stores (`docs/performance.md`,
/// "Session 10"). If the attempt fails nothing needs undoing.
/// `inner`: the lock is a wait queue's own, which may be released after its
/// thread's wait began, so its hold is never a [`FIRST_HOLD`].
#[inline(always)]
pub(crate) fn prepare_hold(
    lock: usize,
    entry: *const Entry,
    recorder: *const Recorder,
    inner: bool,
) -> Prepared {
    let held = first_hold_unless(inner);
    Prepared(
        thread::with_slot(|s| {
            s.table
                .prepare_first(rec(lock, entry, recorder))
                .map(|first| (s as *const thread::ThreadSlot, first, held))
        })
        .flatten(),
    )
}

/// [`FIRST_HOLD`], or record 0 named plainly for a wait queue's own lock.
#[inline(always)]
fn first_hold_unless(inner: bool) -> u32 {
    match inner {
        true => 0,
        false => FIRST_HOLD,
    }
}

/// The lock whose hold `prepared` prepared was just taken without
/// waiting, with no other change of the thread's table in between: like
/// [`hold_begins`], what [`hold_ends`] forgets; [`FIRST_HOLD`] for the
/// thread's first hold.
#[inline(always)]
pub(crate) fn hold_prepared(
    prepared: Prepared,
    lock: usize,
    entry: *const Entry,
    recorder: *const Recorder,
) -> u32 {
    match prepared.0 {
        Some((slot, first, held)) => {
            // SAFETY: the slot was this thread's a moment ago, in this same
            // acquisition; it lives until the thread exits.
            unsafe { &*slot }.table.commit_first(first);
            held
        }
        None => hold_begins(lock, entry, recorder),
    }
}

/// A hold taken while others are held: a lock-order edge from each.
#[inline(never)]
fn hold_nested(s: &thread::ThreadSlot, r: Rec, wait_ns: u64) -> u32 {
    if ORDER.load(Relaxed) {
        order::record(s, &r, wait_ns);
    }
    s.table.hold_nested(r)
}

/// What [`hold_prepared`] and [`wait_ends_held`] return for a thread's
/// first hold, taken while it held nothing and waited for nothing else:
/// record 0, which a guard's drop may forget just after the unlock
/// ([`first_hold_ends`]; the module's doc says why that is safe). Never a
/// wait queue's own lock, which its thread may release inside a wait
/// (`recorder::Class` role `InnerLock`).
pub(crate) const FIRST_HOLD: u32 = UNTRACKED - 1;

/// The table's index of the hold `ix` names.
#[inline(always)]
fn index(ix: u32) -> u32 {
    match ix {
        FIRST_HOLD => 0,
        ix => ix,
    }
}

/// The hold at `ix` is about to be released.
#[inline(always)]
pub(crate) fn hold_ends(ix: u32) {
    if ix != UNTRACKED {
        hold_ends_tracked(index(ix));
    }
}

/// A [`FIRST_HOLD`]'s lock was just unlocked: its record is forgotten, in
/// one store when it is still the thread's only hold (the common case),
/// else by a call.
#[inline(always)]
pub(crate) fn first_hold_ends() {
    if thread::registered_slot(|s| s.table.release_lone(0)) == Some(false) {
        hold_ends_tracked(0);
    }
}

#[inline(never)]
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
    ix == UNTRACKED || thread::registered_slot(|s| s.table.release_lone(index(ix))).unwrap_or(false)
}

/// The thread is about to block waiting for `lock`.
pub(crate) fn wait_begins(lock: usize, entry: *const Entry, recorder: *const Recorder) {
    thread::with_slot(|s| s.table.wait(rec(lock, entry, recorder)));
}

/// The wait just begun is on a semaphore whose permits also move by
/// `down`/`up`: any thread may end it, so it is no part of a deadlock.
pub(crate) fn wait_is_loose() {
    thread::with_slot(|s| s.table.flag_wait(Rec::LOOSE));
}

/// The wait gave up.
pub(crate) fn wait_ends() {
    thread::with_slot(|s| s.table.wait_over());
}

/// The wait ended with the lock taken after `wait_ns`: like
/// [`hold_begins`], what [`hold_ends`] forgets; [`FIRST_HOLD`] when the
/// thread now holds this lock alone and waits on nothing, unless `inner`
/// (as for [`prepare_hold`]).
pub(crate) fn wait_ends_held(
    lock: usize,
    entry: *const Entry,
    recorder: *const Recorder,
    wait_ns: u64,
    inner: bool,
) -> u32 {
    thread::with_slot(|s| {
        let r = rec(lock, entry, recorder);
        let holds = s.table.holds();
        if holds != 0 && ORDER.load(Relaxed) {
            order::record(s, &r, wait_ns);
        }
        let alone = holds == 0 && s.table.waits() == 1;
        match s.table.wait_over_held(r) {
            0 if alone => first_hold_unless(inner),
            ix => ix,
        }
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

#[cfg(test)]
mod tests {
    use super::*;

    /// This thread's table as a reader sees it.
    fn mine() -> table::View {
        thread::with_slot(|s| s.table.read())
            .flatten()
            .expect("a quiet table reads")
    }

    /// Each on a thread of its own, whose table starts empty.
    fn on_a_new_thread(f: impl FnOnce() + Send + 'static) {
        std::thread::spawn(f).join().unwrap();
    }

    /// A first hold written ahead is seen only once counted, is forgotten
    /// whole after the unlock, and is a [`FIRST_HOLD`] only for a thread
    /// holding nothing, waiting for nothing, and not for a wait queue's own
    /// lock.
    #[test]
    fn a_first_hold_is_named_so_only_when_nothing_else_is_recorded() {
        // Records only: no reader looks behind these pointers here.
        const NONE: (*const Entry, *const Recorder) = (std::ptr::null(), std::ptr::null());
        on_a_new_thread(|| {
            let (entry, rec) = NONE;
            let p = prepare_hold(0x10, entry, rec, false);
            assert!(mine().held.is_empty(), "written ahead, not yet counted");
            assert_eq!(hold_prepared(p, 0x10, entry, rec), FIRST_HOLD);
            assert_eq!(
                mine().held.iter().map(|r| r.lock).collect::<Vec<_>>(),
                [0x10]
            );
            first_hold_ends();
            assert!(mine().held.is_empty());
        });
        on_a_new_thread(|| {
            let (entry, rec) = NONE;
            let p = prepare_hold(0x10, entry, rec, true);
            let held = hold_prepared(p, 0x10, entry, rec);
            assert_eq!(held, 0, "a wait queue's own lock is no first hold");
            hold_ends(held);
            assert!(mine().held.is_empty());
        });
        on_a_new_thread(|| {
            let (entry, rec) = NONE;
            let outer = hold_prepared(prepare_hold(0x10, entry, rec, false), 0x10, entry, rec);
            let inner = hold_prepared(prepare_hold(0x20, entry, rec, false), 0x20, entry, rec);
            assert_eq!((outer, inner), (FIRST_HOLD, 1), "a nested hold is indexed");
            // Released out of order: the first hold's record goes after
            // the unlock, by the nested path.
            first_hold_ends();
            assert_eq!(
                mine().held.iter().map(|r| r.lock).collect::<Vec<_>>(),
                [0x20]
            );
            hold_ends(inner);
            assert!(mine().held.is_empty());
        });
        on_a_new_thread(|| {
            let (entry, rec) = NONE;
            wait_begins(0x30, entry, rec);
            let p = prepare_hold(0x10, entry, rec, false);
            let held = hold_prepared(p, 0x10, entry, rec);
            assert_ne!(held, FIRST_HOLD, "taken inside a wait");
            hold_ends(held);
            assert_eq!(wait_ends_held(0x30, entry, rec, 0, false), FIRST_HOLD);
            first_hold_ends();
            wait_begins(0x30, entry, rec);
            assert_eq!(wait_ends_held(0x30, entry, rec, 0, true), 0);
            hold_ends(0);
            assert!(mine().held.is_empty() && mine().wait.is_none());
        });
    }
}
