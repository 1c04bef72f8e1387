//! What one scrape a second takes from a contended lock's throughput,
//! measured around each scrape (`--prometheus --only trace`).
//!
//! The round-based comparison (`prometheus::compare`) cannot resolve 3 %
//! on contended rows here: their throughput moves ±20 % between runs a
//! few seconds apart with no scraper at all, and 120 rounds still left
//! 90 % intervals 0.1 wide. A scrape, though, is a burst: ~10 ms of one
//! thread once a second. So the threads run on through a steady stream
//! of scrapes while each stamps the time every [`STAMP_EVERY`]
//! acquisitions, and the throughput in 1 ms buckets around each scrape
//! (from 1 ms before it began to [`TAIL`] after it ended) is set against
//! the 100 ms before it. What a scrape cost is the acquisitions missing
//! from that window; over the second a scrape stands for, that is the
//! share of throughput lost. It includes the CPU time the scrape takes
//! from the lock's threads, which the bare lock would lose as well, so
//! it overstates what lockmeter's endpoint costs compared with no
//! endpoint; the goal is judged on it anyway.

use std::hint::black_box;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Barrier;
use std::time::{Duration, Instant};

use crate::contended::{hot_or_cold, local_work, Take, WORK_ROUNDS};
use crate::measure::Config;
use crate::prometheus::Scraper;
use crate::report::{Goal, Row, Unit};

/// Each thread stamps the time once per this many acquisitions.
const STAMP_EVERY: u64 = 64;
/// Width of a throughput bucket.
const BUCKET: Duration = Duration::from_millis(1);
/// How long after a scrape ends its window runs: long enough for caches
/// to refill and the lock's threads to spread back over the CPUs (20 ms
/// gave the same figures, less spread).
const TAIL: Duration = Duration::from_millis(100);
/// The stretch before each scrape its window is compared with.
const BEFORE: Duration = Duration::from_millis(100);
/// The goal: no row more than 3 % worse.
const WORST: f64 = 0.97;

/// One row per (lock, mix, threads): throughput with the scrapes' share
/// taken out, as a ratio to without it.
pub fn rows(cfg: &Config, scraper: &Scraper) -> Vec<Row> {
    let secs = if cfg.quick { 10 } else { 20 };
    let run = Duration::from_secs(secs);
    let m = lockmeter::Mutex::named("bench.trace.mutex", 0u64);
    let s = lockmeter::SpinLock::named("bench.trace.spinlock", 0u64);
    let mut rows = Vec::new();
    for (mix, work) in [("hammer", 0), ("work", WORK_ROUNDS)] {
        for threads in [2, 8] {
            let t = trace(scraper, &|_, _| m.take(), threads, work, run);
            rows.push(row("Mutex", mix, threads, t));
            let t = trace(scraper, &|_, _| s.take(), threads, work, run);
            rows.push(row("SpinLock", mix, threads, t));
        }
    }
    let mix = "work, many sites";
    let t = trace(scraper, &|t, i| hot_or_cold(&m, t, i), 2, WORK_ROUNDS, run);
    rows.push(row("Mutex", mix, 2, t));
    let t = trace(scraper, &|t, i| hot_or_cold(&s, t, i), 2, WORK_ROUNDS, run);
    rows.push(row("SpinLock", mix, 2, t));
    rows
}

/// What the threads did around the scrapes of one run.
struct Trace {
    /// Acquisitions per bucket, from the start of the run.
    buckets: Vec<f64>,
    /// Each scrape's bucket range (begin inclusive, end exclusive).
    windows: Vec<(usize, usize)>,
    /// The median wall time of those scrapes.
    scrape_ms: f64,
}

