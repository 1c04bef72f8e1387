//! Wait-queue semantics and their recording: exclusive wake-one, keyed
//! wakes, FIFO/LIFO order, spurious wake-ups counted exactly, locked
//! operations, timeouts.

mod common;

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex as StdMutex};
use std::time::Duration;

use common::{lock, observe, spawn_observed};
use lockmeter::{Wait, WaitQueue, WakeOrder};

/// Blocks until the waiters' conditions were evaluated `n` times in all.
/// A waiter checks before queueing, after queueing and after every
/// wake-up, so counting checks tells when every waiter is truly asleep.
fn until_checked(checks: &AtomicUsize, n: usize) {
    while checks.load(Ordering::Acquire) < n {
        std::thread::yield_now();
    }
}

#[test]
fn wake_up_wakes_exactly_one_exclusive_waiter() {
    let q = Arc::new(WaitQueue::named("wq.one"));
    let tokens = Arc::new(AtomicUsize::new(0));
    let done = Arc::new(AtomicUsize::new(0));
    let checks = Arc::new(AtomicUsize::new(0));
    let ts: Vec<_> = (0..3)
        .map(|_| {
            let (q, tokens, done, checks) =
                (q.clone(), tokens.clone(), done.clone(), checks.clone());
            std::thread::spawn(move || {
                q.wait_event_exclusive(|| {
                    checks.fetch_add(1, Ordering::AcqRel);
                    tokens
                        .fetch_update(Ordering::AcqRel, Ordering::Acquire, |t| t.checked_sub(1))
                        .is_ok()
                });
                done.fetch_add(1, Ordering::AcqRel);
            })
        })
        .collect();
    until_checked(&checks, 6);
    tokens.fetch_add(1, Ordering::AcqRel);
    assert_eq!(q.wake_up(), 1);
    while done.load(Ordering::Acquire) < 1 {
        std::thread::yield_now();
    }
    std::thread::sleep(Duration::from_millis(20));
    assert_eq!(done.load(Ordering::Acquire), 1, "only one waiter may run");
    assert_eq!(q.waiters(), 2);
    tokens.fetch_add(2, Ordering::AcqRel);
    assert_eq!(q.wake_up_all(), 2);
    ts.into_iter().for_each(|t| t.join().unwrap());
}

#[test]
fn exclusive_waiters_wake_in_the_queue_order() {
    for (order, expected) in [
        (WakeOrder::Fifo, vec![0, 1, 2]),
        (WakeOrder::Lifo, vec![2, 1, 0]),
    ] {
        let q = Arc::new(WaitQueue::named_with_order("wq.order", order));
        let woken = Arc::new(StdMutex::new(Vec::new()));
        let go: Arc<Vec<AtomicBool>> = Arc::new((0..3).map(|_| AtomicBool::new(false)).collect());
        let checks = Arc::new(AtomicUsize::new(0));
        let mut ts = Vec::new();
        for i in 0..3usize {
            let (q2, woken, go, c2) = (q.clone(), woken.clone(), go.clone(), checks.clone());
            ts.push(std::thread::spawn(move || {
                // Every waiter accepts any wake-up, so the order is the queue's.
                q2.wait_event_exclusive(|| {
                    c2.fetch_add(1, Ordering::AcqRel);
                    go.iter().any(|g| g.swap(false, Ordering::AcqRel))
                });
                woken.lock().unwrap().push(i);
            }));
            // Queue them one by one, each asleep before the next comes.
            until_checked(&checks, 2 * (i + 1));
        }
        for n in 1..=3 {
            go[0].store(true, Ordering::Release);
            assert_eq!(q.wake_up(), 1);
            while woken.lock().unwrap().len() < n {
                std::thread::yield_now();
            }
        }
        ts.into_iter().for_each(|t| t.join().unwrap());
        assert_eq!(*woken.lock().unwrap(), expected, "{order:?}");
    }
}

#[test]
fn keyed_wake_wakes_only_matching_waiters() {
    const RX: u64 = 0b01;
    const TX: u64 = 0b10;
    let q = Arc::new(WaitQueue::named("wq.keyed"));
    let rx_ready = Arc::new(AtomicBool::new(false));
    let checks = Arc::new(AtomicUsize::new(0));
    let (q2, r2, c2) = (q.clone(), rx_ready.clone(), checks.clone());
    let t = std::thread::spawn(move || {
        q2.wait_event_keyed(RX, || {
            c2.fetch_add(1, Ordering::AcqRel);
            r2.load(Ordering::Acquire)
        })
    });
    until_checked(&checks, 2);
    assert_eq!(
        q.wake_up_key(TX),
        0,
        "a TX event must not wake an RX waiter"
    );
    assert_eq!(q.waiters(), 1);
    rx_ready.store(true, Ordering::Release);
    assert_eq!(q.wake_up_key(RX), 1);
    t.join().unwrap();
}

