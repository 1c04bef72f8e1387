//! `lockmeter::sync` behaves as `std::sync` documents, with real threads:
//! a panicking holder poisons, `clear_poison` clears, `try_lock` tells
//! `WouldBlock` from `Poisoned`, `into_inner`/`get_mut` report poison,
//! `Condvar`'s waits return as std's (`wait_timeout_while` results, poison
//! seen by a waiter), and
//! every acquisition, poisoned or not, is counted. Where std's behaviour
//! can be observed side by side (Debug output, error messages), the test
//! runs both and compares.

mod common;

use std::sync::{Arc, Barrier};
use std::thread;
use std::time::Duration;

use common::{lock, observe, on_each, spawn_observed};
use lockmeter::sync::{Condvar, Mutex, RwLock, TryLockError};

/// Runs `f` on a thread of its own and asserts that it panicked.
fn panics_on_a_thread(f: impl FnOnce() + Send + 'static) {
    assert!(thread::spawn(f).join().is_err(), "the thread did not panic");
}

/// Panics in a thread while holding `m`'s guard.
fn poison_mutex<T: Send + 'static>(m: &Arc<Mutex<T>>) {
    let m = Arc::clone(m);
    panics_on_a_thread(move || {
        let _g = m.lock().unwrap();
        panic!("holder panics");
    });
}

#[test]
fn a_panicking_holder_poisons_and_later_locks_still_get_the_data() {
    let m = Arc::new(Mutex::new(1));
    assert!(!m.is_poisoned());
    poison_mutex(&m);
    assert!(m.is_poisoned());
    let err = m.lock().unwrap_err();
    // The error carries the guard: the data stays reachable.
    let mut g = err.into_inner();
    *g += 1;
    drop(g);
    assert_eq!(*m.lock().unwrap_or_else(|e| e.into_inner()), 2);
    // A lock taken after the poison and released normally does not clear it.
    assert!(m.is_poisoned());
}

#[test]
fn clear_poison_makes_lock_succeed_again() {
    let m = Arc::new(Mutex::new(0));
    poison_mutex(&m);
    m.clear_poison();
    assert!(!m.is_poisoned());
    assert_eq!(*m.lock().unwrap(), 0);
}

#[test]
fn a_guard_taken_while_already_panicking_does_not_poison() {
    // std: only a guard acquired *before* the panic began poisons.
    struct LockOnDrop(Arc<Mutex<u8>>);
    impl Drop for LockOnDrop {
        fn drop(&mut self) {
            let _g = self.0.lock().unwrap();
        }
    }
    let m = Arc::new(Mutex::new(0));
    let m2 = Arc::clone(&m);
    panics_on_a_thread(move || {
        let _d = LockOnDrop(m2);
        panic!("unwinds through a Drop that locks");
    });
    assert!(!m.is_poisoned());
}

#[test]
fn try_lock_tells_would_block_from_poisoned() {
    let m = Arc::new(Mutex::new(()));
    let held = Arc::new(Barrier::new(2));
    let done = Arc::new(Barrier::new(2));
    let t = {
        let (m, held, done) = (m.clone(), held.clone(), done.clone());
        thread::spawn(move || {
            let _g = m.lock().unwrap();
            held.wait();
            done.wait();
        })
    };
    held.wait();
    assert!(matches!(m.try_lock(), Err(TryLockError::WouldBlock)));
    done.wait();
    t.join().unwrap();
    assert!(m.try_lock().is_ok());

    poison_mutex(&m);
    match m.try_lock() {
        Err(TryLockError::Poisoned(e)) => drop(e.into_inner()),
        other => panic!("expected Poisoned, got {:?}", other.map(|_| ())),
    };
}

