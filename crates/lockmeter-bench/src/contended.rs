//! Contended throughput: N threads hammering one lock, observed.
//!
//! Each thread loops `lock; counter += 1; unlock; local work` for a fixed
//! window, and the row reports total acquisitions per second. Two
//! workloads are measured:
//!
//! - `hammer`: no work outside the lock. The worst case for any profiler:
//!   the lock changes hands (or is re-taken) as fast as the hardware allows,
//!   so every nanosecond added inside the critical section shows.
//! - `work`: about 65 ns of thread-local work between acquisitions (a
//!   short, hot critical section, as in real code).
//! - `many sites`: the `work` mix on a lock taken at one hot call site and,
//!   one acquisition in 16, at 50 other sites in turn (see
//!   `build.rs`): the shape of real programs, where a lock is fought
//!   over at one place and taken in passing at many, and each thread's
//!   site lookup has more than the one site to find.

use std::hint::black_box;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Barrier;
use std::time::Instant;

use crate::bare::BareSpinLock;
use crate::least::Raw;
use crate::measure::{interleave_contended, Config, Pair};
use crate::own_con::{self, CountingTwin};
use crate::report::{Con, Goal, Row, Unit};

/// A value on cache lines of its own (128 bytes: adjacent-line prefetch
/// pairs lines). The locks and the loop's flags are placed this way so a
/// row measures the lock, not where ASLR happened to put it: unaligned, a
/// 64-byte lockmeter lock (72 before session 8) may span two lines and a flag may share a line
/// with a lock, which made the `work` rows of one binary come out at 0.4
/// or at 0.9 from one process to the next.
#[repr(align(128))]
pub(crate) struct Aligned<T>(pub(crate) T);

/// Rounds of the local-work loop between acquisitions in the `work` mix.
pub(crate) const WORK_ROUNDS: u64 = 64;

/// Thread-local work between acquisitions: a dependent arithmetic chain.
/// Never inlined: one copy of the loop, at one code alignment, serves the
/// bare and the instrumented runs (inlined copies ran at 18 or 28 Mops/s
/// depending on where each landed).
#[inline(never)]
pub(crate) fn local_work(rounds: u64, seed: u64) -> u64 {
    let mut x = seed | 1;
    for _ in 0..rounds {
        x = black_box(x.wrapping_mul(0x5851_F42D_4C95_7F2D).wrapping_add(1));
    }
    x
}

/// Taking a lock once at the caller's location (the instrumented locks'
/// `lock()` records the caller of `take`); implemented by the bare and
/// the instrumented locks alike.
pub trait Take: Sync {
    #[track_caller]
    fn take(&self);
}

macro_rules! take_by_lock {
    ($($lock:ty),*) => {$(
        impl Take for $lock {
            #[inline]
            fn take(&self) {
                *self.lock() += 1;
            }
        }
    )*};
}

take_by_lock!(
    parking_lot::Mutex<u64>,
    lockmeter::Mutex<u64>,
    BareSpinLock<u64>,
    lockmeter::SpinLock<u64>
);

include!(concat!(env!("OUT_DIR"), "/cold_sites.rs"));

/// One in this many acquisitions of the `many sites` mix is at a cold site.
const COLD_EVERY: u64 = 16;

/// The `many sites` mix's acquisition number `i` of thread `t`: the hot
/// site, or every [`COLD_EVERY`]th time the next cold one (the threads
/// half the cold sites apart).
#[inline]
pub(crate) fn hot_or_cold<L: Take>(lock: &L, t: usize, i: u64) {
    if i % COLD_EVERY == COLD_EVERY - 1 {
        take_cold(
            lock,
            (t * COLD_SITES / 2 + (i / COLD_EVERY) as usize) % COLD_SITES,
        );
    } else {
        lock.take();
    }
}

/// Million acquisitions per second of `op` run by `threads` threads for
/// the configured window, `work` rounds of local work between them. `op`
/// is given the thread's index and its acquisition count so far.
/// A least-features side's threads leave their CON counts behind
/// (`least::flush`; nothing on any other side).
fn throughput(cfg: &Config, threads: usize, work: u64, op: &(impl Fn(usize, u64) + Sync)) -> f64 {
    run(cfg, threads, work, op, &crate::least::flush).0
}

