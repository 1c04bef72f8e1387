//! The parking_lot-compatible types behave as parking_lot 0.12's do, with
//! real threads: upgradable reads exclude writers and each other but not
//! readers, an upgrade waits for the readers to leave, a recursive read
//! passes a waiting writer, a reentrant mutex excludes other threads until
//! its last level is left.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use lockmeter::{
    const_fair_mutex, const_mutex, const_reentrant_mutex, const_rwlock, FairMutex, Mutex,
    ReentrantMutex, RwLock, RwLockUpgradableReadGuard, RwLockWriteGuard,
};

static COUNTER: Mutex<u32> = const_mutex(0);
static FAIR: FairMutex<u32> = const_fair_mutex(0);
static TABLE: RwLock<u32> = const_rwlock(0);
static REENTRANT: ReentrantMutex<u32> = const_reentrant_mutex(0);

#[test]
fn const_constructors_make_statics() {
    *COUNTER.lock() += 1;
    *FAIR.lock() += 1;
    *TABLE.write() += 1;
    let a = REENTRANT.lock();
    let b = REENTRANT.lock();
    assert_eq!(*a + *b + *COUNTER.lock() + *FAIR.lock() + *TABLE.read(), 3);
}

#[test]
fn an_upgradable_read_admits_readers_but_no_writer_or_second_upgradable() {
    let l = Arc::new(RwLock::new(1));
    let up = l.upgradable_read();
    let l2 = l.clone();
    std::thread::spawn(move || {
        assert_eq!(*l2.read(), 1, "readers share with an upgradable read");
        assert!(l2.try_write().is_none());
        assert!(l2.try_upgradable_read().is_none());
        assert!(l2
            .try_upgradable_read_for(Duration::from_millis(5))
            .is_none());
    })
    .join()
    .unwrap();
    drop(up);
    assert!(l.try_upgradable_read().is_some());
}

#[test]
fn an_upgrade_waits_for_the_readers_to_leave() {
    let l = Arc::new(RwLock::new(0));
    let reader_left = Arc::new(AtomicBool::new(false));
    let up = l.upgradable_read();
    let (l2, left2) = (l.clone(), reader_left.clone());
    let (tx, rx) = std::sync::mpsc::channel();
    let reader = std::thread::spawn(move || {
        let r = l2.read();
        tx.send(()).unwrap();
        std::thread::sleep(Duration::from_millis(30));
        left2.store(true, Ordering::SeqCst);
        drop(r);
    });
    rx.recv().unwrap();
    let mut w = RwLockUpgradableReadGuard::upgrade(up);
    assert!(
        reader_left.load(Ordering::SeqCst),
        "upgraded only after the reader left"
    );
    *w = 1;
    let r = RwLockWriteGuard::downgrade(w);
    assert_eq!(*r, 1);
    assert!(l.try_read().is_some(), "a downgraded lock admits readers");
    reader.join().unwrap();
}

#[test]
fn a_recursive_read_passes_a_waiting_writer() {
    let l = Arc::new(RwLock::new(0));
    let r = l.read();
    let l2 = l.clone();
    let writer = std::thread::spawn(move || *l2.write() = 1);
    // Let the writer queue behind our read lock.
    std::thread::sleep(Duration::from_millis(50));
    let again = l
        .try_read_recursive_for(Duration::from_secs(10))
        .expect("a recursive read does not queue behind the writer");
    assert_eq!(*again, 0);
    drop(again);
    drop(r);
    writer.join().unwrap();
    assert_eq!(*l.read_recursive(), 1);
}

#[test]
fn a_reentrant_mutex_excludes_other_threads_until_its_last_level() {
    let m = Arc::new(ReentrantMutex::new(()));
    let outer = m.lock();
    let inner = m.lock();
    let m2 = m.clone();
    let probe = move || {
        let m = m2.clone();
        std::thread::spawn(move || m.try_lock().is_some())
            .join()
            .unwrap()
    };
    assert!(!probe());
    drop(outer);
    assert!(!probe(), "one level is still held");
    drop(inner);
    assert!(probe());
}

#[test]
fn try_with_upgraded_gives_the_lock_back_either_way() {
    let l = RwLock::new(0);
    let mut up = l.upgradable_read();
    assert_eq!(
        up.try_with_upgraded(|v| {
            *v += 1;
            *v
        }),
        Some(1)
    );
    let reader = l.read();
    assert_eq!(up.try_with_upgraded(|v| *v), None, "a reader blocks it");
    drop(reader);
    assert_eq!(*up, 1);
    drop(up);
    assert!(l.try_write().is_some());
}
