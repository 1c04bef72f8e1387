//! What the Prometheus endpoint costs the program while it is scraped:
//! the observed rows measured with a scraper fetching `/metrics` every
//! second and without, alternately, in one process (`--prometheus`).
//!
//! Each row's own ratio (instrumented / bare, interleaved) already cancels
//! drift between its halves; rounds with the scraper off and on alternate,
//! and each round's ratio on is divided by the round's ratio off, so drift
//! between the rounds cancels too. The row reports the median of those
//! per-round changes and their spread. Goal: no row more than 3 % worse.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use crate::measure::{median, median_ci, Config, Pair};
use crate::report::{Goal, Row, Unit};

/// How often a real Prometheus would scrape in the tightest usual setup:
/// the rate the goal is stated at (`--scrape-every` may scrape faster).
pub const SCRAPE_EVERY: Duration = Duration::from_secs(1);
/// Rounds of (off, on) in a full run and in `--quick`; the per-row
/// figure is the median over rounds. Each side of a round runs every row,
/// seconds long, so the scraper gets a few scrapes in every `on` side.
const ROUNDS_FULL: usize = 7;
const ROUNDS_QUICK: usize = 5;
/// How much worse a row may get with the scraper on.
const WORST: f64 = 1.03;

/// A thread that GETs `/metrics` every `every` (a second unless
/// `--scrape-every`) while switched on.
pub struct Scraper {
    every: Duration,
    on: Arc<AtomicBool>,
    stop: Arc<AtomicBool>,
    scrapes: Arc<AtomicU64>,
    /// Wall time of every scrape, in µs.
    times: Arc<std::sync::Mutex<Vec<u64>>>,
    /// When every scrape began and ended.
    windows: Arc<std::sync::Mutex<Vec<(Instant, Instant)>>>,
    thread: Option<JoinHandle<()>>,
}

impl Scraper {
    /// Starts switched off.
    pub fn start(addr: SocketAddr, every: Duration) -> Scraper {
        let on = Arc::new(AtomicBool::new(false));
        let stop = Arc::new(AtomicBool::new(false));
        let scrapes = Arc::new(AtomicU64::new(0));
        let times = Arc::new(std::sync::Mutex::new(Vec::new()));
        let (o, s, n) = (Arc::clone(&on), Arc::clone(&stop), Arc::clone(&scrapes));
        let t = Arc::clone(&times);
        let windows = Arc::new(std::sync::Mutex::new(Vec::new()));
        let w = Arc::clone(&windows);
        let thread = thread::spawn(move || {
            let mut next = Instant::now();
            while !s.load(Ordering::Relaxed) {
                if o.load(Ordering::Relaxed) && Instant::now() >= next {
                    let started = Instant::now();
                    if scrape(addr).is_ok() {
                        n.fetch_add(1, Ordering::Relaxed);
                        if let Ok(mut t) = t.lock() {
                            t.push(started.elapsed().as_micros() as u64);
                        }
                        if let Ok(mut w) = w.lock() {
                            w.push((started, Instant::now()));
                        }
                    }
                    next = Instant::now() + every;
                }
                thread::sleep(every.min(Duration::from_millis(20)));
            }
        });
        Scraper {
            every,
            on,
            stop,
            scrapes,
            times,
            windows,
            thread: Some(thread),
        }
    }

    pub fn set(&self, on: bool) {
        self.on.store(on, Ordering::Relaxed);
    }

    /// The scrapes that began at or after `since`: (start, end).
    pub fn windows_since(&self, since: Instant) -> Vec<(Instant, Instant)> {
        self.windows
            .lock()
            .map(|w| w.iter().copied().filter(|&(s, _)| s >= since).collect())
            .unwrap_or_default()
    }

    pub fn scrapes(&self) -> u64 {
        self.scrapes.load(Ordering::Relaxed)
    }

    /// The median wall time of one scrape (request, snapshot, encoding,
    /// response read), as a row: what the endpoint spends per second.
    pub fn cost_row(&self) -> Row {
        let times: Vec<f64> = self
            .times
            .lock()
            .map(|t| t.iter().map(|&us| us as f64 / 1000.0).collect())
            .unwrap_or_default();
        let mut row = Row::new(
            "prometheus_scrape_ms",
            "one scrape of /metrics, wall time (median)",
            Unit::Millis,
            Goal::Info,
        )
        .note(format!(
            "{} scrapes, one every {} ms while on",
            times.len(),
            self.every.as_millis()
        ));
        row.instrumented = Some(median(&times)).filter(|x| x.is_finite());
        row
    }
}

