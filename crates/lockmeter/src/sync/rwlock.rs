//! `std::sync::RwLock`'s API over a metered lock whose raw lock is std's
//! own ([`StdRawRwLock`]).

use std::fmt;
use std::ops::Deref;
use std::panic::{RefUnwindSafe, UnwindSafe};
use std::sync::{LockResult, TryLockResult};

use super::poison::{self, Poison};
use super::stash::{stashed_guard, Stash};
use super::std_raw::StdRawRwLock;
use crate::rwlock::{MeteredReadGuard, MeteredRwLock, MeteredWriteGuard};

/// A drop-in for [`std::sync::RwLock`]: the same API, poisoning included,
/// with every acquisition counted at its call site, reads and writes apart.
///
/// As in std, only a writer that panics poisons the lock; readers see the
/// poison as `Err` but do not cause it.
///
/// # Examples
///
/// ```
/// use lockmeter::sync::RwLock;
///
/// let lock = RwLock::new(5);
/// {
///     let r1 = lock.read().unwrap();
///     let r2 = lock.read().unwrap();
///     assert_eq!(*r1 + *r2, 10);
/// }
/// *lock.write().unwrap() += 1;
/// assert_eq!(lock.into_inner().unwrap(), 6);
/// ```
///
/// Its poison is std's own lock's flag, which std's write guard sets as
/// it drops while its thread panics (see `poison`).
pub struct RwLock<T: ?Sized> {
    /// A writer's metered guard parts while it holds the lock (see `stash`).
    held: Stash<<StdRawRwLock as lock_api::RawRwLock>::ExclusiveGuard>,
    inner: MeteredRwLock<StdRawRwLock, T>,
}

// SAFETY: `held` is only touched by the thread holding `inner` exclusively,
// whose acquire/release orders it between writers; the rest is
// `crate::RwLock`'s, whose `Send`/`Sync` need the same of `T`.
unsafe impl<T: ?Sized + Send> Send for RwLock<T> {}
// SAFETY: as above; readers never touch `held`.
unsafe impl<T: ?Sized + Send + Sync> Sync for RwLock<T> {}

impl<T: ?Sized> UnwindSafe for RwLock<T> {}
impl<T: ?Sized> RefUnwindSafe for RwLock<T> {}

/// Shared access to a [`RwLock`]'s data. Not `Send`, as std's.
#[must_use = "if unused the RwLock will immediately unlock"]
pub struct RwLockReadGuard<'a, T: ?Sized + 'a> {
    inner: MeteredReadGuard<'a, StdRawRwLock, T>,
}

/// Exclusive access to a [`RwLock`]'s data; poisons the lock if dropped
/// while its thread panics. Not `Send`, as std's.
#[must_use = "if unused the RwLock will immediately unlock"]
pub struct RwLockWriteGuard<'a, T: ?Sized + 'a> {
    lock: &'a RwLock<T>,
    /// Whether the hold in `lock.held` is untimed (not stored; see `stash`).
    untimed: bool,
    /// The metered guard's hold is recorded by this thread.
    _not_send: std::marker::PhantomData<*mut ()>,
}

// SAFETY: sharing a write guard shares only `&T`.
unsafe impl<T: ?Sized + Sync> Sync for RwLockWriteGuard<'_, T> {}

impl<T> RwLock<T> {
    /// A new unlocked lock; its class is the caller's location.
    #[track_caller]
    pub const fn new(t: T) -> RwLock<T> {
        RwLock {
            held: Stash::new(),
            inner: MeteredRwLock::new(t),
        }
    }

    /// A new unlocked lock of the class `name` (not in std).
    #[track_caller]
    pub const fn named(name: &'static str, t: T) -> RwLock<T> {
        RwLock {
            held: Stash::new(),
            inner: MeteredRwLock::named(name, t),
        }
    }

    /// Consumes the lock, returning the data; `Err` if it is poisoned.
    pub fn into_inner(self) -> LockResult<T> {
        let poisoned = self.poison().get();
        poison::result(poisoned, self.inner.into_inner())
    }
}

impl<T: ?Sized> RwLock<T> {
    acquire_fns! {
        /// Blocks until shared access is acquired; `Err` (still holding the
        /// guard) if a writer panicked.
        read,
        /// Shared access if no writer holds or waits in the way: `WouldBlock`
        /// otherwise, `Poisoned` if acquired but a writer panicked.
        try_read -> RwLockReadGuard via read_guard;

        /// Blocks until exclusive access is acquired; `Err` (still holding the
        /// guard) if a writer panicked.
        write,
        /// Exclusive access if the lock is free: `WouldBlock` otherwise,
        /// `Poisoned` if acquired but a writer panicked.
        try_write -> RwLockWriteGuard via write_guard;
    }

    poison_api! {
        /// Whether a writer panicked (a momentary answer).
    }

    #[inline(always)]
    fn read_guard<'a>(
        &'a self,
        inner: MeteredReadGuard<'a, StdRawRwLock, T>,
    ) -> LockResult<RwLockReadGuard<'a, T>> {
        self.poison().result(RwLockReadGuard { inner })
    }

    #[inline(always)]
    fn write_guard<'a>(
        &'a self,
        inner: MeteredWriteGuard<'a, StdRawRwLock, T>,
    ) -> LockResult<RwLockWriteGuard<'a, T>> {
        let parts = MeteredWriteGuard::into_raw_parts(inner);
        // SAFETY: we hold the lock exclusively, and only its writer
        // touches `held`.
        let untimed = unsafe { self.held.put(parts) };
        self.poison().result(RwLockWriteGuard {
            lock: self,
            untimed,
            _not_send: std::marker::PhantomData,
        })
    }

    /// Where this lock keeps its poison: std's lock underneath.
    #[inline(always)]
    fn poison(&self) -> &StdRawRwLock {
        // SAFETY: only the raw lock's poison flag is read or cleared
        // through this; nothing locks or unlocks with it.
        unsafe { self.inner.raw() }
    }
}

from_and_default!([] RwLock<T> => t);

impl<T: ?Sized + fmt::Debug> fmt::Debug for RwLock<T> {
    /// std's format: `RwLock { data: .., poisoned: false, .. }`, with
    /// `<locked>` for data a writer holds. Looking does not count.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let locked = format_args!("<locked>");
        poison::fmt_lock(f, "RwLock", self.poison().get(), &locked, |show| {
            self.inner.try_read_unmetered(show)
        })
    }
}

impl<T: ?Sized> Deref for RwLockReadGuard<'_, T> {
    type Target = T;
    #[inline]
    fn deref(&self) -> &T {
        &self.inner
    }
}

stashed_guard!(RwLockWriteGuard, RwLock, write_guard_from_parts);

impl<T: ?Sized> RwLockWriteGuard<'_, T> {
    /// Nothing to do: std's own write guard, inside the stash, poisons
    /// std's lock as it drops while its thread panics, with std's rule.
    #[inline(always)]
    fn poison_if_panicking(&self) {}
}

fmt_as_data!([] RwLockReadGuard<'_, T>, [] RwLockWriteGuard<'_, T>);
