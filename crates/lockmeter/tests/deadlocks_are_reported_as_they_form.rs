//! Real threads deadlocking on purpose, with timed waits of a few seconds
//! so that every test ends by itself: the watchdog reports each cycle in
//! the snapshot's `deadlocks` and as an ERROR event within 2 s, names the
//! threads, locks and waiting sites, and reports nothing for threads that
//! wait behind a busy holder.

#[macro_use]
mod now_common;

use std::collections::BTreeSet;
use std::sync::{Arc, Barrier};
use std::time::Duration;

use lockmeter::{Layer, Mutex, RwLock, Semaphore};
use lockmeter_model::Snapshot;
use now_common::{observed, Observed};

/// How long the deadlocked threads wait before giving up.
const WAIT: Duration = Duration::from_secs(3);
/// The promise: reported within this long of forming.
const WITHIN: Duration = Duration::from_secs(2);

/// Every test of this binary builds the same process-wide settings.
fn layer() -> Observed {
    observed(
        Layer::builder()
            .deadlock_detection(Some(Duration::from_secs(1)))
            .stall_threshold(Some(Duration::from_millis(300))),
    )
}

fn names(d: &lockmeter_model::now::Deadlock) -> BTreeSet<String> {
    d.threads.iter().map(|t| t.thread.name.clone()).collect()
}

fn set(items: &[&str]) -> BTreeSet<String> {
    items.iter().map(|s| s.to_string()).collect()
}

fn deadlock_with(snap: &Snapshot, threads: &[&str]) -> Option<lockmeter_model::now::Deadlock> {
    snap.deadlocks
        .iter()
        .find(|d| names(d) == set(threads))
        .cloned()
}

/// The deadlock of exactly `threads`, once reported (within [`WITHIN`]),
/// and the snapshot it was found in; fails if none is.
fn reported(o: &Observed, threads: &[&str]) -> (Snapshot, lockmeter_model::now::Deadlock) {
    let (snap, took) = o.poll(WITHIN, |s| deadlock_with(s, threads).is_some());
    let d = deadlock_with(&snap, threads).unwrap_or_else(|| {
        panic!(
            "no deadlock of {threads:?} after {took:?}: {:?}; now: {:?}",
            snap.deadlocks, snap.now
        )
    });
    (snap, d)
}

#[test]
fn an_ab_ba_deadlock_is_reported_within_two_seconds_with_threads_locks_and_sites() {
    let o = layer();
    let a = Arc::new(Mutex::named("abba.a", ()));
    let b = Arc::new(Mutex::named("abba.b", ()));
    let go = Arc::new(Barrier::new(3));
    let (a1, b1, go1) = (a.clone(), b.clone(), go.clone());
    let t1 = o.spawn("abba-1", move || {
        let _a = a1.lock();
        go1.wait();
        let site = next_line!();
        let _b = b1.try_lock_for(WAIT);
        site
    });
    let (a2, b2, go2) = (a.clone(), b.clone(), go.clone());
    let t2 = o.spawn("abba-2", move || {
        let _b = b2.lock();
        go2.wait();
        let site = next_line!();
        let _a = a2.try_lock_for(WAIT);
        site
    });
    go.wait();
    let (snap, d) = reported(&o, &["abba-1", "abba-2"]);
    // While they are stuck, `now` shows both locks held and waited on.
    for id in ["abba.a", "abba.b"] {
        let l = snap.now.locks.iter().find(|l| l.id == id).expect(id);
        assert_eq!(l.holders.len(), 1, "{id}: {l:?}");
        assert_eq!(l.waiters.len(), 1, "{id}: {l:?}");
    }
    assert!(
        snap.now.chains.iter().any(|c| c.cycle),
        "{:?}",
        snap.now.chains
    );
    let (site1, site2) = (t1.join().unwrap(), t2.join().unwrap());
    let by_name = |n: &str| d.threads.iter().find(|t| t.thread.name == n).unwrap();
    let (d1, d2) = (by_name("abba-1"), by_name("abba-2"));
    assert_eq!(d1.waits_on.id, "abba.b");
    assert_eq!(d2.waits_on.id, "abba.a");
    assert!(
        d1.waits_on.site.starts_with(&site1),
        "{} vs {site1}",
        d1.waits_on.site
    );
    assert!(
        d2.waits_on.site.starts_with(&site2),
        "{} vs {site2}",
        d2.waits_on.site
    );
    assert_eq!(d1.held_by[0].name, "abba-2");
    assert_eq!(d1.holds[0].id, "abba.a");
    assert!(d1.thread.tid != 0 && d1.thread.tid != d2.thread.tid);
    // Reported once, as an ERROR event naming threads, locks and sites.
    let errors: Vec<_> = o
        .events
        .at(tracing::Level::ERROR)
        .into_iter()
        .filter(|e| e.field("threads").contains("abba-1"))
        .collect();
    assert_eq!(errors.len(), 1, "{errors:?}");
    let e = &errors[0];
    assert!(e.field("threads").contains("abba-2"), "{e:?}");
    assert!(e.field("locks").contains("abba.a") && e.field("locks").contains("abba.b"));
    assert!(e.field("sites").contains(&site1) && e.field("sites").contains(&site2));
    // The deadlock stays in later snapshots: a hang is not forgotten.
    assert!(deadlock_with(&o.handle.snapshot(), &["abba-1", "abba-2"]).is_some());
}

