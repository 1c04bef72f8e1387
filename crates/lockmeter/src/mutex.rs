//! A metering adapter over any `lock_api` raw mutex.
//!
//! [`MeteredMutex<R, T>`] wraps a raw lock `R` the way `lock_api::Mutex`
//! does, and records each acquisition at its caller's site. [`Mutex<T>`] is
//! the drop-in for `parking_lot::Mutex<T>`; meter your own raw lock with
//! `MeteredMutex<YourRawMutex, T>`.
//!
//! # Differences from `parking_lot::Mutex`
//! - Guards cannot be mapped (`MutexGuard::map`) or sent to other threads:
//!   the hold time is recorded by the thread that acquired.
//! - `force_unlock` is not offered: a forced unlock would skip the hold.
//! - Spin rounds and sleeps inside a foreign raw lock are invisible, so a
//!   `Mutex` row reports `spins` and `sleeps` as 0; wait times are exact.

use std::cell::UnsafeCell;
use std::fmt;
use std::mem::ManuallyDrop;
use std::ops::{Deref, DerefMut};
use std::panic::Location;

use lock_api::{RawMutex, RawMutexTimed};
use lockmeter_model::LockKind;

use crate::class::{Class, Mode};
use crate::meter::{self, Hold, Meta};

/// A mutex over the raw lock `R` that records contention per call site.
///
/// `repr(C)` keeps the lock word first, followed by the per-instance fields
/// written on every acquisition: on one cache line with it, so a hand-off
/// moves as few lines as it can (see the layout of `meter::Meta`).
#[repr(C)]
pub struct MeteredMutex<R: RawMutex, T: ?Sized> {
    raw: R,
    meta: Meta,
    data: UnsafeCell<T>,
}

/// The drop-in replacement for `parking_lot::Mutex`.
///
/// # Examples
///
/// ```
/// use lockmeter::Mutex;
///
/// let m = Mutex::named("config", vec![1, 2]);
/// m.lock().push(3);
/// assert_eq!(m.lock().len(), 3);
/// assert!(m.try_lock_for(std::time::Duration::from_millis(1)).is_some());
/// ```
pub type Mutex<T> = MeteredMutex<parking_lot::RawMutex, T>;

/// The guard of [`Mutex`].
pub type MutexGuard<'a, T> = MeteredMutexGuard<'a, parking_lot::RawMutex, T>;

// SAFETY: the raw lock gives access to `T` to one thread at a time.
unsafe impl<R: RawMutex + Send, T: ?Sized + Send> Send for MeteredMutex<R, T> {}
// SAFETY: as above.
unsafe impl<R: RawMutex + Sync, T: ?Sized + Send> Sync for MeteredMutex<R, T> {}

impl<R: RawMutex, T> MeteredMutex<R, T> {
    /// A mutex whose class is its creation site.
    #[track_caller]
    pub const fn new(value: T) -> Self {
        Self::from_class(Class::new(None, Location::caller()), value)
    }

    /// A mutex of the class `name`.
    #[track_caller]
    pub const fn named(name: &'static str, value: T) -> Self {
        Self::from_class(Class::new(Some(name), Location::caller()), value)
    }

    const fn from_class(class: Class, value: T) -> Self {
        MeteredMutex {
            raw: R::INIT,
            meta: Meta::new(class, LockKind::Mutex),
            data: UnsafeCell::new(value),
        }
    }

    /// Consumes the mutex, returning the data.
    pub fn into_inner(self) -> T {
        self.data.into_inner()
    }
}

impl<R: RawMutex, T: ?Sized> MeteredMutex<R, T> {
    /// Acquires the mutex, blocking until it is available.
    #[track_caller]
    #[inline]
    pub fn lock(&self) -> MeteredMutexGuard<'_, R, T> {
        let (raw, hold) = meter::acquire(
            &self.meta,
            Location::caller(),
            Mode::Exclusive,
            || self.raw.lock(),
            || self.raw.try_lock(),
            || (self.raw.lock(), 0, 0),
        );
        self.guard(raw, hold)
    }

    /// Acquires the mutex if it is free; a failure counts in RJECT.
    #[track_caller]
    #[inline]
    pub fn try_lock(&self) -> Option<MeteredMutexGuard<'_, R, T>> {
        meter::try_acquire(&self.meta, Location::caller(), Mode::Exclusive, || {
            self.raw.try_lock()
        })
        .map(|(raw, hold)| self.guard(raw, hold))
    }

    /// Whether the mutex is held right now (a momentary answer).
    pub fn is_locked(&self) -> bool {
        self.raw.is_locked()
    }

    /// Mutable access without locking: `&mut self` proves exclusivity.
    pub fn get_mut(&mut self) -> &mut T {
        self.data.get_mut()
    }

    /// A raw pointer to the data, for FFI-style use under the lock.
    pub fn data_ptr(&self) -> *mut T {
        self.data.get()
    }

    fn guard(&self, raw: R::Guard, hold: Hold) -> MeteredMutexGuard<'_, R, T> {
        MeteredMutexGuard {
            lock: self,
            raw: ManuallyDrop::new(raw),
            hold,
        }
    }
}