/// [`throughput`], and the acquisitions made; each thread calls `on_exit`
/// as it leaves its loop.
fn run(
    cfg: &Config,
    threads: usize,
    work: u64,
    op: &(impl Fn(usize, u64) + Sync),
    on_exit: &(impl Fn() + Sync),
) -> (f64, u64) {
    let stop = Box::new(Aligned(AtomicBool::new(false)));
    let total = Box::new(Aligned(AtomicU64::new(0)));
    let start = Barrier::new(threads + 1);
    let (stop, total) = (&stop.0, &total.0);
    let elapsed = std::thread::scope(|s| {
        for t in 0..threads {
            let start = &start;
            s.spawn(move || {
                start.wait();
                let mut n = 0u64;
                let mut x = t as u64;
                while !stop.load(Ordering::Relaxed) {
                    for k in 0..16 {
                        op(t, n + k);
                        x = local_work(work, x);
                    }
                    n += 16;
                }
                black_box(x);
                on_exit();
                total.fetch_add(n, Ordering::Relaxed);
            });
        }
        start.wait();
        let t0 = Instant::now();
        std::thread::sleep(cfg.window);
        stop.store(true, Ordering::Relaxed);
        t0.elapsed()
    });
    let ops = total.load(Ordering::Relaxed);
    (ops as f64 / elapsed.as_secs_f64() / 1e6, ops)
}

/// (steal, total) jiffies of all CPUs from /proc/stat: time the hypervisor
/// ran something else while this VM wanted to run.
fn cpu_steal() -> Option<(u64, u64)> {
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
    parse_steal(&stat)
}

/// The (steal, total) of the aggregate `cpu` line of a /proc/stat text.
fn parse_steal(stat: &str) -> Option<(u64, u64)> {
    let line = stat.lines().find(|l| l.starts_with("cpu "))?;
    let fields: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .map(|f| f.parse().ok())
        .collect::<Option<_>>()?;
    // user nice system idle iowait irq softirq steal [guest guest_nice]
    let steal = *fields.get(7)?;
    let total = fields.iter().take(8).sum();
    Some((steal, total))
}

/// The interleaved throughput of `bare` and `inst` on `threads` threads,
/// each a loop of its own (generic, so neither half pays a virtual call).
/// With a `twin`, the bare lock's own contention is counted too: before
/// each repetition's bare run, the twin runs the same loop (its
/// throughput unused) and its failed attempts are counted ([`own_con`]);
/// then the CON % it found is returned.
fn pair(
    cfg: &Config,
    threads: usize,
    work: u64,
    bare: &(impl Fn(usize, u64) + Sync),
    inst: &(impl Fn(usize, u64) + Sync),
    twin: Option<&(impl Fn(usize, u64) + Sync)>,
) -> (Pair, Option<f64>) {
    own_con::take_failed();
    let mut twin_ops = 0;
    let pair = interleave_contended(
        cfg.contended_reps,
        || {
            if let Some(twin) = twin {
                twin_ops += run(cfg, threads, work, twin, &own_con::flush).1;
            }
            throughput(cfg, threads, work, bare)
        },
        || throughput(cfg, threads, work, inst),
    );
    let con = twin.map(|_| lockmeter_model::percent(own_con::take_failed(), twin_ops));
    (pair, con)
}

/// (acquisitions, contended) the layer has counted for class `id` so far.
fn counted(handle: &lockmeter::Handle, id: &str) -> (u64, u64) {
    handle
        .cumulative()
        .lock(id)
        .map_or((0, 0), |l| (l.total.acquisitions, l.total.contended))
}

/// The share of the instrumented runs' acquisitions that had to wait, as
/// the layer itself counted them, beside the bare lock's own (`bare_pct`,
/// [`own_con`]); the note says both.
fn contention(
    handle: &lockmeter::Handle,
    id: &str,
    before: (u64, u64),
    bare_pct: f64,
) -> (Con, String) {
    let (a, c) = counted(handle, id);
    let (a, c) = (a.saturating_sub(before.0), c.saturating_sub(before.1));
    let con = Con {
        observed_pct: lockmeter_model::percent(c, a),
        bare_pct,
    };
    let note = format!(
        "CON {:.1}% of {a} instrumented acquisitions, the bare lock's own {:.2}% \
         (a twin taken by try_lock, then lock)",
        con.observed_pct, con.bare_pct
    );
    (con, note)
}

