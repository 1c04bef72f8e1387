//! A metered condition variable: parking_lot 0.12's `Condvar`, built on
//! this crate's wait-queue pieces so loom can model it.
//!
//! A `Condvar` is a wait queue whose waiters sleep with a mutex released.
//! Its row (kind `condvar`) records, per call site, what a wait queue's
//! does: waits, sleeps, timeouts (RJECT), wake latency and, for
//! `wait_while*`, spurious wake-ups (woken with the condition still
//! saying wait); and for `notify_*`, wake calls, wake-ups and the calls
//! that woke nobody (`empty_wake_calls`). The mutex keeps its own rows:
//! a wait ends the guard's hold, and its reacquisition is an acquisition
//! of the mutex at the call site of the wait.
//!
//! # The algorithm
//! The waiter queues itself under the condvar's own spinlock (a row of
//! its own, `<condvar>.lock`) *before* it releases the mutex, then sleeps
//! on its parker. A notifier that changed the state under the mutex
//! therefore finds it queued: no wake-up is lost. `state` holds the raw
//! mutex's address while anyone waits, 0 otherwise; it lets a notify with
//! nobody waiting return after one load, and catches a second mutex.

use std::fmt;
use std::panic::Location;
use std::time::{Duration, Instant};

use lock_api::RawMutex;
use lockmeter_model::LockKind;

use crate::class::{Class, Role};
use crate::meter::{Meta, WaitStats, WakeCall};
use crate::mutex::MeteredMutexGuard;
use crate::primitive::{loom_const_fn, AtomicUsize, Ordering};
use crate::recorder;
use crate::spinlock::SpinLock;
use crate::waitqueue::{sleep, wake_locked, PendingWakes, WaitList, Waiter, WakeOrder, ALL_KEYS};

/// The message parking_lot panics with when a condvar meets a second mutex.
const TWO_MUTEXES: &str = "attempted to use a condition variable with more than one mutex";

/// Whether a timed wait ended by timing out.
#[derive(Debug, PartialEq, Eq, Copy, Clone)]
pub struct WaitTimeoutResult(bool);

impl WaitTimeoutResult {
    /// True when the wait gave up at its deadline without being notified.
    #[inline]
    pub fn timed_out(self) -> bool {
        self.0
    }
}

/// The drop-in replacement for `parking_lot::Condvar`, metered as a wait
/// queue of kind `condvar` (docs/format.md says what its rows count).
///
/// # Differences from parking_lot
/// - `wait*` take the guard of any `MeteredMutex` (a `FairMutex`'s too),
///   not only a `Mutex`'s.
/// - `notify_all` wakes every waiter, which then contend for the mutex (its
///   rows show it); parking_lot wakes one and requeues the rest onto the
///   mutex.
/// - `notify_one` returns whether it woke a thread; parking_lot also
///   returns `true` for a thread it requeued.
/// - Each wait allocates its waiter (with its own parker); parking_lot uses
///   a thread-local parker.
/// - Built on this crate's wait list and parker, not `parking_lot_core`, so
///   the loom models cover it.
///
/// # Examples
///
/// ```
/// use lockmeter::{Condvar, Mutex};
/// use std::sync::Arc;
///
/// let pair = Arc::new((Mutex::named("ready", false), Condvar::named("ready.cv")));
/// let pair2 = pair.clone();
/// let t = std::thread::spawn(move || {
///     *pair2.0.lock() = true;
///     pair2.1.notify_one();
/// });
/// let mut ready = pair.0.lock();
/// pair.1.wait_while(&mut ready, |ready| !*ready);
/// assert!(*ready);
/// # drop(ready);
/// t.join().unwrap();
/// ```
pub struct Condvar {
    /// The raw mutex waiters use (its address), or 0 when none waits.
    /// Written under `queue`'s lock; read without it by the notify fast
    /// path, which a notifier reaches after the mutex that ordered the
    /// waiter's store before it.
    state: AtomicUsize,
    queue: SpinLock<WaitList>,
    meta: Meta,
}

impl Condvar {
    loom_const_fn! {
        /// A condvar whose class is its creation site.
        #[track_caller]
        pub const fn new() -> Condvar {
            Condvar::with_class(Class::new(None, Location::caller()))
        }
    }

