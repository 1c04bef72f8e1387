//! A thread's held-lock table leaves `now` when the thread exits, even a
//! thread that still holds locks while its thread-locals are destroyed:
//! the table's head (its state word and first record) lives in the
//! thread's own thread-local memory, which goes with the thread, so no
//! snapshot may read it after. Its last releases, made after it left,
//! are still counted, and the locks are free afterwards.

mod common;

use std::cell::RefCell;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::Arc;

use common::{lock, observe, spawn_observed};
use lockmeter::{Mutex, MutexGuard, SpinLock};
use tracing_subscriber::layer::SubscriberExt;

thread_local! {
    /// Guards dropped only when the thread's thread-locals are destroyed.
    static KEPT: RefCell<Vec<MutexGuard<'static, u64>>> = const { RefCell::new(Vec::new()) };
}

#[test]
fn a_thread_exiting_with_locks_held_leaves_now_and_frees_them() {
    let (handle, ()) = observe(|| {
        let outer: &'static Mutex<u64> = Box::leak(Box::new(Mutex::named("exit.outer", 0)));
        let inner: &'static Mutex<u64> = Box::leak(Box::new(Mutex::named("exit.inner", 0)));
        spawn_observed(move || {
            // Touched first, so destroyed last: after lockmeter's own
            // thread-locals, which take the thread out of `now`.
            KEPT.with(|_| ());
            // The lone hold (the head's record) and a nested one, both
            // still held when the thread leaves `now`.
            let (o, i) = (outer.lock(), inner.lock());
            KEPT.with(|k| k.borrow_mut().extend([o, i]));
        })
        .join()
        .unwrap();
        // Released by the exited thread's destructors: free again.
        drop((outer.try_lock().expect("outer freed at exit"), inner.lock()));
    });
    let snap = handle.snapshot();
    assert!(
        snap.now.is_empty(),
        "an exited thread shown: {:?}",
        snap.now
    );
    assert_eq!(lock(&snap, "exit.outer").total.acquisitions, 2);
    assert_eq!(lock(&snap, "exit.inner").total.acquisitions, 2);
}

/// Many short threads take and release a lock, some exiting while they
/// hold it, while another thread snapshots without pause: every snapshot
/// reads only live threads' tables (a read of an exited thread's head
/// would read freed memory), and at the end nothing is held and every
/// acquisition is counted.
#[test]
fn snapshots_during_thread_churn_read_only_live_threads() {
    const THREADS: u64 = 64;
    const ROUNDS: u64 = 500;
    let layer = lockmeter::Layer::new();
    let handle = layer.handle();
    let dispatch = tracing::Dispatch::new(tracing_subscriber::registry().with(layer));
    tracing::dispatcher::with_default(&dispatch, || {
        let spin: &'static SpinLock<u64> = Box::leak(Box::new(SpinLock::named("churn.spin", 0)));
        let kept: &'static Mutex<u64> = Box::leak(Box::new(Mutex::named("churn.kept", 0)));
        let done = Arc::new(AtomicBool::new(false));
        let reader = {
            let (done, handle) = (done.clone(), handle.clone());
            std::thread::spawn(move || {
                let mut reads = 0u64;
                while !done.load(Relaxed) || reads == 0 {
                    let snap = handle.snapshot();
                    assert!(snap.now.locks.len() <= 2, "{:?}", snap.now);
                    reads += 1;
                }
                reads
            })
        };
        let threads: Vec<_> = (0..THREADS)
            .map(|t| {
                spawn_observed(move || {
                    KEPT.with(|_| ());
                    for _ in 0..ROUNDS {
                        *spin.lock() += 1;
                    }
                    if t % 4 == 0 {
                        KEPT.with(|k| k.borrow_mut().push(kept.lock()));
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        done.store(true, Relaxed);
        assert!(reader.join().unwrap() > 0);
    });
    let snap = handle.snapshot();
    assert!(snap.now.is_empty(), "{:?}", snap.now);
    assert_eq!(
        lock(&snap, "churn.spin").total.acquisitions,
        THREADS * ROUNDS
    );
    assert_eq!(lock(&snap, "churn.kept").total.acquisitions, THREADS / 4);
}
