//! Stress: a crowd of threads (200; thousands under `LOCKMETER_STRESS=long`)
//! mixes every primitive — lock, try-lock, timed lock, semaphore down/up,
//! timed waits and wakes — at random while another thread takes snapshots.
//! Each thread counts what it did; the final snapshot must agree exactly,
//! per lock, on acquisitions and rejections.

mod stress_common;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use lockmeter::{Mutex, RwLock, Semaphore, SpinLock, Wait, WaitQueue};
use stress_common::{observed, row, size, spawn_observed, watchdog, Rng};

const SPIN: usize = 0;
const MUTEX: usize = 1;
const RW: usize = 2;
const SEM: usize = 3;
const WQ: usize = 4;
const IDS: [&str; 5] = [
    "stress.mix.spin",
    "stress.mix.mutex",
    "stress.mix.rw",
    "stress.mix.sem",
    "stress.mix.wq",
];

/// What one thread did, per lock: `[acquired, rejected]`.
type Tally = [[u64; 2]; 5];

struct Locks {
    spin: SpinLock<u64>,
    mutex: Mutex<u64>,
    rw: RwLock<u64>,
    sem: Semaphore,
    wq: WaitQueue,
    tokens: AtomicU64,
}

fn tally(t: &mut Tally, lock: usize, ok: bool) {
    t[lock][usize::from(!ok)] += 1;
}

/// Work inside a critical section; sometimes yields, so holders get
/// preempted and others really wait.
fn hold(rng: &mut Rng) {
    if rng.below(8) == 0 {
        std::thread::yield_now();
    } else {
        for _ in 0..rng.below(64) {
            std::hint::spin_loop();
        }
    }
}

/// Adds one to a counter under its guard, working a while before the
/// guard drops.
fn bump_held(mut g: impl std::ops::DerefMut<Target = u64>, rng: &mut Rng) {
    *g += 1;
    hold(rng);
}

/// One random operation; its outcome goes into `t`.
fn step(l: &Locks, rng: &mut Rng, t: &mut Tally) {
    let short = Duration::from_micros(50 + rng.below(200));
    // Each operation says which lock it went for and whether it got it.
    let (lock, ok) = match rng.below(16) {
        0 => {
            bump_held(l.spin.lock(), rng);
            (SPIN, true)
        }
        1 => (SPIN, l.spin.try_lock().is_some()),
        2 => {
            bump_held(l.mutex.lock(), rng);
            (MUTEX, true)
        }
        3 => (MUTEX, l.mutex.try_lock().is_some()),
        4 => {
            let g = l.mutex.try_lock_for(short);
            if g.is_some() {
                hold(rng);
            }
            (MUTEX, g.is_some())
        }
        5 => {
            std::hint::black_box(*l.rw.read());
            (RW, true)
        }
        6 => {
            bump_held(l.rw.write(), rng);
            (RW, true)
        }
        7 => (RW, l.rw.try_read().is_some()),
        8 => (RW, l.rw.try_write_for(short).is_some()),
        9 => (RW, l.rw.try_read_for(short).is_some()),
        10 => {
            l.sem.down();
            l.sem.up();
            (SEM, true)
        }
        11 => {
            let ok = l.sem.try_down();
            if ok {
                l.sem.up();
            }
            (SEM, ok)
        }
        12 => {
            let ok = l.sem.down_timeout(short);
            if ok {
                l.sem.up();
            }
            (SEM, ok)
        }
        13 => {
            let permit = l.sem.acquire();
            hold(rng);
            drop(permit);
            (SEM, true)
        }
        14 => {
            let how = match rng.below(3) {
                0 => Wait::exclusive(),
                1 => Wait::shared(),
                _ => Wait::shared().keyed(1 << rng.below(4)),
            };
            let ok = l.wq.wait_event_with(how.timeout(short * 4), || {
                l.tokens
                    .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| n.checked_sub(1))
                    .is_ok()
            });
            (WQ, ok)
        }
        _ => {
            // A wake acquires nothing: nothing to tally.
            l.tokens.fetch_add(1, Ordering::AcqRel);
            match rng.below(4) {
                0 => l.wq.wake_up(),
                1 => l.wq.wake_up_all(),
                2 => l.wq.wake_up_nr(2),
                _ => l.wq.wake_up_key(1 << rng.below(4)),
            };
            return;
        }
    };
    tally(t, lock, ok);
}

