//! Known thread x iteration counts give exact TOTAL, and the counters add
//! up: NOWAIT + SPIN = TOTAL, failed try-locks land in RJECT, per-site rows
//! stay separate, and threads that exited are still counted.

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::{assert_sites_within, join_all, lock, observe, on_each, spawn_each};
use lockmeter::{Mutex, RwLock, Semaphore, SpinLock};

const THREADS: u64 = 4;
const ITERS: u64 = 20_000;

/// `THREADS` observed threads that each run `f(&shared, thread)` `ITERS`
/// times; all have exited on return.
fn iterate_on_each<T: Send + Sync + 'static>(
    shared: &Arc<T>,
    f: impl Fn(&T, u64) + Send + Sync + 'static,
) {
    on_each(THREADS, shared, move |shared, i| {
        for _ in 0..ITERS {
            f(shared, i);
        }
    });
}

#[test]
fn spinlock_total_is_threads_times_iterations() {
    let (handle, ()) = observe(|| {
        let l = Arc::new(SpinLock::named("exact.spin", 0u64));
        iterate_on_each(&l, |l, _| *l.lock() += 1);
        assert_eq!(*l.lock(), THREADS * ITERS);
    });
    let snap = handle.snapshot();
    let s = &lock(&snap, "exact.spin").total;
    // The final read is one more acquisition.
    assert_eq!(s.acquisitions, THREADS * ITERS + 1);
    assert_eq!(s.nowait + s.contended, s.acquisitions);
    assert_eq!(s.hold_ns.count, s.acquisitions);
    assert_eq!(s.wait_ns.count, s.contended);
    assert_eq!(s.rejected, 0);
}

#[test]
fn mutex_counts_survive_thread_exit_and_sites_stay_separate() {
    let (handle, ()) = observe(|| {
        let m = Arc::new(Mutex::named("exact.mutex", 0u64));
        // Every thread has exited before the snapshot.
        iterate_on_each(&m, |m, i| {
            if i % 2 == 0 {
                *m.lock() += 1; // site A
            } else {
                *m.lock() += 1; // site B
            }
        });
    });
    let snap = handle.snapshot();
    let l = lock(&snap, "exact.mutex");
    assert_eq!(l.total.acquisitions, THREADS * ITERS);
    assert_eq!(
        l.sites.len(),
        2,
        "two call sites: {:?}",
        l.sites.iter().map(|s| &s.site).collect::<Vec<_>>()
    );
    for site in &l.sites {
        assert_eq!(site.stats.acquisitions, THREADS / 2 * ITERS);
        assert!(site.site.contains("counts_are_exact.rs"), "{}", site.site);
    }
    assert_eq!(l.instances, 1);
}

#[test]
fn failed_try_locks_are_rejected_not_acquired() {
    let (handle, ()) = observe(|| {
        let m = Mutex::named("exact.try", ());
        let s = SpinLock::named("exact.try.spin", ());
        let g = m.lock();
        let sg = s.lock();
        for _ in 0..7 {
            assert!(m.try_lock().is_none());
            assert!(s.try_lock().is_none());
        }
        assert!(m.try_lock_for(Duration::from_millis(2)).is_none());
        drop((g, sg));
        assert!(m.try_lock().is_some());
    });
    let snap = handle.snapshot();
    let m = &lock(&snap, "exact.try").total;
    assert_eq!(m.rejected, 8);
    assert_eq!(m.acquisitions, 2);
    let s = &lock(&snap, "exact.try.spin").total;
    assert_eq!(s.rejected, 7);
    assert_eq!(s.acquisitions, 1);
}

#[test]
fn rwlock_rows_split_read_and_write() {
    let (handle, ()) = observe(|| {
        let l = RwLock::named("exact.rw", 0);
        for _ in 0..5 {
            let _ = *l.read();
        }
        for _ in 0..3 {
            *l.write() += 1;
        }
    });
    let snap = handle.snapshot();
    let l = lock(&snap, "exact.rw");
    let acquired_as = |mode: &str| -> u64 {
        l.sites
            .iter()
            .filter(|s| s.mode.as_deref() == Some(mode))
            .map(|s| s.stats.acquisitions)
            .sum()
    };
    assert_eq!((acquired_as("read"), acquired_as("write")), (5, 3));
}