/// Runs `threads` threads of `op` (given the thread's index and its
/// acquisition count) for `run` with the scraper on.
fn trace(
    scraper: &Scraper,
    op: &(impl Fn(usize, u64) + Sync),
    threads: usize,
    work: u64,
    run: Duration,
) -> Trace {
    let stop = AtomicBool::new(false);
    let start = Barrier::new(threads + 1);
    let t0 = Instant::now();
    let stamps: Vec<Vec<u64>> = std::thread::scope(|s| {
        let workers: Vec<_> = (0..threads)
            .map(|t| {
                let (stop, start) = (&stop, &start);
                s.spawn(move || {
                    let mut stamps = Vec::with_capacity(1 << 20);
                    let (mut x, mut n) = (t as u64, 0);
                    start.wait();
                    while !stop.load(Ordering::Relaxed) {
                        for _ in 0..STAMP_EVERY {
                            op(t, n);
                            n += 1;
                            x = local_work(work, x);
                        }
                        stamps.push(t0.elapsed().as_nanos() as u64);
                    }
                    black_box(x);
                    stamps
                })
            })
            .collect();
        start.wait();
        scraper.set(true);
        std::thread::sleep(run);
        scraper.set(false);
        stop.store(true, Ordering::Relaxed);
        workers
            .into_iter()
            .map(|w| w.join().expect("a trace thread"))
            .collect()
    });
    let n = (run.as_nanos() / BUCKET.as_nanos()) as usize + 1;
    let mut buckets = vec![0.0; n];
    for &at in stamps.iter().flatten() {
        if let Some(b) = buckets.get_mut((at / BUCKET.as_nanos() as u64) as usize) {
            *b += STAMP_EVERY as f64;
        }
    }
    let bucket_of =
        |t: Instant| (t.saturating_duration_since(t0).as_nanos() / BUCKET.as_nanos()) as usize;
    let scrapes: Vec<_> = scraper
        .windows_since(t0)
        .into_iter()
        .filter(|&(s, e)| s >= t0 + BEFORE && bucket_of(e + TAIL) + 1 < n - 1)
        .collect();
    let windows = scrapes
        .iter()
        .map(|&(s, e)| (bucket_of(s).saturating_sub(1), bucket_of(e + TAIL) + 1))
        .collect();
    let took: Vec<f64> = scrapes
        .iter()
        .map(|&(s, e)| (e - s).as_secs_f64() * 1e3)
        .collect();
    Trace {
        buckets,
        windows,
        scrape_ms: crate::measure::median(&took),
    }
}

/// Each scrape's loss as a share of a second of throughput: the
/// acquisitions missing from its window against the rate of the
/// [`BEFORE`] stretch ahead of it.
fn losses(t: &Trace) -> Vec<f64> {
    let before = (BEFORE.as_nanos() / BUCKET.as_nanos()) as usize;
    let per_second = (Duration::from_secs(1).as_nanos() / BUCKET.as_nanos()) as f64;
    t.windows
        .iter()
        .filter_map(|&(s, e)| {
            let base = t.buckets[s - before..s].iter().sum::<f64>() / before as f64;
            let got: f64 = t.buckets[s..e].iter().sum();
            (base > 0.0).then(|| (base * (e - s) as f64 - got) / (base * per_second))
        })
        .collect()
}

fn row(lock: &str, mix: &str, threads: usize, t: Trace) -> Row {
    let lost = losses(&t);
    let n = lost.len() as f64;
    let mean = lost.iter().sum::<f64>() / n;
    let sd = (lost.iter().map(|l| (l - mean).powi(2)).sum::<f64>() / (n - 1.0)).sqrt();
    // The 90 % interval of the mean loss (normal, over the scrapes).
    let half = 1.645 * sd / n.sqrt();
    let mops =
        t.buckets.iter().sum::<f64>() / (t.buckets.len() as f64 * BUCKET.as_secs_f64()) / 1e6;
    let mut row = Row::new(
        &format!(
            "prometheus_trace_{}_{}t_{}",
            lock.to_lowercase(),
            threads,
            mix.replace(' ', "_")
        ),
        &format!("contended observed, {lock}, {threads} threads, {mix} (each scrape's share)"),
        Unit::MopsPerSec,
        Goal::RatioAtLeast(WORST),
    )
    .note(format!(
        "{} scrapes, one a second, each {:.1} ms (median): they cost {:.3} % of a second's \
         acquisitions (90 % interval {:.3} to {:.3} %); ratio: 1 - that share, counted \
         in each scrape's window (1 ms before it to {} ms after) against the {} ms before",
        lost.len(),
        t.scrape_ms,
        mean * 100.0,
        (mean - half) * 100.0,
        (mean + half) * 100.0,
        TAIL.as_millis(),
        BEFORE.as_millis()
    ));
    row.ratio = Some(1.0 - mean).filter(|r| r.is_finite());
    row.median_ci = Some((1.0 - mean - half, 1.0 - mean + half))
        .filter(|(l, h)| l.is_finite() && h.is_finite());
    row.instrumented = Some(mops).filter(|x| x.is_finite());
    row
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A run at 1000 acquisitions a bucket whose one scrape's window lost
    /// 500 over 25 buckets: half a bucket of a thousand, so 0.05 %.
    #[test]
    fn a_window_short_by_half_a_bucket_loses_a_two_thousandth() {
        let mut buckets = vec![1000.0; 1000];
        buckets[300] = 500.0;
        let t = Trace {
            buckets,
            windows: vec![(290, 315)],
            scrape_ms: 1.0,
        };
        let l = losses(&t);
        assert_eq!(l.len(), 1);
        assert!((l[0] - 0.0005).abs() < 1e-12, "{l:?}");
    }
}