#[test]
fn every_primitive_counts_exactly_under_a_crowd() {
    let threads = size(200, 2000);
    let ops = size(1500, 5000);
    let locks = Arc::new(Locks {
        spin: SpinLock::named(IDS[SPIN], 0),
        mutex: Mutex::named(IDS[MUTEX], 0),
        rw: RwLock::named(IDS[RW], 0),
        sem: Semaphore::named(IDS[SEM], 4),
        wq: WaitQueue::named(IDS[WQ]),
        tokens: AtomicU64::new(0),
    });
    let finished = Arc::new(AtomicU64::new(0));
    let (l2, f2) = (locks.clone(), finished.clone());
    let status = move || {
        format!(
            "{}/{threads} threads finished; stress.mix.wq waiters={}, sem available={}, spin locked={}, mutex locked={}, rw locked={}",
            f2.load(Ordering::Acquire),
            l2.wq.waiters(),
            l2.sem.available(),
            l2.spin.is_locked(),
            l2.mutex.is_locked(),
            l2.rw.is_locked()
        )
    };
    let body_locks = locks.clone();
    let started = Instant::now();
    let (handle, (expected, snapshots)) = watchdog("mixed_primitives", status, move || {
        observed(|handle| {
            let stop = Arc::new(AtomicBool::new(false));
            let (h, s) = (handle.clone(), stop.clone());
            // Snapshots race the crowd; totals only ever grow.
            let snapper = std::thread::spawn(move || {
                let (mut taken, mut last) = (0u64, 0u64);
                while !s.load(Ordering::Acquire) {
                    let snap = h.cumulative();
                    let now: u64 = snap.locks.iter().map(|l| l.total.acquisitions).sum();
                    assert!(
                        now >= last,
                        "cumulative acquisitions went back: {last} -> {now}"
                    );
                    last = now;
                    taken += 1;
                    std::thread::sleep(Duration::from_millis(2));
                }
                taken
            });
            // Everyone starts at once, so the locks are really contended.
            let start = Arc::new(Barrier::new(threads as usize));
            let crowd: Vec<_> = (0..threads)
                .map(|i| {
                    let (l, f, b) = (body_locks.clone(), finished.clone(), start.clone());
                    spawn_observed(move || {
                        b.wait();
                        let mut rng = Rng::new(i + 1);
                        let mut t: Tally = [[0; 2]; 5];
                        for _ in 0..ops {
                            step(&l, &mut rng, &mut t);
                        }
                        f.fetch_add(1, Ordering::AcqRel);
                        t
                    })
                })
                .collect();
            let mut sum: Tally = [[0; 2]; 5];
            for t in crowd {
                let t = t.join().expect("crowd thread panicked");
                for (s, x) in sum.iter_mut().zip(t) {
                    s[0] += x[0];
                    s[1] += x[1];
                }
            }
            stop.store(true, Ordering::Release);
            (sum, snapper.join().expect("snapshot thread panicked"))
        })
    });
    let snap = handle.snapshot();
    println!(
        "[mixed_primitives] threads={threads} ops/thread={ops} snapshots_during_run={snapshots} elapsed={:.2?}",
        started.elapsed()
    );
    for (i, id) in IDS.iter().enumerate() {
        let s = &row(&snap, id).total;
        println!(
            "[mixed_primitives] {id}: acquisitions counted={} expected={}; rejected counted={} expected={}; contended={}",
            s.acquisitions, expected[i][0], s.rejected, expected[i][1], s.contended
        );
    }
    for (i, id) in IDS.iter().enumerate() {
        let s = &row(&snap, id).total;
        assert_eq!(s.acquisitions, expected[i][0], "{id} acquisitions");
        assert_eq!(s.rejected, expected[i][1], "{id} rejected");
        assert_eq!(s.nowait + s.contended, s.acquisitions, "{id} NOWAIT+SPIN");
    }
    let total_ops: u64 = expected.iter().map(|x| x[0] + x[1]).sum();
    assert!(total_ops > 0);
    // The sem permits all came back and nobody is left asleep.
    assert_eq!(locks.sem.available(), 4);
    assert_eq!(locks.wq.waiters(), 0);
}
