//! Seed 003: epoll's ready list and its wait queue under one lock.
//!
//! A fake web server: `workers` threads loop in an `epoll_wait`-like call
//! taking ready connections off a ready list and serving them (hashing
//! the request); serving a connection makes its next request ready, which
//! goes through the event path `ep_poll_callback` (in `callback.rs`):
//! queue the event, wake a waiter.
//!
//! In the "nested locks" variant the ready list has its own spinlock,
//! `ep.lock`, and the wait queue `ep.wq` is separate, so every event takes
//! `ep.lock` and then, inside it, the queue's own lock `ep.wq.lock` to wake
//! a waiter. In the "locked ops" variant the ready list is the wait
//! queue's data: one `lock()` guards both, and `wake_up_locked` /
//! `wait_event_exclusive_locked` work under it. That is one acquisition
//! fewer per event.
//!
//! Workers are pinned to different CPUs where possible (the seed ran on a
//! dual Athlon); with two workers sharing one CPU the ready list's lock
//! never bounces between caches and a run is several times faster, which
//! would swamp the difference measured here.
//!
//! There are more connections than workers, so a worker never finds the
//! ready list empty until the last request has been handed out: nobody
//! sleeps, and the lock counts are exact, `3 * events + workers + 1`
//! before and `2 * events + workers + 1` after (the `+ workers` are the
//! final empty checks, the `+ 1` the closing `wake_up_all`).

mod callback;
mod wait;

use std::collections::VecDeque;
use std::io;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex as StdMutex};
use std::time::{Duration, Instant};

use lockmeter::{Handle, SpinLock, WaitQueue, WakeOrder};
use lockmeter_model::{LockKind, Snapshot};
use serde::{Deserialize, Serialize};

use crate::report::{fixed, lock_totals, Outcome, TextTable};
use crate::{affinity, meter, repeats};

/// The ready list's own lock (nested variant).
pub const READY_LOCK: &str = "ep.lock";
/// The wait queue of `epoll_wait` callers.
pub const QUEUE: &str = "ep.wq";
/// The wait queue's lock; in the locked variant it guards the ready list.
pub const QUEUE_LOCK: &str = "ep.wq.lock";

seed_enum! {
    /// How the ready list and the wait queue are locked.
    pub enum Variant {
        /// Ready list under `ep.lock`; waking takes `ep.wq.lock` inside it.
        NestedLocks = ("nested_locks", "nested locks"),
        /// Ready list stored in the wait queue; `*_locked` operations.
        LockedOps = ("locked_ops", "locked ops"),
    }
}

impl Variant {
    /// The seed's own throughput (dual Athlon), in hits per second.
    pub fn seed_hits_per_sec(self) -> f64 {
        match self {
            Variant::NestedLocks => 14350.0,
            Variant::LockedOps => 15300.0,
        }
    }
}

/// Sizes of a run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    /// Events (requests) served per run.
    pub events: u64,
    /// Threads in `epoll_wait`.
    pub workers: usize,
    /// Connections with a request in flight; more than `workers`.
    pub connections: usize,
    /// Bytes of request each event hashes.
    pub request_bytes: usize,
    /// Runs per variant, alternating variants; the median is reported.
    pub repeats: usize,
    /// Pin worker `i` to the `i`-th allowed CPU (round robin), so that
    /// runs do not differ by where the scheduler put the workers.
    pub pin: bool,
    pub variants: Vec<Variant>,
}

impl Config {
    pub fn full() -> Config {
        Config {
            events: 2_000_000,
            workers: 2,
            connections: 16,
            request_bytes: 256,
            repeats: 5,
            pin: true,
            variants: Variant::ALL.to_vec(),
        }
    }

    pub fn quick() -> Config {
        Config {
            events: 200_000,
            repeats: 1,
            ..Config::full()
        }
    }
}

/// One variant, over its repeats.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Row {
    pub variant: Variant,
    pub events: u64,
    pub workers: usize,
    /// Median over the repeats.
    pub hits_per_sec: f64,
    /// Best of the repeats: the run least disturbed by other load.
    #[serde(default)]
    pub best_hits_per_sec: f64,
    /// Every repeat, in run order.
    pub runs_hits_per_sec: Vec<f64>,
    /// Acquisitions of every `ep.*` spinlock row in the last repeat.
    pub lock_acquisitions: u64,
    pub acquisitions_per_event: f64,
    /// `ep.lock` in the last repeat.
    pub ready_lock_acquisitions: u64,
    /// `ep.wq.lock` in the last repeat.
    pub queue_lock_acquisitions: u64,
    /// Times a worker slept on `ep.wq` in the last repeat (0 by design).
    pub sleeps: u64,
    pub wake_calls: u64,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Results {
    pub rows: Vec<Row>,
}