    loom_const_fn! {
        /// A condvar of the class `name`.
        #[track_caller]
        pub const fn named(name: &'static str) -> Condvar {
            Condvar::with_class(Class::new(Some(name), Location::caller()))
        }
    }

    loom_const_fn! {
        const fn with_class(class: Class) -> Condvar {
            Condvar {
                state: AtomicUsize::new(0),
                queue: SpinLock::with_class(class.inner(Role::InnerLock), WaitList::new(WakeOrder::Fifo)),
                meta: Meta::new(class, LockKind::Condvar),
            }
        }
    }

    /// Wakes one waiter; returns whether one was woken.
    #[track_caller]
    #[inline]
    pub fn notify_one(&self) -> bool {
        self.notify(1, Location::caller()) != 0
    }

    /// Wakes every waiter; returns how many were woken.
    #[track_caller]
    #[inline]
    pub fn notify_all(&self) -> usize {
        self.notify(usize::MAX, Location::caller())
    }

    #[inline]
    fn notify(&self, nr: usize, site: &'static Location<'static>) -> usize {
        if self.state.load(Ordering::Relaxed) == 0 {
            if recorder::observing() {
                self.record_empty_notify(site);
            }
            return 0;
        }
        self.notify_slow(nr, site)
    }

    /// A notify that found nobody waiting still counts, observed.
    #[cold]
    #[inline(never)]
    fn record_empty_notify(&self, site: &'static Location<'static>) {
        WakeCall::start(&self.meta, site).finish_empty();
    }

    #[cold]
    fn notify_slow(&self, nr: usize, site: &'static Location<'static>) -> usize {
        let mut pending = PendingWakes::default();
        let mut list = self.queue.lock();
        let woken = wake_locked(&self.meta, &mut list, ALL_KEYS, nr, site, &mut pending);
        if list.len() == 0 {
            self.state.store(0, Ordering::Relaxed);
        }
        drop(list);
        pending.unpark_all();
        woken
    }

    /// Releases the mutex, sleeps until notified, and locks it again.
    #[track_caller]
    pub fn wait<R: RawMutex, T: ?Sized>(&self, mutex_guard: &mut MeteredMutexGuard<'_, R, T>) {
        self.wait_until_internal(mutex_guard, None, Location::caller());
    }

    timed_pair! {
        /// [`wait`](Self::wait), giving up after `timeout` (counted in RJECT).
        fn wait_for(timeout: Duration) = to_deadline;
        /// [`wait`](Self::wait), giving up at `timeout` (counted in RJECT).
        fn wait_until(timeout: Instant) = Some;
        #[track_caller]
        pub fn [R: RawMutex, T: ?Sized] (
            &self,
            mutex_guard: &mut MeteredMutexGuard<'_, R, T>,
        ) limit () -> WaitTimeoutResult,
        |deadline, limit| {
            self.wait_until_internal(mutex_guard, deadline(limit), Location::caller())
        }
    }