/// The classes of the instrumented locks of these rows.
const MUTEX: &str = "bench.contended.mutex";
const SPINLOCK: &str = "bench.contended.spinlock";
const MIXED_MUTEX: &str = "bench.contended.many_sites.mutex";
const MIXED_SPINLOCK: &str = "bench.contended.many_sites.spinlock";
const UNALIGNED_MUTEX: &str = "bench.contended.unaligned.mutex";
const UNALIGNED_SPINLOCK: &str = "bench.contended.unaligned.spinlock";

/// Contention at the hot site (the one with most acquisitions) and at
/// all the others, as the layer counted it for class `id`.
fn sites_note(handle: &lockmeter::Handle, id: &str) -> String {
    let snap = handle.cumulative();
    let Some(lock) = snap.lock(id) else {
        return "not recorded".to_string();
    };
    let hot = lock.sites.iter().max_by_key(|s| s.stats.acquisitions);
    let (mut a, mut c, mut n) = (0, 0, 0);
    for s in &lock.sites {
        if hot.is_some_and(|h| std::ptr::eq(h, s)) {
            continue;
        }
        a += s.stats.acquisitions;
        c += s.stats.contended;
        n += 1;
    }
    let (ha, hc) = hot.map_or((0, 0), |h| (h.stats.acquisitions, h.stats.contended));
    format!(
        "CON {:.1}% at the hot site ({ha} acquisitions), {:.1}% at {n} other sites ({a})",
        lockmeter_model::percent(hc, ha),
        lockmeter_model::percent(c, a)
    )
}

/// One row: `measure` runs the interleaved pair; the note says how much
/// the instrumented runs contended, as lockmeter counted it.
fn row(
    handle: &lockmeter::Handle,
    class: &str,
    name: &str,
    threads: usize,
    mix: &str,
    goal: Goal,
    measure: impl FnOnce() -> (Pair, f64),
) -> Row {
    let before = counted(handle, class);
    let (pair, bare_pct) = measure();
    let (con, note) = contention(handle, class, before, bare_pct);
    Row::new(
        &format!(
            "contended_observed_{}_{threads}t_{}",
            name.to_lowercase(),
            mix.replace(", ", "_").replace(' ', "_")
        ),
        &format!("contended observed, {name}, {threads} threads, {mix}"),
        Unit::MopsPerSec,
        goal,
    )
    .with_pair(pair)
    .with_con(con)
    .note(note)
}

/// The interleaved pair of `bare` and `inst` (each on its own aligned
/// lines) in one mix: one site, or [`hot_or_cold`].
pub(crate) fn lock_pair<B: Take, I: Take>(
    cfg: &Config,
    threads: usize,
    work: u64,
    many_sites: bool,
    bare: B,
    inst: I,
) -> Pair {
    mix_pair(cfg, (threads, work, many_sites), bare, inst, None::<B>).0
}

/// [`lock_pair`] of a bare lock that can be tried, and the bare lock's
/// own CON % in the mix, counted on `twin` (another instance).
fn counted_pair<B: Take + Raw, I: Take>(
    cfg: &Config,
    (threads, work, many_sites): (usize, u64, bool),
    (bare, twin): (B, B),
    inst: I,
) -> (Pair, f64) {
    let twin = Some(CountingTwin(twin));
    let (pair, con) = mix_pair(cfg, (threads, work, many_sites), bare, inst, twin);
    (pair, con.unwrap_or(f64::NAN))
}

/// The pair of [`lock_pair`] on `threads` threads with `work` rounds
/// between acquisitions, at one site or many; with a `twin`, its CON % too
/// (see [`pair`]).
fn mix_pair<B: Take, I: Take, W: Take>(
    cfg: &Config,
    (threads, work, many_sites): (usize, u64, bool),
    bare: B,
    inst: I,
    twin: Option<W>,
) -> (Pair, Option<f64>) {
    let (bare, inst) = (Box::new(Aligned(bare)), Box::new(Aligned(inst)));
    let twin = twin.map(|t| Box::new(Aligned(t)));
    let (bare, inst, twin) = (&bare.0, &inst.0, twin.as_ref().map(|t| &t.0));
    if many_sites {
        let twin = twin.map(|w| move |t, i| hot_or_cold(w, t, i));
        pair(
            cfg,
            threads,
            work,
            &|t, i| hot_or_cold(bare, t, i),
            &|t, i| hot_or_cold(inst, t, i),
            twin.as_ref(),
        )
    } else {
        let twin = twin.map(|w| move |_, _| w.take());
        pair(
            cfg,
            threads,
            work,
            &|_, _| bare.take(),
            &|_, _| inst.take(),
            twin.as_ref(),
        )
    }
}