impl Drop for Scraper {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// One scrape, read to the end: the bytes of the response.
fn scrape(addr: SocketAddr) -> std::io::Result<usize> {
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(5))?;
    s.set_read_timeout(Some(Duration::from_secs(5)))?;
    s.write_all(b"GET /metrics HTTP/1.0\r\nAccept: application/openmetrics-text\r\n\r\n")?;
    let mut body = Vec::new();
    s.read_to_end(&mut body)?;
    if !body.starts_with(b"HTTP/1.1 200 ") {
        return Err(std::io::Error::other("scrape refused"));
    }
    Ok(body.len())
}

/// Runs `rows` with the scraper off and on, alternately, and reports for
/// each row the on/off change of its ratio: the median over rounds of
/// (ratio on / ratio off) of the round's pair, with its spread, so the
/// noisy rule of `report` applies to it as to any interleaved row.
/// `rounds` overrides the default count (`--rounds`). Each row is judged
/// by the 90 % confidence interval of its median change (see
/// `measure::median_ci`), so more rounds can resolve the 3 % goal.
pub fn compare(
    cfg: &Config,
    scraper: &Scraper,
    rounds: Option<u64>,
    rows: &mut dyn FnMut() -> Vec<Row>,
) -> Vec<Row> {
    let default = if cfg.quick { ROUNDS_QUICK } else { ROUNDS_FULL };
    let rounds = rounds.map_or(default, |r| r as usize);
    let mut off: Vec<Vec<Row>> = Vec::new();
    let mut on: Vec<Vec<Row>> = Vec::new();
    let (mut on_time, mut on_scrapes) = (Duration::ZERO, 0);
    for round in 0..rounds {
        eprintln!("  round {}/{rounds}: scraper off", round + 1);
        scraper.set(false);
        off.push(rows());
        eprintln!("  round {}/{rounds}: scraper on", round + 1);
        let (started, scraped) = (Instant::now(), scraper.scrapes());
        scraper.set(true);
        on.push(rows());
        on_time += started.elapsed();
        on_scrapes += scraper.scrapes() - scraped;
    }
    scraper.set(false);
    // Scraped faster than the goal's rate, a row's change is scaled down
    // to that rate: each scrape's effect adds (a snapshot is a burst of
    // reads and ~10 ms of one thread's time, gone when it ends), so the
    // change per scrape a second is (change - 1) / (scrapes a second).
    let rate = on_scrapes as f64 / on_time.as_secs_f64().max(1e-9);
    let per_goal_rate = match scraper.every < SCRAPE_EVERY {
        true => rate * SCRAPE_EVERY.as_secs_f64(),
        false => 1.0,
    };
    let to_goal_rate = |change: f64| 1.0 + (change - 1.0) / per_goal_rate;
    let mut out = Vec::new();
    for (i, first) in off[0].iter().enumerate() {
        let pick = |runs: &[Vec<Row>], f: fn(&Row) -> Option<f64>| -> Vec<f64> {
            runs.iter()
                .map(|r| r.get(i).and_then(f).unwrap_or(f64::NAN))
                .collect()
        };
        // Round k's ratio with the scraper on over round k's with it off.
        let (ratios_off, ratios_on) = (pick(&off, |r| r.ratio), pick(&on, |r| r.ratio));
        let changes: Vec<f64> = ratios_off
            .iter()
            .zip(&ratios_on)
            .map(|(o, n)| to_goal_rate(n / o))
            .collect();
        let change = Pair::from_runs(&vec![1.0; changes.len()], &changes);
        let goal = match first.unit {
            Unit::MopsPerSec => Goal::RatioAtLeast(2.0 - WORST),
            _ => Goal::RatioAtMost(WORST),
        };
        let mut row = Row::new(
            &format!("prometheus_scraped_{}", first.key),
            &format!("{} (scraped / not)", first.label),
            first.unit,
            goal,
        )
        .with_pair(change)
        .note(format!(
            "ratio: median over {rounds} rounds of (on / bare) / (off / bare), judged by \
             its 90 % confidence interval; bare and instr columns: lockmeter's own \
             figure off and on{}",
            match per_goal_rate == 1.0 {
                true => String::new(),
                false => format!(
                    "; scraped {rate:.1} times a second, each change c given as \
                     1 + (c - 1) / {per_goal_rate:.1}"
                ),
            }
        ));
        row.median_ci = median_ci(&changes, 0.90);
        row.bare = Some(median(&pick(&off, |r| r.instrumented))).filter(|x| x.is_finite());
        row.instrumented = Some(median(&pick(&on, |r| r.instrumented))).filter(|x| x.is_finite());
        out.push(row);
    }
    out
}
