//! Interleaved repetitions and medians: how every figure is taken.
//!
//! The machine is shared and has two cores, so a single long run of bare
//! followed by a single long run of instrumented would mostly measure
//! whatever else ran meanwhile. Instead each pair is measured as
//! `bare, instrumented, bare, instrumented, ...`, each repetition a short
//! batch, and the medians are reported. The ratio is the median of the
//! per-repetition ratios, so drift that hits both halves of a pair cancels,
//! and the spread of those ratios ([`Spread`]) says whether drift that hit
//! one half only was small enough to judge the row (see `report::Verdict`).

use std::hint::black_box;
use std::time::{Duration, Instant};

use crate::{host, transfer};

/// How long and how often to measure.
#[derive(Debug, Clone, Copy)]
pub struct Config {
    /// Interleaved repetitions per pair.
    pub reps: usize,
    /// Wall time of one timed batch of uncontended operations.
    pub batch: Duration,
    /// Wall time of one contended throughput run.
    pub window: Duration,
    /// Repetitions of each contended pair.
    pub contended_reps: usize,
    /// Wake-ups timed per queue length.
    pub wakes: usize,
    /// Whether this is the `--quick` smoke run.
    pub quick: bool,
    /// What the single-thread batches are timed with.
    pub timer: Timer,
}

/// What a timed batch's duration is read from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Timer {
    /// Wall time: for rows that sleep or wait for another thread.
    Wall,
    /// The calling thread's CPU time (`CLOCK_THREAD_CPUTIME_ID`): the time
    /// the thread spent preempted by other processes does not count. For
    /// single-thread rows that never block, on a machine shared with
    /// other work; falls back to wall time where the clock is missing.
    ThreadCpu,
}

impl Timer {
    /// Nanoseconds on this timer's clock since an arbitrary origin.
    fn now_ns(self, origin: Instant) -> u128 {
        match self {
            Timer::Wall => origin.elapsed().as_nanos(),
            Timer::ThreadCpu => thread_cpu_ns().unwrap_or_else(|| origin.elapsed().as_nanos()),
        }
    }
}

/// The calling thread's CPU time in nanoseconds.
fn thread_cpu_ns() -> Option<u128> {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec for the call's duration.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    (rc == 0).then(|| ts.tv_sec as u128 * 1_000_000_000 + ts.tv_nsec as u128)
}

impl Config {
    /// The settings for a full (`quick = false`) or smoke run.
    pub fn new(quick: bool) -> Config {
        if quick {
            Config {
                reps: 5,
                batch: Duration::from_millis(8),
                window: Duration::from_millis(40),
                contended_reps: 5,
                wakes: 300,
                quick,
                timer: Timer::ThreadCpu,
            }
        } else {
            Config {
                reps: 15,
                batch: Duration::from_millis(25),
                window: Duration::from_millis(60),
                contended_reps: 15,
                wakes: 2000,
                quick,
                timer: Timer::ThreadCpu,
            }
        }
    }
}

/// Medians of one interleaved pair.
#[derive(Debug, Clone, Copy)]
pub struct Pair {
    pub bare: f64,
    pub instrumented: f64,
    /// Median of the per-repetition ratios instrumented / bare.
    pub ratio: f64,
    /// How far apart the per-repetition ratios are.
    pub spread: Spread,
    /// Median ns per round of the host probe run after each repetition
    /// (NaN if none ran): whether the core was shared (see `host`).
    pub host_probe: f64,
    /// For contended pairs, the cache-line round trips between the CPUs
    /// the repetitions ran at (see `transfer`).
    pub placements: Option<Placements>,
}

/// The line round trips (`transfer::round_trip_ns`) a contended pair was
/// measured at, one before each repetition and one after the last.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Placements {
    pub min_ns: f64,
    pub max_ns: f64,
    /// When the round trip moved by [`transfer::MOVED`] or more during the
    /// row: its pairs on either side of the move, judged apart.
    pub split: Option<Split>,
}

