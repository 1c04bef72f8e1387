//! A `lock_api` raw condvar for [`super::raw_mutex::StdRawMutex`], with
//! std's behaviour: a notify wakes its waiter, which then takes the mutex
//! again (no requeue onto the mutex's queue, as parking_lot does; std's
//! futex condvar does not either). What [`super::Condvar`] is metered
//! over.
//!
//! Waiters sleep in parking_lot_core's parking lot keyed by the condvar's
//! address. A waiter is queued (and counted in `waiters`) before it
//! unlocks the mutex, so a notifier that changed the condition under the
//! mutex afterwards finds it: no wake-up is lost. The count lets a notify
//! with nobody waiting return after one load, where std's makes a system
//! call.
//!
//! Waiting on one condvar with two mutexes at once panics, as parking_lot's
//! does and std allows ("may panic"): the waiter that brings the second
//! mutex is refused before it unlocks anything.

use std::sync::atomic::{AtomicPtr, AtomicUsize, Ordering::Relaxed};
use std::time::{Duration, Instant};

use lock_api::RawMutex as _;

use super::raw_mutex::StdRawMutex;

/// See the module's doc.
pub struct StdRawCondvar {
    /// Threads queued on this condvar now: raised under the queue's lock
    /// as a waiter is queued, lowered for each one a notify wakes or that
    /// times out. Its address is the condvar's key in the parking lot.
    waiters: AtomicUsize,
    /// The mutex the queued waiters wait with; null while none waits.
    /// Changed, like `waiters`, only under the queue's lock.
    mutex: AtomicPtr<StdRawMutex>,
}

impl StdRawCondvar {
    fn key(&self) -> usize {
        &self.waiters as *const AtomicUsize as usize
    }

    /// Unlocks `mutex`, sleeps until notified or `deadline`, and locks it
    /// again; true if the deadline passed.
    ///
    /// # Safety
    /// The caller holds `mutex`.
    unsafe fn wait_until_opt(&self, mutex: &StdRawMutex, deadline: Option<Instant>) -> bool {
        let this_mutex = mutex as *const StdRawMutex as *mut StdRawMutex;
        let mut other_mutex = false;
        let validate = || {
            let current = self.mutex.load(Relaxed);
            if !current.is_null() && current != this_mutex {
                other_mutex = true;
                return false;
            }
            self.mutex.store(this_mutex, Relaxed);
            self.waiters.fetch_add(1, Relaxed);
            true
        };
        // SAFETY: the caller holds `mutex` (its guard state is `()`).
        let before_sleep = || unsafe { mutex.unlock(()) };
        let timed_out = |_, _| self.left(1);
        // SAFETY: the key is this condvar's address, shared with no other
        // parking lot user; the callbacks neither park nor panic (the
        // unlock may unpark, which `park` allows in `before_sleep`).
        let result = unsafe {
            parking_lot_core::park(
                self.key(),
                validate,
                before_sleep,
                timed_out,
                parking_lot_core::DEFAULT_PARK_TOKEN,
                deadline,
            )
        };
        if other_mutex {
            // Still holding `mutex`, unlocked nothing: the caller's guard
            // unwinds as from any panic under the lock.
            panic!("attempted to use a condition variable with more than one mutex");
        }
        mutex.lock();
        matches!(result, parking_lot_core::ParkResult::TimedOut)
    }

    /// `n` queued waiters left the queue (woken or timed out); called
    /// under the queue's lock.
    fn left(&self, n: usize) {
        if self.waiters.fetch_sub(n, Relaxed) == n {
            self.mutex.store(std::ptr::null_mut(), Relaxed);
        }
    }
}

// SAFETY: `wait` unlocks the mutex only once the waiter is queued, and
// returns with it locked again; a notify wakes only threads queued on this
// condvar's key and reports how many.
unsafe impl lock_api::RawCondvar for StdRawCondvar {
    #[allow(clippy::declare_interior_mutable_const)]
    const INIT: Self = StdRawCondvar {
        waiters: AtomicUsize::new(0),
        mutex: AtomicPtr::new(std::ptr::null_mut()),
    };
    type RawMutex = StdRawMutex;

    unsafe fn wait(&self, mutex: &StdRawMutex, _guard: &mut ()) {
        // SAFETY: the caller holds `mutex`, as `wait` requires.
        unsafe { self.wait_until_opt(mutex, None) };
    }

    fn notify_one(&self) -> bool {
        if self.waiters.load(Relaxed) == 0 {
            return false;
        }
        // SAFETY: as in `wait_until_opt`; the callback only counts.
        let woken = unsafe {
            parking_lot_core::unpark_one(self.key(), |r| {
                self.left(r.unparked_threads);
                parking_lot_core::DEFAULT_UNPARK_TOKEN
            })
        };
        woken.unparked_threads != 0
    }

    fn notify_all(&self) -> usize {
        if self.waiters.load(Relaxed) == 0 {
            return 0;
        }
        // SAFETY: as in `wait_until_opt`; the callbacks only count.
        let woken = unsafe {
            parking_lot_core::unpark_filter(
                self.key(),
                |_| parking_lot_core::FilterOp::Unpark,
                |r| {
                    self.left(r.unparked_threads);
                    parking_lot_core::DEFAULT_UNPARK_TOKEN
                },
            )
        };
        woken.unparked_threads
    }
}

// SAFETY: as for `RawCondvar`; a wait that times out returns with the
// mutex locked too.
unsafe impl lock_api::RawCondvarTimed for StdRawCondvar {
    fn checked_duration_to_instant(timeout: &Duration) -> Option<Instant> {
        Instant::now().checked_add(*timeout)
    }

    unsafe fn wait_until(&self, mutex: &StdRawMutex, _guard: &mut (), deadline: &Instant) -> bool {
        // SAFETY: the caller holds `mutex`, as `wait_until` requires.
        unsafe { self.wait_until_opt(mutex, Some(*deadline)) }
    }
}
