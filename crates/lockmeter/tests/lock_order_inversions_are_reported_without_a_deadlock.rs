//! Lock order with real threads: nested acquisitions count edges with
//! their waits, two classes taken in both orders are an inversion even if
//! the program never deadlocked, and a lock passed between threads (a
//! semaphore permit returned by another thread, data handed on through a
//! channel) is no inversion.

#[macro_use]
mod now_common;

use std::sync::{mpsc, Arc};
use std::time::Duration;

use lockmeter::{Layer, Mutex, RwLock, Semaphore};
use now_common::{observed, Observed};

fn layer() -> Observed {
    observed(Layer::builder().lock_order(true))
}

#[test]
fn an_inversion_that_never_deadlocked_names_all_four_sites() {
    let o = layer();
    let a = Arc::new(Mutex::named("inv.a", ()));
    let b = Arc::new(RwLock::named("inv.b", ()));
    let (a1, b1) = (a.clone(), b.clone());
    // One thread after the other: never at once, never deadlocked.
    let (held_a, acq_b) = o
        .spawn("inv-1", move || {
            let held = next_line!();
            let _a = a1.lock();
            let acq = next_line!();
            let _b = b1.write();
            (held, acq)
        })
        .join()
        .unwrap();
    let (a2, b2) = (a.clone(), b.clone());
    let (held_b, acq_a) = o
        .spawn("inv-2", move || {
            let held = next_line!();
            let _b = b2.read();
            let acq = next_line!();
            let _a = a2.lock();
            (held, acq)
        })
        .join()
        .unwrap();
    let snap = o.handle.snapshot();
    assert!(snap.deadlocks.is_empty());
    let order = &snap.lock_order;
    assert!(order.recorded);
    assert_eq!(order.inversions.len(), 1, "{order:?}");
    let inv = &order.inversions[0];
    assert_eq!(
        (inv.first.as_str(), inv.second.as_str()),
        ("inv.a", "inv.b")
    );
    assert!(inv.forward.held_site.starts_with(&held_a), "{inv:?}");
    assert!(inv.forward.acquired_site.starts_with(&acq_b), "{inv:?}");
    assert!(inv.backward.held_site.starts_with(&held_b), "{inv:?}");
    assert!(inv.backward.acquired_site.starts_with(&acq_a), "{inv:?}");
    let msg = inv.message();
    for site in [&held_a, &acq_b, &held_b, &acq_a] {
        assert!(msg.contains(site.as_str()), "{msg}");
    }
}

#[test]
fn nested_acquisitions_count_edges_and_the_inner_wait() {
    let o = layer();
    let outer = Arc::new(Mutex::named("edge.outer", ()));
    let inner = Arc::new(Mutex::named("edge.inner", ()));
    let (o1, i1) = (outer.clone(), inner.clone());
    o.spawn("edge-nest", move || {
        for _ in 0..10 {
            let _o = o1.lock();
            let _i = i1.lock();
        }
    })
    .join()
    .unwrap();
    // One contended nesting: the inner lock is held elsewhere for a while.
    let i2 = inner.clone();
    let (tx, rx) = mpsc::channel();
    let blocker = o.spawn("edge-blocker", move || {
        let _i = i2.lock();
        tx.send(()).unwrap();
        std::thread::sleep(Duration::from_millis(50));
    });
    rx.recv().unwrap();
    let (o3, i3) = (outer.clone(), inner.clone());
    o.spawn("edge-waits", move || {
        let _o = o3.lock();
        let _i = i3.lock();
    })
    .join()
    .unwrap();
    blocker.join().unwrap();
    let snap = o.handle.snapshot();
    let edges: Vec<_> = snap
        .lock_order
        .edges
        .iter()
        .filter(|e| e.held == "edge.outer" && e.acquired == "edge.inner")
        .collect();
    assert_eq!(edges.iter().map(|e| e.count).sum::<u64>(), 11, "{edges:?}");
    let waited: u64 = edges.iter().map(|e| e.wait_ns_total).sum();
    assert!(waited > 0, "the contended nesting's wait counts: {edges:?}");
    assert!(snap.lock_order.inversions.is_empty());
    // Heaviest first.
    let counts: Vec<u64> = snap.lock_order.edges.iter().map(|e| e.count).collect();
    assert!(counts.windows(2).all(|w| w[0] >= w[1]), "{counts:?}");
}

#[test]
fn a_permit_returned_by_another_thread_and_data_passed_on_are_no_inversion() {
    let o = layer();
    // The semaphore is used as a lock handed between threads: taken with
    // `down` on one thread, returned with `up` on another.
    let sem = Arc::new(Semaphore::named("hand.sem", 1));
    let m = Arc::new(Mutex::named("hand.m", 0u64));
    let (tx, rx) = mpsc::channel::<u64>();
    let (s1, m1) = (sem.clone(), m.clone());
    let taker = o.spawn("hand-taker", move || {
        for i in 0..20 {
            s1.down();
            // Data read under the lock, then passed on without it.
            let v = *m1.lock() + i;
            tx.send(v).unwrap();
        }
    });
    let (s2, m2) = (sem.clone(), m.clone());
    let giver = o.spawn("hand-giver", move || {
        for v in rx.iter() {
            let mut g = m2.lock();
            *g = v;
            // Returning the taker's permit while holding `m`.
            s2.up();
        }
    });
    taker.join().unwrap();
    giver.join().unwrap();
    // A third thread nests them one way: m, then the semaphore.
    let (s3, m3) = (sem.clone(), m.clone());
    o.spawn("hand-nester", move || {
        let _g = m3.lock();
        drop(s3.acquire());
    })
    .join()
    .unwrap();
    let snap = o.handle.snapshot();
    let order = &snap.lock_order;
    assert!(order.inversions.is_empty(), "{:?}", order.inversions);
    assert!(
        order
            .edges
            .iter()
            .any(|e| e.held == "hand.m" && e.acquired == "hand.sem"),
        "the real nesting is recorded: {:?}",
        order.edges
    );
    assert!(
        !order.edges.iter().any(|e| e.held == "hand.sem"),
        "a down() permit is held by no thread: {:?}",
        order.edges
    );
}
