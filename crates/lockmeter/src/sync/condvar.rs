//! `std::sync::Condvar`'s API over lockmeter's metered [`crate::Condvar`].
//!
//! Each method hands the metered condvar its own caller's location: the
//! waits run inside a closure (the guard's parts are lent out for the
//! wait, see `MutexGuard::with_inner`), where `#[track_caller]` does not
//! reach, and a wait was once recorded at this file's line.

use std::fmt;
use std::panic::{Location, RefUnwindSafe, UnwindSafe};
use std::sync::{LockResult, OnceLock, PoisonError, WaitTimeoutResult};
use std::time::Duration;

use super::mutex::MutexGuard;
use super::poison::Poison;
use super::raw_condvar::StdRawCondvar;
use crate::condvar::to_deadline;
use crate::primitive::loom_const_fn;

/// A drop-in for [`std::sync::Condvar`], for [`super::Mutex`]'s guards:
/// waits, notifies, wake-ups, spurious wake-ups and timeouts are recorded
/// per call site, and the mutex's reacquisition after a wait is counted
/// as an acquisition of the mutex.
///
/// As in std, a wait returns `Err` (with the reacquired guard) if the
/// mutex was poisoned while waiting; the timed waits return std's own
/// [`WaitTimeoutResult`].
///
/// # Examples
///
/// ```
/// use lockmeter::sync::{Condvar, Mutex};
/// use std::sync::Arc;
///
/// let pair = Arc::new((Mutex::new(false), Condvar::new()));
/// let pair2 = Arc::clone(&pair);
/// std::thread::spawn(move || {
///     *pair2.0.lock().unwrap() = true;
///     pair2.1.notify_one();
/// });
/// let (lock, cvar) = &*pair;
/// let ready = cvar.wait_while(lock.lock().unwrap(), |ready| !*ready).unwrap();
/// assert!(*ready);
/// ```
pub struct Condvar {
    inner: crate::MeteredCondvar<StdRawCondvar>,
}

impl Condvar {
    loom_const_fn! {
        /// A new condition variable; its class is the caller's location.
        #[track_caller]
        pub const fn new() -> Condvar {
            Condvar {
                inner: crate::MeteredCondvar::new(),
            }
        }
    }

    loom_const_fn! {
        /// A new condition variable of the class `name` (not in std).
        #[track_caller]
        pub const fn named(name: &'static str) -> Condvar {
            Condvar {
                inner: crate::MeteredCondvar::named(name),
            }
        }
    }

