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
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use crate::measure::{median, median_ci, Config, Pair};
use crate::report::{Goal, Row, Unit};

/// How often a real Prometheus would scrape in the tightest usual setup.
const SCRAPE_EVERY: Duration = Duration::from_secs(1);
/// Rounds of (off, on) in a full run and in `--quick`; the per-row
/// figure is the median over rounds. Each side of a round runs every row,
/// seconds long, so the scraper gets a few scrapes in every `on` side.
const ROUNDS_FULL: usize = 7;
const ROUNDS_QUICK: usize = 5;
/// How much worse a row may get with the scraper on.
const WORST: f64 = 1.03;

/// A thread that GETs `/metrics` every second while switched on.
pub struct Scraper {
    on: Arc<AtomicBool>,
    stop: Arc<AtomicBool>,
    /// When every scrape began and ended.
    windows: Arc<std::sync::Mutex<Vec<(Instant, Instant)>>>,
    thread: Option<JoinHandle<()>>,
}

impl Scraper {
    /// Starts switched off.
    pub fn start(addr: SocketAddr) -> Scraper {
        let on = Arc::new(AtomicBool::new(false));
        let stop = Arc::new(AtomicBool::new(false));
        let windows = Arc::new(std::sync::Mutex::new(Vec::new()));
        let (o, s, w) = (Arc::clone(&on), Arc::clone(&stop), Arc::clone(&windows));
        let thread = thread::spawn(move || {
            let mut next = Instant::now();
            while !s.load(Ordering::Relaxed) {
                if o.load(Ordering::Relaxed) && Instant::now() >= next {
                    let started = Instant::now();
                    if scrape(addr).is_ok() {
                        if let Ok(mut w) = w.lock() {
                            w.push((started, Instant::now()));
                        }
                    }
                    next = Instant::now() + SCRAPE_EVERY;
                }
                thread::sleep(Duration::from_millis(20));
            }
        });
        Scraper {
            on,
            stop,
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

    pub fn scrapes(&self) -> usize {
        self.windows.lock().map_or(0, |w| w.len())
    }

    /// The median wall time of one scrape (request, snapshot, encoding,
    /// response read), as a row: what the endpoint spends per second.
    pub fn cost_row(&self) -> Row {
        let times: Vec<f64> = self
            .windows
            .lock()
            .map(|w| {
                w.iter()
                    .map(|&(s, e)| (e - s).as_secs_f64() * 1e3)
                    .collect()
            })
            .unwrap_or_default();
        let mut row = Row::new(
            "prometheus_scrape_ms",
            "one scrape of /metrics, wall time (median)",
            Unit::Millis,
            Goal::Info,
        )
        .note(format!("{} scrapes, one per second while on", times.len()));
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
    for round in 0..rounds {
        eprintln!("  round {}/{rounds}: scraper off", round + 1);
        scraper.set(false);
        off.push(rows());
        eprintln!("  round {}/{rounds}: scraper on", round + 1);
        scraper.set(true);
        on.push(rows());
    }
    scraper.set(false);
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
            .map(|(o, n)| n / o)
            .collect();
        let change = Pair::from_runs(&ratios_off, &ratios_on);
        let goal = if first.unit.higher_is_better() {
            Goal::RatioAtLeast(2.0 - WORST)
        } else {
            Goal::RatioAtMost(WORST)
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
             figure off and on"
        ));
        row.median_ci = median_ci(&changes, 0.90);
        row.bare = Some(median(&pick(&off, |r| r.instrumented))).filter(|x| x.is_finite());
        row.instrumented = Some(median(&pick(&on, |r| r.instrumented))).filter(|x| x.is_finite());
        out.push(row);
    }
    out
}
