//! Floors under the rows that miss: what the hardware (and `tracing`)
//! charge for the least bookkeeping a lock profiler with exact per-thread
//! counts can do, with no profiler at all.
//!
//! - **Contended `hammer`.** The bare lock against the same bare lock with
//!   one `thread_local!` counter incremented on every acquisition, either
//!   just before the attempt (in the gap between a thread's unlock and its
//!   next lock, where lockmeter finds its entry) or inside the critical
//!   section (where the counts go). In `hammer` the releasing thread
//!   re-takes the lock before another core's request for the line lands,
//!   and any work in that gap lets the other threads in: the line then
//!   moves on most acquisitions instead of a few.
//! - **Uncontended observed.** The bare lock, one thread, against the same
//!   lock with what any `tracing` layer metering it must do first: ask
//!   tracing for the dispatcher in effect, compare it with a remembered
//!   one, and count the acquisition at its site.
//!
//! - **Contended, the attempt before the wait.** lockmeter's observed
//!   path tries the lock once (`try_lock`) before it waits, to tell a
//!   NOWAIT acquisition from a contended one. parking_lot's `try_lock`
//!   reads the lock word before its compare-exchange, which its `lock()`
//!   does not: the bare Mutex against itself taken by `try_lock` then
//!   `lock`, and the same with `prefetchw` on the lock word first (what
//!   lockmeter does since session 18, `lockmeter/src/hint.rs`), in both
//!   mixes at 2 threads (the second only where the CPU has PREFETCHW).
//!   Where the two vCPUs are far apart (the row's line round trip,
//!   `transfer.rs`) the read costs a second transfer.
//! - **Unobserved `sync::RwLock` read.** Until session 20 lockmeter's
//!   std-API RwLock was built on parking_lot's raw RwLock: that lock's
//!   read against std's own (futex) RwLock's, with no lockmeter code, was
//!   the floor of that design under the unobserved row's 1.05, and is why
//!   it is now built on std's own lock (`lockmeter/src/sync/std_raw.rs`).
//!
//! - **Unobserved empty Condvar `notify_one`.** parking_lot's, nobody
//!   waiting (a load and a branch, about one cycle), against the same
//!   with what any wrapper that can be observed must do first when it is
//!   not: load its flag and branch on it. In the loop shape of the
//!   unobserved row it floors.
//! - **Unobserved RwLock write, the `placement` step's reload loop.**
//!   parking_lot's write against the same behind that flag's check (and
//!   the branch's outcome tested again before the unlock, as a guard
//!   tests its hold), at the 8 line offsets: what any wrapper that can be
//!   observed must do there.
//!
//! `docs/performance.md` ("What misses, and what it would take") reads
//! these rows.

use std::cell::Cell;
use std::hint::black_box;
use std::panic::Location;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};

use crate::bare::BareSpinLock;
use crate::contended::{lock_pair, Take, WORK_ROUNDS};
use crate::measure::Config;
use crate::placement::Placed;
use crate::report::{Goal, Row, Unit};

thread_local! {
    /// The one count: a const-initialised thread-local, so an increment is
    /// one `inc` of a `%fs`-relative word and nothing else.
    static COUNT: Cell<u64> = const { Cell::new(0) };
}

#[inline(always)]
fn count_one() {
    COUNT.with(|c| c.set(c.get().wrapping_add(1)));
}

/// A bare lock that counts each acquisition just before its attempt.
struct CountBefore<L>(L);

/// A bare lock that counts each acquisition while it holds the lock.
struct CountInside<L>(L);

macro_rules! counting_take {
    ($($lock:ty),*) => {$(
        impl Take for CountBefore<$lock> {
            #[inline]
            fn take(&self) {
                count_one();
                *self.0.lock() += 1;
            }
        }
        impl Take for CountInside<$lock> {
            #[inline]
            fn take(&self) {
                let mut g = self.0.lock();
                count_one();
                *g += 1;
            }
        }
    )*};
}