#[test]
fn semaphore_shows_its_inner_lock_and_wait_queue() {
    let (handle, ()) = observe(|| {
        let sem = Arc::new(Semaphore::named("exact.sem", 1));
        // Hold the only permit while the workers start, so that some of
        // them must sleep in the semaphore's wait queue.
        let first = sem.acquire();
        let ts = spawn_each(THREADS, &sem, |sem, _| {
            for _ in 0..2000 {
                let _p = sem.acquire();
                std::hint::black_box(0);
            }
        });
        std::thread::sleep(Duration::from_millis(50));
        drop(first);
        join_all(ts);
        assert_eq!(sem.available(), 1);
    });
    let snap = handle.snapshot();
    let sem = lock(&snap, "exact.sem");
    assert_eq!(sem.total.acquisitions, THREADS * 2000 + 1);
    assert_eq!(sem.total.hold_ns.count, THREADS * 2000 + 1);
    assert!(sem.total.contended > 0);
    let inner = lock(&snap, "exact.sem.lock");
    assert_eq!(inner.parent.as_deref(), Some("exact.sem"));
    assert_sites_within(inner, "crates/lockmeter/src/");
    let wait = lock(&snap, "exact.sem.wait");
    assert_eq!(wait.parent.as_deref(), Some("exact.sem"));
    // Every sleeper that was woken is accounted as a wakeup of the queue.
    assert_eq!(wait.total.contended, sem.total.contended);
}

#[test]
fn nothing_is_recorded_without_a_layer() {
    let layer = lockmeter::Layer::new();
    let handle = layer.handle();
    // The layer exists but no subscriber holding it is in effect.
    let m = Mutex::named("exact.unobserved", 0);
    *m.lock() += 1;
    assert!(handle.snapshot().lock("exact.unobserved").is_none());
    drop(layer);
}

/// A helper without `#[track_caller]`: every class it locks is taken at
/// its one line, as in code that wraps its locks (tokio's).
/// Returns the line it locks at.
#[inline(never)]
fn bump_through_helper(m: &Mutex<u64>) -> u32 {
    let at = line!() + 1;
    *m.lock() += 1;
    at
}

/// An entry is guessed from the call site before the lock is tried and
/// checked once the lock is held: classes that share a site, one after
/// the other, alternating, and one met while another thread holds it
/// (a wrong guess whose attempt failed), each count exactly where they
/// belong.
#[test]
fn classes_taken_at_one_site_each_count_exactly() {
    let (handle, line) = observe(|| {
        let a = Arc::new(Mutex::named("exact.shared_site.a", 0u64));
        let b = Arc::new(Mutex::named("exact.shared_site.b", 0u64));
        for _ in 0..100 {
            bump_through_helper(&a); // the site learns `a`
        }
        bump_through_helper(&b); // guessed `a`: wrong
        for _ in 0..50 {
            bump_through_helper(&a);
            bump_through_helper(&b);
        }
        // A thread whose site knows only `a` meets `b` held by this one:
        // the wrong guess's attempt fails and the wait counts for `b`.
        let held = b.lock();
        let (a2, b2) = (Arc::clone(&a), Arc::clone(&b));
        let dispatch = tracing::dispatcher::get_default(|d| d.clone());
        let t = std::thread::spawn(move || {
            tracing::dispatcher::with_default(&dispatch, || {
                bump_through_helper(&a2);
                bump_through_helper(&b2);
            })
        });
        while *a.lock() != 151 {
            std::thread::yield_now();
        }
        std::thread::sleep(Duration::from_millis(20));
        drop(held);
        t.join().unwrap();
        assert_eq!(*b.lock(), 52);
        bump_through_helper(&a)
    });
    let snap = handle.snapshot();
    let site_of = |id: &str| {
        let l = lock(&snap, id);
        let helper = format!("counts_are_exact.rs:{line}:");
        let at_helper: Vec<_> = l
            .sites
            .iter()
            .filter(|s| s.site.contains(&helper))
            .collect();
        assert_eq!(at_helper.len(), 1, "{id}: one helper site");
        at_helper[0].stats.clone()
    };
    let a = site_of("exact.shared_site.a");
    assert_eq!(a.acquisitions, 100 + 50 + 1 + 1);
    assert_eq!(a.nowait + a.contended, a.acquisitions);
    let b = site_of("exact.shared_site.b");
    assert_eq!(b.acquisitions, 1 + 50 + 1);
    assert_eq!(b.nowait + b.contended, b.acquisitions);
    assert!(
        b.contended >= 1,
        "the wait behind the held `b` counts: {b:?}"
    );
    for s in [&a, &b] {
        assert_eq!(s.hold_ns.count, s.acquisitions);
    }
}