/// Two bare Mutexes: the bare side and its counted twin.
fn mutexes() -> (parking_lot::Mutex<u64>, parking_lot::Mutex<u64>) {
    (parking_lot::Mutex::new(0), parking_lot::Mutex::new(0))
}

/// Two bare SpinLocks: the bare side and its counted twin.
fn spinlocks() -> (BareSpinLock<u64>, BareSpinLock<u64>) {
    (BareSpinLock::new(0), BareSpinLock::new(0))
}

/// The contended `hammer` goal: throughput ratio to the bare lock.
const HAMMER_GOAL: Goal = Goal::RatioAtLeast(0.60);
/// The contended `work` goal.
const WORK_GOAL: Goal = Goal::RatioAtLeast(0.90);

/// Mutex and SpinLock rows at 2 and 8 threads, hammer and work mixes, and
/// the `many sites` mix at 2 threads.
/// Needs the layer whose `handle` is given installed as the global default.
pub fn rows(cfg: &Config, handle: &lockmeter::Handle) -> Vec<Row> {
    let steal_before = cpu_steal();
    let mut rows = Vec::new();
    for (mix, work, goal) in [("hammer", 0, HAMMER_GOAL), ("work", WORK_ROUNDS, WORK_GOAL)] {
        for threads in [2, 8] {
            let measure = || {
                let inst = lockmeter::Mutex::named(MUTEX, 0u64);
                counted_pair(cfg, (threads, work, false), mutexes(), inst)
            };
            rows.push(row(handle, MUTEX, "Mutex", threads, mix, goal, measure));
            let measure = || {
                let inst = lockmeter::SpinLock::named(SPINLOCK, 0u64);
                counted_pair(cfg, (threads, work, false), spinlocks(), inst)
            };
            rows.push(row(
                handle, SPINLOCK, "SpinLock", threads, mix, goal, measure,
            ));
        }
    }
    let mix = "work, many sites";
    let measure = || {
        let inst = lockmeter::Mutex::named(MIXED_MUTEX, 0u64);
        counted_pair(cfg, (2, WORK_ROUNDS, true), mutexes(), inst)
    };
    let r = row(handle, MIXED_MUTEX, "Mutex", 2, mix, WORK_GOAL, measure);
    let note = format!("{}; {}", r.note, sites_note(handle, MIXED_MUTEX));
    rows.push(r.note(note));
    let measure = || {
        let inst = lockmeter::SpinLock::named(MIXED_SPINLOCK, 0u64);
        counted_pair(cfg, (2, WORK_ROUNDS, true), spinlocks(), inst)
    };
    let r = row(
        handle,
        MIXED_SPINLOCK,
        "SpinLock",
        2,
        mix,
        WORK_GOAL,
        measure,
    );
    let note = format!("{}; {}", r.note, sites_note(handle, MIXED_SPINLOCK));
    rows.push(r.note(note));
    rows.extend(unaligned_rows(cfg, handle));
    rows.extend(null_rows(cfg));
    let steal = match (steal_before, cpu_steal()) {
        (Some((s0, t0)), Some((s1, t1))) if t1 > t0 => format!(
            "; hypervisor steal during these rows: {:.1}% of CPU time",
            lockmeter_model::percent(s1.saturating_sub(s0), t1 - t0)
        ),
        _ => String::new(),
    };
    if let Some(r) = rows.first_mut() {
        r.note = format!(
            "{}; figures are total acquisitions/s of all threads; ratio = instrumented/bare; \
             'work' adds {WORK_ROUNDS} dependent multiply-adds between acquisitions{steal}",
            r.note
        );
    }
    rows
}