impl Results {
    pub fn get(&self, variant: Variant) -> Option<&Row> {
        self.rows.iter().find(|r| r.variant == variant)
    }
}

/// A connection with a request ready.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Event {
    conn: usize,
}

/// The epoll instance in one of the two lockings.
pub(crate) enum Ep {
    Nested {
        ready: SpinLock<VecDeque<Event>>,
        wq: WaitQueue,
    },
    Locked {
        wq: WaitQueue<VecDeque<Event>>,
    },
}

impl Ep {
    fn new(variant: Variant) -> Ep {
        match variant {
            Variant::NestedLocks => Ep::Nested {
                ready: SpinLock::named(READY_LOCK, VecDeque::new()),
                wq: WaitQueue::named(QUEUE),
            },
            Variant::LockedOps => Ep::Locked {
                wq: WaitQueue::named_with_data(QUEUE, WakeOrder::Fifo, VecDeque::new()),
            },
        }
    }

    fn wake_all(&self) {
        match self {
            Ep::Nested { wq, .. } => wq.wake_up_all(),
            Ep::Locked { wq } => wq.wake_up_all(),
        };
    }
}

/// Runs every variant `repeats` times, alternating.
pub fn run(cfg: &Config, handle: &Handle) -> io::Result<Outcome<Results>> {
    let done = repeats::alternating(
        "epoll_wakeups",
        &format!("{} events", cfg.events),
        &cfg.variants,
        cfg.repeats,
        |variant| run_one(variant, cfg, handle),
    )?;
    let mut out = Outcome::new(Results::default());
    for (variant, runs) in done {
        // The rates of every run; the snapshot of the last.
        let (rates, mut snaps): (Vec<f64>, Vec<Snapshot>) = runs.into_iter().unzip();
        let Some(snap) = snaps.pop() else { continue };
        out.results.rows.push(row(variant, cfg, rates, &snap));
        out.keep_run(variant.name(), format!("{variant}"), snap, "ep.");
    }
    Ok(out)
}

fn row(variant: Variant, cfg: &Config, rates: Vec<f64>, snap: &Snapshot) -> Row {
    let acq = |id: &str| snap.lock(id).map_or(0, |l| l.total.acquisitions);
    let lock_acquisitions = lock_acquisitions(snap);
    let q = lock_totals(snap, QUEUE);
    Row {
        variant,
        events: cfg.events,
        workers: cfg.workers,
        hits_per_sec: median(&rates),
        best_hits_per_sec: rates.iter().copied().fold(0.0, f64::max),
        runs_hits_per_sec: rates,
        lock_acquisitions,
        acquisitions_per_event: lock_acquisitions as f64 / cfg.events.max(1) as f64,
        ready_lock_acquisitions: acq(READY_LOCK),
        queue_lock_acquisitions: acq(QUEUE_LOCK),
        sleeps: q.sleeps,
        wake_calls: q.wake_calls,
    }
}

/// Acquisitions of every `ep.*` spinlock (the ready list's and the wait
/// queue's locks).
pub fn lock_acquisitions(snap: &Snapshot) -> u64 {
    snap.locks
        .iter()
        .filter(|l| l.kind == LockKind::Spinlock && l.id.starts_with("ep."))
        .map(|l| l.total.acquisitions)
        .sum()
}

fn median(v: &[f64]) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    match s.len() {
        0 => 0.0,
        n if n % 2 == 1 => s[n / 2],
        n => (s[n / 2 - 1] + s[n / 2]) / 2.0,
    }
}

