//! A small workout of every unsafe path, sized for Miri:
//! `cargo +nightly miri test -p lockmeter --test miri_smoke`.
//! Guards and their entries, the per-thread index growing, shards folded
//! when threads exit, raw-guard handling in the lock_api adapters, and the
//! wait queue's hand-off between threads. Uses the mock clock (Miri cannot
//! read the TSC).

mod common;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use common::{lock, spawn_observed};
use lockmeter::{Layer, Mutex, RwLock, Semaphore, SpinLock, WaitQueue};
use tracing_subscriber::layer::SubscriberExt;

#[test]
fn every_primitive_under_observation() {
    let (clock, _mock) = quanta::Clock::mock();
    let layer = Layer::builder().clock(clock).process_name("miri").build();
    let handle = layer.handle();
    // No `Registry`: its slab set-up is slow under Miri and not ours to test.
    let dispatch = tracing::Dispatch::new(tracing::subscriber::NoSubscriber::default().with(layer));
    tracing::dispatcher::with_default(&dispatch, || {
        let spin = Arc::new(SpinLock::named("miri.spin", 0u32));
        let mutex = Arc::new(Mutex::named("miri.mutex", String::new()));
        let rw = Arc::new(RwLock::named("miri.rw", 0u8));
        let sem = Arc::new(Semaphore::named("miri.sem", 1));
        let q = Arc::new(WaitQueue::named("miri.wq"));
        let flag = Arc::new(AtomicBool::new(false));
        let (s2, m2, r2, sem2, q2, f2) = (
            spin.clone(),
            mutex.clone(),
            rw.clone(),
            sem.clone(),
            q.clone(),
            flag.clone(),
        );
        let t = spawn_observed(move || {
            for _ in 0..3 {
                *s2.lock() += 1;
                m2.lock().push('x');
                let _ = *r2.read();
                let _p = sem2.acquire();
            }
            q2.wait_event(|| f2.load(Ordering::Acquire));
        });
        // Wake the worker once it sleeps; no lost wake-up either way.
        while q.waiters() == 0 && !t.is_finished() {
            std::thread::yield_now();
        }
        flag.store(true, Ordering::Release);
        q.wake_up_all();
        t.join().unwrap();
        // Many distinct sites grow the thread's index past its first size.
        macro_rules! many_sites {
            ($($n:literal)*) => { $( *spin.lock() += $n; )* };
        }
        many_sites!(0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0);
        *rw.write() += 1;
        assert!(spin.try_lock().is_some());
    });
    let snap = handle.snapshot();
    assert_eq!(lock(&snap, "miri.spin").total.acquisitions, 3 + 20 + 1);
    assert_eq!(lock(&snap, "miri.mutex").total.acquisitions, 3);
    assert_eq!(lock(&snap, "miri.sem").total.acquisitions, 3);
}

/// The per-thread tables behind `now`: holds recorded and forgotten, a
/// snapshot resolving them from another thread, and a thread exiting.
#[test]
fn now_reads_held_locks_of_live_threads() {
    let (clock, _mock) = quanta::Clock::mock();
    let layer = Layer::builder().clock(clock).lock_order(true).build();
    let handle = layer.handle();
    let dispatch = tracing::Dispatch::new(tracing::subscriber::NoSubscriber::default().with(layer));
    tracing::dispatcher::with_default(&dispatch, || {
        let spin = SpinLock::named("miri.now.spin", 0u32);
        let rw = Arc::new(RwLock::named("miri.now.rw", 0u8));
        let s = spin.lock();
        let r = rw.read();
        let snap = handle.snapshot();
        let ids: Vec<&str> = snap.now.locks.iter().map(|l| l.id.as_str()).collect();
        assert_eq!(ids.len(), 2, "{ids:?}");
        assert!(ids.contains(&"miri.now.spin") && ids.contains(&"miri.now.rw"));
        drop(r);
        drop(s);
        let rw2 = rw.clone();
        spawn_observed(move || drop(rw2.write())).join().unwrap();
        let snap = handle.snapshot();
        assert!(snap.now.locks.is_empty(), "{:?}", snap.now);
        assert!(snap
            .lock_order
            .edges
            .iter()
            .any(|e| e.held == "miri.now.spin" && e.acquired == "miri.now.rw"));
    });
}

