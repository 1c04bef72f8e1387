//! Seed 001: UDP ping-pong, where TX completion wakes the receiver.
//!
//! Each of two threads owns a socket: a receive queue and one wait queue
//! that carries both "data received" and "send buffer space freed" (TX
//! completion) events, like a socket's `sk_sleep`. Thread A sends a ping
//! and blocks receiving; B receives it, completes A's send (the NIC's
//! interrupt arrives after A has blocked, as on real hardware) and sends
//! the pong. With plain wakeups the completion wakes A, which finds no
//! data and sleeps again: a spurious wakeup per direction, two per round
//! trip. With keyed wakeups the receiver waits for `POLLIN` only and the
//! completion, keyed `POLLOUT`, passes it by.
//!
//! Placements pin both threads to one CPU or to two different ones.

use std::collections::VecDeque;
use std::io;
use std::sync::Arc;
use std::time::Instant;

use lockmeter::{Handle, SpinLock, WaitQueue};
use lockmeter_model::Snapshot;
use serde::{Deserialize, Serialize};

use crate::report::{fixed, lock_totals, Outcome, TextTable};
use crate::{affinity, meter, wait};

/// The sockets' wait queue.
pub const QUEUE: &str = "sock.wait";
/// The sockets' receive queue lock.
pub const RX_LOCK: &str = "sock.rx";
/// Key of "data received" events.
pub const POLLIN: u64 = 0x001;
/// Key of "send buffer space freed" events.
pub const POLLOUT: u64 = 0x004;

seed_enum! {
    /// How the socket's wait queue is woken.
    pub enum Variant {
        /// Every event wakes every waiter.
        Plain = ("plain", "plain"),
        /// Events carry a key; a receiver only wakes for `POLLIN`.
        Keyed = ("keyed", "keyed"),
    }
}

seed_enum! {
    /// Where the two threads run.
    pub enum Placement {
        SameCpu = ("same_cpu", "same CPU"),
        DifferentCpus = ("different_cpus", "different CPUs"),
    }
}

impl Placement {
    /// The CPUs for thread A and thread B, from the allowed ones.
    fn cpus(self, allowed: &[usize]) -> Option<(usize, usize)> {
        match (self, allowed) {
            (Placement::SameCpu, [a, ..]) => Some((*a, *a)),
            (Placement::DifferentCpus, [a, b, ..]) => Some((*a, *b)),
            _ => None,
        }
    }
}

/// Sizes of a run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    pub rounds: u64,
    pub placements: Vec<Placement>,
    pub variants: Vec<Variant>,
}

impl Config {
    pub fn full() -> Config {
        Config {
            rounds: 20_000,
            placements: Placement::ALL.to_vec(),
            variants: Variant::ALL.to_vec(),
        }
    }

    pub fn quick() -> Config {
        Config {
            rounds: 1_000,
            ..Config::full()
        }
    }
}

/// One variant at one placement.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Row {
    pub placement: Placement,
    pub variant: Variant,
    /// Whether both threads were pinned as the placement asks.
    pub pinned: bool,
    pub rounds: u64,
    /// Round trip as thread A sees it, send to reply received.
    pub rtt_mean_us: f64,
    pub rtt_p50_us: f64,
    pub rtt_p99_us: f64,
    pub wakeups_per_round_trip: f64,
    pub spurious_per_round_trip: f64,
    pub spurious_wakeups: u64,
    pub wake_latency_mean_ns: u64,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Results {
    pub rows: Vec<Row>,
}

impl Results {
    pub fn get(&self, placement: Placement, variant: Variant) -> Option<&Row> {
        self.rows
            .iter()
            .find(|r| r.placement == placement && r.variant == variant)
    }
}

/// Runs every variant at every placement the machine allows.
pub fn run(cfg: &Config, handle: &Handle) -> io::Result<Outcome<Results>> {
    let allowed = affinity::allowed_cpus();
    let mut out = Outcome::new(Results::default());
    for &placement in &cfg.placements {
        let cpus = placement.cpus(&allowed);
        if cpus.is_none() {
            out.notes.push(format!(
                "{placement}: only CPUs {allowed:?} are available; ran unpinned"
            ));
        }
        for &variant in &cfg.variants {
            eprintln!(
                "keyed_wakeups: {variant} wakeups, {placement}, {} round trips",
                cfg.rounds
            );
            let (row, snap) = run_one(variant, placement, cpus, cfg.rounds, handle)?;
            if !row.pinned && cpus.is_some() {
                out.notes.push(format!(
                    "{placement}/{variant}: pinning failed; ran unpinned"
                ));
            }
            out.keep_run(
                format!("{}-{}", variant.name(), placement.name()),
                format!("{variant} wakeups, {placement}"),
                snap,
                "sock",
            );
            out.results.rows.push(row);
        }
    }
    Ok(out)
}

/// A datagram: just its sequence number.
type Datagram = u64;

/// The datagram that ends the exchange.
const FIN: Datagram = u64::MAX;

/// One socket: a receive queue and the wait queue its events wake.
struct Socket {
    rx: SpinLock<VecDeque<Datagram>>,
    wq: WaitQueue,
}

impl Socket {
    fn new() -> Socket {
        Socket {
            rx: SpinLock::named(RX_LOCK, VecDeque::new()),
            wq: WaitQueue::named(QUEUE),
        }
    }