/// The bare lock against itself (two instances, each in a loop of its
/// own), at 2 threads in both mixes: how far apart two runs of the same
/// code fall in this bench, at each placement of the vCPUs. A real row's
/// ratio means something only where it lies outside this one's spread.
fn null_rows(cfg: &Config) -> Vec<Row> {
    let mut rows = Vec::new();
    for (mix, work) in [("hammer", 0), ("work", WORK_ROUNDS)] {
        let mutex = lock_pair(
            cfg,
            2,
            work,
            false,
            parking_lot::Mutex::new(0u64),
            parking_lot::Mutex::new(0u64),
        );
        let spin = lock_pair(
            cfg,
            2,
            work,
            false,
            BareSpinLock::new(0u64),
            BareSpinLock::new(0u64),
        );
        for (name, pair) in [("Mutex", mutex), ("SpinLock", spin)] {
            rows.push(
                Row::new(
                    &format!("contended_null_{}_2t_{mix}", name.to_lowercase()),
                    &format!("contended, bare {name} against itself, 2 threads, {mix}"),
                    Unit::MopsPerSec,
                    Goal::Info,
                )
                .with_pair(pair)
                .note("no profiler: both sides are the bare lock; ratio = second / first"),
            );
        }
    }
    rows
}

/// The line offset of [`unaligned_rows`]: a lock inside a struct, not on
/// a line of its own.
const UNALIGNED_AT: usize = 24;

/// The 2-thread `work` rows with both locks at [`UNALIGNED_AT`] bytes
/// into a line instead of at its start: where a hand-off may move two
/// lines, depending on where the lock word, the notes and the data fall.
fn unaligned_rows(cfg: &Config, handle: &lockmeter::Handle) -> Vec<Row> {
    use crate::placement::Placed;
    let mix = &format!("work, at line offset {UNALIGNED_AT}");
    let measure = || {
        let inst = Placed::new(UNALIGNED_AT, lockmeter::Mutex::named(UNALIGNED_MUTEX, 0u64));
        let placed = || Placed::new(UNALIGNED_AT, parking_lot::Mutex::new(0u64));
        counted_pair(cfg, (2, WORK_ROUNDS, false), (placed(), placed()), inst)
    };
    let mutex = row(handle, UNALIGNED_MUTEX, "Mutex", 2, mix, WORK_GOAL, measure);
    let measure = || {
        let inst = Placed::new(
            UNALIGNED_AT,
            lockmeter::SpinLock::named(UNALIGNED_SPINLOCK, 0u64),
        );
        let placed = || Placed::new(UNALIGNED_AT, BareSpinLock::new(0u64));
        counted_pair(cfg, (2, WORK_ROUNDS, false), (placed(), placed()), inst)
    };
    let spinlock = row(
        handle,
        UNALIGNED_SPINLOCK,
        "SpinLock",
        2,
        mix,
        WORK_GOAL,
        measure,
    );
    vec![mutex, spinlock]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_steal_from_the_cpu_line() {
        let stat = "cpu  10 0 5 80 1 0 0 4 0 0\ncpu0 5 0 2 40 0 0 0 2 0 0\n";
        assert_eq!(parse_steal(stat), Some((4, 100)));
        assert_eq!(parse_steal("cpu  1 2 3\n"), None);
        assert_eq!(parse_steal("intr 5\n"), None);
    }

    /// A counted pair runs the twin in every repetition and gives its CON
    /// as a percentage: 4 threads hammering on fewer CPUs are preempted
    /// holding it, so some attempts fail, but far from all.
    #[test]
    fn a_counted_pair_reports_the_bare_locks_own_contention() {
        let _one = own_con::COUNTING.lock().unwrap_or_else(|e| e.into_inner());
        let cfg = Config {
            contended_reps: 2,
            window: std::time::Duration::from_millis(20),
            ..Config::new(true)
        };
        let (pair, con) = counted_pair(&cfg, (4, 0, false), mutexes(), parking_lot::Mutex::new(0));
        assert!(pair.bare > 0.0 && pair.instrumented > 0.0, "{pair:?}");
        assert!(con > 0.0 && con < 100.0, "CON {con}");
        // Nothing is left over for the next row to count.
        assert_eq!(own_con::take_failed(), 0);
    }
}