/// A row's pairs split by placement: those whose round trips before and
/// after both lie under `at_ns` (near) and those whose both lie above
/// (far); a pair with its two readings on either side is in neither.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Split {
    pub at_ns: f64,
    /// Median pairwise ratio and number of pairs at the near placement.
    pub near: (f64, usize),
    /// The same at the far placement.
    pub far: (f64, usize),
}

impl Placements {
    /// The placements of pairs whose ratios are `ratios[k]`, with round
    /// trip `trips[k]` before pair `k` and `trips[k + 1]` after it (NaN
    /// where none could be taken). `None` without a finite reading.
    pub fn of(ratios: &[f64], trips: &[f64]) -> Option<Placements> {
        let finite: Vec<f64> = trips.iter().copied().filter(|t| t.is_finite()).collect();
        let min_ns = finite.iter().copied().reduce(f64::min)?;
        let max_ns = finite.iter().copied().reduce(f64::max)?;
        let split = (max_ns >= min_ns * transfer::MOVED).then(|| {
            // The geometric mean: as far in ratio from either end.
            let at_ns = (min_ns * max_ns).sqrt();
            let side = |near: bool| {
                let of_side: Vec<f64> = ratios
                    .iter()
                    .enumerate()
                    .filter(|&(k, _)| {
                        let (a, b) = (trips[k], trips.get(k + 1).copied().unwrap_or(f64::NAN));
                        a.is_finite() && b.is_finite() && (a < at_ns) == near && (b < at_ns) == near
                    })
                    .map(|(_, &r)| r)
                    .collect();
                (median(&of_side), of_side.len())
            };
            Split {
                at_ns,
                near: side(true),
                far: side(false),
            }
        });
        Some(Placements {
            min_ns,
            max_ns,
            split,
        })
    }
}

impl Pair {
    /// The medians and ratio spread of runs measured pairwise:
    /// `bare[k]` and `instrumented[k]` one after the other.
    pub fn from_runs(bare: &[f64], instrumented: &[f64]) -> Pair {
        let ratios = pairwise(bare, instrumented);
        Pair {
            bare: median(bare),
            instrumented: median(instrumented),
            ratio: median(&ratios),
            spread: Spread::of(&ratios),
            host_probe: f64::NAN,
            placements: None,
        }
    }
}

/// The ratio of each pair, `instrumented[k] / bare[k]`.
fn pairwise(bare: &[f64], instrumented: &[f64]) -> Vec<f64> {
    bare.iter().zip(instrumented).map(|(b, i)| i / b).collect()
}

/// The spread of a row's pairwise ratios: quartiles and extremes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Spread {
    /// First and third quartile (linear interpolation between order
    /// statistics; with 5 pairs, the 2nd and 4th smallest).
    pub q1: f64,
    pub q3: f64,
    pub min: f64,
    pub max: f64,
    /// How many finite pairwise ratios there were.
    pub pairs: usize,
}

impl Spread {
    /// The spread of `xs` (NaNs and infinities left out).
    pub fn of(xs: &[f64]) -> Spread {
        let mut v: Vec<f64> = xs.iter().copied().filter(|x| x.is_finite()).collect();
        v.sort_by(f64::total_cmp);
        Spread {
            q1: quantile(&v, 0.25),
            q3: quantile(&v, 0.75),
            min: v.first().copied().unwrap_or(f64::NAN),
            max: v.last().copied().unwrap_or(f64::NAN),
            pairs: v.len(),
        }
    }

    /// The interquartile range relative to `median`.
    pub fn relative_iqr(&self, median: f64) -> f64 {
        (self.q3 - self.q1) / median.abs()
    }
}

/// The `q` quantile of sorted `v`, interpolated; NaN if empty.
fn quantile(v: &[f64], q: f64) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    let at = q * (v.len() - 1) as f64;
    let (lo, hi) = (at.floor() as usize, at.ceil() as usize);
    v[lo] + (v[hi] - v[lo]) * (at - lo as f64)
}

