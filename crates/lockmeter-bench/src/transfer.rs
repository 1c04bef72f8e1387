//! How far apart the two CPUs are right now: a cache-line round trip.
//!
//! A contended lock's hand-off moves its cache line from one core to the
//! other, so the contended rows are bound by that transfer. On this VM it
//! is not a constant: the hypervisor places the two vCPUs where it likes
//! and moves them while the guest runs. On an AMD EPYC host a line's round
//! trip between CPU 0 and CPU 1 read about 390 ns for a minute, then about
//! 77 ns for the next, then 40-55 ns (session 18), and a `work` row's
//! ratio follows it: far apart, a hand-off that moves the line twice
//! instead of once (the observed Mutex's `try_lock` before
//! `lockmeter/src/hint.rs`) cost a third of the row (`docs/performance.md`).
//!
//! [`round_trip_ns`] measures it between two threads pinned to CPUs 0 and
//! 1; the contended rows take one before every repetition
//! ([`crate::measure::interleave_contended`]) and report the range, and a
//! row measured across a move is judged per placement (`report`).

use std::hint::spin_loop;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Barrier, Mutex};
use std::time::Instant;

use crate::contended::Aligned;
use crate::measure::{median, pin_to};
use crate::report::{Goal, Row, Unit};

/// Every reading of this run, for [`summary_row`].
static READINGS: Mutex<Vec<f64>> = Mutex::new(Vec::new());

/// The bands [`summary_row`] counts readings in. On the AMD EPYC host
/// readings fell in three clusters, 40-55 ns, 75-120 ns and 350-570 ns:
/// as two hyperthreads of one core, two cores sharing a cache, and two
/// cores on different dies would read (the guest cannot see which).
const SIBLINGS: f64 = 60.0;
const FAR: f64 = 150.0;

/// Round trips per batch: about 1 ms at the slowest placement seen.
const TRIPS: u64 = 2_000;

/// Batches per measurement; the median is reported, so one batch the
/// hypervisor interrupted does not move it.
const BATCHES: usize = 5;

/// A round trip's time ratio between two placements that makes a row
/// measured across both too different to pool (the far placement seen
/// here takes 5-10x the near ones; noise between batches stays under 1.3x).
pub const MOVED: f64 = 1.5;

/// The median ns of one round trip of a cache line between a thread on
/// CPU 0 and one on CPU 1: the first writes `2k + 1`, waits for the
/// second's `2k + 2`, and so on. Both are threads of their own, so the
/// caller's affinity is left alone. `None` where the two cannot be pinned
/// (fewer than two CPUs, or affinity refused).
pub fn round_trip_ns() -> Option<f64> {
    let line = Box::new(Aligned(AtomicU64::new(0)));
    let line = &line.0;
    let refused = AtomicBool::new(false);
    let start = Barrier::new(2);
    let pinned = |cpu| {
        if !pin_to(cpu) {
            refused.store(true, Ordering::Relaxed);
        }
        start.wait();
        !refused.load(Ordering::Relaxed)
    };
    std::thread::scope(|s| {
        s.spawn(|| {
            if pinned(1) {
                for k in 0..TRIPS * BATCHES as u64 {
                    while line.load(Ordering::Acquire) != 2 * k + 1 {
                        spin_loop();
                    }
                    line.store(2 * k + 2, Ordering::Release);
                }
            }
        });
        let timer = s.spawn(|| {
            if !pinned(0) {
                return None;
            }
            let mut batches = Vec::with_capacity(BATCHES);
            let mut k = 0u64;
            for _ in 0..BATCHES {
                let t = Instant::now();
                for _ in 0..TRIPS {
                    line.store(2 * k + 1, Ordering::Release);
                    while line.load(Ordering::Acquire) != 2 * k + 2 {
                        spin_loop();
                    }
                    k += 1;
                }
                batches.push(t.elapsed().as_nanos() as f64 / TRIPS as f64);
            }
            Some(median(&batches))
        });
        timer.join().ok().flatten()
    })
    .inspect(|&ns| READINGS.lock().unwrap_or_else(|e| e.into_inner()).push(ns))
}

/// The round trips read during the run, as one row: where the hypervisor
/// kept the two vCPUs while the contended rows ran. `None` if none was read.
pub fn summary_row() -> Option<Row> {
    let all = READINGS.lock().unwrap_or_else(|e| e.into_inner()).clone();
    let min = all.iter().copied().reduce(f64::min)?;
    let max = all.iter().copied().reduce(f64::max)?;
    let count = |f: &dyn Fn(f64) -> bool| all.iter().filter(|&&x| f(x)).count();
    let note = format!(
        "CPU 0 to CPU 1 and back, before every contended repetition: {} readings, \
         {min:.0}-{max:.0} ns; {} under {SIBLINGS:.0} ns, {} in between, \
         {} over {FAR:.0} ns; see `transfer.rs`",
        all.len(),
        count(&|x| x < SIBLINGS),
        count(&|x| (SIBLINGS..=FAR).contains(&x)),
        count(&|x| x > FAR),
    );
    let mut row = Row::new(
        "cache_line_round_trip",
        "cache-line round trip between the CPUs, over the run",
        Unit::NsPerOp,
        Goal::Info,
    )
    .note(note);
    row.instrumented = Some(median(&all));
    Some(row)
}
