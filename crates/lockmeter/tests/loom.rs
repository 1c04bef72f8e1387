//! Loom models of the primitives' algorithms.
//!
//! Run with:
//! `RUSTFLAGS="--cfg lockmeter_loom" LOOM_MAX_PREEMPTIONS=2 cargo test --release -p lockmeter --test loom`
//! Loom explores every interleaving of the threads (up to the preemption
//! bound) and fails on a data race, a failed assertion or a deadlock —
//! which is how a lost wake-up shows.
#![cfg(lockmeter_loom)]

use std::sync::Arc;

use lockmeter::{MeteredCondvar, MeteredMutex, Semaphore, SpinLock, WaitQueue, WakeOrder};
use loom::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use loom::thread;

#[test]
fn spinlock_gives_mutual_exclusion() {
    loom::model(|| {
        let lock = Arc::new(SpinLock::new(0usize));
        let inside = Arc::new(AtomicUsize::new(0));
        let ts: Vec<_> = (0..2)
            .map(|_| {
                let (lock, inside) = (lock.clone(), inside.clone());
                thread::spawn(move || {
                    let mut g = lock.lock();
                    assert_eq!(
                        inside.fetch_add(1, Ordering::Relaxed),
                        0,
                        "two holders at once"
                    );
                    *g += 1;
                    inside.fetch_sub(1, Ordering::Relaxed);
                })
            })
            .collect();
        ts.into_iter().for_each(|t| t.join().unwrap());
        assert_eq!(*lock.lock(), 2);
    });
}

#[test]
fn semaphore_never_loses_a_permit_or_a_wakeup() {
    loom::model(|| {
        let sem = Arc::new(Semaphore::new(1));
        let ts: Vec<_> = (0..2)
            .map(|_| {
                let sem = sem.clone();
                thread::spawn(move || {
                    sem.down();
                    sem.up();
                })
            })
            .collect();
        ts.into_iter().for_each(|t| t.join().unwrap());
        assert_eq!(sem.available(), 1);
    });
}

#[test]
fn semaphore_up_wakes_a_sleeping_down() {
    loom::model(|| {
        let sem = Arc::new(Semaphore::new(0));
        let s2 = sem.clone();
        let t = thread::spawn(move || s2.down());
        sem.up();
        t.join().unwrap();
        assert_eq!(sem.available(), 0);
    });
}

/// A wait queue, a flag, and a thread that waits on the queue through
/// `wait` until the flag is set; the models set it and wake.
fn flag_waiter(
    wait: fn(&WaitQueue, &dyn Fn() -> bool),
) -> (Arc<WaitQueue>, Arc<AtomicBool>, thread::JoinHandle<()>) {
    let q = Arc::new(WaitQueue::new());
    let flag = Arc::new(AtomicBool::new(false));
    let (q2, f2) = (q.clone(), flag.clone());
    let waiter = thread::spawn(move || wait(&q2, &|| f2.load(Ordering::Acquire)));
    (q, flag, waiter)
}

#[test]
fn concurrent_wait_and_wake_lose_nothing() {
    loom::model(|| {
        let (q, flag, waiter) = flag_waiter(|q, ready| q.wait_event(ready));
        flag.store(true, Ordering::Release);
        q.wake_up();
        waiter.join().unwrap();
    });
}

#[test]
fn locked_wait_and_wake_lose_nothing() {
    loom::model(|| {
        let q = Arc::new(WaitQueue::named_with_data(
            "loom.locked",
            WakeOrder::Fifo,
            false,
        ));
        let q2 = q.clone();
        let waiter =
            thread::spawn(move || drop(q2.lock().wait_event_exclusive_locked(|ready| *ready)));
        let mut g = q.lock();
        *g = true;
        g.wake_up_locked();
        drop(g);
        waiter.join().unwrap();
    });
}

/// Three threads taking a spinlock make long spin paths: allow them, and
/// bound preemptions to one so the model stays within CI's time
/// (raise `LOOM_MAX_PREEMPTIONS` for a longer soak).
fn model_with_spinning(f: impl Fn() + Sync + Send + 'static) {
    model_with_preemptions(1, f)
}

