//! A metered condition variable: parking_lot 0.12's `Condvar`, metered,
//! over any `lock_api` raw condvar ([`MeteredCondvar`]); [`Condvar`] is
//! the one over parking_lot's `RawCondvar`.
//!
//! A condvar is a wait queue whose waiters sleep with a mutex released.
//! Its row (kind `condvar`) records, per call site, what a wait queue's
//! does: waits, sleeps, timeouts (RJECT), wake latency and, for
//! `wait_while*`, spurious wake-ups (woken with the condition still
//! saying wait); and for `notify_*`, wake calls, wake-ups and the calls
//! that woke nobody (`empty_wake_calls`). The mutex keeps its own rows:
//! a wait ends the guard's hold, and its reacquisition is an acquisition
//! of the mutex at the call site of the wait.
//!
//! # Why the raw condvar does the waiting
//! Sleeping and waking are the raw condvar's, so the metered one behaves
//! exactly as parking_lot's: a notify with the mutex held does not wake
//! the waiter but moves it onto the mutex's queue (requeue), and the
//! notifier's unlock hands the mutex over, one wake-up per hand-over.
//! Waking the waiter at once instead (this crate's own wait list, before)
//! woke it inside its notifier's critical section, where it blocked on the
//! mutex again: two sleeps per hand-over, 3-7x parking_lot's round trip.
//!
//! What the meter cannot see inside the raw wait, it stamps around it:
//! each observed notify leaves its clock reading in `notified_at`, and a
//! woken waiter measures from there both its wake latency and, as the
//! mutex's wait, its reacquisition (docs/format.md).

use std::fmt;
use std::panic::Location;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering::Relaxed};
use std::time::{Duration, Instant};

use lock_api::{RawCondvar, RawCondvarTimed, RawMutex, RawMutexTimed};
use lockmeter_model::LockKind;

use crate::class::Class;
use crate::meter::{Meta, WaitStats, WakeCall};
use crate::mutex::MeteredMutexGuard;
use crate::primitive::loom_const_fn;
use crate::recorder;

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

/// The drop-in replacement for `parking_lot::Condvar`: parking_lot's own
/// raw condvar (requeue and all), metered as a wait queue of kind
/// `condvar` (docs/format.md says what its rows count).
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
pub type Condvar = MeteredCondvar<parking_lot::RawCondvar>;

/// A condition variable over the raw condvar `C`, for the guards of a
/// [`crate::MeteredMutex`] over `C`'s raw mutex; every wait, notify,
/// wake-up and reacquisition is recorded as [`Condvar`]'s.
pub struct MeteredCondvar<C: RawCondvar> {
    raw: C,
    /// The clock reading of the latest observed notify while observed
    /// waiters slept (0: none yet): where a woken waiter's wake latency,
    /// and its reacquisition's wait, begin. The raw condvar's own
    /// synchronisation orders a notify's store before its waiter's load.
    notified_at: AtomicU64,
    /// Observed waits asleep now: a notify's `waiting`, the row's maximum.
    asleep: AtomicUsize,
    meta: Meta,
}

impl<C: RawCondvar> MeteredCondvar<C> {
    loom_const_fn! {
        /// A condvar whose class is its creation site.
        #[track_caller]
        pub const fn new() -> Self {
            Self::with_class(Class::new(None, Location::caller()))
        }
    }

    loom_const_fn! {
        /// A condvar of the class `name`.
        #[track_caller]
        pub const fn named(name: &'static str) -> Self {
            Self::with_class(Class::new(Some(name), Location::caller()))
        }
    }

    const fn with_class(class: Class) -> Self {
        MeteredCondvar {
            raw: C::INIT,
            notified_at: AtomicU64::new(0),
            asleep: AtomicUsize::new(0),
            meta: Meta::new(class, LockKind::Condvar),
        }
    }

    /// Wakes one waiter; returns whether one was woken or moved onto the
    /// mutex's queue (as parking_lot).
    #[track_caller]
    #[inline]
    pub fn notify_one(&self) -> bool {
        if recorder::observing() {
            return self.notify_observed(false, Location::caller()) != 0;
        }
        self.raw.notify_one()
    }

    /// Wakes every waiter; returns how many were woken or requeued.
    #[track_caller]
    #[inline]
    pub fn notify_all(&self) -> usize {
        if recorder::observing() {
            return self.notify_observed(true, Location::caller());
        }
        self.raw.notify_all()
    }

    /// A notify, counted: the stamp goes out before the raw notify, so
    /// that a waiter it wakes finds it.
    #[inline(never)]
    fn notify_observed(&self, all: bool, site: &'static Location<'static>) -> usize {
        let call = WakeCall::start(&self.meta, site);
        let waiting = self.asleep.load(Relaxed);
        if waiting != 0 {
            self.notified_at.store(call.stamp(), Relaxed);
        }
        let woken = match all {
            true => self.raw.notify_all(),
            false => usize::from(self.raw.notify_one()),
        };
        match woken {
            0 => call.finish_empty(),
            n => call.finish(waiting as u64, n as u64, n as u64),
        }
        woken
    }