impl<R: RawMutexTimed, T: ?Sized> MeteredMutex<R, T> {
    /// Acquires the mutex, giving up after `timeout` (counted in RJECT).
    #[track_caller]
    pub fn try_lock_for(&self, timeout: R::Duration) -> Option<MeteredMutexGuard<'_, R, T>> {
        meter::acquire_timed(
            &self.meta,
            Location::caller(),
            Mode::Exclusive,
            || self.raw.try_lock(),
            || (self.raw.try_lock_for(timeout), 0, 0),
        )
        .map(|(raw, hold)| self.guard(raw, hold))
    }

    /// Acquires the mutex, giving up at `deadline` (counted in RJECT).
    #[track_caller]
    pub fn try_lock_until(&self, deadline: R::Instant) -> Option<MeteredMutexGuard<'_, R, T>> {
        meter::acquire_timed(
            &self.meta,
            Location::caller(),
            Mode::Exclusive,
            || self.raw.try_lock(),
            || (self.raw.try_lock_until(deadline), 0, 0),
        )
        .map(|(raw, hold)| self.guard(raw, hold))
    }
}

impl<R: RawMutex, T: Default> Default for MeteredMutex<R, T> {
    #[track_caller]
    fn default() -> Self {
        Self::new(T::default())
    }
}

impl<R: RawMutex, T> From<T> for MeteredMutex<R, T> {
    #[track_caller]
    fn from(value: T) -> Self {
        Self::new(value)
    }
}

impl<R: RawMutex, T: ?Sized + fmt::Debug> fmt::Debug for MeteredMutex<R, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut d = f.debug_struct("Mutex");
        match self.raw.try_lock() {
            Some(g) => {
                // SAFETY: we hold the lock until `unlock` below.
                d.field("data", &unsafe { &*self.data.get() });
                // SAFETY: `g` is the state of the acquisition just made.
                unsafe { self.raw.unlock(g) };
            }
            None => {
                d.field("data", &format_args!("<locked>"));
            }
        }
        d.finish()
    }
}

/// Access to a [`MeteredMutex`]'s data; unlocks and records the hold on drop.
#[must_use = "the lock is released as soon as the guard is dropped"]
pub struct MeteredMutexGuard<'a, R: RawMutex, T: ?Sized> {
    lock: &'a MeteredMutex<R, T>,
    raw: ManuallyDrop<R::Guard>,
    hold: Hold,
}

// SAFETY: sharing the guard only shares `&T`.
unsafe impl<R: RawMutex + Sync, T: ?Sized + Sync> Sync for MeteredMutexGuard<'_, R, T> {}

impl<R: RawMutex, T: ?Sized> Deref for MeteredMutexGuard<'_, R, T> {
    type Target = T;
    fn deref(&self) -> &T {
        // SAFETY: the guard proves the lock is held.
        unsafe { &*self.lock.data.get() }
    }
}

impl<R: RawMutex, T: ?Sized> DerefMut for MeteredMutexGuard<'_, R, T> {
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: the guard proves the lock is held, exclusively.
        unsafe { &mut *self.lock.data.get() }
    }
}

impl<R: RawMutex, T: ?Sized> Drop for MeteredMutexGuard<'_, R, T> {
    #[inline]
    fn drop(&mut self) {
        // SAFETY: `raw` is taken exactly once, here.
        let raw = unsafe { ManuallyDrop::take(&mut self.raw) };
        // SAFETY: `raw` is the state of this guard's acquisition.
        self.hold.release(|| unsafe { self.lock.raw.unlock(raw) });
    }
}

impl<R: RawMutex, T: ?Sized + fmt::Debug> fmt::Debug for MeteredMutexGuard<'_, R, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&**self, f)
    }
}