/// The parking_lot-compatible paths' unsafe code: guards taken apart by
/// `map`/`try_map`/`leak`, raw guards moved through upgrades and
/// downgrades, the recursive read's view of the raw rwlock, a reentrant
/// mutex's stored raw guard, and a Condvar hand-off between threads.
#[test]
fn the_parking_lot_paths_under_observation() {
    use lockmeter::{
        Condvar, MappedMutexGuard, MutexGuard, ReentrantMutex, ReentrantMutexGuard,
        RwLockReadGuard, RwLockUpgradableReadGuard, RwLockWriteGuard,
    };
    let (clock, _mock) = quanta::Clock::mock();
    let layer = Layer::builder().clock(clock).process_name("miri").build();
    let handle = layer.handle();
    let dispatch = tracing::Dispatch::new(tracing::subscriber::NoSubscriber::default().with(layer));
    tracing::dispatcher::with_default(&dispatch, || {
        let m = Mutex::named("miri.pl.mutex", (1u32, String::from("a")));
        let s = MappedMutexGuard::map(MutexGuard::map(m.lock(), |p| &mut p.1), |s| s);
        drop(s);
        let g = MutexGuard::try_map(m.lock(), |_| None::<&mut u32>).unwrap_err();
        let mut g = MutexGuard::try_map(g, |p| Some(&mut p.0)).unwrap();
        *g += 1;
        drop(g);
        let mut g = m.lock();
        MutexGuard::unlocked(&mut g, || ());
        MutexGuard::bump(&mut g);
        drop(g);
        let leaked = MutexGuard::leak(m.lock());
        leaked.0 += 1;
        // SAFETY: the leaked guard held the lock and `leaked` is not used again.
        unsafe { m.force_unlock() };
        assert_eq!(m.lock().0, 3);

        let rw = RwLock::named("miri.pl.rw", vec![1u8]);
        let up = rw.upgradable_read();
        let r = rw.read_recursive();
        let up = RwLockUpgradableReadGuard::try_upgrade(up).unwrap_err();
        drop(r);
        let mut w = RwLockUpgradableReadGuard::upgrade(up);
        w.push(2);
        let up = RwLockWriteGuard::downgrade_to_upgradable(w);
        let mut up = up;
        up.with_upgraded(|v| v.push(3));
        let r = RwLockUpgradableReadGuard::downgrade(up);
        let first = RwLockReadGuard::map(r, |v| &v[0]);
        assert_eq!(*first, 1);
        drop(first);
        let w = RwLockWriteGuard::map(rw.write(), |v| &mut v[2]);
        drop(w);

        let re = ReentrantMutex::named("miri.pl.re", 5u32);
        let a = re.lock();
        let b = ReentrantMutexGuard::map(re.lock(), |v| v);
        assert_eq!(*a + *b, 10);
        drop(a);
        drop(b);
        assert!(!re.is_locked());

        let pair = Arc::new((
            Mutex::named("miri.pl.cv.m", false),
            Condvar::named("miri.pl.cv"),
        ));
        let p2 = pair.clone();
        let t = spawn_observed(move || {
            *p2.0.lock() = true;
            p2.1.notify_all();
        });
        let mut ready = pair.0.lock();
        pair.1.wait_while(&mut ready, |r| !*r);
        drop(ready);
        t.join().unwrap();
    });
    let snap = handle.snapshot();
    assert_eq!(lock(&snap, "miri.pl.re").total.acquisitions, 2);
    // map, try_map, lock + unlocked + bump, leak, the last read.
    assert_eq!(lock(&snap, "miri.pl.mutex").total.acquisitions, 7);
}

/// `lockmeter::sync`'s unsafe: the metered guard's parts kept in the mutex
/// while held, taken out and put back around a condvar wait, and read out
/// once when the guard drops, observed and not.
#[test]
fn sync_mutex_keeps_its_guard_parts_soundly() {
    use lockmeter::sync::{Condvar, Mutex as StdMutex};
    let run = || {
        let pair = Arc::new((StdMutex::named("miri.sync", 0u32), Condvar::new()));
        let p2 = pair.clone();
        let t = spawn_observed(move || {
            let (m, c) = &*p2;
            *m.lock().unwrap() = 1;
            c.notify_one();
        });
        let (m, c) = &*pair;
        let g = c.wait_while(m.lock().unwrap(), |v| *v == 0).unwrap();
        assert_eq!(*g, 1);
        let (g, _) = c
            .wait_timeout(g, std::time::Duration::from_millis(1))
            .unwrap();
        drop(g);
        t.join().unwrap();
        assert!(m.try_lock().is_ok());
        // The std-style RwLock keeps a writer's parts beside the lock too.
        let rw = Arc::new(lockmeter::sync::RwLock::named("miri.sync.rw", 0u32));
        let rw2 = rw.clone();
        let w = spawn_observed(move || *rw2.write().unwrap() += 1);
        *rw.write().unwrap() += 1;
        w.join().unwrap();
        assert_eq!(*rw.read().unwrap(), 2);
        assert!(rw.try_write().is_ok());
        // Its raw lock is std's own, whose guards its guards carry: a read
        // held here while another thread reads, and a writer refused.
        let held = rw.read().unwrap();
        let rw3 = rw.clone();
        let other = spawn_observed(move || *rw3.read().unwrap());
        assert_eq!(other.join().unwrap(), 2);
        assert!(rw.try_write().is_err());
        drop(held);
        *rw.try_write().unwrap() += 1;
        assert_eq!(*rw.try_read().unwrap(), 3);
    };
    run();
    let (clock, _mock) = quanta::Clock::mock();
    let layer = Layer::builder().clock(clock).process_name("miri").build();
    let handle = layer.handle();
    let dispatch = tracing::Dispatch::new(tracing::subscriber::NoSubscriber::default().with(layer));
    tracing::dispatcher::with_default(&dispatch, run);
    assert!(lock(&handle.snapshot(), "miri.sync").total.acquisitions >= 3);
}

