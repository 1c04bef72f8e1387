//! Recursive read locking, which lock_api 0.5 has no trait for.
//!
//! parking_lot 0.12 offered `read_recursive` on every `RwLock`. parking_lot
//! 0.13 made recursion a property of the raw type (`RawRwLock<true>`), with
//! the same state word and the same parking keys: only the test that
//! admits a new reader differs. A recursive read on a `RawRwLock<false>` is
//! therefore that lock seen as a `RawRwLock<true>` for one acquisition,
//! which is exactly what 0.12's `lock_shared_recursive` did.

use std::time::{Duration, Instant};

use lock_api::{RawRwLock, RawRwLockTimed};

/// A raw reader-writer lock that can admit a reader while a writer waits,
/// so that a thread already reading cannot deadlock by reading again.
///
/// # Safety
/// The guards returned must be shared guards of `self` that
/// `RawRwLock::unlock_shared` accepts.
pub unsafe trait RawRwLockRecursive: RawRwLock {
    /// Acquires a shared lock without queueing behind waiting writers.
    fn lock_shared_recursive(&self) -> Self::SharedGuard;
    /// [`lock_shared_recursive`](Self::lock_shared_recursive) if possible now.
    fn try_lock_shared_recursive(&self) -> Option<Self::SharedGuard>;
}

/// [`RawRwLockRecursive`] with timeouts.
///
/// # Safety
/// As for [`RawRwLockRecursive`].
pub unsafe trait RawRwLockRecursiveTimed: RawRwLockRecursive + RawRwLockTimed {
    /// Recursive shared access, giving up after `timeout`.
    fn try_lock_shared_recursive_for(&self, timeout: Self::Duration) -> Option<Self::SharedGuard>;
    /// Recursive shared access, giving up at `deadline`.
    fn try_lock_shared_recursive_until(&self, deadline: Self::Instant)
        -> Option<Self::SharedGuard>;
}

type Recursive = parking_lot::RawRwLock<true>;

/// The lock seen with the recursive admission rule.
#[inline]
fn recursive<const R: bool>(lock: &parking_lot::RawRwLock<R>) -> &Recursive {
    const {
        assert!(size_of::<parking_lot::RawRwLock<false>>() == size_of::<Recursive>());
        assert!(align_of::<parking_lot::RawRwLock<false>>() == align_of::<Recursive>());
    }
    // SAFETY: both instantiations are one `AtomicUsize` state word (a
    // single-field struct as large as its field has it at offset 0; the
    // asserts above check size and alignment agree), with the same meaning
    // of every bit and the same parking keys (the lock's address). The
    // const parameter only selects the admission test of new readers,
    // which every other operation tolerates either way: 0.12 mixed
    // recursive and plain reads on one lock.
    unsafe { &*(lock as *const parking_lot::RawRwLock<R>).cast::<Recursive>() }
}

// SAFETY: the guards are shared guards of the same state word.
unsafe impl<const R: bool> RawRwLockRecursive for parking_lot::RawRwLock<R> {
    #[inline]
    fn lock_shared_recursive(&self) -> Self::SharedGuard {
        recursive(self).lock_shared()
    }

    #[inline]
    fn try_lock_shared_recursive(&self) -> Option<Self::SharedGuard> {
        recursive(self).try_lock_shared()
    }
}

// SAFETY: as above.
unsafe impl<const R: bool> RawRwLockRecursiveTimed for parking_lot::RawRwLock<R> {
    fn try_lock_shared_recursive_for(&self, timeout: Duration) -> Option<Self::SharedGuard> {
        recursive(self).try_lock_shared_for(timeout)
    }

    fn try_lock_shared_recursive_until(&self, deadline: Instant) -> Option<Self::SharedGuard> {
        recursive(self).try_lock_shared_until(deadline)
    }
}
