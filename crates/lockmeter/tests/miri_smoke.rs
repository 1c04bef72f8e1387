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