#[test]
fn into_inner_and_get_mut_of_a_poisoned_mutex_return_the_data_as_err() {
    let m = Arc::new(Mutex::new(vec![1, 2]));
    poison_mutex(&m);
    let mut m = Arc::try_unwrap(m).unwrap_or_else(|_| unreachable!("one owner"));
    m.get_mut().unwrap_err().into_inner().push(3);
    let data = m.into_inner().unwrap_err().into_inner();
    assert_eq!(data, vec![1, 2, 3]);

    let fine = Mutex::new(5);
    assert_eq!(fine.into_inner().unwrap(), 5);
}

#[test]
fn a_panicking_writer_poisons_a_rwlock_and_a_panicking_reader_does_not() {
    let l = Arc::new(RwLock::new(0));
    let l2 = l.clone();
    panics_on_a_thread(move || {
        let _r = l2.read().unwrap();
        panic!("reader panics");
    });
    assert!(!l.is_poisoned());

    let l2 = l.clone();
    panics_on_a_thread(move || {
        let _w = l2.write().unwrap();
        panic!("writer panics");
    });
    assert!(l.is_poisoned());
    assert!(l.read().is_err());
    assert!(l.write().is_err());
    assert!(matches!(l.try_read(), Err(TryLockError::Poisoned(_))));
    {
        let _r = l.read().unwrap_or_else(|e| e.into_inner());
        assert!(matches!(l.try_write(), Err(TryLockError::WouldBlock)));
    }
    l.clear_poison();
    assert!(l.try_write().is_ok());
    let l = Arc::try_unwrap(l).unwrap_or_else(|_| unreachable!("one owner"));
    assert_eq!(l.into_inner().unwrap(), 0);
}

#[test]
fn a_rwlock_writer_taken_while_already_panicking_does_not_poison_and_the_poison_reads_everywhere() {
    // The drop-in's poison is std's own lock's flag: this checks std's
    // rule through it, and that every way of asking reports it.
    struct WriteOnDrop(Arc<RwLock<u8>>);
    impl Drop for WriteOnDrop {
        fn drop(&mut self) {
            *self.0.write().unwrap() += 1;
        }
    }
    let l = Arc::new(RwLock::new(0));
    let l2 = Arc::clone(&l);
    panics_on_a_thread(move || {
        let _d = WriteOnDrop(l2);
        panic!("unwinds through a Drop that writes");
    });
    assert!(!l.is_poisoned());
    assert_eq!(*l.read().unwrap(), 1);

    let l2 = Arc::clone(&l);
    panics_on_a_thread(move || {
        let mut w = l2.write().unwrap();
        *w += 1;
        panic!("writer panics");
    });
    assert!(format!("{l:?}").contains("poisoned: true"), "{l:?}");
    let mut l = Arc::try_unwrap(l).unwrap_or_else(|_| unreachable!("one owner"));
    assert_eq!(*l.get_mut().unwrap_err().into_inner(), 2);
    l.clear_poison();
    assert!(l.get_mut().is_ok());
    assert!(format!("{l:?}").contains("poisoned: false"), "{l:?}");
}

#[test]
fn debug_output_matches_std() {
    let ours = Mutex::new(7);
    let std = std::sync::Mutex::new(7);
    assert_eq!(format!("{ours:?}"), format!("{std:?}"));
    let (g1, g2) = (ours.lock().unwrap(), std.lock().unwrap());
    assert_eq!(format!("{ours:?}"), format!("{std:?}"));
    assert_eq!(format!("{g1:?} {g1}"), format!("{g2:?} {g2}"));
    drop((g1, g2));

    let ours = RwLock::new("x");
    let std = std::sync::RwLock::new("x");
    assert_eq!(format!("{ours:?}"), format!("{std:?}"));
    let (w1, w2) = (ours.write().unwrap(), std.write().unwrap());
    assert_eq!(format!("{ours:?}"), format!("{std:?}"));
    drop((w1, w2));

    let ours = Arc::new(Mutex::new(0));
    let std = Arc::new(std::sync::Mutex::new(0));
    poison_mutex(&ours);
    let s = std.clone();
    panics_on_a_thread(move || {
        let _g = s.lock().unwrap();
        panic!("std holder panics");
    });
    assert_eq!(format!("{ours:?}"), format!("{std:?}"));
    let (e1, e2) = (ours.lock().unwrap_err(), std.lock().unwrap_err());
    assert_eq!(e1.to_string(), e2.to_string());
}

