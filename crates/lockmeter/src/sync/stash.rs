//! Where the std drop-ins keep an exclusive hold's parts while the lock is
//! held: beside the lock, not in the guard.
//!
//! std's guards are two words, and `.lock().unwrap()` moves one through a
//! `LockResult`. A metered guard carries the raw lock's state and a
//! [`Hold`] (seven words): inside the `LockResult` it was copied through
//! the stack on every acquisition (`sync::Mutex` 1.7x std unobserved,
//! `sync::RwLock` writes 1.9x). An exclusive lock has one holder at a
//! time, so its parts can wait in the lock instead, and the guard stays
//! two words. Shared guards (reads) cannot do this and stay whole.

use std::cell::UnsafeCell;
use std::mem::MaybeUninit;

use crate::meter::Hold;

/// The parts of the one exclusive hold of a lock, or nothing. The raw
/// lock's guard state is always kept (a zero-sized marker for parking_lot's
/// locks); the [`Hold`] only when it records something. The guard keeps
/// whether it does ([`Stash::put`]'s answer): unobserved, that is known
/// where the guard is built, so an inlined lock and drop store and load
/// nothing here and the release folds to the bare unlock (callgrind,
/// unobserved `sync::Mutex`: 41 -> 37 instructions, std's 23).
pub(super) struct Stash<G>(UnsafeCell<MaybeUninit<(G, Hold)>>);

impl<G> Stash<G> {
    pub(super) const fn new() -> Stash<G> {
        Stash(UnsafeCell::new(MaybeUninit::uninit()))
    }

    /// Stores the parts of a fresh exclusive acquisition; returns whether
    /// the hold is untimed (then it is not stored: give the answer back
    /// to [`Stash::take`]).
    ///
    /// # Safety
    /// The caller holds the lock exclusively; only the holder touches the
    /// stash, and the lock's acquire/release orders it between holders.
    #[inline(always)]
    #[must_use]
    pub(super) unsafe fn put(&self, (raw, hold): (G, Hold)) -> bool {
        let p = self.0.get().cast::<(G, Hold)>();
        let untimed = hold.is_untimed();
        // SAFETY: valid for writes, by the caller's promise; `MaybeUninit`
        // has its content's layout.
        unsafe {
            std::ptr::addr_of_mut!((*p).0).write(raw);
            if !untimed {
                std::ptr::addr_of_mut!((*p).1).write(hold);
            }
        }
        untimed
    }

    /// Takes back what [`Stash::put`] stored; `untimed` is what it answered.
    ///
    /// # Safety
    /// The caller holds the lock exclusively, `put` stored parts since
    /// they were last taken, and `untimed` is its answer.
    #[inline(always)]
    pub(super) unsafe fn take(&self, untimed: bool) -> (G, Hold) {
        let p = self.0.get().cast::<(G, Hold)>();
        // SAFETY: the caller's promise: `put` wrote the raw state, and the
        // hold unless it was untimed.
        unsafe {
            let raw = std::ptr::addr_of!((*p).0).read();
            let hold = match untimed {
                true => Hold::none(),
                false => std::ptr::addr_of!((*p).1).read(),
            };
            (raw, hold)
        }
    }
}

/// `Deref`, `DerefMut` and `Drop` of a std drop-in's exclusive guard,
/// whose parts wait in the lock's `held` stash (`untimed`: what
/// [`Stash::put`] answered): the same for `Mutex` and `RwLock` writes but
/// for the method that rebuilds the metered guard (`$rebuild`) to end the
/// hold, and the guard's own `poison_if_panicking`, which the drop calls
/// first, still holding.
macro_rules! stashed_guard {
    ($guard:ident, $lock:ident, $rebuild:ident) => {
        impl<T: ?Sized> std::ops::Deref for $guard<'_, T> {
            type Target = T;
            #[inline]
            fn deref(&self) -> &T {
                // SAFETY: the guard proves the lock is held exclusively.
                unsafe { &*self.lock.inner.data_ptr() }
            }
        }

        impl<T: ?Sized> std::ops::DerefMut for $guard<'_, T> {
            #[inline]
            fn deref_mut(&mut self) -> &mut T {
                // SAFETY: as in `deref`, and `&mut self` is the only access.
                unsafe { &mut *self.lock.inner.data_ptr() }
            }
        }

        impl<T: ?Sized> Drop for $guard<'_, T> {
            /// Poisons (if panicking) while still holding, then unlocks and
            /// records the hold through the metered guard. An untimed hold
            /// is rebuilt as the constant `Hold::none` inline (the
            /// release folds to the bare unlock); a timed one is read back
            /// out of line, which keeps this drop small enough to inline.
            #[inline(always)]
            fn drop(&mut self) {
                self.poison_if_panicking();
                match self.untimed {
                    // SAFETY: this guard holds the lock, so `held` has its
                    // parts (the raw state alone); taken once, as the
                    // guard ends.
                    true => unsafe { Self::release_stashed(self.lock, true) },
                    // SAFETY: as above, with the hold stored too.
                    false => unsafe { Self::release_stashed_timed(self.lock) },
                }
            }
        }

        impl<'a, T: ?Sized> $guard<'a, T> {
            /// Takes the parts out of `lock.held` and ends the hold. Given
            /// the lock, not the guard, so that the guard's address is
            /// never taken and it stays in registers.
            ///
            /// # Safety
            /// Once, as the guard ends; `untimed` is the guard's flag.
            #[inline(always)]
            unsafe fn release_stashed(lock: &'a $lock<T>, untimed: bool) {
                // SAFETY: the caller's promise.
                let (raw, hold) = unsafe { lock.held.take(untimed) };
                // SAFETY: the parts of the held acquisition, and its only copy.
                drop(unsafe { lock.inner.$rebuild(raw, hold) });
            }

            /// [`Self::release_stashed`] of a timed hold.
            ///
            /// # Safety
            /// As for [`Self::release_stashed`].
            #[inline(never)]
            unsafe fn release_stashed_timed(lock: &'a $lock<T>) {
                // SAFETY: the caller's promise.
                unsafe { Self::release_stashed(lock, false) }
            }
        }
    };
}
pub(super) use stashed_guard;
