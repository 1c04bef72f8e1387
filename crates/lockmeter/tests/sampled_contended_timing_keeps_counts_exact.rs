//! After the first 64 contended acquisitions of a site, only a sample of
//! them is timed (`sampling.contended_wait_every`); every count stays
//! exact and the wait distribution is scaled to stand for all of them.

mod common;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{lock, observe_with, spawn_observed};
use lockmeter::{Mutex, SpinLock};

/// Rounds of forced contention: far more than the 64 always timed.
const ROUNDS: u64 = 600;
/// How long the holder keeps the lock once the other thread is about to
/// take it: every one of those waits lasts at least this long.
const HOLD: Duration = Duration::from_micros(50);

/// `ROUNDS` times, this thread takes `take`'s lock and, once the other
/// thread announces it is about to take it too, keeps it for `HOLD`; the
/// other thread's acquisition waits. Each round begins once the other
/// thread's acquisition of the last one is done (an unfair lock would
/// otherwise go back to this thread every time).
fn contend(take: impl Fn(&dyn Fn()) + Send + Sync + 'static) {
    let take = Arc::new(take);
    // Round numbers: this thread holds the lock for round r; the other
    // thread is about to take it in round r; it has taken it in round r.
    let holding = Arc::new(AtomicU64::new(0));
    let about_to = Arc::new(AtomicU64::new(0));
    let done = Arc::new(AtomicU64::new(0));
    let wait_for = |a: &AtomicU64, r: u64| {
        while a.load(Ordering::Acquire) < r {
            std::hint::spin_loop();
        }
    };
    let waiter = {
        let (take, holding, about_to, done) = (
            Arc::clone(&take),
            Arc::clone(&holding),
            Arc::clone(&about_to),
            Arc::clone(&done),
        );
        spawn_observed(move || {
            for r in 1..=ROUNDS {
                wait_for(&holding, r);
                about_to.store(r, Ordering::Release);
                take(&|| {});
                done.store(r, Ordering::Release);
            }
        })
    };
    for r in 1..=ROUNDS {
        take(&|| {
            holding.store(r, Ordering::Release);
            wait_for(&about_to, r);
            let t = Instant::now();
            while t.elapsed() < HOLD {
                std::hint::spin_loop();
            }
        });
        wait_for(&done, r);
    }
    waiter.join().unwrap();
}

/// One test at a time: with both running, four spinning threads share
/// two CPUs, the waits outlast a watchdog tick, and every one is timed
/// (as it should be), leaving nothing to sample.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Runs `run` until its snapshot shows contended acquisitions the sample
/// left untimed, at most `ATTEMPTS` times, checking each; fails if none
/// ever does. (On a loaded machine a spinning thread loses its CPU for
/// milliseconds, its wait outlasts a watchdog tick and is timed, as it
/// must be; a run can then time every one.)
fn check(id: &str, run: impl Fn()) {
    const ATTEMPTS: usize = 3;
    let untimed: Vec<u64> = (0..ATTEMPTS)
        .scan(false, |found, _| {
            (!*found).then(|| {
                let n = check_once(id, &run);
                *found = n > 0;
                n
            })
        })
        .collect();
    assert!(
        untimed.last().is_some_and(|&n| n > 0),
        "no run left a contended acquisition untimed: {untimed:?}"
    );
}

/// One run: every count exact; how many contended acquisitions the sample
/// left untimed.
fn check_once(id: &str, run: &impl Fn()) -> u64 {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    // Stacks off: a drawn stack times its wait, and on a loaded machine
    // the mean wait grows until every wait draws one.
    let builder = lockmeter::Layer::builder().stack_rate(Duration::ZERO);
    let (handle, ()) = observe_with(builder, run);
    let snap = handle.snapshot();
    assert_eq!(snap.sampling.contended_wait_every, 64);
    let l = lock(&snap, id);
    let s = &l.total;
    assert_eq!(s.acquisitions, 2 * ROUNDS);
    assert_eq!(s.nowait + s.contended, s.acquisitions);
    assert!(
        s.contended > 64 + 64,
        "the test forces contention: {} contended",
        s.contended
    );
    // Exact counts, whatever was timed.
    assert_eq!(s.wait_ns.count, s.contended);
    assert_eq!(s.hold_ns.count, s.acquisitions);
    let charged: u64 = l.holders.iter().map(|h| h.contended).sum();
    assert_eq!(charged, s.contended);
    // Not everything was timed: the sample took over after 64, and the
    // snapshot says how many contended acquisitions it left untimed.
    assert!(s.hold_timed < s.acquisitions, "hold_timed {}", s.hold_timed);
    assert!(
        s.wait_untimed + 64 <= s.contended,
        "{} of {} contended untimed",
        s.wait_untimed,
        s.contended
    );
    let by_site: u64 = l.sites.iter().map(|x| x.stats.wait_untimed).sum();
    assert_eq!(by_site, s.wait_untimed);
    // Each timed contended acquisition timed its hold too.
    assert!(s.contended_timed() <= s.hold_timed);
    // And the estimate stands for the waits: each forced wait lasted at
    // least HOLD, less the moments before the waiter's attempt.
    let mean = s.wait_ns.total / s.wait_ns.count;
    assert!(mean >= 10_000, "mean wait {mean} ns");
    let total: u64 = l.holders.iter().map(|h| h.wait_ns_total).sum();
    assert!(
        total >= s.contended * 10_000,
        "holders' wait total {total} ns"
    );
    s.wait_untimed
}

#[test]
fn a_sampled_spinlock_keeps_exact_counts_and_a_scaled_wait() {
    check("sampled.spin", || {
        let l = Arc::new(SpinLock::named("sampled.spin", ()));
        contend(move |inside| {
            let _g = l.lock();
            inside();
        });
    });
}

#[test]
fn a_sampled_mutex_keeps_exact_counts_and_a_scaled_wait() {
    check("sampled.mutex", || {
        let m = Arc::new(Mutex::named("sampled.mutex", ()));
        contend(move |inside| {
            let _g = m.lock();
            inside();
        });
    });
}