#[test]
fn std_constructors_and_traits_compile_and_work() {
    static GLOBAL: Mutex<Vec<u8>> = Mutex::new(Vec::new());
    GLOBAL.lock().unwrap().push(1);
    let d: Mutex<u8> = Mutex::default();
    let f: RwLock<u8> = RwLock::from(3);
    assert_eq!((*d.lock().unwrap(), *f.read().unwrap()), (0, 3));
    // RefUnwindSafe, as std's: a `&Mutex` can cross `catch_unwind`.
    let m = Mutex::new(0);
    let r = std::panic::catch_unwind(|| {
        let _g = m.lock().unwrap();
        panic!("inside catch_unwind");
    });
    assert!(r.is_err() && m.is_poisoned());
    fn is_send_sync<T: Send + Sync>() {}
    is_send_sync::<Mutex<u8>>();
    is_send_sync::<RwLock<u8>>();
}

#[test]
fn poisoned_acquisitions_are_counted() {
    const THREADS: u64 = 4;
    const ITERS: u64 = 1_000;
    let (handle, ()) = observe(|| {
        let m = Arc::new(Mutex::named("sync.poisoned", 0u64));
        let m2 = m.clone();
        let _ = spawn_observed(move || {
            let _g = m2.lock().unwrap();
            panic!("poisons");
        })
        .join();
        on_each(THREADS, &m, |m, _| {
            for _ in 0..ITERS {
                *m.lock().unwrap_or_else(|e| e.into_inner()) += 1;
            }
        });
        assert!(m.is_poisoned());
        assert!(matches!(m.try_lock(), Err(TryLockError::Poisoned(_))));
    });
    let snap = handle.snapshot();
    let s = &lock(&snap, "sync.poisoned").total;
    // The poisoning lock, every loop iteration, and the final try_lock.
    assert_eq!(s.acquisitions, 1 + THREADS * ITERS + 1);
    assert_eq!(s.nowait + s.contended, s.acquisitions);
}

/// A waiter on `pair` for `!ready`, in its own thread.
fn waiter(pair: &Arc<(Mutex<bool>, Condvar)>) -> thread::JoinHandle<bool> {
    let pair = Arc::clone(pair);
    thread::spawn(move || {
        let (m, c) = &*pair;
        match c.wait_while(m.lock().unwrap(), |ready| !*ready) {
            Ok(g) => *g,
            Err(e) => {
                assert!(*e.into_inner(), "returned with the condition true");
                false
            }
        }
    })
}

#[test]
fn wait_while_returns_once_the_condition_holds_and_notify_all_wakes_every_waiter() {
    let pair = Arc::new((Mutex::new(false), Condvar::new()));
    let waiters: Vec<_> = (0..4).map(|_| waiter(&pair)).collect();
    // Notifies with the condition still false wake nobody for good.
    for _ in 0..3 {
        pair.1.notify_all();
        thread::yield_now();
    }
    *pair.0.lock().unwrap() = true;
    pair.1.notify_all();
    for w in waiters {
        assert!(w.join().unwrap());
    }
}

#[test]
fn wait_timeout_while_reports_timeout_with_the_condition_still_true() {
    let m = Mutex::new(0);
    let c = Condvar::new();
    let (g, r) = c
        .wait_timeout_while(m.lock().unwrap(), Duration::from_millis(20), |v| *v == 0)
        .unwrap();
    assert!(r.timed_out());
    assert_eq!(*g, 0);
    drop(g);

    // A condition already false returns at once, not timed out.
    let (g, r) = c
        .wait_timeout_while(m.lock().unwrap(), Duration::from_secs(60), |v| *v != 0)
        .unwrap();
    assert!(!r.timed_out());
    drop(g);

    // std's type: the user's annotations keep compiling.
    let (_g, r): (_, std::sync::WaitTimeoutResult) = c
        .wait_timeout(m.lock().unwrap(), Duration::from_millis(1))
        .unwrap();
    assert!(r.timed_out());
}