/// [`model_with_spinning`] with a preemption bound of `bound` unless
/// `LOOM_SPIN_PREEMPTIONS` says otherwise.
fn model_with_preemptions(bound: usize, f: impl Fn() + Sync + Send + 'static) {
    let mut builder = loom::model::Builder::new();
    builder.max_branches = 100_000;
    builder.preemption_bound = Some(
        std::env::var("LOOM_SPIN_PREEMPTIONS")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(bound),
    );
    builder.check(f);
}

#[test]
fn exclusive_wake_one_wakes_at_most_one_and_loses_none() {
    model_with_spinning(|| {
        let q = Arc::new(WaitQueue::new());
        let tokens = Arc::new(AtomicUsize::new(0));
        let ts: Vec<_> = (0..2)
            .map(|_| {
                let (q, tokens) = (q.clone(), tokens.clone());
                thread::spawn(move || {
                    q.wait_event_exclusive(|| {
                        tokens
                            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| n.checked_sub(1))
                            .is_ok()
                    })
                })
            })
            .collect();
        for _ in 0..2 {
            tokens.fetch_add(1, Ordering::AcqRel);
            assert!(q.wake_up() <= 1, "one wake call woke two exclusive waiters");
        }
        ts.into_iter().for_each(|t| t.join().unwrap());
        assert_eq!(tokens.load(Ordering::Acquire), 0);
    });
}

/// `sync::Mutex`'s raw mutex, std's algorithm (`sync/raw_mutex.rs`): one
/// holder at a time through its three states, and free at the end. Its
/// sleep is a yield loop here (loom cannot run the parking lot), so what
/// is checked is the state machine. Two threads taking it twice each
/// reach every state: one marks it contended and waits, then takes it
/// marked so, and the other finds it held that way, which takes three
/// preemptions (a waiter that took a mutex marked contended as free
/// fails here; a third thread multiplies the interleavings past CI's time).
#[test]
fn std_raw_mutex_gives_mutual_exclusion_and_ends_free() {
    model_with_preemptions(3, || {
        let m = Arc::new(MeteredMutex::<lockmeter::loom_sync::StdRawMutex, usize>::new(0));
        assert!(!m.is_locked(), "the word exists before the threads");
        let inside = Arc::new(AtomicUsize::new(0));
        let take_twice = {
            let (m, inside) = (m.clone(), inside.clone());
            move || {
                for _ in 0..2 {
                    let mut g = m.lock();
                    assert_eq!(
                        inside.fetch_add(1, Ordering::Relaxed),
                        0,
                        "two holders at once"
                    );
                    *g += 1;
                    inside.fetch_sub(1, Ordering::Relaxed);
                }
            }
        };
        let other = thread::spawn(take_twice.clone());
        take_twice();
        other.join().unwrap();
        assert!(!m.is_locked(), "left held");
        assert_eq!(*m.lock(), 4);
    });
}

#[test]
fn keyed_wake_wakes_only_matching_waiters() {
    loom::model(|| {
        let (q, ready, waiter) = flag_waiter(|q, ready| q.wait_event_keyed(0b01, ready));
        assert_eq!(q.wake_up_key(0b10), 0, "a non-matching key woke a waiter");
        ready.store(true, Ordering::Release);
        assert!(q.wake_up_key(0b01) <= 1);
        waiter.join().unwrap();
    });
}

/// A raw mutex loom can see, for the condvar models: lock_api wants a
/// `const INIT`, and loom's atomics cannot be built in const context, so
/// the lock word is made on first use (inside the model's execution).
struct LoomRawMutex {
    locked: std::sync::OnceLock<AtomicBool>,
}

impl LoomRawMutex {
    fn word(&self) -> &AtomicBool {
        self.locked.get_or_init(|| AtomicBool::new(false))
    }
}

// SAFETY: a test-and-set lock: `lock` returns only after swapping the word
// from false to true (Acquire), `unlock` stores false (Release).
unsafe impl lock_api::RawMutex for LoomRawMutex {
    #[allow(clippy::declare_interior_mutable_const)]
    const INIT: Self = LoomRawMutex {
        locked: std::sync::OnceLock::new(),
    };
    type Guard = ();

    fn lock(&self) {
        while self.try_lock().is_none() {
            thread::yield_now();
        }
    }

    fn try_lock(&self) -> Option<()> {
        self.word()
            .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
            .ok()
            .map(drop)
    }

    unsafe fn unlock(&self, _guard: ()) {
        self.word().store(false, Ordering::Release);
    }

    fn is_locked(&self) -> bool {
        self.word().load(Ordering::Relaxed)
    }
}

