//! Seed 000: the thundering herd in `accept()`.
//!
//! `sleepers` server threads wait on one [`WaitQueue`] for a connection,
//! as processes wait in `accept()`. The accept backlog is the queue's data,
//! guarded by the queue's lock like a listening socket's queue under its
//! lock. A client hands out connections one at a time: it queues one,
//! wakes the queue, and waits until the connection is accepted and every
//! server is queued again, so each connection finds the same state (as on
//! the seed's uniprocessor run). Because a server checks for a connection
//! and queues itself under one lock hold, "queued" means "will not look
//! again until woken", and the counts come out exact.
//!
//! With non-exclusive waits every connection wakes all sleepers and all
//! but one go back to sleep: `sleepers - 1` spurious wakeups per
//! connection. With exclusive waits one sleeper is woken, in FIFO or LIFO
//! order, and none is woken for nothing.
//!
//! Wake-all costs grow with the square of the sleepers on this library
//! (the waker holds the queue's spinlock while it wakes each sleeper, and
//! the woken spin on it), so a run caps the wakeups per point:
//! [`Config::wake_all_budget`].

use std::io;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use lockmeter::{Handle, WaitQueue, WaitQueueGuard, WakeOrder};
use lockmeter_model::Snapshot;
use serde::{Deserialize, Serialize};

use crate::report::{distinct, fixed, lock_totals, Outcome, TextTable};
use crate::{meter, wait};

/// The wait queue the servers sleep on.
pub const QUEUE: &str = "accept.wait";

/// Stack of each server thread: 1,000 of them must fit comfortably.
const SERVER_STACK: usize = 256 * 1024;

seed_enum! {
    /// How the servers wait and are woken.
    pub enum Variant {
        /// Non-exclusive waits: every connection wakes every sleeper.
        WakeAll = ("wake_all", "wake-all"),
        /// Exclusive waits, the longest sleeper woken first.
        WakeOneFifo = ("wake_one_fifo", "wake-one FIFO"),
        /// Exclusive waits, the most recent sleeper woken first.
        WakeOneLifo = ("wake_one_lifo", "wake-one LIFO"),
    }
}

impl Variant {
    fn exclusive(self) -> bool {
        self != Variant::WakeAll
    }

    fn order(self) -> WakeOrder {
        match self {
            Variant::WakeOneLifo => WakeOrder::Lifo,
            _ => WakeOrder::Fifo,
        }
    }
}

/// Sizes of a run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    /// Numbers of sleeping servers to try.
    pub sleepers: Vec<usize>,
    /// Connections handed out per run.
    pub connections: u64,
    /// Most wakeups one wake-all point may cost: with `n` sleepers it
    /// hands out `min(connections, budget / n)` connections (at least 100).
    pub wake_all_budget: u64,
    pub variants: Vec<Variant>,
}

impl Config {
    /// The seed's sizes: 10,000 connections, 1 to 1,000 servers.
    pub fn full() -> Config {
        Config {
            sleepers: vec![1, 2, 4, 100, 200, 400, 600, 1000],
            connections: 10_000,
            wake_all_budget: 200_000,
            variants: Variant::ALL.to_vec(),
        }
    }

    /// CI-sized.
    pub fn quick() -> Config {
        Config {
            sleepers: vec![1, 4, 100, 400],
            connections: 1_000,
            wake_all_budget: 50_000,
            variants: Variant::ALL.to_vec(),
        }
    }

    /// Connections to hand out to `sleepers` servers with `variant`.
    pub fn connections_for(&self, variant: Variant, sleepers: usize) -> u64 {
        match variant {
            Variant::WakeAll => {
                let capped = (self.wake_all_budget / sleepers.max(1) as u64).max(100);
                self.connections.min(capped)
            }
            _ => self.connections,
        }
    }
}

/// One variant at one number of sleepers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Row {
    pub variant: Variant,
    pub sleepers: usize,
    pub connections: u64,
    /// Wall time to hand out every connection.
    pub seconds: f64,
    pub us_per_connection: f64,
    pub wake_calls: u64,
    /// Waiters woken, summed over wake calls.
    pub wakeups: u64,
    pub spurious_wakeups: u64,
    pub spurious_per_connection: f64,
    /// Mean time from a wake call to the woken server running.
    pub wake_latency_mean_ns: u64,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Results {
    pub rows: Vec<Row>,
}

impl Results {
    /// The row of `variant` at `sleepers`, if measured.
    pub fn get(&self, variant: Variant, sleepers: usize) -> Option<&Row> {
        self.rows
            .iter()
            .find(|r| r.variant == variant && r.sleepers == sleepers)
    }
}

/// Runs every variant at every number of sleepers. The snapshots kept are
/// those of the largest number of sleepers.
pub fn run(cfg: &Config, handle: &Handle) -> io::Result<Outcome<Results>> {
    let mut out = Outcome::new(Results::default());
    let largest = cfg.sleepers.iter().copied().max().unwrap_or(0);
    for &n in &cfg.sleepers {
        for &variant in &cfg.variants {
            let connections = cfg.connections_for(variant, n);
            eprintln!("thundering_herd: {variant}, {n} sleepers, {connections} connections");
            let (row, snap) = run_one(variant, n, connections, handle)?;
            if n == largest {
                out.keep_run(
                    variant.name(),
                    format!("{variant}, {n} sleepers"),
                    snap,
                    "accept",
                );
            }
            out.results.rows.push(row);
        }
    }
    Ok(out)
}

