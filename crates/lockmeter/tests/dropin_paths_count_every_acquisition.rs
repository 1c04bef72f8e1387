//! Every acquisition through the parking_lot-compatible paths is counted
//! exactly, at the site of the call that made it: a guard's `unlocked` and
//! `bump`, an upgrade (a write), a downgrade (a NOWAIT read or upgradable),
//! recursive reads, reentrant levels, mapped and leaked guards.

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::{lock, observe, on_each, spawn_observed};
use lockmeter::{
    FairMutex, MappedMutexGuard, Mutex, MutexGuard, ReentrantMutex, RwLock, RwLockReadGuard,
    RwLockUpgradableReadGuard, RwLockWriteGuard,
};
use lockmeter_model::{LockStats, SiteStats, Snapshot};

const N: u64 = 50;

/// The rows of `l` in `mode` (None: every row).
fn rows<'a>(l: &'a LockStats, mode: &str) -> Vec<&'a SiteStats> {
    l.sites
        .iter()
        .filter(|s| s.mode.as_deref() == Some(mode))
        .collect()
}

fn acquisitions(sites: &[&SiteStats]) -> Vec<u64> {
    let mut v: Vec<u64> = sites.iter().map(|s| s.stats.acquisitions).collect();
    v.sort_unstable();
    v
}

fn check_holds_add_up(snap: &Snapshot, id: &str) {
    let l = lock(snap, id);
    assert_eq!(l.total.hold_ns.count, l.total.acquisitions, "{id}");
    assert_eq!(l.total.nowait + l.total.contended, l.total.acquisitions);
}

#[test]
fn unlocked_and_bump_count_their_reacquisitions_at_their_sites() {
    let (handle, ()) = observe(|| {
        let m = Mutex::named("pl.unlocked", 0u64);
        let mut g = m.lock();
        for _ in 0..N {
            MutexGuard::unlocked(&mut g, || ());
        }
        for _ in 0..N {
            MutexGuard::bump(&mut g);
        }
        for _ in 0..N {
            MutexGuard::unlocked_fair(&mut g, || ());
        }
        *g += 1;
        MutexGuard::unlock_fair(g);
    });
    let snap = handle.snapshot();
    let l = lock(&snap, "pl.unlocked");
    assert_eq!(l.total.acquisitions, 1 + 3 * N);
    let mut per_site: Vec<u64> = l.sites.iter().map(|s| s.stats.acquisitions).collect();
    per_site.sort_unstable();
    assert_eq!(per_site, [1, N, N, N]);
    check_holds_add_up(&snap, "pl.unlocked");
}

#[test]
fn an_unlocked_closure_that_panics_leaves_the_guard_locked_and_counted() {
    let (handle, ()) = observe(|| {
        let m = Mutex::named("pl.unlocked.panic", 0u64);
        let mut g = m.lock();
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            MutexGuard::unlocked(&mut g, || panic!("inside unlocked"));
        }));
        assert!(r.is_err());
        assert!(m.is_locked(), "the guard took the lock back on unwind");
        *g += 1;
        drop(g);
        assert_eq!(*m.lock(), 1);
    });
    let snap = handle.snapshot();
    assert_eq!(lock(&snap, "pl.unlocked.panic").total.acquisitions, 3);
    check_holds_add_up(&snap, "pl.unlocked.panic");
}

#[test]
fn mapped_guards_carry_the_hold_and_leaked_ones_still_count() {
    let (handle, ()) = observe(|| {
        let m = Mutex::named("pl.map", (1u32, String::from("x")));
        for _ in 0..N {
            let mut s = MutexGuard::map(m.lock(), |v| &mut v.1);
            s.push('y');
            let n = MappedMutexGuard::map(s, |s| s);
            drop(n);
        }
        let g = MutexGuard::try_map(m.lock(), |_| None::<&mut u32>).unwrap_err();
        let r = MutexGuard::try_map_or_err(g, |_| Err::<&mut u32, _>("no"));
        let (g, e) = r.unwrap_err();
        assert_eq!(e, "no");
        drop(g);
        let leaked: &mut (u32, String) = MutexGuard::leak(m.lock());
        leaked.0 = 7;
        // SAFETY: the leaked guard held the lock; nobody uses `leaked` after.
        unsafe { m.force_unlock() };
        assert_eq!(m.lock().0, 7);
    });
    let snap = handle.snapshot();
    let l = lock(&snap, "pl.map");
    assert_eq!(l.total.acquisitions, N + 1 + 1 + 1);
    assert_eq!(
        l.total.hold_ns.count,
        l.total.acquisitions - 1,
        "the leaked hold is the only one not recorded"
    );
    assert_eq!(lock(&snap, "pl.map").total.rejected, 0);
}