/// Timed holds keep their timed part on their thread, at their `now`
/// index: every hold timed, nested past what the table shows (the last
/// has nowhere to keep it), then released out of order, so the indexes
/// are reused.
#[test]
fn timed_holds_kept_beside_the_held_table() {
    let (clock, _mock) = quanta::Clock::mock();
    let layer = Layer::builder()
        .clock(clock)
        .sample_uncontended_holds(1)
        .build();
    let handle = layer.handle();
    let dispatch = tracing::Dispatch::new(tracing::subscriber::NoSubscriber::default().with(layer));
    tracing::dispatcher::with_default(&dispatch, || {
        let locks: Vec<_> = (0..17).map(|_| Mutex::named("miri.nested", 0u8)).collect();
        let mut held: Vec<_> = locks.iter().map(|m| m.lock()).collect();
        held.swap(0, 16);
        drop(held);
        for m in &locks[..2] {
            *m.lock() += 1;
        }
    });
    let snap = handle.snapshot();
    let t = &lock(&snap, "miri.nested").total;
    assert_eq!((t.acquisitions, t.hold_timed), (19, 18));
}

/// A loop back at a site its thread took before another: the thread's
/// kept guess (on the other site) is read back, found not taken and
/// replaced, through the entry pointers it keeps.
#[test]
fn a_loop_back_at_an_earlier_site_takes_the_kept_guess_back() {
    let (clock, _mock) = quanta::Clock::mock();
    let layer = Layer::builder().clock(clock).build();
    let handle = layer.handle();
    let dispatch = tracing::Dispatch::new(tracing::subscriber::NoSubscriber::default().with(layer));
    let m = Mutex::named("miri.again", 0u32);
    let at_loop = |n: u32| (0..n).for_each(|_| *m.lock() += 1);
    tracing::dispatcher::with_default(&dispatch, || {
        at_loop(4);
        (0..4).for_each(|_| *m.lock() += 1);
        at_loop(200);
    });
    assert_eq!(
        lock(&handle.snapshot(), "miri.again").total.acquisitions,
        208
    );
}

/// Two classes at one helper's site: a run of one makes it the site's
/// kept guess through the entries its look-ups found, a wrong guess
/// forgets it, and the two in turn go by look-ups, all through the entry
/// pointers the thread keeps.
#[test]
fn a_helpers_site_that_two_classes_share_is_guessed_from_its_look_ups() {
    let (clock, _mock) = quanta::Clock::mock();
    let layer = Layer::builder().clock(clock).build();
    let handle = layer.handle();
    let dispatch = tracing::Dispatch::new(tracing::subscriber::NoSubscriber::default().with(layer));
    let (a, b) = (
        Mutex::named("miri.shared.a", 0u32),
        Mutex::named("miri.shared.b", 0u32),
    );
    #[inline(never)]
    fn helper(m: &Mutex<u32>) {
        *m.lock() += 1;
    }
    tracing::dispatcher::with_default(&dispatch, || {
        for _ in 0..2 {
            helper(&a);
            helper(&b);
        }
        (0..6).for_each(|_| helper(&a));
        (0..6).for_each(|_| helper(&b));
        (0..6).for_each(|_| {
            helper(&a);
            helper(&b);
        });
    });
    let snap = handle.snapshot();
    for id in ["miri.shared.a", "miri.shared.b"] {
        assert_eq!(lock(&snap, id).total.acquisitions, 2 + 6 + 6, "{id}");
    }
}