/// The accept backlog, guarded by the wait queue's lock.
#[derive(Debug, Default)]
struct Backlog {
    pending: u64,
    stop: bool,
}

/// The listening socket: its wait queue holding the backlog.
struct Listener {
    queue: WaitQueue<Backlog>,
    accepted: AtomicU64,
}

impl Listener {
    /// A server: accepts and closes connections until told to stop.
    fn serve(&self, exclusive: bool) {
        loop {
            let held = self.queue.lock();
            let ready = |b: &mut Backlog| b.pending > 0 || b.stop;
            let mut held: WaitQueueGuard<'_, Backlog> = if exclusive {
                held.wait_event_exclusive_locked(ready)
            } else {
                held.wait_event_locked(ready)
            };
            if held.pending == 0 {
                return; // stopping
            }
            held.pending -= 1;
            drop(held);
            self.accepted.fetch_add(1, Ordering::AcqRel);
        }
    }
}

/// Runs one variant with `sleepers` servers; returns its row and the
/// snapshot of the connections' window.
pub fn run_one(
    variant: Variant,
    sleepers: usize,
    connections: u64,
    handle: &Handle,
) -> io::Result<(Row, Snapshot)> {
    let sleepers = sleepers.max(1);
    let listener = Arc::new(Listener {
        queue: WaitQueue::named_with_data(QUEUE, variant.order(), Backlog::default()),
        accepted: AtomicU64::new(0),
    });
    let mut servers = Vec::with_capacity(sleepers);
    for i in 0..sleepers {
        let l = listener.clone();
        let spawned = meter::spawn(&format!("server-{i}"), Some(SERVER_STACK), move || {
            l.serve(variant.exclusive())
        });
        match spawned {
            Ok(t) => servers.push(t),
            Err(e) => {
                stop(&listener);
                let _ = meter::join_all(servers);
                return Err(e);
            }
        }
    }
    let all_asleep = || listener.queue.waiters() == sleepers;
    wait::poll_until(all_asleep);

    handle.reset();
    let start = Instant::now();
    for i in 1..=connections {
        {
            let mut backlog = listener.queue.lock();
            backlog.pending += 1;
            backlog.wake_up_locked();
        }
        wait::spin_until(|| listener.accepted.load(Ordering::Acquire) == i);
        wait::poll_until(all_asleep);
    }
    let seconds = start.elapsed().as_secs_f64();
    let snap = handle.snapshot();

    stop(&listener);
    meter::join_all(servers)?;

    let q = lock_totals(&snap, QUEUE);
    let per_conn = |v: u64| v as f64 / connections.max(1) as f64;
    let row = Row {
        variant,
        sleepers,
        connections,
        seconds,
        us_per_connection: seconds * 1e6 / connections.max(1) as f64,
        wake_calls: q.wake_calls,
        wakeups: q.wakeups,
        spurious_wakeups: q.spurious_wakeups,
        spurious_per_connection: per_conn(q.spurious_wakeups),
        wake_latency_mean_ns: q.wake_latency_ns.mean(),
    };
    Ok((row, snap))
}

fn stop(listener: &Listener) {
    let mut backlog = listener.queue.lock();
    backlog.stop = true;
    backlog.wake_up_all_locked();
}

/// The results in the shape of the seed's table: one line per number of
/// servers, seconds per 10,000 connections per variant (from the time per
/// connection), then spurious wakeups per connection.
pub fn render(results: &Results) -> String {
    let sleepers = distinct(results.rows.iter().map(|r| r.sleepers));
    let mut t = TextTable::new(
        &[
            "Servers",
            "wake-all",
            "FIFO",
            "LIFO",
            "(s per 10k conns)",
            "spurious/conn: all",
            "FIFO",
            "LIFO",
            "wake-all conns",
        ],
        0,
    );
    let per_10k = |r: &Row| fixed(r.us_per_connection * 10_000.0 / 1e6, 3);
    for n in sleepers {
        let mut cells = vec![n.to_string()];
        for v in Variant::ALL {
            cells.push(results.get(v, n).map_or("-".into(), per_10k));
        }
        cells.push(String::new());
        for v in Variant::ALL {
            cells.push(
                results
                    .get(v, n)
                    .map_or("-".into(), |r| fixed(r.spurious_per_connection, 2)),
            );
        }
        cells.push(
            results
                .get(Variant::WakeAll, n)
                .map_or("-".into(), |r| r.connections.to_string()),
        );
        t.row(cells);
    }
    let connections = results
        .rows
        .iter()
        .filter(|r| r.variant != Variant::WakeAll)
        .map(|r| r.connections)
        .max()
        .unwrap_or(0);
    format!(
        "Thundering herd: connections handed one at a time to N sleeping servers (seed 000)\n\
         wake-one runs hand out {connections} connections; wake-all runs are capped (last column)\n{}",
        t.render()
    )
}