type LoomMutex<T> = MeteredMutex<LoomRawMutex, T>;

/// A raw condvar loom can see, for the metered condvar's models: the
/// one `lockmeter::Condvar` runs on is parking_lot's, whose parking lot
/// loom cannot run (nor parking_lot's raw mutex, hence `LoomRawMutex`).
/// Waiters take a ticket that a notify hands out; with a count of the
/// waiters asleep, a notify reports exactly whom it picked and waits never
/// return spuriously, as parking_lot's.
struct LoomRawCondvar {
    /// Waiters between unlocking the mutex and taking a ticket.
    asleep: std::sync::OnceLock<AtomicUsize>,
    /// Notifications not yet taken by a waiter.
    tickets: std::sync::OnceLock<AtomicUsize>,
}

impl LoomRawCondvar {
    fn asleep(&self) -> &AtomicUsize {
        self.asleep.get_or_init(|| AtomicUsize::new(0))
    }

    fn tickets(&self) -> &AtomicUsize {
        self.tickets.get_or_init(|| AtomicUsize::new(0))
    }
}

// SAFETY: a waiter counts itself asleep while it still holds the mutex,
// so a notifier that changed the state under the mutex afterwards finds
// it; it returns only with a ticket taken and the mutex locked again.
unsafe impl lock_api::RawCondvar for LoomRawCondvar {
    #[allow(clippy::declare_interior_mutable_const)]
    const INIT: Self = LoomRawCondvar {
        asleep: std::sync::OnceLock::new(),
        tickets: std::sync::OnceLock::new(),
    };
    type RawMutex = LoomRawMutex;

    unsafe fn wait(&self, mutex: &LoomRawMutex, _guard: &mut ()) {
        use lock_api::RawMutex;
        self.asleep().fetch_add(1, Ordering::AcqRel);
        // SAFETY: the caller holds `mutex`, whose guard state is `()`.
        unsafe { mutex.unlock(()) };
        while self
            .tickets()
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| n.checked_sub(1))
            .is_err()
        {
            thread::yield_now();
        }
        mutex.lock();
    }

    fn notify_one(&self) -> bool {
        let picked = self
            .asleep()
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| n.checked_sub(1))
            .is_ok();
        if picked {
            self.tickets().fetch_add(1, Ordering::AcqRel);
        }
        picked
    }

    fn notify_all(&self) -> usize {
        let picked = self.asleep().swap(0, Ordering::AcqRel);
        self.tickets().fetch_add(picked, Ordering::AcqRel);
        picked
    }
}

type LoomCondvar = MeteredCondvar<LoomRawCondvar>;

/// A condvar whose words exist before any thread is spawned (see
/// `loom_mutex`).
fn loom_condvar() -> LoomCondvar {
    let cv = LoomCondvar::new();
    // `notify_all` touches both words.
    assert_eq!(cv.notify_all(), 0, "nobody waits yet");
    cv
}

/// A mutex whose lock word exists before any thread is spawned (made
/// later, by whichever thread locks first, loom would see its creation
/// race with the other thread's use).
fn loom_mutex<T>(value: T) -> LoomMutex<T> {
    let m = LoomMutex::new(value);
    assert!(!m.is_locked());
    m
}

#[test]
fn condvar_notify_one_loses_no_wakeup() {
    loom::model(|| {
        let pair = Arc::new((loom_mutex(false), loom_condvar()));
        let p2 = pair.clone();
        let notifier = thread::spawn(move || {
            *p2.0.lock() = true;
            p2.1.notify_one();
        });
        let (m, cv) = &*pair;
        let mut ready = m.lock();
        // A lost wake-up leaves this thread asleep for ever: loom reports
        // the deadlock.
        while !*ready {
            cv.wait(&mut ready);
        }
        drop(ready);
        notifier.join().unwrap();
    });
}

#[test]
fn condvar_wait_while_returns_only_with_its_condition_met() {
    loom::model(|| {
        let pair = Arc::new((loom_mutex(0u32), loom_condvar()));
        let p2 = pair.clone();
        let notifier = thread::spawn(move || {
            // A wake-up with the condition still unmet, then the one that
            // meets it.
            p2.1.notify_one();
            *p2.0.lock() += 1;
            p2.1.notify_one();
        });
        let (m, cv) = &*pair;
        let mut n = m.lock();
        cv.wait_while(&mut n, |n| *n == 0);
        assert_eq!(*n, 1, "wait_while returned with its condition unmet");
        drop(n);
        notifier.join().unwrap();
    });
}