    /// `recvfrom()`: blocks until a datagram is queued.
    fn recv(&self, variant: Variant) -> Datagram {
        loop {
            let mut got = None;
            let cond = || {
                got = self.rx.lock().pop_front();
                got.is_some()
            };
            match variant {
                Variant::Plain => self.wq.wait_event(cond),
                Variant::Keyed => self.wq.wait_event_keyed(POLLIN, cond),
            }
            if let Some(d) = got {
                return d;
            }
        }
    }

    /// The peer's `sendto()` delivering `d` here: queue it, wake readers.
    fn deliver(&self, d: Datagram, variant: Variant) {
        self.rx.lock().push_back(d);
        match variant {
            Variant::Plain => self.wq.wake_up(),
            Variant::Keyed => self.wq.wake_up_key(POLLIN),
        };
    }

    /// The NIC completed this socket's last send (`sock_wfree` ->
    /// `sk_write_space`). It arrives once the owner is blocked receiving,
    /// and the reply is only sent once the owner has dealt with it.
    fn complete_tx(&self, variant: Variant) {
        let asleep = || self.wq.waiters() > 0;
        wait::poll_until(asleep);
        match variant {
            Variant::Plain => self.wq.wake_up(),
            Variant::Keyed => self.wq.wake_up_key(POLLOUT),
        };
        wait::poll_until(asleep);
    }
}

/// Runs `rounds` round trips of one variant with threads on `cpus`.
pub fn run_one(
    variant: Variant,
    placement: Placement,
    cpus: Option<(usize, usize)>,
    rounds: u64,
    handle: &Handle,
) -> io::Result<(Row, Snapshot)> {
    let a = Arc::new(Socket::new());
    let b = Arc::new(Socket::new());
    handle.reset();

    let (a2, b2) = (a.clone(), b.clone());
    let server = meter::spawn("pong", None, move || {
        let pinned = cpus.is_some_and(|(_, cpu)| affinity::pin_current_thread(cpu));
        loop {
            let ping = b2.recv(variant);
            if ping == FIN {
                return pinned;
            }
            a2.complete_tx(variant);
            a2.deliver(ping, variant);
        }
    })?;
    let (a3, b3) = (a.clone(), b.clone());
    let client = meter::spawn("ping", None, move || {
        let pinned = cpus.is_some_and(|(cpu, _)| affinity::pin_current_thread(cpu));
        let mut rtt = Vec::with_capacity(rounds as usize);
        // Start once the peer is blocked receiving, as every later round does.
        wait::poll_until(|| b3.wq.waiters() > 0);
        for seq in 0..rounds {
            let start = Instant::now();
            b3.deliver(seq, variant);
            let _pong = a3.recv(variant);
            rtt.push(start.elapsed().as_nanos() as u64);
            b3.complete_tx(variant);
        }
        b3.deliver(FIN, variant);
        (pinned, rtt)
    })?;
    let (client_pinned, mut rtt) = client
        .join()
        .map_err(|_| io::Error::other("ping thread panicked"))?;
    let server_pinned = server
        .join()
        .map_err(|_| io::Error::other("pong thread panicked"))?;
    let snap = handle.snapshot();

    rtt.sort_unstable();
    let q = lock_totals(&snap, QUEUE);
    let per_rt = |v: u64| v as f64 / rounds.max(1) as f64;
    let row = Row {
        placement,
        variant,
        pinned: client_pinned && server_pinned,
        rounds,
        rtt_mean_us: mean(&rtt) / 1e3,
        rtt_p50_us: percentile(&rtt, 0.50) / 1e3,
        rtt_p99_us: percentile(&rtt, 0.99) / 1e3,
        wakeups_per_round_trip: per_rt(q.wakeups),
        spurious_per_round_trip: per_rt(q.spurious_wakeups),
        spurious_wakeups: q.spurious_wakeups,
        wake_latency_mean_ns: q.wake_latency_ns.mean(),
    };
    Ok((row, snap))
}

fn mean(sorted: &[u64]) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    sorted.iter().map(|&v| v as f64).sum::<f64>() / sorted.len() as f64
}

fn percentile(sorted: &[u64], q: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let i = ((sorted.len() - 1) as f64 * q).round() as usize;
    sorted[i.min(sorted.len() - 1)] as f64
}

/// The results in the shape of the seed's tables: a block per placement,
/// round-trip latency in µs.
pub fn render(results: &Results) -> String {
    let rounds = results.rows.first().map_or(0, |r| r.rounds);
    let mut t = TextTable::new(
        &[
            "Placement",
            "Wakeups",
            "RTT mean (us)",
            "p50",
            "p99",
            "wakeups/RT",
            "spurious/RT",
            "pinned",
        ],
        2,
    );
    for r in &results.rows {
        t.row(vec![
            r.placement.to_string(),
            r.variant.to_string(),
            fixed(r.rtt_mean_us, 2),
            fixed(r.rtt_p50_us, 2),
            fixed(r.rtt_p99_us, 2),
            fixed(r.wakeups_per_round_trip, 2),
            fixed(r.spurious_per_round_trip, 2),
            if r.pinned { "yes" } else { "no" }.to_string(),
        ]);
    }
    format!(
        "UDP-like ping-pong, {rounds} round trips per line (seed 001)\n{}",
        t.render()
    )
}
