//! Code written against parking_lot 0.12 compiles against this crate
//! unchanged, in the forms its dependents use (typed `lock_api` paths,
//! 0.4-style raw calls, `const_*` statics, guard maps, upgradable reads,
//! reentrancy), and every lock built through it is counted.

use std::sync::Arc;
use std::thread;

use parking_lot::lock_api::{self, RawMutex as _, RawRwLock as _};
use parking_lot::{
    const_mutex, const_rwlock, FairMutex, MappedMutexGuard, Mutex, MutexGuard, Once, OnceState,
    RawMutex, RawRwLock, ReentrantMutex, RwLock, RwLockUpgradableReadGuard,
};
use tracing_subscriber::prelude::*;

static GLOBAL: Mutex<u32> = const_mutex(0);
static TABLE: RwLock<Vec<u8>> = const_rwlock(Vec::new());

/// tokio names guards this way: `lock_api::MutexGuard<'a, parking_lot::RawMutex, T>`.
struct Wrapped<'a, T>(lock_api::MutexGuard<'a, RawMutex, T>);

fn wrap<T>(m: &Mutex<T>) -> Wrapped<'_, T> {
    let g: MutexGuard<'_, T> = m.lock();
    Wrapped(g)
}

/// Generic code over `lock_api` types with parking_lot's raw locks.
fn read_len<T>(l: &lock_api::RwLock<RawRwLock, Vec<T>>) -> usize {
    l.read().len()
}

#[test]
fn typed_paths_and_raw_calls_compile_and_work() {
    let m = Mutex::new(5);
    *wrap(&m).0 += 1;
    assert_eq!(*m.lock(), 6);

    // 0.4-style raw use, as through `parking_lot::lock_api::RawMutex`.
    let raw = <RawMutex as lock_api::RawMutex>::INIT;
    raw.lock();
    assert!(!raw.try_lock());
    // SAFETY: locked just above by this thread.
    unsafe { raw.unlock() };
    assert!(raw.try_lock());
    // SAFETY: as above.
    unsafe { raw.unlock() };
    let rw = <RawRwLock as lock_api::RawRwLock>::INIT;
    rw.lock_shared();
    assert!(rw.try_lock_shared());
    assert!(!rw.try_lock_exclusive());
    // SAFETY: two shared locks are held by this thread.
    unsafe {
        rw.unlock_shared();
        rw.unlock_shared();
    }
    assert!(rw.try_lock_exclusive());
    // SAFETY: held exclusively just above.
    unsafe { rw.unlock_exclusive() };

    TABLE.write().push(1);
    assert_eq!(read_len(&TABLE), 1);
}

#[test]
fn the_rest_of_the_api_behaves_as_parking_lot() {
    let m = Mutex::new((1, 2));
    let mapped: MappedMutexGuard<'_, i32> = MutexGuard::map(m.lock(), |p| &mut p.1);
    assert_eq!(*mapped, 2);
    drop(mapped);

    let l = RwLock::new(1);
    let up = l.upgradable_read();
    let r = l.read();
    assert_eq!(*up + *r, 2);
    drop(r);
    let mut w = RwLockUpgradableReadGuard::upgrade(up);
    *w = 3;
    drop(w);
    assert_eq!(*l.read_recursive(), 3);

    let re = ReentrantMutex::new(());
    let a = re.lock();
    let b = re.lock();
    drop((a, b));

    let f = Arc::new(FairMutex::new(0));
    let ts: Vec<_> = (0..2)
        .map(|_| {
            let f = f.clone();
            thread::spawn(move || {
                for _ in 0..100 {
                    *f.lock() += 1;
                }
            })
        })
        .collect();
    ts.into_iter().for_each(|t| t.join().unwrap());
    assert_eq!(*f.lock(), 200);

    static ONCE: Once = Once::new();
    ONCE.call_once(|| {});
    assert_eq!(ONCE.state(), OnceState::Done);
    *GLOBAL.lock() += 1;
}

#[test]
fn locks_built_through_the_compat_crate_are_counted_at_their_callers() {
    let layer = lockmeter::Layer::new();
    let handle = layer.handle();
    let dispatch = tracing::Dispatch::new(tracing_subscriber::registry().with(layer));
    let line = line!() + 2;
    tracing::dispatcher::with_default(&dispatch, || {
        let m = Mutex::new(0u32);
        for _ in 0..10 {
            *m.lock() += 1;
        }
        let l = RwLock::new(0u32);
        *l.write() += 1;
        let _ = *l.read();
        let _ = *l.upgradable_read();
    });
    let snap = handle.snapshot();
    let at = |l: u32| format!("{}:{l}:", file!());
    let m = snap
        .locks
        .iter()
        .find(|c| c.created_at.starts_with(&at(line)))
        .expect("the mutex's class is its creation site in this file");
    assert_eq!(m.total.acquisitions, 10);
    assert!(m.sites.iter().all(|s| s.site.starts_with(&at(line + 2))));
    let l = snap
        .locks
        .iter()
        .find(|c| c.created_at.starts_with(&at(line + 4)))
        .expect("the rwlock's class");
    assert_eq!(l.total.acquisitions, 3);
}