#[test]
fn condvar_notify_all_wakes_every_waiter() {
    model_with_spinning(|| {
        let pair = Arc::new((loom_mutex(false), loom_condvar()));
        let waiters: Vec<_> = (0..2)
            .map(|_| {
                let p = pair.clone();
                thread::spawn(move || {
                    let (m, cv) = &*p;
                    let mut go = m.lock();
                    cv.wait_while(&mut go, |go| !*go);
                })
            })
            .collect();
        let (m, cv) = &*pair;
        *m.lock() = true;
        cv.notify_all();
        // A waiter that was queued and missed by notify_all never returns.
        waiters.into_iter().for_each(|t| t.join().unwrap());
    });
}

/// A `now` record whose fields all derive from its lock, so that a torn
/// read shows.
fn now_rec(lock: usize) -> lockmeter::loom_now::Rec {
    lockmeter::loom_now::Rec {
        lock,
        what: lock * 8,
        recorder: 1,
        since: lock as u64,
    }
}

/// A `now` table written by `write` on another thread, read twice here
/// meanwhile: each whole view is given to `check`; the table at the end.
fn now_model(
    write: impl Fn(&lockmeter::loom_now::Table) + Send + Sync + 'static,
    check: impl Fn(&lockmeter::loom_now::View) + Send + Sync + 'static,
) -> impl Fn() + Send + Sync + 'static {
    let write = Arc::new(write);
    move || {
        let table = Arc::new(lockmeter::loom_now::Table::new());
        let (w, write) = (table.clone(), write.clone());
        let writer = thread::spawn(move || write(&w));
        for _ in 0..2 {
            if let Some(v) = table.read() {
                for r in &v.held {
                    assert_eq!((r.what, r.since), (r.lock * 8, r.lock as u64), "torn {v:?}");
                }
                check(&v);
            }
        }
        writer.join().unwrap();
        assert_eq!(table.read().map(|v| v.held.len()), Some(0));
    }
}

/// The lone hold's two changes, which skip the seqlock's odd step: a
/// reader that overlaps a release and the next first hold (record 0
/// rewritten from lock 1 to lock 3) keeps nothing torn, and only states
/// the writer was in, each with its own generation.
#[test]
fn a_lone_hold_and_its_release_are_read_whole() {
    loom::model(now_model(
        |w| {
            let a = w.hold(now_rec(1));
            w.release(a);
            let b = w.hold(now_rec(3));
            w.release(b);
        },
        |v| {
            let held: Vec<usize> = v.held.iter().map(|r| r.lock).collect();
            let want: &[usize] = match v.gen {
                0 | 4 | 8 => &[],
                2 => &[1],
                6 => &[3],
                g => panic!("generation {g} the writer never made"),
            };
            assert_eq!(held, want, "{v:?}");
        },
    ));
}

/// A second hold (record 1 written while the count leaves it out, then
/// counted with one store) and its release in one store, twice, record 1
/// rewritten from lock 2 to lock 3 in between: a reader keeps nothing
/// torn, and only states the writer was in, each with its generation.
#[test]
fn a_second_hold_and_its_release_are_read_whole() {
    loom::model(now_model(
        |w| {
            let a = w.hold(now_rec(1));
            let b = w.hold(now_rec(2));
            w.release(b);
            let c = w.hold(now_rec(3));
            w.release(c);
            w.release(a);
        },
        |v| {
            let held: Vec<usize> = v.held.iter().map(|r| r.lock).collect();
            let want: &[usize] = match v.gen {
                0 | 12 => &[],
                2 | 6 | 10 => &[1],
                4 => &[1, 2],
                8 => &[1, 3],
                g => panic!("generation {g} the writer never made"),
            };
            assert_eq!(held, want, "{v:?}");
        },
    ));
}

/// The first of two holds released first (hand over hand): a hole at
/// record 0, so the second's release is not the one-store kind and counts
/// nothing left; a reader sees only states the writer was in.
#[test]
fn the_first_of_two_holds_released_first_leaves_the_table_whole() {
    loom::model(now_model(
        |w| {
            let a = w.hold(now_rec(1));
            let b = w.hold(now_rec(2));
            w.release(a);
            w.release(b);
        },
        |v| {
            let held: Vec<usize> = v.held.iter().map(|r| r.lock).collect();
            let want: &[usize] = match v.gen {
                0 | 8 => &[],
                2 => &[1],
                4 => &[1, 2],
                6 => &[2],
                g => panic!("generation {g} the writer never made"),
            };
            assert_eq!(held, want, "{v:?}");
        },
    ));
}

