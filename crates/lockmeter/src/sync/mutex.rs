//! `std::sync::Mutex`'s API over a metered [`crate::Mutex`].

use std::fmt;
use std::ops::{Deref, DerefMut};
use std::panic::{RefUnwindSafe, UnwindSafe};
use std::sync::{LockResult, PoisonError, TryLockError, TryLockResult};

use super::poison::{self, map_result};

/// A drop-in for [`std::sync::Mutex`]: the same API, poisoning included,
/// with every acquisition counted at its call site.
///
/// The class is the creation site, or a name given with [`Mutex::named`].
/// An acquisition that finds the mutex poisoned is counted like any other.
///
/// # Examples
///
/// ```
/// use lockmeter::sync::Mutex;
/// use std::sync::Arc;
///
/// let m = Arc::new(Mutex::new(0));
/// let m2 = Arc::clone(&m);
/// std::thread::spawn(move || *m2.lock().unwrap() += 1).join().unwrap();
/// assert_eq!(*m.lock().unwrap(), 1);
/// ```
pub struct Mutex<T: ?Sized> {
    poison: poison::Flag,
    inner: crate::Mutex<T>,
}

// Like std's: a panic while locked poisons the mutex, so observing it
// after a caught panic is reported rather than silently broken.
impl<T: ?Sized> UnwindSafe for Mutex<T> {}
impl<T: ?Sized> RefUnwindSafe for Mutex<T> {}

/// The guard of [`Mutex`]; unlocks (and poisons, if its thread is
/// panicking) when dropped. Not `Send`, as std's.
#[must_use = "if unused the Mutex will immediately unlock"]
pub struct MutexGuard<'a, T: ?Sized + 'a> {
    poison: &'a poison::Flag,
    state: poison::Guard,
    inner: crate::MutexGuard<'a, T>,
}

impl<T> Mutex<T> {
    /// A new unlocked mutex; its class is the caller's location.
    #[track_caller]
    pub const fn new(t: T) -> Mutex<T> {
        Mutex {
            poison: poison::Flag::new(),
            inner: crate::Mutex::new(t),
        }
    }

    /// A new unlocked mutex of the class `name` (not in std).
    #[track_caller]
    pub const fn named(name: &'static str, t: T) -> Mutex<T> {
        Mutex {
            poison: poison::Flag::new(),
            inner: crate::Mutex::named(name, t),
        }
    }

    /// Consumes the mutex, returning the data; `Err` if it is poisoned.
    pub fn into_inner(self) -> LockResult<T> {
        let poisoned = self.poison.get();
        let data = self.inner.into_inner();
        if poisoned {
            Err(PoisonError::new(data))
        } else {
            Ok(data)
        }
    }
}

impl<T: ?Sized> Mutex<T> {
    /// Blocks until the mutex is acquired; `Err` (still holding the guard)
    /// if a holder panicked.
    #[track_caller]
    #[inline]
    pub fn lock(&self) -> LockResult<MutexGuard<'_, T>> {
        let inner = self.inner.lock();
        self.guard(inner)
    }

    /// Acquires the mutex if it is free: `WouldBlock` if it is held,
    /// `Poisoned` if it was free but a holder panicked.
    #[track_caller]
    #[inline]
    pub fn try_lock(&self) -> TryLockResult<MutexGuard<'_, T>> {
        match self.inner.try_lock() {
            Some(inner) => Ok(self.guard(inner)?),
            None => Err(TryLockError::WouldBlock),
        }
    }

    /// Whether a holder panicked (a momentary answer).
    #[inline]
    pub fn is_poisoned(&self) -> bool {
        self.poison.get()
    }

    /// Clears the poison flag.
    #[inline]
    pub fn clear_poison(&self) {
        self.poison.clear();
    }

    /// Mutable access without locking; `Err` if it is poisoned.
    pub fn get_mut(&mut self) -> LockResult<&mut T> {
        let poisoned = self.poison.get();
        let data = self.inner.get_mut();
        if poisoned {
            Err(PoisonError::new(data))
        } else {
            Ok(data)
        }
    }

    #[inline]
    fn guard<'a>(&'a self, inner: crate::MutexGuard<'a, T>) -> LockResult<MutexGuard<'a, T>> {
        map_result(self.poison.guard(), |state| MutexGuard {
            poison: &self.poison,
            state,
            inner,
        })
    }
}

impl<T> From<T> for Mutex<T> {
    #[track_caller]
    fn from(t: T) -> Self {
        Mutex::new(t)
    }
}

impl<T: Default> Default for Mutex<T> {
    #[track_caller]
    fn default() -> Self {
        Mutex::new(T::default())
    }
}

impl<T: ?Sized + fmt::Debug> fmt::Debug for Mutex<T> {
    /// std's format: `Mutex { data: .., poisoned: false, .. }`, with
    /// `"<locked>"` (quoted, as std prints it) for data held elsewhere.
    /// Looking does not count.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut d = f.debug_struct("Mutex");
        match self.inner.try_lock_unmetered(|data| {
            d.field("data", &data);
        }) {
            Some(()) => {}
            None => {
                d.field("data", &"<locked>");
            }
        }
        d.field("poisoned", &self.poison.get());
        d.finish_non_exhaustive()
    }
}

impl<T: ?Sized> Deref for MutexGuard<'_, T> {
    type Target = T;
    #[inline]
    fn deref(&self) -> &T {
        &self.inner
    }
}

impl<T: ?Sized> DerefMut for MutexGuard<'_, T> {
    #[inline]
    fn deref_mut(&mut self) -> &mut T {
        &mut self.inner
    }
}

impl<T: ?Sized> Drop for MutexGuard<'_, T> {
    /// Poisons (if panicking) while still holding; `inner` unlocks after.
    #[inline]
    fn drop(&mut self) {
        self.poison.done(&self.state);
    }
}

impl<T: ?Sized + fmt::Debug> fmt::Debug for MutexGuard<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&**self, f)
    }
}

impl<T: ?Sized + fmt::Display> fmt::Display for MutexGuard<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        (**self).fmt(f)
    }
}