#[test]
fn wait_timeout_while_returns_not_timed_out_when_notified_in_time() {
    let pair = Arc::new((Mutex::new(false), Condvar::new()));
    let p2 = Arc::clone(&pair);
    let t = thread::spawn(move || {
        *p2.0.lock().unwrap() = true;
        p2.1.notify_one();
    });
    let (m, c) = &*pair;
    let (g, r) = c
        .wait_timeout_while(m.lock().unwrap(), Duration::from_secs(60), |ready| !*ready)
        .unwrap();
    assert!(*g && !r.timed_out());
    drop(g);
    t.join().unwrap();
}

#[test]
fn a_wait_returns_err_when_the_mutex_was_poisoned_meanwhile() {
    // 0: start, 1: the waiter is waiting, 2: released.
    let pair = Arc::new((Mutex::new(0u8), Condvar::new()));
    let p = Arc::clone(&pair);
    let w = thread::spawn(move || {
        let (m, c) = &*p;
        let mut g = m.lock().unwrap();
        *g = 1;
        let err = c.wait_while(g, |s| *s != 2).map(|_| ()).unwrap_err();
        assert_eq!(**err.get_ref(), 2, "returned with the condition true");
    });
    // Seen as 1 under the lock, the waiter has released it: it is waiting.
    while *pair.0.lock().unwrap() != 1 {
        thread::yield_now();
    }
    let p = Arc::clone(&pair);
    panics_on_a_thread(move || {
        let mut g = p.0.lock().unwrap();
        *g = 2;
        p.1.notify_all();
        panic!("poisons while the waiter sleeps");
    });
    // The waiter woke to a poisoned mutex: Err, carrying the guard.
    w.join().unwrap();
    assert!(pair.0.is_poisoned());
}

#[test]
fn condvar_waits_and_the_mutex_reacquisitions_are_counted() {
    const WAITS: u64 = 5;
    let (wait_line, notify_line) = (line!() + 6, line!() + 11);
    let (handle, ()) = observe(|| {
        let m = Mutex::named("sync.cv.mutex", ());
        let c = Condvar::named("sync.cv");
        let mut g = m.lock().unwrap();
        for _ in 0..WAITS {
            let (g2, r) = c.wait_timeout(g, Duration::from_millis(1)).unwrap();
            assert!(r.timed_out());
            g = g2;
        }
        drop(g);
        c.notify_one();
    });
    let snap = handle.snapshot();
    let cv = &lock(&snap, "sync.cv").total;
    assert_eq!(cv.rejected, WAITS, "every wait timed out");
    assert_eq!(cv.empty_wake_calls, 1, "the notify found nobody");
    // The first lock, then one reacquisition per wait.
    assert_eq!(lock(&snap, "sync.cv.mutex").total.acquisitions, 1 + WAITS);
    // Each at the caller's line: the waits and notify in the condvar's
    // rows, the reacquisitions in the mutex's, at the wait's line.
    let at = |line: u32| format!("sync_follows_std_semantics.rs:{line}:");
    let sites = |id: &str| -> Vec<(String, u64)> {
        let l = lock(&snap, id);
        l.sites
            .iter()
            .map(|s| (s.site.clone(), s.stats.acquisitions))
            .collect()
    };
    let cv_sites = sites("sync.cv");
    assert_eq!(cv_sites.len(), 2, "{cv_sites:?}");
    for line in [wait_line, notify_line] {
        assert!(
            cv_sites.iter().any(|(s, _)| s.contains(&at(line))),
            "{line}: {cv_sites:?}"
        );
    }
    let reacquired = sites("sync.cv.mutex")
        .into_iter()
        .filter(|(s, _)| s.contains(&at(wait_line)))
        .map(|(_, n)| n)
        .sum::<u64>();
    assert_eq!(reacquired, WAITS);
}