#[test]
fn fair_mutex_counts_like_mutex() {
    let (handle, ()) = observe(|| {
        let m = Arc::new(FairMutex::named("pl.fair", 0u64));
        on_each(4, &m, |m, _| {
            for _ in 0..N {
                *m.lock() += 1;
            }
        });
        assert!(m.try_lock_for(Duration::from_millis(1)).is_some());
    });
    let snap = handle.snapshot();
    assert_eq!(lock(&snap, "pl.fair").total.acquisitions, 4 * N + 1);
    check_holds_add_up(&snap, "pl.fair");
}

#[test]
fn upgrades_count_as_writes_and_downgrades_as_nowait_reads_at_their_sites() {
    let (handle, ()) = observe(|| {
        let l = RwLock::named("pl.upgrade", 0u64);
        for _ in 0..N {
            let up = l.upgradable_read();
            let mut w = RwLockUpgradableReadGuard::upgrade(up);
            *w += 1;
            let r = RwLockWriteGuard::downgrade(w);
            assert!(*r > 0);
        }
        let mut up = l.upgradable_read();
        for _ in 0..N {
            up.with_upgraded(|v| *v += 1);
        }
        let up = RwLockUpgradableReadGuard::downgrade(up);
        drop(up);
        // A reader blocks the try-upgrade: one write RJECT.
        let up = l.upgradable_read();
        let reader = l.read_recursive();
        let up = RwLockUpgradableReadGuard::try_upgrade(up).unwrap_err();
        let up =
            RwLockUpgradableReadGuard::try_upgrade_for(up, Duration::from_millis(1)).unwrap_err();
        drop(reader);
        let w = RwLockUpgradableReadGuard::try_upgrade(up).unwrap();
        let up = RwLockWriteGuard::downgrade_to_upgradable(w);
        drop(up);
        assert_eq!(*l.read(), 2 * N);
    });
    let snap = handle.snapshot();
    let l = lock(&snap, "pl.upgrade");
    // Upgradable: N, 1 (the with_upgraded guard) and 1 (try_upgrade's)
    // by `upgradable_read` at three sites, N by with_upgraded's
    // downgrades and 1 by downgrade_to_upgradable.
    assert_eq!(acquisitions(&rows(l, "upgradable")), [1, 1, 1, N, N]);
    // Writes: N upgrades, N in with_upgraded, 1 successful try_upgrade;
    // the two failed tries are RJECT at their sites.
    let writes = rows(l, "write");
    assert_eq!(acquisitions(&writes), [0, 0, 1, N, N]);
    assert_eq!(writes.iter().map(|s| s.stats.rejected).sum::<u64>(), 2);
    // Reads: N downgrades, 1 upgradable downgrade, 1 read_recursive,
    // 1 final read.
    assert_eq!(acquisitions(&rows(l, "read")), [1, 1, 1, N]);
    check_holds_add_up(&snap, "pl.upgrade");
}

#[test]
fn read_guards_unlocked_and_mapped_count_in_the_read_rows() {
    let (handle, ()) = observe(|| {
        let l = RwLock::named("pl.read", vec![1u8, 2]);
        let mut r = l.read();
        for _ in 0..N {
            RwLockReadGuard::unlocked(&mut r, || ());
        }
        let first = RwLockReadGuard::map(r, |v| &v[0]);
        assert_eq!(*first, 1);
        drop(first);
        let mut w = l.write();
        RwLockWriteGuard::bump(&mut w);
        let w = RwLockWriteGuard::map(w, |v| &mut v[1]);
        drop(w);
        assert!(l.try_read_recursive().is_some());
    });
    let snap = handle.snapshot();
    let l = lock(&snap, "pl.read");
    assert_eq!(acquisitions(&rows(l, "read")), [1, 1, N]);
    assert_eq!(acquisitions(&rows(l, "write")), [1, 1]);
    check_holds_add_up(&snap, "pl.read");
}

#[test]
fn reentrant_levels_count_as_nowait_acquisitions_and_others_wait() {
    let (handle, ()) = observe(|| {
        let m = Arc::new(ReentrantMutex::named("pl.reentrant", 0u32));
        let outer = m.lock();
        let levels: Vec<_> = (0..N).map(|_| m.lock()).collect();
        let m2 = m.clone();
        let other = spawn_observed(move || {
            let g = m2.lock();
            assert!(m2.is_owned_by_current_thread());
            *g
        });
        std::thread::sleep(Duration::from_millis(20));
        drop(levels);
        assert!(m.is_owned_by_current_thread());
        drop(outer);
        other.join().unwrap();
        assert!(!m.is_owned_by_current_thread());
    });
    let snap = handle.snapshot();
    let l = lock(&snap, "pl.reentrant");
    assert_eq!(l.total.acquisitions, N + 2);
    assert_eq!(l.total.contended, 1, "the other thread waited");
    assert_eq!(l.total.nowait, N + 1);
    check_holds_add_up(&snap, "pl.reentrant");
}