#[test]
fn a_three_thread_cycle_is_reported_as_one_deadlock() {
    let o = layer();
    let locks: Vec<Arc<Mutex<()>>> = ["ring.0", "ring.1", "ring.2"]
        .into_iter()
        .map(|n| Arc::new(Mutex::named(n, ())))
        .collect();
    let go = Arc::new(Barrier::new(4));
    let threads: Vec<_> = (0..3)
        .map(|i| {
            let (mine, next, go) = (locks[i].clone(), locks[(i + 1) % 3].clone(), go.clone());
            o.spawn(&format!("ring-{i}"), move || {
                let _m = mine.lock();
                go.wait();
                let _n = next.try_lock_for(WAIT);
            })
        })
        .collect();
    go.wait();
    let want = ["ring-0", "ring-1", "ring-2"];
    let (_, d) = reported(&o, &want);
    threads.into_iter().for_each(|t| t.join().unwrap());
    // In cycle order: each waits on the lock the next one holds.
    for (i, t) in d.threads.iter().enumerate() {
        let next = &d.threads[(i + 1) % 3];
        assert_eq!(t.held_by, vec![next.thread.clone()], "{d:?}");
        assert!(next.holds.iter().any(|h| h.instance == t.waits_on.instance));
    }
}

#[test]
fn readers_and_a_writer_of_an_rwlock_form_a_cycle() {
    let o = layer();
    let table = Arc::new(RwLock::named("rw.table", 0u32));
    let log = Arc::new(Mutex::named("rw.log", ()));
    let go = Arc::new(Barrier::new(3));
    let (t, l, g) = (table.clone(), log.clone(), go.clone());
    let reader = o.spawn("rw-reader", move || {
        let _r = t.read();
        g.wait();
        let _l = l.try_lock_for(WAIT);
    });
    let (t, l, g) = (table.clone(), log.clone(), go.clone());
    let writer = o.spawn("rw-writer", move || {
        let _l = l.lock();
        g.wait();
        let _w = t.try_write_for(WAIT);
    });
    go.wait();
    let want = ["rw-reader", "rw-writer"];
    let (_, d) = reported(&o, &want);
    reader.join().unwrap();
    writer.join().unwrap();
    let w = d
        .threads
        .iter()
        .find(|t| t.thread.name == "rw-writer")
        .unwrap();
    assert_eq!(
        (w.waits_on.id.as_str(), w.waits_on.mode.as_deref()),
        ("rw.table", Some("write"))
    );
    let r = d
        .threads
        .iter()
        .find(|t| t.thread.name == "rw-reader")
        .unwrap();
    assert_eq!(r.holds[0].mode.as_deref(), Some("read"));
}

#[test]
fn a_semaphore_whose_permit_holders_are_all_stuck_is_a_deadlock() {
    let o = layer();
    let sem = Arc::new(Semaphore::named("sem.slots", 1));
    let m = Arc::new(Mutex::named("sem.m", ()));
    let go = Arc::new(Barrier::new(3));
    let (s, mm, g) = (sem.clone(), m.clone(), go.clone());
    let holder = o.spawn("sem-holder", move || {
        let _p = s.acquire();
        g.wait();
        let _m = mm.try_lock_for(WAIT);
    });
    let (s, mm, g) = (sem.clone(), m.clone(), go.clone());
    let waiter = o.spawn("sem-waiter", move || {
        let _m = mm.lock();
        g.wait();
        s.down_timeout(WAIT)
    });
    go.wait();
    let want = ["sem-holder", "sem-waiter"];
    reported(&o, &want);
    holder.join().unwrap();
    waiter.join().unwrap();
}

