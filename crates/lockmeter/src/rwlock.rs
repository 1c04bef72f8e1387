//! A metering adapter over any `lock_api` raw reader-writer lock.
//!
//! Read and write acquisitions are recorded as separate rows (the site's
//! `mode` is `read` or `write`). [`RwLock<T>`] is the drop-in for
//! `parking_lot::RwLock<T>`.
//!
//! # Differences from `parking_lot::RwLock`
//! - No upgradable reads, mapped guards or sendable guards.
//! - Spin rounds and sleeps inside a foreign raw lock are invisible.

use std::cell::UnsafeCell;
use std::fmt;
use std::mem::ManuallyDrop;
use std::ops::{Deref, DerefMut};
use std::panic::Location;

use lock_api::{RawRwLock, RawRwLockTimed};
use lockmeter_model::LockKind;

use crate::class::{Class, Mode};
use crate::meter::{self, Hold, Meta};

/// A reader-writer lock over the raw lock `R` that records contention per
/// call site and mode.
///
/// `repr(C)`: the lock word first, then the fields written on every
/// acquisition, on one cache line (see `MeteredMutex`).
#[repr(C)]
pub struct MeteredRwLock<R: RawRwLock, T: ?Sized> {
    raw: R,
    meta: Meta,
    data: UnsafeCell<T>,
}

/// The drop-in replacement for `parking_lot::RwLock`.
///
/// # Examples
///
/// ```
/// use lockmeter::RwLock;
///
/// let table = RwLock::named("routes", vec!["/"]);
/// assert_eq!(table.read().len(), 1);
/// table.write().push("/about");
/// assert_eq!(table.try_read().map(|t| t.len()), Some(2));
/// ```
pub type RwLock<T> = MeteredRwLock<parking_lot::RawRwLock, T>;

// SAFETY: readers share `&T` (needs Sync), writers get `&mut T` (needs Send).
unsafe impl<R: RawRwLock + Send, T: ?Sized + Send> Send for MeteredRwLock<R, T> {}
// SAFETY: as above.
unsafe impl<R: RawRwLock + Sync, T: ?Sized + Send + Sync> Sync for MeteredRwLock<R, T> {}

impl<R: RawRwLock, T> MeteredRwLock<R, T> {
    /// A lock whose class is its creation site.
    #[track_caller]
    pub const fn new(value: T) -> Self {
        Self::from_class(Class::new(None, Location::caller()), value)
    }

    /// A lock of the class `name`.
    #[track_caller]
    pub const fn named(name: &'static str, value: T) -> Self {
        Self::from_class(Class::new(Some(name), Location::caller()), value)
    }

    const fn from_class(class: Class, value: T) -> Self {
        MeteredRwLock {
            raw: R::INIT,
            meta: Meta::new(class, LockKind::Rwlock),
            data: UnsafeCell::new(value),
        }
    }

    /// Consumes the lock, returning the data.
    pub fn into_inner(self) -> T {
        self.data.into_inner()
    }
}