    /// Blocks until notified (or a spurious wake-up); `Err` if the mutex
    /// was poisoned meanwhile.
    #[track_caller]
    pub fn wait<'a, T>(&self, mut guard: MutexGuard<'a, T>) -> LockResult<MutexGuard<'a, T>> {
        let site = Location::caller();
        guard.with_inner(|g| self.inner.wait_until_at(g, None, site));
        poisoned(guard)
    }

    /// Blocks while `condition` is true, re-checking after every wake-up;
    /// returns at once if it is false. `Err` as soon as a wake-up finds
    /// the mutex poisoned, as std.
    #[track_caller]
    pub fn wait_while<'a, T, F>(
        &self,
        mut guard: MutexGuard<'a, T>,
        mut condition: F,
    ) -> LockResult<MutexGuard<'a, T>>
    where
        F: FnMut(&mut T) -> bool,
    {
        let poison = guard.poison();
        let site = Location::caller();
        let mut woken = false;
        let condition = |t: &mut T| {
            let again = !(woken && poison.get()) && condition(t);
            woken = true;
            again
        };
        guard.with_inner(|g| self.inner.wait_while_until_at(g, condition, None, site));
        poisoned(guard)
    }

    /// Blocks until notified or `dur` has passed.
    #[track_caller]
    pub fn wait_timeout<'a, T>(
        &self,
        mut guard: MutexGuard<'a, T>,
        dur: Duration,
    ) -> LockResult<(MutexGuard<'a, T>, WaitTimeoutResult)> {
        let (site, deadline) = (Location::caller(), to_deadline(dur));
        let r = guard.with_inner(|g| self.inner.wait_until_at(g, deadline, site));
        let result = wait_timeout_result(r.timed_out());
        super::poison::map_result(poisoned(guard), |g| (g, result))
    }

    /// Blocks until notified or `ms` milliseconds have passed; `true` if
    /// it timed out (std's deprecated form).
    #[track_caller]
    #[deprecated(note = "replaced by `wait_timeout`, as in std")]
    pub fn wait_timeout_ms<'a, T>(
        &self,
        guard: MutexGuard<'a, T>,
        ms: u32,
    ) -> LockResult<(MutexGuard<'a, T>, bool)> {
        let r = self.wait_timeout(guard, Duration::from_millis(u64::from(ms)));
        super::poison::map_result(r, |(g, t)| (g, t.timed_out()))
    }

    /// Blocks while `condition` is true, for at most `dur` in all;
    /// `timed_out()` is whether it gave up with `condition` still true.
    #[track_caller]
    pub fn wait_timeout_while<'a, T, F>(
        &self,
        mut guard: MutexGuard<'a, T>,
        dur: Duration,
        mut condition: F,
    ) -> LockResult<(MutexGuard<'a, T>, WaitTimeoutResult)>
    where
        F: FnMut(&mut T) -> bool,
    {
        let poison = guard.poison();
        let (site, deadline) = (Location::caller(), to_deadline(dur));
        let mut woken = false;
        let mut stopped_by_poison = false;
        let wrapped = |t: &mut T| {
            if woken && poison.get() {
                stopped_by_poison = true;
                return false;
            }
            woken = true;
            condition(t)
        };
        let r = guard.with_inner(|g| self.inner.wait_while_until_at(g, wrapped, deadline, site));
        // As std: a wait that timed out is followed by one more look at
        // the condition (unless the mutex was poisoned meanwhile), and
        // only a condition still true makes the result a timeout.
        let timed_out = match r.timed_out() && !stopped_by_poison {
            true if !poison.get() => condition(&mut *guard),
            other => other,
        };
        super::poison::map_result(poisoned(guard), |g| (g, wait_timeout_result(timed_out)))
    }

    /// Wakes one waiter, if any.
    #[track_caller]
    pub fn notify_one(&self) {
        self.inner.notify_one();
    }

    /// Wakes every waiter.
    #[track_caller]
    pub fn notify_all(&self) {
        self.inner.notify_all();
    }
}

// As std's: a `&Condvar` may cross `catch_unwind` (what a panic leaves
// behind is in the mutex, which reports it as poison).
impl UnwindSafe for Condvar {}
impl RefUnwindSafe for Condvar {}

impl Default for Condvar {
    #[track_caller]
    fn default() -> Self {
        Condvar::new()
    }
}

impl fmt::Debug for Condvar {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Condvar").finish_non_exhaustive()
    }
}

/// `Ok(guard)`, or `Err` with it if its mutex is poisoned.
fn poisoned<T>(guard: MutexGuard<'_, T>) -> LockResult<MutexGuard<'_, T>> {
    if guard.poison().get() {
        Err(PoisonError::new(guard))
    } else {
        Ok(guard)
    }
}

/// std's [`WaitTimeoutResult`], which has no public constructor: std's
/// own condition variable makes both values once, without blocking (a
/// zero timeout on a true condition times out at once; a false condition
/// returns at once), and they are copied from there.
fn wait_timeout_result(timed_out: bool) -> WaitTimeoutResult {
    static BOTH: OnceLock<[WaitTimeoutResult; 2]> = OnceLock::new();
    let both = BOTH.get_or_init(|| {
        let m = std::sync::Mutex::new(());
        let c = std::sync::Condvar::new();
        let made = |timeout: bool| {
            let g = m.lock().unwrap_or_else(PoisonError::into_inner);
            let (_g, r) = c
                .wait_timeout_while(g, Duration::ZERO, |_| timeout)
                .unwrap_or_else(PoisonError::into_inner);
            r
        };
        let r = [made(false), made(true)];
        debug_assert!(!r[0].timed_out() && r[1].timed_out());
        r
    });
    both[usize::from(timed_out)]
}