/// Serves `cfg.events` requests with one variant; returns hits/s and the
/// snapshot of the run.
pub fn run_one(variant: Variant, cfg: &Config, handle: &Handle) -> io::Result<(f64, Snapshot)> {
    let events = cfg.events;
    let connections = cfg.connections.max(cfg.workers).max(1);
    let ep = Arc::new(Ep::new(variant));
    let requests: Arc<Vec<Vec<u8>>> = Arc::new(
        (0..connections)
            .map(|c| request(c, cfg.request_bytes))
            .collect(),
    );
    let tickets = Arc::new(AtomicU64::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    // Workers count what they served and note when they ran out of work
    // only when they leave, so that no shared counter but the tickets is
    // touched per event.
    let exited = Arc::new(AtomicUsize::new(0));
    let tally: Arc<StdMutex<(u64, Option<Instant>)>> = Arc::new(StdMutex::new((0, None)));

    handle.reset();
    // One request in flight per connection to start with.
    for conn in 0..connections {
        if tickets.fetch_add(1, Ordering::SeqCst) < events {
            callback::post(&ep, Event { conn });
        }
    }
    let start = Instant::now();
    let allowed = if cfg.pin {
        affinity::allowed_cpus()
    } else {
        Vec::new()
    };
    let workers = cfg.workers.max(1);
    let mut threads = Vec::with_capacity(workers);
    for i in 0..workers {
        let cpu = (!allowed.is_empty()).then(|| allowed[i % allowed.len()]);
        let (my_ep, requests, my_tickets, my_stop, my_exited, my_tally) = (
            ep.clone(),
            requests.clone(),
            tickets.clone(),
            stop.clone(),
            exited.clone(),
            tally.clone(),
        );
        let worker = move || {
            if let Some(cpu) = cpu {
                // Best effort: an unpinned worker only makes runs noisier.
                affinity::pin_current_thread(cpu);
            }
            let finished =
                || my_tickets.load(Ordering::SeqCst) >= events || my_stop.load(Ordering::SeqCst);
            let mut checksum = 0u64;
            let mut served = 0u64;
            while let Some(ev) = wait::next_event(&my_ep, &finished) {
                checksum ^= serve(&requests[ev.conn]);
                served += 1;
                // The reply went out; the client's next request arrives.
                if my_tickets.fetch_add(1, Ordering::SeqCst) < events {
                    callback::post(&my_ep, ev);
                }
            }
            let now = Instant::now();
            let mut t = my_tally.lock().unwrap_or_else(|e| e.into_inner());
            t.0 += served;
            t.1 = Some(t.1.map_or(now, |e: Instant| e.max(now)));
            drop(t);
            my_exited.fetch_add(1, Ordering::SeqCst);
            std::hint::black_box(checksum);
        };
        match meter::spawn(&format!("ep-worker-{i}"), None, worker) {
            Ok(t) => threads.push(t),
            Err(e) => {
                stop.store(true, Ordering::SeqCst);
                ep.wake_all();
                let _ = meter::join_all(threads);
                return Err(e);
            }
        }
    }
    // Workers leave by themselves once the last request is handed out;
    // one that slept after all is woken by the closing wake_up_all.
    let mut exhausted_at = None;
    while exited.load(Ordering::SeqCst) < workers {
        std::thread::sleep(Duration::from_millis(1));
        if tickets.load(Ordering::SeqCst) >= events {
            let since = *exhausted_at.get_or_insert_with(Instant::now);
            if since.elapsed() > Duration::from_secs(1) {
                break;
            }
        }
    }
    stop.store(true, Ordering::SeqCst);
    ep.wake_all();
    meter::join_all(threads)?;
    let snap = handle.snapshot();
    let (served, end) = *tally.lock().unwrap_or_else(|e| e.into_inner());
    if served != events {
        return Err(io::Error::other(format!(
            "served {served} events of {events}"
        )));
    }
    let seconds = end
        .map_or_else(|| start.elapsed(), |e| e.duration_since(start))
        .as_secs_f64();
    Ok((events as f64 / seconds.max(1e-9), snap))
}

/// The request bytes of connection `conn`.
fn request(conn: usize, bytes: usize) -> Vec<u8> {
    let line = format!("GET /conn/{conn} HTTP/1.0\r\nHost: localhost\r\n\r\n");
    line.bytes().cycle().take(bytes.max(1)).collect()
}

/// "Serves" a request: FNV-1a over its bytes.
fn serve(req: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in std::hint::black_box(req) {
        h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
    }
    h
}

/// The results next to the seed's hits/s.
pub fn render(results: &Results) -> String {
    let base = results.get(Variant::NestedLocks).map(|r| r.hits_per_sec);
    let best = results
        .get(Variant::NestedLocks)
        .map(|r| r.best_hits_per_sec);
    let change = |now: f64, then: Option<f64>| match then {
        Some(b) if b > 0.0 => format!("{:+.1}%", 100.0 * (now / b - 1.0)),
        _ => "-".into(),
    };
    let mut t = TextTable::new(
        &[
            "Variant",
            "hits/s (median)",
            "change",
            "best",
            "change",
            "locks/event",
            "ep.lock",
            "ep.wq.lock",
            "sleeps",
            "seed hits/s",
        ],
        1,
    );
    for r in &results.rows {
        t.row(vec![
            r.variant.to_string(),
            fixed(r.hits_per_sec, 0),
            change(r.hits_per_sec, base),
            fixed(r.best_hits_per_sec, 0),
            change(r.best_hits_per_sec, best),
            fixed(r.acquisitions_per_event, 3),
            r.ready_lock_acquisitions.to_string(),
            r.queue_lock_acquisitions.to_string(),
            r.sleeps.to_string(),
            match r.variant {
                Variant::NestedLocks => r.variant.seed_hits_per_sec().to_string(),
                Variant::LockedOps => format!("{} (+6.5%)", r.variant.seed_hits_per_sec()),
            },
        ]);
    }
    let (events, workers) = results
        .rows
        .first()
        .map_or((0, 0), |r| (r.events, r.workers));
    format!(
        "Fake web server on an epoll-like ready list, {events} events, {workers} workers (seed 003)\n{}",
        t.render()
    )
}