/// A distribution-free confidence interval of the median of `xs` at
/// `level` (e.g. 0.90): the order statistics `k` and `n + 1 - k` for the
/// largest `k` whose binomial coverage still reaches `level`. Unlike the
/// IQR it narrows as the runs grow, so more rounds can resolve a goal a
/// noisy row's spread hides. `None` for fewer than two finite values.
pub fn median_ci(xs: &[f64], level: f64) -> Option<(f64, f64)> {
    let mut v: Vec<f64> = xs.iter().copied().filter(|x| x.is_finite()).collect();
    if v.len() < 2 {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    // P(fewer than k of n fall below the median) for k = 0.., in f64: n
    // is a few dozen rounds, far from overflow.
    let half = 0.5f64.powi(n as i32);
    let (mut below, mut choose, mut k) = (0.0, 1.0, 0usize);
    while k < n / 2 {
        below += choose * half;
        if 1.0 - 2.0 * below < level {
            break;
        }
        choose = choose * (n - k) as f64 / (k + 1) as f64;
        k += 1;
    }
    let k = k.max(1);
    Some((v[k - 1], v[n - k]))
}

/// The median of `xs` (mean of the middle two for an even count); NaN if empty.
pub fn median(xs: &[f64]) -> f64 {
    let mut v: Vec<f64> = xs.iter().copied().filter(|x| !x.is_nan()).collect();
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(f64::total_cmp);
    let mid = v.len() / 2;
    if v.len() % 2 == 1 {
        v[mid]
    } else {
        (v[mid - 1] + v[mid]) / 2.0
    }
}

/// Runs `bare` and `instrumented` alternately `reps` times; each returns
/// one figure (a time or a rate). Each repetition ends with a host probe.
pub fn interleave(
    reps: usize,
    bare: impl FnMut() -> f64,
    instrumented: impl FnMut() -> f64,
) -> Pair {
    let (b, i, probes) = alternate(reps, bare, instrumented);
    Pair {
        host_probe: median(&probes),
        ..Pair::from_runs(&b, &i)
    }
}

/// Like [`interleave`], for threads contending across the two CPUs: a
/// cache-line round trip is taken before each repetition and after the
/// last, and the pair says at which placements it ran ([`Placements`]).
pub fn interleave_contended(
    reps: usize,
    mut bare: impl FnMut() -> f64,
    instrumented: impl FnMut() -> f64,
) -> Pair {
    let mut trips = Vec::with_capacity(reps + 1);
    let (b, i, probes) = alternate(
        reps,
        || {
            trips.push(transfer::round_trip_ns().unwrap_or(f64::NAN));
            bare()
        },
        instrumented,
    );
    trips.push(transfer::round_trip_ns().unwrap_or(f64::NAN));
    Pair {
        host_probe: median(&probes),
        placements: Placements::of(&pairwise(&b, &i), &trips),
        ..Pair::from_runs(&b, &i)
    }
}

/// The runs of `bare` and `instrumented`, `reps` of each alternately, and
/// the host probe after each repetition.
fn alternate(
    reps: usize,
    mut bare: impl FnMut() -> f64,
    mut instrumented: impl FnMut() -> f64,
) -> (Vec<f64>, Vec<f64>, Vec<f64>) {
    let mut b = Vec::with_capacity(reps);
    let mut i = Vec::with_capacity(reps);
    let mut probes = Vec::with_capacity(reps);
    for _ in 0..reps.max(1) {
        b.push(bare());
        i.push(instrumented());
        probes.push(host::probe());
    }
    (b, i, probes)
}

/// Nanoseconds per operation of `run(n)`, which performs `n` operations,
/// on `timer`'s clock.
#[inline(never)]
pub fn ns_per_op<F: FnMut(u64) + ?Sized>(timer: Timer, iters: u64, run: &mut F) -> f64 {
    let origin = Instant::now();
    let t0 = timer.now_ns(origin);
    run(iters);
    let t1 = timer.now_ns(origin);
    t1.saturating_sub(t0) as f64 / iters as f64
}

/// How many operations of `run` fill about `target` of wall time.
pub fn calibrate(target: Duration, run: &mut impl FnMut(u64)) -> u64 {
    let mut n = 1_000u64;
    loop {
        let t = Instant::now();
        run(n);
        let took = t.elapsed();
        if took >= target / 8 || n >= 1 << 34 {
            let per = took.as_secs_f64() / n as f64;
            return ((target.as_secs_f64() / per.max(1e-12)) as u64).clamp(1_000, 1 << 36);
        }
        n *= 2;
    }
}

/// The loop with the operation removed: the "bare" of a component row.
pub fn empty_loop(n: u64) {
    for i in 0..n {
        black_box(i);
    }
}

/// Interleaved ns/op of two operation loops.
pub fn ns_pair(cfg: &Config, mut bare: impl FnMut(u64), mut instrumented: impl FnMut(u64)) -> Pair {
    // Size batches by the slower side, so that neither overruns the budget.
    let iters = calibrate(cfg.batch, &mut bare).min(calibrate(cfg.batch, &mut instrumented));
    // Warm both up once: first-use work (a new site's entry) is not steady state.
    let timer = cfg.timer;
    ns_per_op(timer, iters / 10 + 1, &mut bare);
    ns_per_op(timer, iters / 10 + 1, &mut instrumented);
    interleave(
        cfg.reps,
        || ns_per_op(timer, iters, &mut bare),
        || ns_per_op(timer, iters, &mut instrumented),
    )
}

/// The loop an uncontended row runs.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// Each iteration reloads the lock's address through `black_box`,
    /// which puts a store-forwarded load in front of each locked
    /// instruction on both sides and hides part of what the bookkeeping
    /// adds.
    Reload,
    /// The uncontended rows' own loop (`uncontended.rs`, `same_op!`): the
    /// address hidden once, before the loop, so it can stay in a register
    /// if the lock's code leaves one free.
    Tight,
}

