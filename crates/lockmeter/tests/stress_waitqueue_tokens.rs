//! Stress: a producer hands out numbered tokens, waking with `wake_up`,
//! `wake_up_nr`, `wake_up_key` and `wake_up_all`, while consumers wait as
//! exclusive, shared and keyed waiters with short timeouts that race the
//! wakes, retrying on timeout. Every token must be taken exactly once,
//! nobody may hang, and the queue's row must count one acquisition per
//! token and one rejection per timed-out wait.

mod stress_common;

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};
use std::sync::{Arc, Mutex as StdMutex};
use std::time::{Duration, Instant};

use lockmeter::{Wait, WaitQueue};
use stress_common::{observed, row, size, spawn_observed, watchdog, Rng};

struct Board {
    queue: WaitQueue,
    /// Tokens handed out and not yet taken. A std mutex, so that only the
    /// wait queue under test shows in the snapshot.
    ready: StdMutex<VecDeque<u64>>,
    /// How often each token was taken.
    taken: Vec<AtomicU8>,
    consumed: AtomicU64,
}

impl Board {
    fn take(&self) -> Option<u64> {
        let t = self.ready.lock().unwrap().pop_front()?;
        self.taken[t as usize].fetch_add(1, Ordering::AcqRel);
        self.consumed.fetch_add(1, Ordering::AcqRel);
        Some(t)
    }
}

#[test]
fn every_token_is_taken_exactly_once_despite_racing_timeouts() {
    let tokens = size(100_000, 2_000_000);
    let consumers = size(24, 256);
    let board = Arc::new(Board {
        queue: WaitQueue::named("stress.tokens.wq"),
        ready: StdMutex::new(VecDeque::new()),
        taken: (0..tokens).map(|_| AtomicU8::new(0)).collect(),
        consumed: AtomicU64::new(0),
    });
    let b2 = board.clone();
    let status = move || {
        format!(
            "stress.tokens.wq waiters={}, consumed {}/{tokens}, ready={}",
            b2.queue.waiters(),
            b2.consumed.load(Ordering::Acquire),
            b2.ready.lock().map(|r| r.len()).unwrap_or(usize::MAX)
        )
    };
    let started = Instant::now();
    let b = board.clone();
    let (handle, (successes, timeouts, wakes)) = watchdog("waitqueue_tokens", status, move || {
        observed(|_| {
            let cs: Vec<_> = (0..consumers)
                .map(|i| {
                    let b = b.clone();
                    spawn_observed(move || {
                        let mut rng = Rng::new(i + 7);
                        let (mut ok, mut timed_out) = (0u64, 0u64);
                        while b.consumed.load(Ordering::Acquire) < tokens {
                            let how = match i % 3 {
                                0 => Wait::exclusive(),
                                1 => Wait::shared(),
                                _ => Wait::shared().keyed(1 << (i % 4)),
                            };
                            let wait = Duration::from_micros(100 + rng.below(900));
                            if b.queue
                                .wait_event_with(how.timeout(wait), || b.take().is_some())
                            {
                                ok += 1;
                            } else {
                                timed_out += 1;
                            }
                        }
                        (ok, timed_out)
                    })
                })
                .collect();
            let mut rng = Rng::new(1);
            let mut wakes = 0u64;
            let mut next = 0u64;
            while next < tokens {
                let batch = (1 + rng.below(4)).min(tokens - next);
                {
                    let mut ready = b.ready.lock().unwrap();
                    ready.extend(next..next + batch);
                }
                next += batch;
                wakes += match rng.below(4) {
                    0 => b.queue.wake_up(),
                    1 => b.queue.wake_up_nr(batch as usize),
                    2 => b.queue.wake_up_key(1 << rng.below(4)),
                    _ => b.queue.wake_up_all(),
                } as u64;
                if rng.below(16) == 0 {
                    std::thread::yield_now();
                }
            }
            let (mut ok, mut timed_out) = (0, 0);
            for c in cs {
                let (o, t) = c.join().expect("consumer panicked");
                ok += o;
                timed_out += t;
            }
            (ok, timed_out, wakes)
        })
    });
    let snap = handle.snapshot();
    let wq = &row(&snap, "stress.tokens.wq").total;
    println!(
        "[waitqueue_tokens] tokens={tokens} consumers={consumers} wakes={wakes} elapsed={:.2?}",
        started.elapsed()
    );
    println!(
        "[waitqueue_tokens] successful waits counted={} expected={successes}; timed out counted={} expected={timeouts}; wakeups={} spurious={} max_waiters={}",
        wq.acquisitions, wq.rejected, wq.wakeups, wq.spurious_wakeups, wq.max_waiters
    );
    let wrong: Vec<(usize, u8)> = board
        .taken
        .iter()
        .map(|t| t.load(Ordering::Acquire))
        .enumerate()
        .filter(|&(_, n)| n != 1)
        .take(10)
        .collect();
    assert!(
        wrong.is_empty(),
        "tokens not taken exactly once (token, times): {wrong:?}"
    );
    assert_eq!(successes, tokens, "one successful wait per token");
    assert_eq!(wq.acquisitions, successes);
    assert_eq!(wq.rejected, timeouts);
    assert_eq!(board.queue.waiters(), 0);
}