impl<R: RawRwLock, T: ?Sized> MeteredRwLock<R, T> {
    /// Acquires shared read access, blocking while a writer holds the lock.
    #[track_caller]
    #[inline]
    pub fn read(&self) -> MeteredReadGuard<'_, R, T> {
        let (raw, hold) = meter::acquire(
            &self.meta,
            Location::caller(),
            Mode::Read,
            || self.raw.lock_shared(),
            || self.raw.try_lock_shared(),
            || (self.raw.lock_shared(), 0, 0),
        );
        MeteredReadGuard {
            lock: self,
            raw: ManuallyDrop::new(raw),
            hold,
        }
    }

    /// Acquires exclusive write access, blocking until no one holds the lock.
    #[track_caller]
    #[inline]
    pub fn write(&self) -> MeteredWriteGuard<'_, R, T> {
        let (raw, hold) = meter::acquire(
            &self.meta,
            Location::caller(),
            Mode::Write,
            || self.raw.lock_exclusive(),
            || self.raw.try_lock_exclusive(),
            || (self.raw.lock_exclusive(), 0, 0),
        );
        MeteredWriteGuard {
            lock: self,
            raw: ManuallyDrop::new(raw),
            hold,
        }
    }

    /// Read access if available now; a failure counts in RJECT.
    #[track_caller]
    #[inline]
    pub fn try_read(&self) -> Option<MeteredReadGuard<'_, R, T>> {
        meter::try_acquire(&self.meta, Location::caller(), Mode::Read, || {
            self.raw.try_lock_shared()
        })
        .map(|(raw, hold)| MeteredReadGuard {
            lock: self,
            raw: ManuallyDrop::new(raw),
            hold,
        })
    }

    /// Write access if available now; a failure counts in RJECT.
    #[track_caller]
    #[inline]
    pub fn try_write(&self) -> Option<MeteredWriteGuard<'_, R, T>> {
        meter::try_acquire(&self.meta, Location::caller(), Mode::Write, || {
            self.raw.try_lock_exclusive()
        })
        .map(|(raw, hold)| MeteredWriteGuard {
            lock: self,
            raw: ManuallyDrop::new(raw),
            hold,
        })
    }

    /// Whether anyone holds the lock right now.
    pub fn is_locked(&self) -> bool {
        self.raw.is_locked()
    }

    /// Whether a writer holds the lock right now.
    pub fn is_locked_exclusive(&self) -> bool {
        self.raw.is_locked_exclusive()
    }

    /// Mutable access without locking: `&mut self` proves exclusivity.
    pub fn get_mut(&mut self) -> &mut T {
        self.data.get_mut()
    }

    /// A raw pointer to the data.
    pub fn data_ptr(&self) -> *mut T {
        self.data.get()
    }
}

impl<R: RawRwLockTimed, T: ?Sized> MeteredRwLock<R, T> {
    /// Read access, giving up after `timeout` (counted in RJECT).
    #[track_caller]
    pub fn try_read_for(&self, timeout: R::Duration) -> Option<MeteredReadGuard<'_, R, T>> {
        meter::acquire_timed(
            &self.meta,
            Location::caller(),
            Mode::Read,
            || self.raw.try_lock_shared(),
            || (self.raw.try_lock_shared_for(timeout), 0, 0),
        )
        .map(|(raw, hold)| MeteredReadGuard {
            lock: self,
            raw: ManuallyDrop::new(raw),
            hold,
        })
    }

    /// Write access, giving up after `timeout` (counted in RJECT).
    #[track_caller]
    pub fn try_write_for(&self, timeout: R::Duration) -> Option<MeteredWriteGuard<'_, R, T>> {
        meter::acquire_timed(
            &self.meta,
            Location::caller(),
            Mode::Write,
            || self.raw.try_lock_exclusive(),
            || (self.raw.try_lock_exclusive_for(timeout), 0, 0),
        )
        .map(|(raw, hold)| MeteredWriteGuard {
            lock: self,
            raw: ManuallyDrop::new(raw),
            hold,
        })
    }

    /// Read access, giving up at `deadline` (counted in RJECT).
    #[track_caller]
    pub fn try_read_until(&self, deadline: R::Instant) -> Option<MeteredReadGuard<'_, R, T>> {
        meter::acquire_timed(
            &self.meta,
            Location::caller(),
            Mode::Read,
            || self.raw.try_lock_shared(),
            || (self.raw.try_lock_shared_until(deadline), 0, 0),
        )
        .map(|(raw, hold)| MeteredReadGuard {
            lock: self,
            raw: ManuallyDrop::new(raw),
            hold,
        })
    }

    /// Write access, giving up at `deadline` (counted in RJECT).
    #[track_caller]
    pub fn try_write_until(&self, deadline: R::Instant) -> Option<MeteredWriteGuard<'_, R, T>> {
        meter::acquire_timed(
            &self.meta,
            Location::caller(),
            Mode::Write,
            || self.raw.try_lock_exclusive(),
            || (self.raw.try_lock_exclusive_until(deadline), 0, 0),
        )
        .map(|(raw, hold)| MeteredWriteGuard {
            lock: self,
            raw: ManuallyDrop::new(raw),
            hold,
        })
    }
}