counting_take!(parking_lot::Mutex<u64>, BareSpinLock<u64>);

thread_local! {
    /// The one site a one-entry site cache remembers, and its count: the
    /// least an exact per-site count can be (a real program's sites need
    /// a table; this loop has one site, so a compare always hits).
    static SITE: Cell<(usize, u64)> = const { Cell::new((0, 0)) };
}

/// The least a `tracing` layer that meters locks does on every observed
/// acquisition at `site`: ask tracing for the dispatcher in effect on this
/// thread (the one call that honours scoped dispatchers and a layer's own
/// callbacks, `tracing::dispatcher::get_default`), compare it with one
/// remembered address, and count the acquisition in the thread's entry
/// for the site.
#[inline(always)]
fn observe_least(site: &'static Location<'static>, global: usize) {
    let ours =
        tracing::dispatcher::get_default(|d| d as *const tracing::Dispatch as usize == global);
    if ours {
        let at = site as *const Location<'static> as usize;
        SITE.with(|c| {
            let (cached, n) = c.get();
            c.set(match cached == at {
                true => (at, n + 1),
                false => (at, 1),
            });
        });
    }
}

/// The address of the dispatcher in effect now: the global one, since the
/// floor step runs after the layer was installed globally.
fn dispatcher_in_effect() -> usize {
    tracing::dispatcher::get_default(|d| d as *const tracing::Dispatch as usize)
}

/// The bare Mutex taken by one `try_lock` and, when that fails, `lock`:
/// the observed path's attempt with nothing recorded.
struct TryFirst(parking_lot::Mutex<u64>);

/// [`TryFirst`] with `prefetchw` on the lock word before the attempt.
struct PrefetchTryFirst(parking_lot::Mutex<u64>);

impl Take for TryFirst {
    #[inline]
    fn take(&self) {
        try_then_lock(&self.0);
    }
}

impl Take for PrefetchTryFirst {
    #[inline]
    fn take(&self) {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: this lock is only built where the CPU has PREFETCHW
        // (`has_prefetchw`), which never faults and writes no register,
        // memory or flag.
        unsafe {
            std::arch::asm!(
                "prefetchw [{0}]",
                in(reg) &self.0 as *const parking_lot::Mutex<u64>,
                options(nostack, preserves_flags, readonly)
            );
        }
        try_then_lock(&self.0);
    }
}

/// Whether [`PrefetchTryFirst`] can run: CPUID's PRFCHW bit, as
/// `lockmeter/src/hint.rs` asks it (which keeps its answer private).
fn has_prefetchw() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::__cpuid;
        __cpuid(0x8000_0000).eax >= 0x8000_0001 && __cpuid(0x8000_0001).ecx & (1 << 8) != 0
    }
    #[cfg(not(target_arch = "x86_64"))]
    false
}

#[inline(always)]
fn try_then_lock(m: &parking_lot::Mutex<u64>) {
    match m.try_lock() {
        Some(mut g) => *g += 1,
        None => *m.lock() += 1,
    }
}

/// The rows of [`TryFirst`] and [`PrefetchTryFirst`] against the bare
/// Mutex, 2 threads, `hammer` and `work`.
fn attempt_rows(cfg: &Config) -> Vec<Row> {
    let mut rows = Vec::new();
    for (mix, work) in [("hammer", 0), ("work", WORK_ROUNDS)] {
        let bare = || parking_lot::Mutex::new(0u64);
        let plain = lock_pair(cfg, 2, work, false, bare(), TryFirst(bare()));
        let mut pairs = vec![("try_first", "try_lock before lock", plain)];
        if has_prefetchw() {
            let fetched = lock_pair(cfg, 2, work, false, bare(), PrefetchTryFirst(bare()));
            pairs.push((
                "prefetchw_try_first",
                "prefetchw, then try_lock before lock",
                fetched,
            ));
        }
        for (key, what, pair) in pairs {
            rows.push(
                Row::new(
                    &format!("floor_mutex_2t_{mix}_{key}"),
                    &format!("floor: bare Mutex, 2 threads, {mix}, {what}"),
                    Unit::MopsPerSec,
                    Goal::Info,
                )
                .with_pair(pair),
            );
        }
    }
    if let Some(r) = rows.first_mut() {
        r.note = "no profiler: ratio = the bare Mutex taken as lockmeter's observed path \
                  takes it (one try_lock, then lock) / the bare Mutex's lock()"
            .to_string();
    }
    rows
}

