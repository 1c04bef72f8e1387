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

/// The parts of the one exclusive hold of a lock, or nothing.
pub(super) struct Stash<G>(UnsafeCell<MaybeUninit<(G, Hold)>>);

impl<G> Stash<G> {
    pub(super) const fn new() -> Stash<G> {
        Stash(UnsafeCell::new(MaybeUninit::uninit()))
    }

    /// Stores the parts of a fresh exclusive acquisition (the hold through
    /// [`Hold::stash`], which writes only its tag when unobserved).
    ///
    /// # Safety
    /// The caller holds the lock exclusively; only the holder touches the
    /// stash, and the lock's acquire/release orders it between holders.
    #[inline(always)]
    pub(super) unsafe fn put(&self, (raw, hold): (G, Hold)) {
        let p = self.0.get().cast::<(G, Hold)>();
        // SAFETY: valid for writes, by the caller's promise; `MaybeUninit`
        // has its content's layout.
        unsafe {
            std::ptr::addr_of_mut!((*p).0).write(raw);
            hold.stash(std::ptr::addr_of_mut!((*p).1));
        }
    }

    /// Takes back what [`Stash::put`] stored.
    ///
    /// # Safety
    /// The caller holds the lock exclusively, and `put` stored parts since
    /// they were last taken.
    #[inline(always)]
    pub(super) unsafe fn take(&self) -> (G, Hold) {
        let p = self.0.get().cast::<(G, Hold)>();
        // SAFETY: the caller's promise: `put` wrote both parts.
        unsafe {
            (
                std::ptr::addr_of!((*p).0).read(),
                Hold::unstash(std::ptr::addr_of!((*p).1)),
            )
        }
    }
}

/// `Deref`, `DerefMut` and `Drop` of a std drop-in's exclusive guard,
/// whose parts wait in the lock's `held` stash: the same for `Mutex` and
/// `RwLock` writes but for the method that rebuilds the metered guard
/// (`$rebuild`) to end the hold.
macro_rules! stashed_guard {
    ($guard:ident, $rebuild:ident) => {
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
            /// records the hold through the metered guard.
            #[inline(always)]
            fn drop(&mut self) {
                self.lock.poison.done(&self.state);
                // SAFETY: this guard holds the lock, so `held` has its
                // parts; taken once, as the guard ends.
                let (raw, hold) = unsafe { self.lock.held.take() };
                // SAFETY: the parts of the held acquisition, and its only copy.
                drop(unsafe { self.lock.inner.$rebuild(raw, hold) });
            }
        }
    };
}
pub(super) use stashed_guard;