#[test]
fn a_condvar_used_with_two_mutexes_panics_and_leaves_the_mutex_sound() {
    // 0: start, 1: the waiter on m1 is waiting, 2: released.
    let m1 = Mutex::new(0u8);
    let m2 = Mutex::new(());
    let c = Condvar::new();
    thread::scope(|s| {
        let waiter = s.spawn(|| {
            let mut g = m1.lock().unwrap();
            *g = 1;
            drop(c.wait_while(g, |st| *st != 2).unwrap());
        });
        while *m1.lock().unwrap() != 1 {
            thread::yield_now();
        }
        // m1's waiter is queued: waiting with m2 is the bad input.
        let r = std::panic::catch_unwind(|| {
            let g = m2.lock().unwrap();
            let _ = c.wait_timeout(g, Duration::from_millis(1));
        });
        let msg = r.unwrap_err();
        let msg = msg
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| msg.downcast_ref::<&str>().copied())
            .unwrap_or("");
        assert_eq!(
            msg,
            "attempted to use a condition variable with more than one mutex"
        );
        *m1.lock().unwrap() = 2;
        c.notify_all();
        waiter.join().unwrap();
    });
    // The guard unwound once: poisoned as std's would be, and unlocked
    // exactly once (a second unlock would let the try_lock below in).
    assert!(m2.is_poisoned());
    let held = m2.lock().unwrap_err().into_inner();
    thread::scope(|s| {
        s.spawn(|| assert!(matches!(m2.try_lock(), Err(TryLockError::WouldBlock))));
    });
    drop(held);
    assert!(matches!(m2.try_lock(), Err(TryLockError::Poisoned(_))));
}

/// `sync::RwLock` is metered over std's own lock: readers and writers on
/// real threads, every acquisition counted once and no write lost.
#[test]
fn rwlock_over_std_counts_every_read_and_write() {
    const THREADS: u64 = 4;
    const ITERS: u64 = 2_000;
    let (handle, ()) = observe(|| {
        let l = Arc::new(RwLock::named("sync.rw.std", 0u64));
        on_each(THREADS, &l, |l, t| {
            for i in 0..ITERS {
                if (i + t) % 4 == 0 {
                    *l.write().unwrap() += 1;
                } else {
                    let seen = *l.read().unwrap();
                    assert!(seen <= THREADS * ITERS / 4);
                }
            }
        });
        assert_eq!(*l.read().unwrap(), THREADS * ITERS / 4);
    });
    let snap = handle.snapshot();
    let s = &lock(&snap, "sync.rw.std").total;
    // Every loop iteration, and the final read.
    assert_eq!(s.acquisitions, THREADS * ITERS + 1);
    assert_eq!(s.nowait + s.contended, s.acquisitions);
}