impl Shape {
    /// What a row's key and label add for this shape (nothing for
    /// `Reload`, the older rows' loop).
    pub fn names(self) -> (&'static str, &'static str) {
        match self {
            Shape::Reload => ("", ""),
            Shape::Tight => ("_tight", ", the main rows' loop"),
        }
    }
}

/// The two loops of a tight pair: `$op_bare` on `$bare` and `$op_inst` on
/// `$inst`, each written out in a loop of its own that owns the lock's
/// address, hidden from the optimizer once, before the loop.
///
/// Owned (`move`), not captured by reference: by reference, the address
/// was reloaded from the caller's frame on every iteration of a loop whose
/// lock code left no register free, a dependent load in front of each
/// attempt that a loop over a plain `&Mutex` does not have.
macro_rules! tight_loops {
    (($bare:expr, $inst:expr), $b:ident => $op_bare:expr, $i:ident => $op_inst:expr) => {{
        let (bare, inst) = (::std::hint::black_box($bare), ::std::hint::black_box($inst));
        (
            move |n: u64| {
                for _ in 0..n {
                    let $b = bare;
                    $op_bare;
                }
            },
            move |n: u64| {
                for _ in 0..n {
                    let $i = inst;
                    $op_inst;
                }
            },
        )
    }};
}
pub(crate) use tight_loops;

/// Interleaved ns/op of `$op_bare` on `$bare` and `$op_inst` on `$inst`,
/// each half a loop of its own in the loop of `$shape` ([`Shape`]).
///
/// A macro, so that each loop has the operation written out in it: passed
/// as closures, an operation called from more than one loop became one
/// shared out-of-line function once its body was large (an observed
/// lock's is), a call per iteration that the bare side did not pay.
macro_rules! shape_pair {
    ($cfg:expr, $shape:expr, ($bare:expr, $inst:expr),
     $b:ident => $op_bare:expr, $i:ident => $op_inst:expr) => {{
        let (bare, inst) = ($bare, $inst);
        match $shape {
            $crate::measure::Shape::Reload => $crate::measure::ns_pair(
                $cfg,
                |n| {
                    for _ in 0..n {
                        let $b = ::std::hint::black_box(bare);
                        $op_bare;
                    }
                },
                |n| {
                    for _ in 0..n {
                        let $i = ::std::hint::black_box(inst);
                        $op_inst;
                    }
                },
            ),
            $crate::measure::Shape::Tight => {
                let (b, i) = $crate::measure::tight_loops!((bare, inst), $b => $op_bare, $i => $op_inst);
                $crate::measure::ns_pair($cfg, b, i)
            }
        }
    }};
}
pub(crate) use shape_pair;

