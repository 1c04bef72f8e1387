//! An instrumented test-and-test-and-set spinlock.

use std::cell::UnsafeCell;
use std::fmt;
use std::ops::{Deref, DerefMut};
use std::panic::Location;

use lockmeter_model::LockKind;

use crate::backoff::Backoff;
use crate::class::{Class, Mode};
use crate::meter::{self, Hold, Meta};
use crate::primitive::{loom_const_fn, AtomicBool, Ordering};

/// A spinlock that records, per call site, how often it was taken, how
/// often it had to spin, for how many rounds, and how long it was held.
///
/// Waiters spin on a plain load (test-and-test-and-set) with bounded
/// exponential backoff, then yield the CPU between attempts so that a
/// preempted holder can finish on a small machine.
///
/// # Examples
///
/// ```
/// use lockmeter::SpinLock;
///
/// static COUNTER: SpinLock<u64> = SpinLock::named("counter", 0);
/// *COUNTER.lock() += 1;
/// assert_eq!(*COUNTER.lock(), 1);
/// assert!(COUNTER.try_lock().is_some());
/// ```
///
/// `repr(C)`: the per-instance fields, then the lock word right before the
/// data, as in a bare lock (see the layout of `meter::Meta`).
#[repr(C)]
pub struct SpinLock<T: ?Sized> {
    meta: Meta,
    locked: AtomicBool,
    data: UnsafeCell<T>,
}

// SAFETY: the lock hands out access to `T` to one thread at a time.
unsafe impl<T: ?Sized + Send> Send for SpinLock<T> {}
// SAFETY: as above; `&SpinLock` only gives `&mut T` under the lock.
unsafe impl<T: ?Sized + Send> Sync for SpinLock<T> {}

impl<T> SpinLock<T> {
    loom_const_fn! {
        /// A spinlock whose class is its creation site.
        #[track_caller]
        pub const fn new(value: T) -> SpinLock<T> {
            SpinLock::with_class(Class::new(None, Location::caller()), value)
        }
    }

    loom_const_fn! {
        /// A spinlock of the class `name`: all spinlocks given one name
        /// share a row.
        #[track_caller]
        pub const fn named(name: &'static str, value: T) -> SpinLock<T> {
            SpinLock::with_class(Class::new(Some(name), Location::caller()), value)
        }
    }

    loom_const_fn! {
        pub(crate) const fn with_class(class: Class, value: T) -> SpinLock<T> {
            SpinLock { locked: AtomicBool::new(false), meta: Meta::new(class, LockKind::Spinlock), data: UnsafeCell::new(value) }
        }
    }

    /// Consumes the lock, returning the data.
    pub fn into_inner(self) -> T {
        self.data.into_inner()
    }
}

impl<T: ?Sized> SpinLock<T> {
    /// Acquires the lock, spinning until it is free.
    #[track_caller]
    #[inline]
    pub fn lock(&self) -> SpinLockGuard<'_, T> {
        let ((), hold) = meter::acquire(
            &self.meta,
            Location::caller(),
            Mode::Exclusive,
            || {
                if !self.try_acquire_raw() {
                    self.spin_until_acquired();
                }
            },
            || self.try_acquire_raw().then_some(()),
            || ((), self.spin_until_acquired(), 0),
        );
        SpinLockGuard { lock: self, hold }
    }

    /// Acquires the lock if it is free; a failure counts in RJECT.
    #[track_caller]
    #[inline]
    pub fn try_lock(&self) -> Option<SpinLockGuard<'_, T>> {
        meter::try_acquire(&self.meta, Location::caller(), Mode::Exclusive, || {
            self.try_acquire_raw().then_some(())
        })
        .map(|((), hold)| SpinLockGuard { lock: self, hold })
    }

    /// Whether the lock is held right now (a momentary answer).
    pub fn is_locked(&self) -> bool {
        self.locked.load(Ordering::Relaxed)
    }

    /// Mutable access without locking: `&mut self` proves exclusivity.
    pub fn get_mut(&mut self) -> &mut T {
        self.data.get_mut()
    }

    /// One strong attempt: fails only if the lock is held.
    #[inline]
    fn try_acquire_raw(&self) -> bool {
        // Acquire: pairs with the Release store in `unlock_raw`, so the
        // previous holder's writes to the data are visible.
        self.locked
            .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_ok()
    }

    /// Spins until acquired; returns the backoff rounds it took.
    #[cold]
    fn spin_until_acquired(&self) -> u64 {
        let mut backoff = Backoff::new();
        loop {
            while self.locked.load(Ordering::Relaxed) {
                backoff.snooze();
            }
            if self.try_acquire_raw() {
                return u64::from(backoff.rounds());
            }
            backoff.snooze();
        }
    }

    #[inline]
    fn unlock_raw(&self) {
        self.locked.store(false, Ordering::Release);
    }
}

impl<T: Default> Default for SpinLock<T> {
    #[track_caller]
    fn default() -> SpinLock<T> {
        SpinLock::new(T::default())
    }
}

impl<T: ?Sized + fmt::Debug> fmt::Debug for SpinLock<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut d = f.debug_struct("SpinLock");
        match self.try_acquire_raw() {
            true => {
                // SAFETY: we hold the lock until `unlock_raw` below.
                d.field("data", &unsafe { &*self.data.get() });
                self.unlock_raw();
            }
            false => {
                d.field("data", &format_args!("<locked>"));
            }
        }
        d.finish()
    }
}

/// Access to a [`SpinLock`]'s data; unlocks and records the hold on drop.
#[must_use = "the lock is released as soon as the guard is dropped"]
pub struct SpinLockGuard<'a, T: ?Sized> {
    lock: &'a SpinLock<T>,
    hold: Hold,
}

// SAFETY: sharing the guard only shares `&T`.
unsafe impl<T: ?Sized + Sync> Sync for SpinLockGuard<'_, T> {}

impl<T: ?Sized> Deref for SpinLockGuard<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        // SAFETY: the guard proves the lock is held.
        unsafe { &*self.lock.data.get() }
    }
}

impl<T: ?Sized> DerefMut for SpinLockGuard<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: the guard proves the lock is held, exclusively.
        unsafe { &mut *self.lock.data.get() }
    }
}

impl<T: ?Sized> Drop for SpinLockGuard<'_, T> {
    #[inline]
    fn drop(&mut self) {
        self.hold
            .release_blaming_inline(&self.lock.meta, || self.lock.unlock_raw());
    }
}

impl<T: ?Sized + fmt::Debug> fmt::Debug for SpinLockGuard<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&**self, f)
    }
}
