//! A metered `Condvar` is a wait queue in the table: its row counts every
//! wait, notify (and notify that woke nobody), wake-up, spurious wake-up
//! and timeout exactly, per call site, and the mutex's rows count each
//! reacquisition after a wait at the wait's call site.

mod common;

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;
use std::time::Duration;

use common::{lock, observe, spawn_observed};
use lockmeter::{Condvar, Mutex};
use lockmeter_model::{LockKind, LockStats, SiteStats};

/// The row of the call at `line` of this file (the tests name the lines
/// of their calls).
fn site_at(l: &LockStats, line: u32) -> &SiteStats {
    let suffix = format!("condvar_stats_are_exact.rs:{line}:");
    l.sites
        .iter()
        .find(|s| s.site.contains(&suffix))
        .unwrap_or_else(|| {
            let sites: Vec<_> = l.sites.iter().map(|s| &s.site).collect();
            panic!("no site at line {line} in {}: {sites:?}", l.id)
        })
}

#[test]
fn notifies_with_nobody_waiting_count_as_woke_nobody() {
    let (handle, ()) = observe(|| {
        let cv = Condvar::named("cv.empty");
        for _ in 0..5 {
            assert!(!cv.notify_one());
        }
        for _ in 0..3 {
            assert_eq!(cv.notify_all(), 0);
        }
    });
    let snap = handle.snapshot();
    let l = lock(&snap, "cv.empty");
    assert_eq!(l.kind, LockKind::Condvar);
    assert_eq!(l.total.wake_calls, 8);
    assert_eq!(l.total.empty_wake_calls, 8);
    assert_eq!(l.total.wakeups, 0);
    assert_eq!(l.sites.len(), 2, "notify_one and notify_all sites");
}

struct State {
    v: u32,
    checks: u32,
}

#[test]
fn wait_while_counts_each_wake_with_the_condition_still_true_as_spurious() {
    let (handle, ()) = observe(|| {
        let pair = Arc::new((
            Mutex::named("cv.spurious.m", State { v: 0, checks: 0 }),
            Condvar::named("cv.spurious"),
        ));
        let p2 = pair.clone();
        let waiter = spawn_observed(move || {
            let (m, cv) = &*p2;
            let mut g = m.lock();
            cv.wait_while(&mut g, |s| {
                s.checks += 1;
                s.v < 3
            });
            assert_eq!(g.v, 3);
        });
        let (m, cv) = &*pair;
        for v in 1..=3 {
            // The waiter checked the condition `v` times and, since we
            // have the mutex it released, sleeps in the queue.
            let mut g = loop {
                let g = m.lock();
                if g.checks == v {
                    break g;
                }
                drop(g);
                std::thread::yield_now();
            };
            g.v = v;
            assert!(cv.notify_one(), "the waiter is queued");
        }
        waiter.join().unwrap();
    });
    let snap = handle.snapshot();
    let cv = lock(&snap, "cv.spurious");
    assert_eq!(cv.kind, LockKind::Condvar);
    let wait = site_at(cv, 65);
    assert_eq!(wait.stats.waits, 1, "one wait_while call that slept");
    assert_eq!(wait.stats.sleeps, 3);
    assert_eq!(wait.stats.spurious_wakeups, 2);
    assert_eq!(wait.stats.acquisitions, 1);
    assert_eq!(wait.stats.contended, 1);
    assert_eq!(wait.stats.rejected, 0);
    assert_eq!(wait.stats.wake_latency_ns.count, 3);
    let notify = site_at(cv, 84);
    assert_eq!(notify.stats.wake_calls, 3);
    assert_eq!(notify.stats.wakeups, 3);
    assert_eq!(notify.stats.empty_wake_calls, 0);
    // The mutex: each wake-up reacquired it at the wait's site.
    let m = lock(&snap, "cv.spurious.m");
    assert_eq!(site_at(m, 65).stats.acquisitions, 3);
    assert_eq!(site_at(m, 64).stats.acquisitions, 1);
    assert_eq!(m.total.hold_ns.count, m.total.acquisitions);
}