/// One row: the bare lock against itself with the count `place`d.
fn row(name: &str, threads: usize, place: &str, pair: crate::measure::Pair) -> Row {
    Row::new(
        &format!(
            "floor_{}_{threads}t_hammer_one_count_{place}",
            name.to_lowercase()
        ),
        &format!("floor: bare {name}, {threads} threads, hammer, one thread-local count {place}"),
        Unit::MopsPerSec,
        Goal::Info,
    )
    .with_pair(pair)
}

/// The count before the attempt at 2 and 8 threads, and inside the
/// critical section at 2, for the bare Mutex (parking_lot's) and SpinLock.
pub fn rows(cfg: &Config) -> Vec<Row> {
    let mut rows = Vec::new();
    for threads in [2, 8] {
        let p = lock_pair(
            cfg,
            threads,
            0,
            false,
            parking_lot::Mutex::new(0),
            CountBefore(parking_lot::Mutex::new(0)),
        );
        rows.push(row("Mutex", threads, "before", p));
        let p = lock_pair(
            cfg,
            threads,
            0,
            false,
            BareSpinLock::new(0),
            CountBefore(BareSpinLock::new(0)),
        );
        rows.push(row("SpinLock", threads, "before", p));
    }
    let p = lock_pair(
        cfg,
        2,
        0,
        false,
        parking_lot::Mutex::new(0),
        CountInside(parking_lot::Mutex::new(0)),
    );
    rows.push(row("Mutex", 2, "inside", p));
    let p = lock_pair(
        cfg,
        2,
        0,
        false,
        BareSpinLock::new(0),
        CountInside(BareSpinLock::new(0)),
    );
    rows.push(row("SpinLock", 2, "inside", p));
    if let Some(r) = rows.first_mut() {
        r.note = "no profiler in these rows: ratio = bare lock with one thread-local \
                  increment per acquisition / bare lock; the floor under the contended \
                  hammer rows (docs/performance.md)"
            .to_string();
    }
    rows.extend(attempt_rows(cfg));
    rows.extend(observed_rows(cfg));
    rows.push(rwlock_read_row(cfg));
    rows.push(mutex_row(cfg));
    rows.push(notify_empty_row(cfg));
    rows.push(rwlock_write_flag_row(cfg));
    rows
}

/// The floor under the uncontended observed rows: the bare lock, one
/// thread, against the same lock with [`observe_least`] before each
/// attempt. `docs/performance.md` ("What misses") reads these rows.
fn observed_rows(cfg: &Config) -> Vec<Row> {
    let global = dispatcher_in_effect();
    let mutex = parking_lot::Mutex::new(0u64);
    let spin = BareSpinLock::new(0u64);
    let row = |name: &str, pair| {
        Row::new(
            &format!(
                "floor_{}_uncontended_dispatcher_and_count",
                name.to_lowercase()
            ),
            &format!("floor: bare {name}, uncontended, + tracing get_default and a site count"),
            Unit::NsPerOp,
            Goal::Info,
        )
        .with_pair(pair)
    };
    let m = crate::measure::ns_pair(
        cfg,
        |n| {
            for _ in 0..n {
                *black_box(&mutex).lock() += 1;
            }
        },
        |n| {
            for _ in 0..n {
                observe_least(Location::caller(), global);
                *black_box(&mutex).lock() += 1;
            }
        },
    );
    let s = crate::measure::ns_pair(
        cfg,
        |n| {
            for _ in 0..n {
                *black_box(&spin).lock() += 1;
            }
        },
        |n| {
            for _ in 0..n {
                observe_least(Location::caller(), global);
                *black_box(&spin).lock() += 1;
            }
        },
    );
    let mut rows = vec![row("Mutex", m), row("SpinLock", s)];
    rows[0].note = "no profiler: ratio = bare lock with the least an observing tracing layer \
                    does (get_default, one compare, one per-site count) / bare lock"
        .to_string();
    rows
}