    /// Releases the mutex, sleeps until notified, and locks it again.
    #[track_caller]
    pub fn wait<T: ?Sized>(&self, mutex_guard: &mut MeteredMutexGuard<'_, C::RawMutex, T>) {
        let wait = |raw: &_, state: &mut _| self.raw_wait(raw, state);
        self.wait_once_with(mutex_guard, Location::caller(), wait);
    }

    /// Waits while `condition` returns true: returns with it false and the
    /// mutex held. A wake-up that finds it still true counts as spurious.
    #[track_caller]
    pub fn wait_while<T, F>(
        &self,
        mutex_guard: &mut MeteredMutexGuard<'_, C::RawMutex, T>,
        condition: F,
    ) where
        T: ?Sized,
        F: FnMut(&mut T) -> bool,
    {
        let wait = |raw: &_, state: &mut _| self.raw_wait(raw, state);
        self.wait_while_with(mutex_guard, condition, Location::caller(), wait);
    }

    /// The raw wait without a deadline; never times out (false).
    fn raw_wait(&self, raw: &C::RawMutex, state: &mut <C::RawMutex as RawMutex>::Guard) -> bool {
        // SAFETY: `raw` and `state` are a held guard's mutex and
        // acquisition (`sleep_once` passes nothing else).
        unsafe { self.raw.wait(raw, state) };
        false
    }

    /// One wait at `site` through the raw wait `wait` (which returns
    /// whether it timed out), recorded as [`wait`](Self::wait)'s.
    fn wait_once_with<T: ?Sized>(
        &self,
        guard: &mut MeteredMutexGuard<'_, C::RawMutex, T>,
        site: &'static Location<'static>,
        wait: impl FnOnce(&C::RawMutex, &mut <C::RawMutex as RawMutex>::Guard) -> bool,
    ) -> WaitTimeoutResult {
        let mut stats = WaitStats::start(&self.meta, site);
        let woken = self.sleep_once(guard, site, &mut stats, wait);
        stats.finish(woken);
        WaitTimeoutResult(!woken)
    }

    /// `wait_while*`'s loop over one raw wait, `wait` (which returns
    /// whether it timed out).
    fn wait_while_with<T: ?Sized>(
        &self,
        guard: &mut MeteredMutexGuard<'_, C::RawMutex, T>,
        mut condition: impl FnMut(&mut T) -> bool,
        site: &'static Location<'static>,
        mut wait: impl FnMut(&C::RawMutex, &mut <C::RawMutex as RawMutex>::Guard) -> bool,
    ) -> WaitTimeoutResult {
        let mut stats = WaitStats::start(&self.meta, site);
        let mut first = true;
        while condition(&mut **guard) {
            if !first {
                stats.spurious();
            }
            first = false;
            if !self.sleep_once(guard, site, &mut stats, &mut wait) {
                stats.finish(false);
                return WaitTimeoutResult(true);
            }
        }
        stats.finish(true);
        WaitTimeoutResult(false)
    }

    /// One raw wait, `wait`: the guard's hold ends, the raw condvar
    /// unlocks, sleeps and relocks, and the reacquisition is an
    /// acquisition at `site`. Returns whether a notify woke it (false:
    /// the deadline passed).
    fn sleep_once<T: ?Sized>(
        &self,
        guard: &mut MeteredMutexGuard<'_, C::RawMutex, T>,
        site: &'static Location<'static>,
        stats: &mut WaitStats,
        wait: impl FnOnce(&C::RawMutex, &mut <C::RawMutex as RawMutex>::Guard) -> bool,
    ) -> bool {
        let asleep_at = stats.sleeping_now();
        let counted = asleep_at.is_some();
        if counted {
            stats.queued(self.asleep.fetch_add(1, Relaxed) + 1);
        }
        guard.end_hold_keep_locked();
        let timed_out = {
            // A raw wait that panics (parking_lot's, on a second mutex)
            // does so before it unlocks: the wait counts as refused, and
            // the guard, still locked, unlocks as it drops.
            let refused = crate::on_drop::OnDrop(|| {
                if std::thread::panicking() {
                    stats.refused();
                    if counted {
                        self.asleep.fetch_sub(1, Relaxed);
                    }
                }
            });
            let (raw, state) = guard.raw_parts();
            let timed_out = wait(raw, state);
            drop(refused);
            timed_out
        };
        if counted {
            self.asleep.fetch_sub(1, Relaxed);
        }
        // The notify that woke this waiter stamped after it fell asleep;
        // an older stamp means its notify was not observed.
        let woken_at = match (timed_out, asleep_at) {
            (false, Some(asleep)) => {
                let at = self.notified_at.load(Relaxed);
                (at >= asleep).then_some(at)
            }
            _ => None,
        };
        if let Some(at) = woken_at {
            stats.woken(at);
        }
        guard.begin_reacquired_hold(site, woken_at);
        !timed_out
    }
}

