//! `std::sync::Mutex`'s API over a metered [`crate::Mutex`].

use std::fmt;
use std::marker::PhantomData;
use std::mem::ManuallyDrop;
use std::panic::{RefUnwindSafe, UnwindSafe};
use std::sync::{LockResult, TryLockResult};

use super::poison::{self, Poison};
use super::raw_mutex::StdRawMutex;
use super::stash::{stashed_guard, Stash};
use crate::mutex::{MeteredMutex, MeteredMutexGuard};

/// The metered mutex underneath: std's algorithm (`raw_mutex`).
type Metered<T> = MeteredMutex<StdRawMutex, T>;
/// Its guard.
pub(crate) type MeteredGuard<'a, T> = MeteredMutexGuard<'a, StdRawMutex, T>;

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
    /// The metered guard's parts while the mutex is held (see `stash`).
    held: Stash<<StdRawMutex as lock_api::RawMutex>::Guard>,
    inner: Metered<T>,
}

// SAFETY: `held` is only touched by the thread holding `inner`, whose
// acquire/release orders it between holders; the rest is `crate::Mutex`'s.
unsafe impl<T: ?Sized + Send> Send for Mutex<T> {}
// SAFETY: as above.
unsafe impl<T: ?Sized + Send> Sync for Mutex<T> {}

// Like std's: a panic while locked poisons the mutex, so observing it
// after a caught panic is reported rather than silently broken.
impl<T: ?Sized> UnwindSafe for Mutex<T> {}
impl<T: ?Sized> RefUnwindSafe for Mutex<T> {}

/// The guard of [`Mutex`]; unlocks (and poisons, if its thread is
/// panicking) when dropped. Not `Send`, as std's: the hold is recorded by
/// the acquiring thread.
#[must_use = "if unused the Mutex will immediately unlock"]
pub struct MutexGuard<'a, T: ?Sized + 'a> {
    lock: &'a Mutex<T>,
    /// Whether the hold in `lock.held` is untimed (not stored; see `stash`).
    untimed: bool,
    state: poison::Guard,
    _not_send: PhantomData<*const ()>,
}

// SAFETY: sharing the guard shares `&T` only.
unsafe impl<T: ?Sized + Sync> Sync for MutexGuard<'_, T> {}

impl<T> Mutex<T> {
    /// A new unlocked mutex; its class is the caller's location.
    #[track_caller]
    pub const fn new(t: T) -> Mutex<T> {
        Mutex {
            poison: poison::Flag::new(),
            held: Stash::new(),
            inner: Metered::new(t),
        }
    }

    /// A new unlocked mutex of the class `name` (not in std).
    #[track_caller]
    pub const fn named(name: &'static str, t: T) -> Mutex<T> {
        Mutex {
            poison: poison::Flag::new(),
            held: Stash::new(),
            inner: Metered::named(name, t),
        }
    }

    /// Consumes the mutex, returning the data; `Err` if it is poisoned.
    pub fn into_inner(self) -> LockResult<T> {
        self.poison.result(self.inner.into_inner())
    }
}

impl<T: ?Sized> Mutex<T> {
    acquire_fns! {
        /// Blocks until the mutex is acquired; `Err` (still holding the guard)
        /// if a holder panicked.
        lock,
        /// Acquires the mutex if it is free: `WouldBlock` if it is held,
        /// `Poisoned` if it was free but a holder panicked.
        try_lock -> MutexGuard via guard;
    }

    poison_api! {
        /// Whether a holder panicked (a momentary answer).
    }

    /// Wraps a fresh acquisition (its parts go into `held`).
    #[inline(always)]
    fn guard<'a>(&'a self, inner: MeteredGuard<'a, T>) -> LockResult<MutexGuard<'a, T>> {
        self.poison.result(MutexGuard::new(self, inner))
    }

    /// Where this mutex keeps its poison: its own flag (parking_lot's raw
    /// lock has none).
    #[inline(always)]
    fn poison(&self) -> &poison::Flag {
        &self.poison
    }
}

impl<'a, T: ?Sized> MutexGuard<'a, T> {
    #[inline(always)]
    fn new(lock: &'a Mutex<T>, inner: MeteredGuard<'a, T>) -> Self {
        let parts = MeteredGuard::into_raw_parts(inner);
        // SAFETY: we hold the lock, and only its holder touches `held`.
        let untimed = unsafe { lock.held.put(parts) };
        MutexGuard {
            lock,
            untimed,
            state: poison::Guard::new(),
            _not_send: PhantomData,
        }
    }

    /// The metered guard, rebuilt from `held`, for `f`, which may unlock
    /// and relock through it (the condition variable); its parts go back
    /// into `held` afterwards, also if `f` unwinds.
    pub(crate) fn with_inner<U>(&mut self, f: impl FnOnce(&mut MeteredGuard<'a, T>) -> U) -> U {
        /// Puts the parts back on every way out.
        struct Restore<'a, 'g, T: ?Sized> {
            lock: &'a Mutex<T>,
            /// The guard's flag: the relock in `f` may time a hold that
            /// was untimed, or the other way round.
            untimed: &'g mut bool,
            inner: ManuallyDrop<MeteredGuard<'a, T>>,
        }
        impl<T: ?Sized> Drop for Restore<'_, '_, T> {
            fn drop(&mut self) {
                // SAFETY: taken once, here.
                let inner = unsafe { ManuallyDrop::take(&mut self.inner) };
                let parts = MeteredGuard::into_raw_parts(inner);
                // SAFETY: the lock is held (the guard is valid again after
                // `f`, as a `&mut` guard must be), and only its holder
                // touches `held`.
                *self.untimed = unsafe { self.lock.held.put(parts) };
            }
        }
        // SAFETY: this guard holds the lock, so `held` has its parts,
        // written by `new` or by the last `Restore` (which also set
        // `untimed`); read out once here.
        let (raw, hold) = unsafe { self.lock.held.take(self.untimed) };
        // SAFETY: the parts of the held acquisition, and now its only copy.
        let inner = unsafe { self.lock.inner.guard_from_parts(raw, hold) };
        let mut restore = Restore {
            lock: self.lock,
            untimed: &mut self.untimed,
            inner: ManuallyDrop::new(inner),
        };
        f(&mut restore.inner)
    }

    /// The poison flag of the guard's mutex.
    pub(crate) fn poison(&self) -> &'a poison::Flag {
        &self.lock.poison
    }

    /// Poisons the mutex if the thread began panicking since it locked.
    #[inline(always)]
    fn poison_if_panicking(&self) {
        self.lock.poison.done(&self.state);
    }
}

from_and_default!([] Mutex<T> => t);

impl<T: ?Sized + fmt::Debug> fmt::Debug for Mutex<T> {
    /// std's format: `Mutex { data: .., poisoned: false, .. }`, with
    /// `"<locked>"` (quoted, as std prints it) for data held elsewhere.
    /// Looking does not count.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        poison::fmt_lock(f, "Mutex", self.poison.get(), &"<locked>", |show| {
            self.inner.try_lock_unmetered(show)
        })
    }
}

stashed_guard!(MutexGuard, Mutex, guard_from_parts);

fmt_as_data!([] MutexGuard<'_, T>);