/// parking_lot's RwLock read (what `lockmeter::sync::RwLock` was built
/// on until session 20) against std's, one thread, no profiler: the
/// floor that design put under the unobserved `sync::RwLock` read row.
fn rwlock_read_row(cfg: &Config) -> Row {
    let std_lock = std::sync::RwLock::new(1u64);
    let pl = parking_lot::RwLock::new(1u64);
    parking_lot_vs_std_row(
        cfg,
        ("rwlock_read", "RwLock read", ".read().unwrap()"),
        || black_box(*black_box(&std_lock).read().unwrap()),
        || black_box(*black_box(&pl).read()),
        "parking_lot::RwLock read / std::sync::RwLock read; the raw lock under \
         lockmeter::sync::RwLock until session 20 (now std's own)",
    )
}

/// parking_lot's Mutex (what `lockmeter::sync::Mutex` was built on until
/// session 34) against std's, one thread, no profiler: the floor that
/// design put under the unobserved `sync::Mutex` row. parking_lot's
/// one-byte state is released by a locked one-byte add, std's four-byte
/// one by a swap (`lockmeter::sync`'s `raw_mutex.rs`).
fn mutex_row(cfg: &Config) -> Row {
    let std_lock = std::sync::Mutex::new(1u64);
    let pl = parking_lot::Mutex::new(1u64);
    parking_lot_vs_std_row(
        cfg,
        ("mutex", "Mutex", ".lock().unwrap()"),
        || *black_box(&std_lock).lock().unwrap() += 1,
        || *black_box(&pl).lock() += 1,
        "parking_lot::Mutex / std::sync::Mutex; the raw lock under \
         lockmeter::sync::Mutex until session 34 (now std's algorithm)",
    )
}

/// One operation of std's lock (`std_op`) against the same of
/// parking_lot's (`pl_op`), one thread, no profiler; `(key, what, std's
/// call)` name the row, `ratio` says what its ratio is.
fn parking_lot_vs_std_row<A, B>(
    cfg: &Config,
    (key, what, call): (&str, &str, &str),
    std_op: impl Fn() -> A,
    pl_op: impl Fn() -> B,
    ratio: &str,
) -> Row {
    let pair = crate::measure::ns_pair(
        cfg,
        |n| {
            (0..n).for_each(|_| {
                black_box(std_op());
            })
        },
        |n| {
            (0..n).for_each(|_| {
                black_box(pl_op());
            })
        },
    );
    Row::new(
        &format!("floor_parking_lot_{key}_vs_std"),
        &format!("floor: parking_lot {what} against std's ({call})"),
        Unit::NsPerOp,
        Goal::Info,
    )
    .with_pair(pair)
    .note(format!("no profiler: ratio = {ratio}"))
}