impl<C> MeteredCondvar<C>
where
    C: RawCondvarTimed,
    C::RawMutex: RawMutexTimed<Duration = Duration, Instant = Instant>,
{
    timed_pair! {
        /// [`wait`](Self::wait), giving up after `timeout` (counted in RJECT).
        fn wait_for(timeout: Duration) = to_deadline;
        /// [`wait`](Self::wait), giving up at `timeout` (counted in RJECT).
        fn wait_until(timeout: Instant) = Some;
        #[track_caller]
        pub fn [T: ?Sized] (
            &self,
            mutex_guard: &mut MeteredMutexGuard<'_, C::RawMutex, T>,
        ) limit () -> WaitTimeoutResult,
        |deadline, limit| {
            self.wait_until_at(mutex_guard, deadline(limit), Location::caller())
        }
    }

    /// [`wait_while`](Self::wait_while), giving up at `timeout`; then the
    /// result says so, whatever `condition` would now return (as
    /// parking_lot).
    #[track_caller]
    pub fn wait_while_until<T, F>(
        &self,
        mutex_guard: &mut MeteredMutexGuard<'_, C::RawMutex, T>,
        condition: F,
        timeout: Instant,
    ) -> WaitTimeoutResult
    where
        T: ?Sized,
        F: FnMut(&mut T) -> bool,
    {
        self.wait_while_until_at(mutex_guard, condition, Some(timeout), Location::caller())
    }

    /// [`wait_while`](Self::wait_while), giving up after `timeout`.
    #[track_caller]
    pub fn wait_while_for<T, F>(
        &self,
        mutex_guard: &mut MeteredMutexGuard<'_, C::RawMutex, T>,
        condition: F,
        timeout: Duration,
    ) -> WaitTimeoutResult
    where
        T: ?Sized,
        F: FnMut(&mut T) -> bool,
    {
        let deadline = to_deadline(timeout);
        self.wait_while_until_at(mutex_guard, condition, deadline, Location::caller())
    }

    /// parking_lot's (private) common form of the `wait_while*` methods,
    /// which its own unit tests call; public here, hidden, so those tests
    /// run unchanged against this type.
    #[doc(hidden)]
    #[track_caller]
    pub fn wait_while_until_internal<T, F>(
        &self,
        mutex_guard: &mut MeteredMutexGuard<'_, C::RawMutex, T>,
        condition: F,
        timeout: Option<Instant>,
    ) -> WaitTimeoutResult
    where
        T: ?Sized,
        F: FnMut(&mut T) -> bool,
    {
        self.wait_while_until_at(mutex_guard, condition, timeout, Location::caller())
    }

    /// One wait at `site` until `deadline` (for ever without one). Given
    /// the site rather than reading it, for `sync::Condvar`, whose waits
    /// run inside a closure, where `#[track_caller]` does not reach.
    pub(crate) fn wait_until_at<T: ?Sized>(
        &self,
        guard: &mut MeteredMutexGuard<'_, C::RawMutex, T>,
        deadline: Option<Instant>,
        site: &'static Location<'static>,
    ) -> WaitTimeoutResult {
        self.wait_once_with(guard, site, |raw, state| {
            self.raw_wait_until(raw, state, deadline)
        })
    }

    /// `wait_while*` at `site` until `deadline`; as
    /// [`wait_until_at`](Self::wait_until_at), for `sync::Condvar`.
    pub(crate) fn wait_while_until_at<T: ?Sized>(
        &self,
        guard: &mut MeteredMutexGuard<'_, C::RawMutex, T>,
        condition: impl FnMut(&mut T) -> bool,
        deadline: Option<Instant>,
        site: &'static Location<'static>,
    ) -> WaitTimeoutResult {
        let wait = |raw: &C::RawMutex, state: &mut _| self.raw_wait_until(raw, state, deadline);
        self.wait_while_with(guard, condition, site, wait)
    }

    /// The raw wait until `deadline` (for ever without one); true if it
    /// timed out.
    fn raw_wait_until(
        &self,
        raw: &C::RawMutex,
        state: &mut <C::RawMutex as RawMutex>::Guard,
        deadline: Option<Instant>,
    ) -> bool {
        match deadline {
            // SAFETY: as in `raw_wait`.
            Some(d) => unsafe { self.raw.wait_until(raw, state, &d) },
            None => self.raw_wait(raw, state),
        }
    }
}

/// `now + timeout`, or `None` (wait for ever) when that overflows.
pub(crate) fn to_deadline(timeout: Duration) -> Option<Instant> {
    Instant::now().checked_add(timeout)
}

impl<C: RawCondvar> Default for MeteredCondvar<C> {
    #[track_caller]
    fn default() -> Self {
        Self::new()
    }
}

impl<C: RawCondvar> fmt::Debug for MeteredCondvar<C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad("Condvar { .. }")
    }
}
