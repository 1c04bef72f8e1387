//! Fault injection: threads panic while holding a lockmeter guard. The
//! unwinding drops the guard, so the lock is free again, and the
//! acquisition and its hold are recorded like any other.

mod stress_common;

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;

use lockmeter::{Mutex, RwLock, SpinLock};
use stress_common::{observed, row, size, spawn_observed, watchdog};

/// Silences the expected panics' messages, keeping others.
fn quiet_expected_panics() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let payload = info.payload();
        let msg = payload
            .downcast_ref::<&str>()
            .copied()
            .or_else(|| payload.downcast_ref::<String>().map(String::as_str));
        let expected = msg.is_some_and(|m| m.starts_with("injected"));
        if !expected {
            default(info);
        }
    }));
}

#[test]
fn panicking_holders_release_their_locks_and_are_counted() {
    quiet_expected_panics();
    let panickers = size(50, 2000);
    let survivors_iters = 100u64;
    let spin = Arc::new(SpinLock::named("stress.panic.spin", 0u64));
    let mutex = Arc::new(Mutex::named("stress.panic.mutex", 0u64));
    let rw = Arc::new(RwLock::named("stress.panic.rw", 0u64));
    let (sp2, m2, r2) = (spin.clone(), mutex.clone(), rw.clone());
    let status = move || {
        format!(
            "spin locked={}, mutex locked={}, rw locked={}",
            sp2.is_locked(),
            m2.is_locked(),
            r2.is_locked()
        )
    };
    let (handle, caught) = watchdog("panics_in_critical_sections", status, move || {
        observed(|_| {
            // Panics on spawned threads, seen through join.
            let ts: Vec<_> = (0..panickers)
                .map(|i| {
                    let (spin, mutex, rw) = (spin.clone(), mutex.clone(), rw.clone());
                    spawn_observed(move || match i % 3 {
                        0 => {
                            let mut g = spin.lock();
                            *g += 1;
                            panic!("injected: spin holder {i}");
                        }
                        1 => {
                            let mut g = mutex.lock();
                            *g += 1;
                            panic!("injected: mutex holder {i}");
                        }
                        _ => {
                            let mut g = rw.write();
                            *g += 1;
                            panic!("injected: rw holder {i}");
                        }
                    })
                })
                .collect();
            let mut caught = 0u64;
            for t in ts {
                caught += u64::from(t.join().is_err());
            }
            // Panics caught on this very thread, guard dropped by unwinding.
            for _ in 0..panickers {
                let r = catch_unwind(AssertUnwindSafe(|| {
                    let _g = mutex.lock();
                    panic!("injected: caught in place");
                }));
                caught += u64::from(r.is_err());
            }
            // Every lock is free: others take them, without waiting forever.
            let others: Vec<_> = (0..4)
                .map(|_| {
                    let (spin, mutex, rw) = (spin.clone(), mutex.clone(), rw.clone());
                    spawn_observed(move || {
                        for _ in 0..survivors_iters {
                            *spin.lock() += 1;
                            *mutex.lock() += 1;
                            *rw.write() += 1;
                        }
                    })
                })
                .collect();
            others
                .into_iter()
                .for_each(|t| t.join().expect("survivor panicked"));
            assert!(!spin.is_locked() && !mutex.is_locked() && !rw.is_locked());
            caught
        })
    });
    let per_kind = |k: u64| (0..panickers).filter(|i| i % 3 == k).count() as u64;
    let survivors = 4 * survivors_iters;
    let expected = [
        ("stress.panic.spin", per_kind(0) + survivors),
        ("stress.panic.mutex", per_kind(1) + panickers + survivors),
        ("stress.panic.rw", per_kind(2) + survivors),
    ];
    let snap = handle.snapshot();
    println!("[panics] injected={} caught={caught}", 2 * panickers);
    assert_eq!(caught, 2 * panickers);
    for (id, want) in expected {
        let s = &row(&snap, id).total;
        println!(
            "[panics] {id}: acquisitions counted={} expected={want}; holds recorded={}",
            s.acquisitions, s.hold_ns.count
        );
        assert_eq!(s.acquisitions, want, "{id} acquisitions");
        assert_eq!(s.hold_ns.count, want, "{id} holds");
    }
}
