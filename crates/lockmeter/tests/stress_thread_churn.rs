//! Stress: threads start, lock and exit continuously while another thread
//! takes snapshots. Counts of exited threads must survive exactly, and the
//! process must not keep growing: RSS and open file descriptors are read
//! from /proc before and after and printed.

mod stress_common;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use lockmeter::{Mutex, SpinLock};
use stress_common::{observed, open_fds, row, rss_kib, size, spawn_observed, watchdog};

/// Generous: a leak of a few KiB per thread over thousands of threads
/// would show, allocator noise will not.
const MAX_RSS_GROWTH_KIB: u64 = 200 * 1024;

#[test]
fn churning_threads_are_counted_exactly_and_memory_stays_bounded() {
    let rounds = size(200, 5000);
    let per_round = size(40, 50);
    let iters = 50u64;
    let spin = Arc::new(SpinLock::named("stress.churn.spin", 0u64));
    let mutex = Arc::new(Mutex::named("stress.churn.mutex", 0u64));
    let spawned = Arc::new(AtomicU64::new(0));
    let (s2, sp2, m2) = (spawned.clone(), spin.clone(), mutex.clone());
    let status = move || {
        format!(
            "{} threads spawned; spin locked={}, mutex locked={}",
            s2.load(Ordering::Acquire),
            sp2.is_locked(),
            m2.is_locked()
        )
    };
    let started = Instant::now();
    let (handle, figures) = watchdog("thread_churn", status, move || {
        observed(|handle| {
            let round = |n: u64| {
                let ts: Vec<_> = (0..n)
                    .map(|i| {
                        let (spin, mutex) = (spin.clone(), mutex.clone());
                        spawned.fetch_add(1, Ordering::AcqRel);
                        spawn_observed(move || {
                            for _ in 0..iters {
                                if i % 2 == 0 {
                                    *spin.lock() += 1;
                                } else {
                                    *mutex.lock() += 1;
                                }
                            }
                        })
                    })
                    .collect();
                ts.into_iter()
                    .for_each(|t| t.join().expect("churn thread panicked"));
            };
            // Warm up allocator arenas and thread-locals before measuring.
            round(per_round);
            let (rss0, fds0) = (rss_kib(), open_fds());
            let stop = Arc::new(AtomicBool::new(false));
            let (h, s) = (handle.clone(), stop.clone());
            let snapper = std::thread::spawn(move || {
                let mut taken = 0u64;
                while !s.load(Ordering::Acquire) {
                    std::hint::black_box(h.snapshot());
                    taken += 1;
                    std::thread::sleep(Duration::from_millis(1));
                }
                taken
            });
            for _ in 0..rounds {
                round(per_round);
            }
            stop.store(true, Ordering::Release);
            let snapshots = snapper.join().expect("snapshot thread panicked");
            (rss0, fds0, rss_kib(), open_fds(), snapshots)
        })
    });
    let (rss0, fds0, rss1, fds1, snapshots) = figures;
    let threads = (rounds + 1) * per_round;
    let snap = handle.snapshot();
    let spin_n = row(&snap, "stress.churn.spin").total.acquisitions;
    let mutex_n = row(&snap, "stress.churn.mutex").total.acquisitions;
    let expected_each = threads / 2 * iters;
    println!(
        "[thread_churn] threads={threads} snapshots_during_run={snapshots} elapsed={:.2?}",
        started.elapsed()
    );
    println!(
        "[thread_churn] acquisitions counted spin={spin_n} mutex={mutex_n} expected={expected_each} each"
    );
    println!(
        "[thread_churn] VmRSS before={rss0} KiB after={rss1} KiB growth={} KiB; fds before={fds0} after={fds1}",
        rss1.saturating_sub(rss0)
    );
    assert_eq!(spin_n, expected_each);
    assert_eq!(mutex_n, expected_each);
    assert!(
        rss1.saturating_sub(rss0) < MAX_RSS_GROWTH_KIB,
        "RSS grew from {rss0} KiB to {rss1} KiB over {threads} threads"
    );
    assert!(fds1 <= fds0, "open fds grew from {fds0} to {fds1}");
}