/// Pins the calling thread to `cpu`; returns whether it worked.
pub fn pin_to(cpu: usize) -> bool {
    // SAFETY: `set` is a plain bit set that sched_setaffinity only reads,
    // and pid 0 means the calling thread.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) == 0
    }
}

/// The calling thread pinned to the CPU it is running on, until this is
/// dropped, when its affinity is put back as it was. For a pair whose two
/// sides take turns on two threads (`uncontended::Scoped`): the other
/// thread pins itself to [`PinnedHere::cpu`], so both sides run on the CPU
/// the host probe reads, and a busy sibling vCPU cannot slow one side
/// unseen.
pub struct PinnedHere {
    cpu: usize,
    before: libc::cpu_set_t,
}

impl PinnedHere {
    /// `None` where the affinity cannot be read or set.
    pub fn new() -> Option<PinnedHere> {
        // SAFETY: `before` is a plain bit set sched_getaffinity fills; pid 0
        // means the calling thread.
        let before = unsafe {
            let mut before: libc::cpu_set_t = std::mem::zeroed();
            let size = std::mem::size_of::<libc::cpu_set_t>();
            (libc::sched_getaffinity(0, size, &mut before) == 0).then_some(before)?
        };
        // SAFETY: no arguments; -1 on failure.
        let cpu = usize::try_from(unsafe { libc::sched_getcpu() }).ok()?;
        pin_to(cpu).then_some(PinnedHere { cpu, before })
    }

    /// The CPU the calling thread is pinned to.
    pub fn cpu(&self) -> usize {
        self.cpu
    }
}

impl Drop for PinnedHere {
    fn drop(&mut self) {
        // SAFETY: as in `pin_to`; `before` is the set read in `new`.
        unsafe {
            libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &self.before);
        }
    }
}