    /// Waits while `condition` returns true: returns with it false and the
    /// mutex held. A wake-up that finds it still true counts as spurious.
    #[track_caller]
    pub fn wait_while<R, T, F>(&self, mutex_guard: &mut MeteredMutexGuard<'_, R, T>, condition: F)
    where
        R: RawMutex,
        T: ?Sized,
        F: FnMut(&mut T) -> bool,
    {
        self.wait_while_at(mutex_guard, condition, None, Location::caller());
    }

    /// [`wait_while`](Self::wait_while), giving up at `timeout`; then the
    /// result says so, whatever `condition` would now return (as
    /// parking_lot).
    #[track_caller]
    pub fn wait_while_until<R, T, F>(
        &self,
        mutex_guard: &mut MeteredMutexGuard<'_, R, T>,
        condition: F,
        timeout: Instant,
    ) -> WaitTimeoutResult
    where
        R: RawMutex,
        T: ?Sized,
        F: FnMut(&mut T) -> bool,
    {
        self.wait_while_at(mutex_guard, condition, Some(timeout), Location::caller())
    }

    /// [`wait_while`](Self::wait_while), giving up after `timeout`.
    #[track_caller]
    pub fn wait_while_for<R, T, F>(
        &self,
        mutex_guard: &mut MeteredMutexGuard<'_, R, T>,
        condition: F,
        timeout: Duration,
    ) -> WaitTimeoutResult
    where
        R: RawMutex,
        T: ?Sized,
        F: FnMut(&mut T) -> bool,
    {
        let deadline = to_deadline(timeout);
        self.wait_while_at(mutex_guard, condition, deadline, Location::caller())
    }

    /// parking_lot's (private) common form of the `wait_while*` methods,
    /// which its own unit tests call; public here, hidden, so those tests
    /// run unchanged against this type.
    #[doc(hidden)]
    #[track_caller]
    pub fn wait_while_until_internal<R, T, F>(
        &self,
        mutex_guard: &mut MeteredMutexGuard<'_, R, T>,
        condition: F,
        timeout: Option<Instant>,
    ) -> WaitTimeoutResult
    where
        R: RawMutex,
        T: ?Sized,
        F: FnMut(&mut T) -> bool,
    {
        self.wait_while_at(mutex_guard, condition, timeout, Location::caller())
    }

    fn wait_until_internal<R: RawMutex, T: ?Sized>(
        &self,
        guard: &mut MeteredMutexGuard<'_, R, T>,
        deadline: Option<Instant>,
        site: &'static Location<'static>,
    ) -> WaitTimeoutResult {
        let mut stats = WaitStats::start(&self.meta, site);
        let woken = self.sleep_once(guard, deadline, site, &mut stats);
        stats.finish(woken);
        WaitTimeoutResult(!woken)
    }

    fn wait_while_at<R: RawMutex, T: ?Sized>(
        &self,
        guard: &mut MeteredMutexGuard<'_, R, T>,
        mut condition: impl FnMut(&mut T) -> bool,
        deadline: Option<Instant>,
        site: &'static Location<'static>,
    ) -> WaitTimeoutResult {
        let mut stats = WaitStats::start(&self.meta, site);
        let mut first = true;
        while condition(&mut **guard) {
            if !first {
                stats.spurious();
            }
            first = false;
            if !self.sleep_once(guard, deadline, site, &mut stats) {
                stats.finish(false);
                return WaitTimeoutResult(true);
            }
        }
        stats.finish(true);
        WaitTimeoutResult(false)
    }

    /// One sleep: queue, release the mutex, park, leave the queue, lock
    /// the mutex again (an acquisition at `site`). Returns whether a
    /// notify woke it (false: the deadline passed).
    fn sleep_once<R: RawMutex, T: ?Sized>(
        &self,
        guard: &mut MeteredMutexGuard<'_, R, T>,
        deadline: Option<Instant>,
        site: &'static Location<'static>,
        stats: &mut WaitStats,
    ) -> bool {
        let mutex = guard.lock_addr();
        let waiter = Waiter::new(true, ALL_KEYS);
        {
            let mut list = self.queue.lock();
            let state = self.state.load(Ordering::Relaxed);
            if state == 0 {
                self.state.store(mutex, Ordering::Relaxed);
            } else if state != mutex {
                drop(list);
                // Count this wait (as given up) before unwinding: the
                // guard, still locked, records its hold as it drops.
                stats.refused();
                panic!("{TWO_MUTEXES}");
            }
            stats.queued(list.add(&waiter));
        }
        guard.end_hold_unlock();
        let signaled = sleep(stats, &waiter, deadline);
        let woken = signaled || self.leave(&waiter);
        if woken {
            stats.woken(waiter.woken_at.load(std::sync::atomic::Ordering::Relaxed));
        }
        guard.relock(site);
        woken
    }

    /// Leaves the queue after a timeout; returns whether a notify picked
    /// the waiter meanwhile (then the wake-up is its own).
    fn leave(&self, waiter: &Waiter) -> bool {
        let mut list = self.queue.lock();
        let woken = list.remove(waiter);
        if list.len() == 0 {
            self.state.store(0, Ordering::Relaxed);
        }
        drop(list);
        waiter.parker.clear();
        woken
    }
}

/// `now + timeout`, or `None` (wait for ever) when that overflows.
fn to_deadline(timeout: Duration) -> Option<Instant> {
    Instant::now().checked_add(timeout)
}

impl Default for Condvar {
    #[track_caller]
    fn default() -> Condvar {
        Condvar::new()
    }
}

impl fmt::Debug for Condvar {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad("Condvar { .. }")
    }
}