/// Reentrant readers, a writer that releases, a semaphore used with
/// `down`/`up`: busy and slow, never a cycle.
#[test]
fn threads_waiting_behind_a_busy_holder_are_a_chain_not_a_deadlock() {
    let o = layer();
    let a = Arc::new(Mutex::named("chain.a", ()));
    let b = Arc::new(Mutex::named("chain.b", ()));
    let go = Arc::new(Barrier::new(4));
    let (bb, g) = (b.clone(), go.clone());
    let busy = o.spawn("chain-busy", move || {
        let _b = bb.lock();
        g.wait();
        std::thread::sleep(Duration::from_millis(2500)); // not waiting on a lock
    });
    let (aa, bb, g) = (a.clone(), b.clone(), go.clone());
    let middle = o.spawn("chain-middle", move || {
        let _a = aa.lock();
        g.wait();
        drop(bb.lock());
    });
    let (aa, g) = (a.clone(), go.clone());
    let last = o.spawn("chain-last", move || {
        g.wait();
        std::thread::sleep(Duration::from_millis(100));
        drop(aa.lock());
    });
    go.wait();
    let (snap, _) = o.poll(Duration::from_secs(2), |s| {
        s.now.chains.iter().any(|c| c.links.len() == 2)
    });
    let chain = snap
        .now
        .chains
        .iter()
        .find(|c| c.links.len() == 2)
        .unwrap_or_else(|| panic!("no chain: {:?}", snap.now));
    let names: Vec<&str> = chain.links.iter().map(|l| l.thread.name.as_str()).collect();
    assert_eq!(names, ["chain-last", "chain-middle"]);
    assert_eq!(
        chain.ends_at.as_ref().map(|t| t.name.as_str()),
        Some("chain-busy")
    );
    assert!(!chain.cycle);
    // The hold past the stall threshold is marked in `now`, and warned once.
    let b_now = snap.now.locks.iter().find(|l| l.id == "chain.b").unwrap();
    std::thread::sleep(Duration::from_millis(500));
    [busy, middle, last]
        .into_iter()
        .for_each(|t| t.join().unwrap());
    let snap = o.handle.snapshot();
    assert!(
        !snap.deadlocks.iter().any(|d| d
            .threads
            .iter()
            .any(|t| t.thread.name.starts_with("chain-"))),
        "{:?}",
        snap.deadlocks
    );
    assert_eq!(b_now.holders[0].thread.name, "chain-busy");
    let warns: Vec<_> = o
        .events
        .at(tracing::Level::WARN)
        .into_iter()
        .filter(|e| e.field("thread").contains("chain-busy") && e.field("lock") == "chain.b")
        .collect();
    assert_eq!(warns.len(), 1, "one stall, one warning: {warns:?}");
    assert!(
        o.handle.snapshot().now.locks.is_empty(),
        "nothing held any more"
    );
}

/// A thread re-entering its own ReentrantMutex never waits on itself, and
/// a FairMutex waiter behind it is a waiter, not a cycle.
#[test]
fn reentrant_mutex_re_entry_is_not_a_cycle() {
    let o = layer();
    let r = Arc::new(lockmeter::ReentrantMutex::named("re.r", ()));
    let f = Arc::new(lockmeter::FairMutex::named("re.f", ()));
    let go = Arc::new(Barrier::new(3));
    let (r1, f1, g1) = (r.clone(), f.clone(), go.clone());
    let owner = o.spawn("re-owner", move || {
        let _outer = r1.lock();
        let _f = f1.lock();
        let _inner = r1.lock(); // re-entry while holding another lock
        g1.wait();
        std::thread::sleep(Duration::from_millis(1500));
    });
    let (r2, f2, g2) = (r.clone(), f.clone(), go.clone());
    let waiter = o.spawn("re-waiter", move || {
        g2.wait();
        let _r = r2.try_lock_for(WAIT);
        let _f = f2.try_lock_for(WAIT);
    });
    go.wait();
    let (snap, _) = o.poll(Duration::from_secs(1), |s| {
        s.now
            .locks
            .iter()
            .any(|l| l.id == "re.r" && !l.waiters.is_empty())
    });
    owner.join().unwrap();
    waiter.join().unwrap();
    let l = snap
        .now
        .locks
        .iter()
        .find(|l| l.id == "re.r")
        .expect("re.r in now");
    assert_eq!(l.holders.len(), 2, "both levels are held: {l:?}");
    assert!(l.holders.iter().all(|h| h.thread.name == "re-owner"));
    assert_eq!(l.waiters[0].thread.name, "re-waiter");
    let later = o.handle.snapshot();
    assert!(
        !later
            .deadlocks
            .iter()
            .any(|d| d.threads.iter().any(|t| t.thread.name.starts_with("re-"))),
        "{:?}",
        later.deadlocks
    );
}