/// A first hold written ahead of its lock's attempt (`prepare_first`)
/// whose attempt fails: the record stays out of every view, through the
/// wait that follows and until the lock is held after it.
#[test]
fn a_first_hold_written_ahead_of_a_failed_attempt_is_never_seen() {
    loom::model(now_model(
        |w| {
            let a = w.hold(now_rec(1));
            w.release(a);
            let _failed = w.prepare_first(now_rec(3));
            w.wait(now_rec(3));
            let b = w.wait_over_held(now_rec(3));
            w.release(b);
        },
        |v| {
            let held: Vec<usize> = v.held.iter().map(|r| r.lock).collect();
            let wait = v.wait.map(|r| r.lock);
            let want: (&[usize], Option<usize>) = match v.gen {
                0 | 4 | 10 => (&[], None),
                2 => (&[1], None),
                6 => (&[], Some(3)),
                8 => (&[3], None),
                g => panic!("generation {g} the writer never made"),
            };
            assert_eq!((held.as_slice(), wait), want, "{v:?}");
        },
    ));
}

/// The seqlock behind `now`: a reader on another thread only ever keeps a
/// state the writer was in between two changes, never a torn mixture,
/// whatever the interleaving; and the writer never waits.
#[test]
fn now_tables_are_read_whole_or_not_at_all() {
    loom::model(now_model(
        |w| {
            let a = w.hold(now_rec(1));
            w.wait(now_rec(2));
            let b = w.wait_over_held(now_rec(2));
            w.release(a);
            w.release(b);
        },
        |v| {
            let held: Vec<usize> = v.held.iter().map(|r| r.lock).collect();
            let wait = v.wait.map(|r| r.lock);
            let ok = matches!(
                (held.as_slice(), wait),
                ([], None) | ([1], None) | ([1], Some(2)) | ([1, 2], None) | ([2], None)
            );
            assert!(ok, "a state the writer was never in: {v:?}");
        },
    ));
}

/// A contended acquisition's wait kept in the table's head (record 0,
/// the count set to the head-wait mark with no odd step) and its end with
/// the lock taken (record 0 rewritten as the hold, with the odd step): a
/// reader never keeps the wait with the hold's fields or the hold with
/// the wait's, and sees only states the writer was in.
#[test]
fn a_wait_kept_in_the_head_and_its_hold_are_read_whole() {
    loom::model(now_model(
        |w| {
            w.wait(lockmeter::loom_now::Rec {
                since: 100,
                ..now_rec(1)
            });
            let a = w.wait_over_held(now_rec(1));
            w.release(a);
            w.wait(now_rec(3));
            w.wait_over();
        },
        |v| {
            let held: Vec<usize> = v.held.iter().map(|r| r.lock).collect();
            let wait = v.wait.map(|r| (r.lock, r.since));
            let want: (&[usize], Option<(usize, u64)>) = match v.gen {
                0 | 6 | 10 => (&[], None),
                2 => (&[], Some((1, 100))),
                4 => (&[1], None),
                8 => (&[], Some((3, 3))),
                g => panic!("generation {g} the writer never made"),
            };
            assert_eq!((held.as_slice(), wait), want, "{v:?}");
        },
    ));
}

/// A wait kept in the head, then a nested wait (a semaphore's spin on its
/// own lock): the head's wait moves to the heap in one change, and a
/// reader sees the outer wait throughout, never no wait at all.
#[test]
fn a_wait_kept_in_the_head_moves_to_the_heap_whole() {
    loom::model(now_model(
        |w| {
            w.wait(now_rec(1));
            w.wait(now_rec(2));
            w.wait_over();
            w.wait_over();
        },
        |v| {
            let wait = v.wait.map(|r| r.lock);
            let want = match v.gen {
                0 | 10 => None,
                2 | 4 | 8 => Some(1),
                6 => Some(2),
                g => panic!("generation {g} the writer never made"),
            };
            assert!(v.held.is_empty(), "{v:?}");
            assert_eq!(wait, want, "{v:?}");
        },
    ));
}