/// std's producer/consumer shape on `sync::Condvar`, with real threads: no
/// wake-up is lost (every item is taken and every consumer returns), and
/// the condvar's row counts as many wake-ups as the waiters woke (its
/// waits never return spuriously) and every notify.
#[test]
fn a_busy_sync_condvar_loses_no_wakeup_and_counts_exactly() {
    const CONSUMERS: usize = 4;
    const PRODUCERS: usize = 2;
    const ITEMS: u64 = 2_000;
    let (handle, (taken, woke)) = observe(|| {
        let q = Arc::new((
            Mutex::named("sync.busy.m", (0u64, false)),
            Condvar::named("sync.busy"),
        ));
        let consumers: Vec<_> = (0..CONSUMERS)
            .map(|_| {
                let q = Arc::clone(&q);
                spawn_observed(move || {
                    let (m, cv) = &*q;
                    let (mut taken, mut woke) = (0u64, 0u64);
                    let mut g = m.lock().unwrap();
                    loop {
                        while g.0 == 0 && !g.1 {
                            g = cv.wait(g).unwrap();
                            woke += 1;
                        }
                        if g.0 == 0 {
                            return (taken, woke);
                        }
                        g.0 -= 1;
                        taken += 1;
                    }
                })
            })
            .collect();
        let producers: Vec<_> = (0..PRODUCERS)
            .map(|_| {
                let q = Arc::clone(&q);
                spawn_observed(move || {
                    let (m, cv) = &*q;
                    for _ in 0..ITEMS {
                        m.lock().unwrap().0 += 1;
                        cv.notify_one();
                    }
                })
            })
            .collect();
        producers.into_iter().for_each(|p| p.join().unwrap());
        q.0.lock().unwrap().1 = true;
        q.1.notify_all();
        consumers
            .into_iter()
            .map(|c| c.join().unwrap())
            .fold((0, 0), |(t, w), (t2, w2)| (t + t2, w + w2))
    });
    assert_eq!(taken, PRODUCERS as u64 * ITEMS, "every item taken once");
    let snap = handle.snapshot();
    let cv = &lock(&snap, "sync.busy").total;
    assert_eq!(cv.wake_calls, PRODUCERS as u64 * ITEMS + 1);
    assert_eq!(cv.wakeups, woke, "a wake-up per return from a wait");
    assert_eq!(cv.sleeps, woke, "one sleep per wake-up");
    assert_eq!(cv.rejected, 0, "no wait timed out");
    // Each notify_one picked one waiter or none; the closing notify_all
    // picked up to every consumer, or none.
    let (picked_or_not, all_extra) = (cv.wakeups + cv.empty_wake_calls, CONSUMERS as u64 - 1);
    assert!(
        (cv.wake_calls..=cv.wake_calls + all_extra).contains(&picked_or_not),
        "{cv:?}"
    );
    let m = &lock(&snap, "sync.busy.m").total;
    let locks = CONSUMERS as u64 + PRODUCERS as u64 * ITEMS + 1;
    assert_eq!(m.acquisitions, locks + woke, "every lock and reacquisition");
}

/// Every wait of `sync::Condvar` is recorded at its caller's line, in the
/// condvar's rows and, for the reacquisition, in the mutex's (they run
/// inside a closure that lends out the guard, where `#[track_caller]`
/// does not reach: each was once recorded at a line of lockmeter's own).
#[test]
fn every_sync_condvar_wait_is_recorded_at_its_callers_line() {
    use std::sync::atomic::{AtomicBool, Ordering};
    let stop = AtomicBool::new(false);
    let (handle, lines) = observe(|| {
        let m = Mutex::named("sync.cv.sites.m", 0u32);
        let c = Condvar::named("sync.cv.sites");
        thread::scope(|s| {
            // Not observed: its notifies add no rows.
            s.spawn(|| {
                while !stop.load(Ordering::Relaxed) {
                    c.notify_all();
                    thread::sleep(Duration::from_millis(1));
                }
            });
            let ms = Duration::from_millis(1);
            let g = m.lock().unwrap();
            let (g, wait) = (c.wait(g).unwrap(), line!());
            let mut first = true;
            let once = |_: &mut u32| std::mem::replace(&mut first, false);
            let (g, wait_while) = (c.wait_while(g, once).unwrap(), line!());
            let (g, wait_timeout) = (c.wait_timeout(g, ms).unwrap().0, line!());
            #[allow(deprecated)]
            let (g, wait_timeout_ms) = (c.wait_timeout_ms(g, 1).unwrap().0, line!());
            let always = |_: &mut u32| true;
            let (g, timeout_while) = (c.wait_timeout_while(g, ms, always).unwrap().0, line!());
            drop(g);
            stop.store(true, Ordering::Relaxed);
            [
                wait,
                wait_while,
                wait_timeout,
                wait_timeout_ms,
                timeout_while,
            ]
        })
    });
    let snap = handle.snapshot();
    for id in ["sync.cv.sites", "sync.cv.sites.m"] {
        let sites: Vec<&str> = lock(&snap, id)
            .sites
            .iter()
            .map(|s| s.site.as_str())
            .collect();
        for line in lines {
            let at = format!("sync_follows_std_semantics.rs:{line}:");
            assert!(
                sites.iter().any(|s| s.contains(&at)),
                "{id}: no row at {line}: {sites:?}"
            );
        }
        assert!(
            sites
                .iter()
                .all(|s| s.contains("sync_follows_std_semantics.rs")),
            "{id}: a row at a line not the caller's: {sites:?}"
        );
    }
}

