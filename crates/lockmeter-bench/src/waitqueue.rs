//! Exclusive wake-one cost with 1000 waiters queued against 1.
//!
//! Two FIFO `WaitQueue`s are filled with real sleeping threads, one with
//! 1000 and one with 1. Each waiter waits exclusively for a flag that stays
//! false, so every wake-up is spurious and the woken waiter re-queues at
//! the tail: the queue length is back to N after every round, and the
//! FIFO queue wakes each of the 1000 threads in turn.
//!
//! The timed operation is one `wake_up()` call on the waker's thread
//! (pop the head, mark it woken, unpark it: one futex wake), with the
//! waker waiting, untimed, for the woken waiter to re-queue and fall asleep
//! again before the next round. The waker runs on CPU 0 and the waiters on
//! CPU 1 (where the machine has two), so that a woken waiter never preempts
//! the waker inside the timed call. Rounds alternate between the two queues; the row is the median of
//! the pairwise ratios of rounds. O(1) wake-one means the ratio stays near 1.

use std::hint::black_box;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use lockmeter::WaitQueue;

use crate::measure::{pin_to, unpin, Config, Pair};
use crate::report::{Goal, Row, Unit};

/// Waiters in the long queue.
pub const MANY: usize = 1000;

/// How long to wait for waiters to (re)queue before giving up.
const PATIENCE: Duration = Duration::from_secs(30);

/// Untimed pause after each round for the woken waiter to park again.
const SETTLE: Duration = Duration::from_micros(50);

/// A queue with `n` threads asleep in it.
struct Rig {
    queue: Arc<WaitQueue>,
    stop: Arc<AtomicBool>,
    threads: Vec<JoinHandle<()>>,
    n: usize,
}

impl Rig {
    /// Starts `n` waiters (on CPU `cpu` if given) and waits until all
    /// are queued.
    fn start(n: usize, cpu: Option<usize>) -> Result<Rig, String> {
        let mut rig = Rig {
            queue: Arc::new(WaitQueue::named("bench.waitqueue")),
            stop: Arc::new(AtomicBool::new(false)),
            threads: Vec::with_capacity(n),
            n,
        };
        for i in 0..n {
            let (q, stop) = (rig.queue.clone(), rig.stop.clone());
            let t = std::thread::Builder::new()
                .name(format!("waiter-{i}"))
                .stack_size(64 * 1024)
                .spawn(move || {
                    if let Some(cpu) = cpu {
                        pin_to(cpu);
                    }
                    q.wait_event_exclusive(|| stop.load(Ordering::Acquire))
                })
                .map_err(|e| format!("could not start waiter {i} of {n}: {e}"))?;
            rig.threads.push(t);
        }
        rig.until_queued()?;
        Ok(rig)
    }

    /// Waits (untimed) until all `n` waiters are queued again.
    fn until_queued(&self) -> Result<(), String> {
        let t0 = Instant::now();
        let mut polls = 0u32;
        while self.queue.waiters() != self.n {
            polls += 1;
            if polls < 64 {
                std::hint::spin_loop();
            } else {
                std::thread::yield_now();
            }
            if t0.elapsed() > PATIENCE {
                return Err(format!(
                    "only {} of {} waiters queued after {PATIENCE:?}",
                    self.queue.waiters(),
                    self.n
                ));
            }
        }
        Ok(())
    }

    /// Times one `wake_up()`, then waits for the woken waiter to re-queue.
    /// Returns (wake_up ns, wake-to-requeued ns).
    fn round(&self) -> Result<(f64, f64), String> {
        let t0 = Instant::now();
        let woken = black_box(self.queue.wake_up());
        let t1 = Instant::now();
        if woken != 1 {
            return Err(format!("wake_up woke {woken} waiters, expected 1"));
        }
        self.until_queued()?;
        let t2 = Instant::now();
        // Let the re-queued waiter fall asleep, so that every timed wake
        // has to unpark a sleeping thread (a waiter caught before it parks
        // would need no futex wake and make the short queue look cheap).
        std::thread::sleep(SETTLE);
        Ok(((t1 - t0).as_nanos() as f64, (t2 - t0).as_nanos() as f64))
    }
}

impl Drop for Rig {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
        self.queue.wake_up_all();
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

/// The wake-one row (and the round-trip row, for information).
pub fn rows(cfg: &Config) -> Vec<Row> {
    let wake = Row::new(
        "waitqueue_wake_one_1000_vs_1",
        "WaitQueue wake_up(), 1000 queued vs 1",
        Unit::NsPerOp,
        Goal::RatioAtMost(1.2),
    );
    let trip = Row::new(
        "waitqueue_wake_requeue_1000_vs_1",
        "WaitQueue wake_up() + woken re-queued",
        Unit::NsPerOp,
        Goal::Info,
    );
    match measure(cfg) {
        Ok((w, r)) => vec![
            wake.with_pair(w)
                .note("bare = 1 waiter queued, instrumented = 1000 queued; observed"),
            trip.with_pair(r),
        ],
        Err(e) => vec![wake.note(format!("not measured: {e}")), trip],
    }
}

fn measure(cfg: &Config) -> Result<(Pair, Pair), String> {
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let pinned = cpus >= 2 && pin_to(0);
    let waiter_cpu = pinned.then_some(1);
    let result = measure_on(cfg, waiter_cpu);
    if pinned {
        unpin(cpus);
    }
    result
}

fn measure_on(cfg: &Config, waiter_cpu: Option<usize>) -> Result<(Pair, Pair), String> {
    let one = Rig::start(1, waiter_cpu)?;
    let many = Rig::start(MANY, waiter_cpu)?;
    // Warm up: let every waiter of the long queue go round once.
    for _ in 0..MANY.min(cfg.wakes) {
        many.round()?;
        one.round()?;
    }
    let (mut w1, mut wn, mut r1, mut rn) = (vec![], vec![], vec![], vec![]);
    for _ in 0..cfg.wakes {
        let (w, r) = one.round()?;
        w1.push(w);
        r1.push(r);
        let (w, r) = many.round()?;
        wn.push(w);
        rn.push(r);
    }
    Ok((Pair::from_runs(&w1, &wn), Pair::from_runs(&r1, &rn)))
}