impl<R: RawRwLock, T: Default> Default for MeteredRwLock<R, T> {
    #[track_caller]
    fn default() -> Self {
        Self::new(T::default())
    }
}

impl<R: RawRwLock, T: ?Sized + fmt::Debug> fmt::Debug for MeteredRwLock<R, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut d = f.debug_struct("RwLock");
        match self.raw.try_lock_shared() {
            Some(g) => {
                // SAFETY: we hold a read lock until `unlock_shared` below.
                d.field("data", &unsafe { &*self.data.get() });
                // SAFETY: `g` is the state of the acquisition just made.
                unsafe { self.raw.unlock_shared(g) };
            }
            None => {
                d.field("data", &format_args!("<locked>"));
            }
        }
        d.finish()
    }
}

/// Shared access to a [`MeteredRwLock`]'s data.
#[must_use = "the lock is released as soon as the guard is dropped"]
pub struct MeteredReadGuard<'a, R: RawRwLock, T: ?Sized> {
    lock: &'a MeteredRwLock<R, T>,
    raw: ManuallyDrop<R::SharedGuard>,
    hold: Hold,
}

/// Exclusive access to a [`MeteredRwLock`]'s data.
#[must_use = "the lock is released as soon as the guard is dropped"]
pub struct MeteredWriteGuard<'a, R: RawRwLock, T: ?Sized> {
    lock: &'a MeteredRwLock<R, T>,
    raw: ManuallyDrop<R::ExclusiveGuard>,
    hold: Hold,
}

/// The read guard of [`RwLock`].
pub type RwLockReadGuard<'a, T> = MeteredReadGuard<'a, parking_lot::RawRwLock, T>;
/// The write guard of [`RwLock`].
pub type RwLockWriteGuard<'a, T> = MeteredWriteGuard<'a, parking_lot::RawRwLock, T>;

// SAFETY: sharing a guard only shares `&T`.
unsafe impl<R: RawRwLock + Sync, T: ?Sized + Sync> Sync for MeteredReadGuard<'_, R, T> {}
// SAFETY: sharing a guard only shares `&T`.
unsafe impl<R: RawRwLock + Sync, T: ?Sized + Sync> Sync for MeteredWriteGuard<'_, R, T> {}

impl<R: RawRwLock, T: ?Sized> Deref for MeteredReadGuard<'_, R, T> {
    type Target = T;
    fn deref(&self) -> &T {
        // SAFETY: the guard proves a read lock is held.
        unsafe { &*self.lock.data.get() }
    }
}

impl<R: RawRwLock, T: ?Sized> Deref for MeteredWriteGuard<'_, R, T> {
    type Target = T;
    fn deref(&self) -> &T {
        // SAFETY: the guard proves the write lock is held.
        unsafe { &*self.lock.data.get() }
    }
}

impl<R: RawRwLock, T: ?Sized> DerefMut for MeteredWriteGuard<'_, R, T> {
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: the guard proves the write lock is held, exclusively.
        unsafe { &mut *self.lock.data.get() }
    }
}

impl<R: RawRwLock, T: ?Sized> Drop for MeteredReadGuard<'_, R, T> {
    #[inline]
    fn drop(&mut self) {
        // SAFETY: `raw` is taken exactly once, here.
        let raw = unsafe { ManuallyDrop::take(&mut self.raw) };
        // SAFETY: `raw` is the state of this guard's shared acquisition.
        self.hold
            .release(|| unsafe { self.lock.raw.unlock_shared(raw) });
    }
}

impl<R: RawRwLock, T: ?Sized> Drop for MeteredWriteGuard<'_, R, T> {
    #[inline]
    fn drop(&mut self) {
        // SAFETY: `raw` is taken exactly once, here.
        let raw = unsafe { ManuallyDrop::take(&mut self.raw) };
        // SAFETY: `raw` is the state of this guard's exclusive acquisition.
        self.hold
            .release(|| unsafe { self.lock.raw.unlock_exclusive(raw) });
    }
}