/// At a site where two classes are taken, a run of one class makes it
/// the site's guess after two look-ups in a row, checked once the lock is
/// held like any guess: runs of each class, a run cut short every third
/// acquisition, and a thread whose guess is `a` meeting `b` held (a wrong
/// guess whose attempt fails) each count exactly where they belong.
#[test]
fn runs_of_one_class_at_a_shared_site_count_exactly() {
    let (handle, line) = observe(|| {
        let a = Arc::new(Mutex::named("exact.runs.a", 0u64));
        let b = Arc::new(Mutex::named("exact.runs.b", 0u64));
        bump_through_helper(&a);
        bump_through_helper(&b); // two classes: the pair guesses neither
        for _ in 0..100 {
            bump_through_helper(&a); // guessed `a` from the third on
        }
        for _ in 0..100 {
            bump_through_helper(&b); // one wrong guess, then `b`
        }
        for _ in 0..50 {
            bump_through_helper(&a);
            bump_through_helper(&a);
            bump_through_helper(&b);
        }
        let warmed = Arc::new(std::sync::Barrier::new(2));
        let (a2, b2, warmed2) = (Arc::clone(&a), Arc::clone(&b), Arc::clone(&warmed));
        let dispatch = tracing::dispatcher::get_default(|d| d.clone());
        let t = std::thread::spawn(move || {
            tracing::dispatcher::with_default(&dispatch, || {
                bump_through_helper(&a2);
                bump_through_helper(&b2);
                for _ in 0..3 {
                    bump_through_helper(&a2);
                }
                warmed2.wait(); // `b` is taken by the main thread
                warmed2.wait();
                bump_through_helper(&b2);
            })
        });
        warmed.wait();
        let held = b.lock();
        warmed.wait();
        std::thread::sleep(Duration::from_millis(20));
        drop(held);
        t.join().unwrap();
        assert_eq!(*b.lock(), 1 + 100 + 50 + 2);
        bump_through_helper(&a)
    });
    let snap = handle.snapshot();
    let at_helper = |id: &str| {
        let helper = format!("counts_are_exact.rs:{line}:");
        let rows: Vec<_> = lock(&snap, id)
            .sites
            .iter()
            .filter(|s| s.site.contains(&helper))
            .map(|s| s.stats.clone())
            .collect();
        assert_eq!(rows.len(), 1, "{id}: one helper site");
        rows.into_iter().next().unwrap()
    };
    let a = at_helper("exact.runs.a");
    assert_eq!(a.acquisitions, 1 + 100 + 100 + 4 + 1);
    let b = at_helper("exact.runs.b");
    assert_eq!(b.acquisitions, 1 + 100 + 50 + 2);
    assert!(
        b.contended >= 1,
        "the wait behind the held `b` counts: {b:?}"
    );
    for s in [&a, &b] {
        assert_eq!(s.nowait + s.contended, s.acquisitions);
        assert_eq!(s.hold_ns.count, s.acquisitions);
    }
}

/// A semaphore's `down` and `down_timeout` are rows at the caller's line;
/// the nested rows of its own spinlock and wait queue are at sites inside
/// the semaphore, for both (`down_timeout`'s were once at the caller's).
#[test]
fn a_semaphores_nested_rows_are_at_sites_inside_it() {
    let (handle, lines) = observe(|| {
        let sem = Arc::new(Semaphore::named("sites.sem", 0));
        let upper = Arc::clone(&sem);
        // Not observed: it only gives the sleeping `down` its permit.
        let t = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(20));
            upper.up();
        });
        let down = line!() + 1;
        sem.down();
        t.join().unwrap();
        let timed = line!() + 1;
        assert!(!sem.down_timeout(Duration::from_millis(1)));
        [down, timed]
    });
    let snap = handle.snapshot();
    let sites = |id: &str| -> Vec<String> {
        lock(&snap, id)
            .sites
            .iter()
            .map(|s| s.site.clone())
            .collect()
    };
    let own = sites("sites.sem");
    for line in lines {
        let at = format!("counts_are_exact.rs:{line}:");
        assert!(
            own.iter().any(|s| s.contains(&at)),
            "no row at {line}: {own:?}"
        );
    }
    for id in ["sites.sem.wait", "sites.sem.lock"] {
        let nested = sites(id);
        assert!(!nested.is_empty(), "{id}: no rows");
        assert!(
            nested.iter().all(|s| s.contains("semaphore.rs")),
            "{id}: a row outside the semaphore: {nested:?}"
        );
    }
}