/// `wait_timeout_while` looks at the condition once more after a wait
/// that timed out, as std's does: a condition that turned false by then
/// is not a timeout. Side by side with std, calls counted.
#[test]
fn wait_timeout_while_looks_once_more_after_timing_out_as_std() {
    // True on the first look, false on every later one.
    fn run(wait: impl FnOnce(&mut dyn FnMut(&mut u32) -> bool) -> bool) -> (bool, u32) {
        let mut looks = 0;
        let timed_out = wait(&mut |_| {
            looks += 1;
            looks == 1
        });
        (timed_out, looks)
    }
    let ms = Duration::from_millis(1);
    let std_pair = (std::sync::Mutex::new(0u32), std::sync::Condvar::new());
    let ours = (Mutex::new(0u32), Condvar::new());
    let std_result = run(|c| {
        let g = std_pair.0.lock().unwrap();
        std_pair
            .1
            .wait_timeout_while(g, ms, c)
            .unwrap()
            .1
            .timed_out()
    });
    let our_result = run(|c| {
        let g = ours.0.lock().unwrap();
        ours.1.wait_timeout_while(g, ms, c).unwrap().1.timed_out()
    });
    assert_eq!(std_result, (false, 2), "std's own behaviour changed");
    assert_eq!(our_result, std_result);
    // A condition that stays true is a timeout, in both.
    let g = ours.0.lock().unwrap();
    assert!(ours
        .1
        .wait_timeout_while(g, ms, |_| true)
        .unwrap()
        .1
        .timed_out());
}

/// `sync::Mutex`'s lock underneath is std's algorithm (`sync/raw_mutex.rs`):
/// holders that sleep inside the critical section send the waiters past
/// their spin to sleep on the contended state, and each unlock that finds
/// a sleeper must wake one. A lost wake-up leaves a thread asleep for good
/// and fails the test after a minute (with the unlock's wake removed, it
/// does); a lost update or a lock left held fails it too.
#[test]
fn a_contended_sync_mutex_puts_waiters_to_sleep_and_wakes_every_one() {
    const THREADS: usize = 4;
    const EACH: u64 = 5_000;
    let m = Arc::new(Mutex::new(0u64));
    let start = Arc::new(Barrier::new(THREADS));
    let ts: Vec<_> = (0..THREADS)
        .map(|_| {
            let (m, start) = (Arc::clone(&m), Arc::clone(&start));
            thread::spawn(move || {
                start.wait();
                for i in 0..EACH {
                    let mut g = m.lock().unwrap();
                    *g += 1;
                    if i % 100 == 0 {
                        // Long enough for every waiter to stop spinning.
                        thread::sleep(Duration::from_micros(200));
                    }
                }
            })
        })
        .collect();
    let (done, finished) = std::sync::mpsc::channel();
    thread::spawn(move || {
        ts.into_iter().for_each(|t| t.join().unwrap());
        let _ = done.send(());
    });
    finished
        .recv_timeout(Duration::from_secs(60))
        .expect("a worker panicked, or one is still asleep after a minute: a lost wake-up");
    assert_eq!(*m.try_lock().expect("left held"), THREADS as u64 * EACH);
}