/// Lets the calling thread run on every one of `cpus` CPUs again.
pub fn unpin(cpus: usize) {
    // SAFETY: as in `pin_to`.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        for cpu in 0..cpus {
            libc::CPU_SET(cpu, &mut set);
        }
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The calling thread's CPUs, as a list.
    fn affinity() -> Vec<usize> {
        // SAFETY: as in `PinnedHere::new`.
        let set = unsafe {
            let mut set: libc::cpu_set_t = std::mem::zeroed();
            assert_eq!(
                libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set),
                0
            );
            set
        };
        // SAFETY: reads a bit of a set sched_getaffinity filled.
        (0..libc::CPU_SETSIZE as usize)
            .filter(|&c| unsafe { libc::CPU_ISSET(c, &set) })
            .collect()
    }

    #[test]
    fn pinned_here_runs_on_one_cpu_and_gives_the_affinity_back() {
        std::thread::spawn(|| {
            let before = affinity();
            let Some(here) = PinnedHere::new() else {
                return; // affinity refused here: nothing to check
            };
            assert_eq!(affinity(), vec![here.cpu()]);
            assert!(before.contains(&here.cpu()));
            drop(here);
            assert_eq!(affinity(), before);
        })
        .join()
        .unwrap();
    }

    #[test]
    fn the_median_interval_narrows_with_more_runs() {
        let runs = |n: usize| (1..=n).map(|i| i as f64).collect::<Vec<_>>();
        // 5 runs: only min..max covers 90 % (93.75 %).
        assert_eq!(median_ci(&runs(5), 0.90), Some((1.0, 5.0)));
        // 15 runs: the 4th and 12th (96.5 %; the 5th and 11th cover 88 %).
        assert_eq!(median_ci(&runs(15), 0.90), Some((4.0, 12.0)));
        // 30 runs: the 11th and 20th (90.1 %).
        assert_eq!(median_ci(&runs(30), 0.90), Some((11.0, 20.0)));
        assert_eq!(median_ci(&[1.0, f64::NAN], 0.90), None);
    }

    #[test]
    fn median_of_odd_and_even_counts() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), 2.5);
        assert!(median(&[]).is_nan());
        assert_eq!(median(&[f64::NAN, 5.0]), 5.0);
    }

    #[test]
    fn interleave_alternates_and_takes_median_ratio() {
        let mut order = Vec::new();
        let order_cell = std::cell::RefCell::new(&mut order);
        let mut k = 0.0;
        let p = interleave(
            3,
            || {
                order_cell.borrow_mut().push('b');
                k += 1.0;
                k
            },
            || {
                order_cell.borrow_mut().push('i');
                10.0
            },
        );
        assert_eq!(order, vec!['b', 'i', 'b', 'i', 'b', 'i']);
        assert_eq!(p.bare, 2.0);
        assert_eq!(p.instrumented, 10.0);
        assert_eq!(p.ratio, 5.0);
        // Ratios 10, 5, 3.33: quartiles halfway between neighbours.
        assert_eq!(p.spread.pairs, 3);
        assert_eq!(p.spread.max, 10.0);
        assert!((p.spread.q1 - (10.0 / 3.0 + 5.0) / 2.0).abs() < 1e-12);
        assert_eq!(p.spread.q3, 7.5);
    }

    #[test]
    fn placements_split_the_pairs_at_a_move_and_leave_out_the_pair_across_it() {
        // Pairs 0-2 between readings of 40-48 ns, pair 3 across the move,
        // pairs 4-5 at about 400 ns.
        let trips = [40.0, 44.0, 48.0, 42.0, 390.0, 410.0, 400.0];
        let ratios = [0.95, 0.93, 0.97, 0.80, 0.70, 0.72];
        let p = Placements::of(&ratios, &trips).unwrap();
        assert_eq!((p.min_ns, p.max_ns), (40.0, 410.0));
        let s = p.split.expect("a 10x change is a move");
        assert!((s.at_ns - (40.0f64 * 410.0).sqrt()).abs() < 1e-9);
        assert_eq!(s.near, (0.95, 3));
        assert_eq!(s.far, (0.71, 2));
    }

    #[test]
    fn placements_within_the_noise_are_one_and_missing_readings_are_none() {
        let p = Placements::of(&[1.0, 1.0], &[40.0, 52.0, f64::NAN]).unwrap();
        assert_eq!((p.min_ns, p.max_ns, p.split), (40.0, 52.0, None));
        assert_eq!(Placements::of(&[1.0], &[f64::NAN, f64::NAN]), None);
    }

    #[test]
    fn interleave_contended_reads_a_round_trip_around_every_pair() {
        let p = interleave_contended(2, || 1.0, || 2.0);
        assert_eq!(p.ratio, 2.0);
        match (
            std::thread::available_parallelism().map_or(1, |n| n.get()),
            p.placements,
        ) {
            (1, None) => {}
            (_, Some(pl)) => assert!(pl.min_ns > 0.0 && pl.min_ns <= pl.max_ns, "{pl:?}"),
            (n, None) => panic!("{n} CPUs but no round trip was measured"),
        }
    }

    #[test]
    fn thread_cpu_time_leaves_out_sleep() {
        let mut sleep = |n: u64| std::thread::sleep(std::time::Duration::from_millis(n));
        let wall = ns_per_op(Timer::Wall, 20, &mut sleep);
        let cpu = ns_per_op(Timer::ThreadCpu, 20, &mut sleep);
        assert!(wall >= 1e6, "20 ms of sleep, per ms: {wall} ns");
        assert!(
            cpu < wall / 4.0,
            "asleep, the thread used {cpu} ns of CPU per ms"
        );
    }

    #[test]
    fn quartiles_of_five_are_the_second_and_fourth() {
        let s = Spread::of(&[5.0, 1.0, 4.0, f64::NAN, 2.0, 3.0]);
        assert_eq!((s.q1, s.q3, s.min, s.max, s.pairs), (2.0, 4.0, 1.0, 5.0, 5));
        assert!((s.relative_iqr(3.0) - 2.0 / 3.0).abs() < 1e-12);
        let empty = Spread::of(&[]);
        assert!(empty.q1.is_nan() && empty.max.is_nan());
        assert_eq!(empty.pairs, 0);
    }
}