#[test]
fn timed_waits_that_expire_count_in_rject() {
    let (handle, ()) = observe(|| {
        let m = Mutex::named("cv.timeout.m", 0u32);
        let cv = Condvar::named("cv.timeout");
        let mut g = m.lock();
        for _ in 0..3 {
            assert!(cv.wait_for(&mut g, Duration::from_millis(1)).timed_out());
        }
        let r = cv.wait_while_for(&mut g, |_| true, Duration::from_millis(2));
        assert!(r.timed_out());
        let r = cv.wait_while_for(&mut g, |_| false, Duration::from_millis(2));
        assert!(!r.timed_out(), "a false condition returns at once");
    });
    let snap = handle.snapshot();
    let cv = lock(&snap, "cv.timeout");
    let wait_for = site_at(cv, 117);
    assert_eq!(wait_for.stats.waits, 3);
    assert_eq!(wait_for.stats.rejected, 3);
    assert_eq!(wait_for.stats.acquisitions, 0);
    let ww = site_at(cv, 119);
    assert_eq!(ww.stats.rejected, 1);
    assert_eq!(ww.stats.spurious_wakeups, 0, "a timeout is not a wake-up");
    let ready = site_at(cv, 121);
    assert_eq!((ready.stats.nowait, ready.stats.waits), (1, 0));
    // Every timed-out wait took the mutex back at its site.
    let m = lock(&snap, "cv.timeout.m");
    assert_eq!(site_at(m, 117).stats.acquisitions, 3);
    assert!(site_at(m, 119).stats.acquisitions >= 1);
}

#[test]
fn notify_all_wakes_every_waiter_and_counts_them() {
    const WAITERS: u32 = 4;
    let (handle, woken) = observe(|| {
        let pair = Arc::new((
            Mutex::named("cv.all.m", (0u32, false)),
            Condvar::named("cv.all"),
        ));
        let ts: Vec<_> = (0..WAITERS)
            .map(|_| {
                let p = pair.clone();
                spawn_observed(move || {
                    let (m, cv) = &*p;
                    let mut g = m.lock();
                    g.0 += 1;
                    cv.wait_while(&mut g, |s| !s.1);
                })
            })
            .collect();
        let (m, cv) = &*pair;
        let mut g = loop {
            let g = m.lock();
            if g.0 == WAITERS {
                break g;
            }
            drop(g);
            std::thread::yield_now();
        };
        g.1 = true;
        let woken = cv.notify_all();
        drop(g);
        ts.into_iter().for_each(|t| t.join().unwrap());
        woken
    });
    assert_eq!(woken, WAITERS as usize);
    let snap = handle.snapshot();
    let cv = lock(&snap, "cv.all");
    let notify = site_at(cv, 170);
    assert_eq!(
        (notify.stats.wake_calls, notify.stats.wakeups),
        (1, WAITERS as u64)
    );
    assert_eq!(notify.stats.max_waiters, WAITERS as u64);
    let wait = site_at(cv, 156);
    assert_eq!(wait.stats.waits, WAITERS as u64);
    assert_eq!(wait.stats.acquisitions, WAITERS as u64);
    assert_eq!(wait.stats.spurious_wakeups, 0);
}

#[test]
fn a_second_mutex_panics_with_parking_lots_message_and_loses_no_count() {
    let (handle, line) = observe(|| {
        // (the waiter is queued, go)
        let m1 = Arc::new(Mutex::named("cv.two.m1", (false, false)));
        let cv = Arc::new(Condvar::named("cv.two"));
        let m2 = Mutex::named("cv.two.m2", ());
        let (m, c) = (m1.clone(), cv.clone());
        let waiter = spawn_observed(move || {
            let mut g = m.lock();
            c.wait_while(&mut g, |s| {
                s.0 = true;
                !s.1
            });
        });
        // Once we hold m1 with the flag set, the waiter sleeps on `cv`.
        while !m1.lock().0 {
            std::thread::yield_now();
        }
        let mut g2 = m2.lock();
        let (line, err) = (line!(), catch_unwind(AssertUnwindSafe(|| cv.wait(&mut g2))));
        let err = err.unwrap_err();
        let msg = err
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| err.downcast_ref::<&str>().copied())
            .unwrap();
        assert_eq!(
            msg,
            "attempted to use a condition variable with more than one mutex"
        );
        drop(g2);
        assert!(m2.try_lock().is_some(), "the second mutex was released");
        m1.lock().1 = true;
        assert!(cv.notify_one());
        waiter.join().unwrap();
        line
    });
    let snap = handle.snapshot();
    let cv = lock(&snap, "cv.two");
    let refused = site_at(cv, line);
    assert_eq!(refused.stats.rejected, 1, "the refused wait counts");
    assert_eq!(refused.stats.waits, 0);
    let m2 = lock(&snap, "cv.two.m2");
    assert_eq!(m2.total.acquisitions, 2, "lock and try_lock");
    assert_eq!(m2.total.hold_ns.count, 2, "both holds ended");
    assert_eq!(
        lock(&snap, "cv.two").total.acquisitions,
        1,
        "the waiter's wait"
    );
}