#[test]
fn spurious_wakeups_are_counted_exactly() {
    // One waiter; three wake calls with the condition false, then one with
    // it true: exactly three spurious wake-ups, four wakeups, one wait.
    let (handle, ()) = observe(|| {
        let q = Arc::new(WaitQueue::named("wq.spurious"));
        let ready = Arc::new(AtomicBool::new(false));
        let checks = Arc::new(AtomicUsize::new(0));
        let (q2, r2, c2) = (q.clone(), ready.clone(), checks.clone());
        let t = spawn_observed(move || {
            q2.wait_event(|| {
                c2.fetch_add(1, Ordering::AcqRel);
                r2.load(Ordering::Acquire)
            })
        });
        // Initial check + re-check after queueing = 2 checks before sleeping.
        let mut expected_checks = 2;
        for _ in 0..3 {
            until_checked(&checks, expected_checks);
            assert_eq!(q.wake_up(), 1);
            // After a spurious wake-up: the re-check, then re-queue and check.
            expected_checks += 2;
        }
        until_checked(&checks, expected_checks);
        ready.store(true, Ordering::Release);
        assert_eq!(q.wake_up(), 1);
        t.join().unwrap();
    });
    let snap = handle.snapshot();
    let wq = &lock(&snap, "wq.spurious").total;
    assert_eq!(wq.spurious_wakeups, 3);
    assert_eq!(wq.wakeups, 4);
    assert_eq!(wq.wake_calls, 4);
    assert_eq!(wq.waits, 1);
    assert_eq!(wq.sleeps, 4);
    assert_eq!(wq.wake_latency_ns.count, 4);
    assert_eq!(wq.acquisitions, 1);
    assert_eq!(wq.exclusive_wakeups, 0);
}

#[test]
fn waking_non_exclusive_waiters_counts_the_herd_exactly() {
    // N sleepers, one token per round: round r wakes the N-r sleepers left,
    // one takes the token and N-r-1 go back to sleep, spuriously woken.
    const N: u64 = 8;
    let (handle, ()) = observe(|| {
        let q = Arc::new(WaitQueue::named("wq.herd"));
        let token = Arc::new(AtomicUsize::new(0));
        let checks = Arc::new(AtomicUsize::new(0));
        let ts: Vec<_> = (0..N)
            .map(|_| {
                let (q, token, checks) = (q.clone(), token.clone(), checks.clone());
                spawn_observed(move || {
                    q.wait_event(|| {
                        checks.fetch_add(1, Ordering::AcqRel);
                        token
                            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |t| t.checked_sub(1))
                            .is_ok()
                    })
                })
            })
            .collect();
        // Two checks each before the first sleep; in round r the N-r woken
        // check once and the N-r-1 losers check again after re-queueing.
        let mut expected = 2 * N;
        for round in 0..N {
            until_checked(&checks, expected as usize);
            expected += 2 * (N - round) - 1;
            token.fetch_add(1, Ordering::AcqRel);
            assert_eq!(q.wake_up() as u64, N - round);
            while token.load(Ordering::Acquire) != 0 {
                std::thread::yield_now();
            }
        }
        ts.into_iter().for_each(|t| t.join().unwrap());
    });
    let snap = handle.snapshot();
    let wq = &lock(&snap, "wq.herd").total;
    assert_eq!(wq.acquisitions, N);
    assert_eq!(wq.wakeups, N * (N + 1) / 2);
    assert_eq!(wq.spurious_wakeups, N * (N - 1) / 2);
    assert_eq!(wq.wake_calls, N);
    assert_eq!(wq.max_waiters, N);
}

#[test]
fn timed_out_waits_are_rejected() {
    let (handle, ok) = observe(|| {
        let q = WaitQueue::named("wq.timeout");
        q.wait_event_with(Wait::exclusive().timeout(Duration::from_millis(5)), || {
            false
        })
    });
    assert!(!ok);
    let snap = handle.snapshot();
    let wq = &lock(&snap, "wq.timeout").total;
    assert_eq!((wq.rejected, wq.acquisitions, wq.waits), (1, 0, 1));
}

#[test]
fn locked_operations_take_the_queue_lock_once() {
    // The data lives under the queue's own lock: one acquisition per event
    // for the producer, none extra for the wake.
    const EVENTS: u64 = 500;
    let (handle, ()) = observe(|| {
        let q = Arc::new(WaitQueue::named_with_data(
            "wq.locked",
            WakeOrder::Fifo,
            Vec::<u64>::new(),
        ));
        let q2 = q.clone();
        let consumer = spawn_observed(move || {
            let mut got = 0;
            while got < EVENTS {
                let mut g = q2
                    .lock()
                    .wait_event_exclusive_locked(|ready| !ready.is_empty());
                got += g.drain(..).count() as u64;
            }
        });
        for i in 0..EVENTS {
            let mut g = q.lock();
            g.push(i);
            g.wake_up_locked();
        }
        consumer.join().unwrap();
    });
    let snap = handle.snapshot();
    let inner = lock(&snap, "wq.locked.lock");
    let producer_site = inner
        .sites
        .iter()
        .find(|s| s.site.contains("waitqueue_semantics.rs") && s.stats.acquisitions == EVENTS);
    assert!(
        producer_site.is_some(),
        "producer takes the queue lock once per event: {:?}",
        inner.sites
    );
}