/// The floor under the unobserved RwLock write rows of the `placement`
/// step's reload loop (`Shape::Reload`): parking_lot's RwLock write
/// against the same behind what any wrapper that can be observed must do
/// when it is not: a never-set flag's load and branch before the lock, and
/// the branch's outcome tested again before the unlock (lockmeter's guard
/// tests its hold there). The mean over the 8 line offsets, as those rows.
fn rwlock_write_flag_row(cfg: &Config) -> Row {
    use lock_api::RawRwLock as _;
    static OBSERVED: AtomicBool = AtomicBool::new(false);
    type Lock = parking_lot::RwLock<u64>;
    type Token = <parking_lot::RawRwLock as lock_api::RawRwLock>::ExclusiveGuard;
    /// Where an observed wrapper would go; never taken here.
    #[cold]
    #[inline(never)]
    fn observed(l: &Lock) -> (Token, bool) {
        // SAFETY: the raw lock is only taken and released in pairs here.
        (unsafe { l.raw() }.lock_exclusive(), true)
    }
    #[cold]
    #[inline(never)]
    fn release_observed(l: &Lock, token: Token) {
        // SAFETY: `token` is `observed`'s exclusive acquisition.
        unsafe { l.raw().unlock_exclusive(token) }
    }
    #[inline(always)]
    fn flagged_write(l: &Lock) {
        let (token, observing) = match OBSERVED.load(Relaxed) {
            true => observed(l),
            // SAFETY: as in `observed`.
            false => (unsafe { l.raw() }.lock_exclusive(), false),
        };
        // SAFETY: the lock is held exclusively.
        unsafe { *l.data_ptr() += 1 };
        match observing {
            true => release_observed(l, token),
            // SAFETY: `token` is this branch's exclusive acquisition.
            false => unsafe { l.raw().unlock_exclusive(token) },
        }
    }
    let pairs: Vec<crate::measure::Pair> = (0..8)
        .map(|k| {
            let (bare, flagged) = (
                Placed::new(8 * k, Lock::new(0)),
                Placed::new(8 * k, Lock::new(0)),
            );
            crate::measure::shape_pair!(
                cfg,
                crate::measure::Shape::Reload,
                (bare.get(), flagged.get()),
                l => *l.write() += 1,
                l => flagged_write(l)
            )
        })
        .collect();
    Row::new(
        "floor_rwlock_write_flag_reload",
        "floor: RwLock write, + an observed flag's check, reload loop, mean over the 8 line offsets",
        Unit::NsPerOp,
        Goal::Info,
    )
    .with_pair(crate::placement::mean_pair(&pairs))
    .note(
        "no profiler: ratio = parking_lot RwLock write behind one relaxed load of a flag and a \
         branch, and the branch's outcome tested again before the unlock / the bare write, \
         both in the placement step's reload loop, the mean over the 8 line offsets; the \
         floor under the unobserved RwLock write placement row",
    )
}

/// The floor under the unobserved empty-`notify_one` row: parking_lot's
/// Condvar with nobody waiting, against the same behind one never-set
/// flag's load and branch (what an unobserved lockmeter Condvar must do
/// before it), in the row's own loop shape (`tight_loops!`).
fn notify_empty_row(cfg: &Config) -> Row {
    static OBSERVED: AtomicBool = AtomicBool::new(false);
    /// Where an observed wrapper would go; never taken here.
    #[cold]
    #[inline(never)]
    fn observed(c: &parking_lot::Condvar) -> bool {
        c.notify_one()
    }
    let (bare, flagged) = (parking_lot::Condvar::new(), parking_lot::Condvar::new());
    let (b, f) = crate::measure::tight_loops!(
        (&bare, &flagged),
        c => black_box(c.notify_one()),
        c => black_box(match OBSERVED.load(Relaxed) {
            true => observed(c),
            false => c.notify_one(),
        })
    );
    Row::new(
        "floor_condvar_notify_empty_flag",
        "floor: Condvar notify_one, nobody waiting, + an observed flag's check",
        Unit::NsPerOp,
        Goal::Info,
    )
    .with_pair(crate::measure::ns_pair(cfg, b, f))
    .note(
        "no profiler: ratio = parking_lot Condvar notify_one behind one relaxed load of a \
         flag and a branch / the bare notify_one; the floor under the unobserved empty \
         notify row",
    )
}