/// Producers and consumers under load, through requeue and hand-over:
/// every item is taken once, and the table's counts are the program's own
/// tallies (notifies made, the waiters they picked, wake-ups that found
/// no item, and one reacquisition of the mutex per wake-up).
#[test]
fn a_busy_queue_loses_no_wakeup_and_counts_exactly() {
    const CONSUMERS: usize = 4;
    const PRODUCERS: usize = 2;
    const ITEMS: u64 = 2_000;
    struct Queue {
        items: u64,
        closed: bool,
    }
    #[derive(Default)]
    struct Tally {
        notifies: u64,
        /// Waiters the notifies picked (woke or requeued).
        picked: u64,
    }
    let (handle, (tallies, taken)) = observe(|| {
        let q = Arc::new((
            Mutex::named(
                "cv.busy.m",
                Queue {
                    items: 0,
                    closed: false,
                },
            ),
            Condvar::named("cv.busy"),
        ));
        let consumers: Vec<_> = (0..CONSUMERS)
            .map(|_| {
                let q = q.clone();
                spawn_observed(move || {
                    let (m, cv) = &*q;
                    let mut taken = 0u64;
                    let mut g = m.lock();
                    loop {
                        cv.wait_while(&mut g, |q| q.items == 0 && !q.closed);
                        if g.items == 0 {
                            return taken;
                        }
                        g.items -= 1;
                        taken += 1;
                    }
                })
            })
            .collect();
        let producers: Vec<_> = (0..PRODUCERS)
            .map(|_| {
                let q = q.clone();
                spawn_observed(move || {
                    let (m, cv) = &*q;
                    let mut t = Tally::default();
                    for _ in 0..ITEMS {
                        let mut g = m.lock();
                        g.items += 1;
                        t.notifies += 1;
                        t.picked += u64::from(cv.notify_one());
                        drop(g);
                    }
                    t
                })
            })
            .collect();
        let tallies: Vec<Tally> = producers.into_iter().map(|p| p.join().unwrap()).collect();
        q.0.lock().closed = true;
        let last = q.1.notify_all() as u64;
        let taken: u64 = consumers.into_iter().map(|c| c.join().unwrap()).sum();
        let one = tallies.iter().map(|t| t.picked).sum::<u64>();
        let notifies = tallies.iter().map(|t| t.notifies).sum::<u64>();
        // notify_one picks one or none: `one` of them picked someone.
        let empty = notifies - one + u64::from(last == 0);
        ((notifies, one + last, empty), taken)
    });
    let (notifies, picked, empty) = tallies;
    assert_eq!(taken, PRODUCERS as u64 * ITEMS, "every item taken once");
    let snap = handle.snapshot();
    let cv = lock(&snap, "cv.busy");
    // The notifies: `ITEMS` per producer plus the closing notify_all.
    assert_eq!(cv.total.wake_calls, notifies + 1);
    assert_eq!(cv.total.wakeups, picked, "wake-ups as notify returned them");
    assert_eq!(
        cv.total.empty_wake_calls, empty,
        "notifies that picked nobody"
    );
    // The waits: each picked waiter woke once (parking_lot's waits never
    // return spuriously), and each wake-up took the mutex back at the
    // wait's site.
    assert_eq!(cv.total.sleeps, picked, "one sleep per wake-up");
    assert_eq!(cv.total.rejected, 0, "no wait timed out");
    let m = lock(&snap, "cv.busy.m");
    let wait_line = m
        .sites
        .iter()
        .filter(|s| s.site.contains("condvar_stats_are_exact.rs"))
        .map(|s| s.stats.acquisitions)
        .sum::<u64>();
    let locks = CONSUMERS as u64 + PRODUCERS as u64 * ITEMS + 1;
    assert_eq!(
        wait_line,
        locks + picked,
        "every lock and every reacquisition"
    );
    assert_eq!(m.total.acquisitions, locks + picked);
    assert_eq!(
        m.total.hold_ns.count, m.total.acquisitions,
        "every hold ended"
    );
}
