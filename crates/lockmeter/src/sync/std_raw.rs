//! std's own reader-writer lock as a `lock_api` raw lock: what
//! [`super::RwLock`] is metered over, so that the drop-in for
//! `std::sync::RwLock` costs what std's lock costs.
//!
//! Over parking_lot's raw lock instead, `sync::RwLock` reads cost 6-13 %
//! more than std's unobserved: the bench's floor row (parking_lot's read
//! against std's) reads the same (`docs/performance.md`, "Session 20").
//!
//! std has no raw lock, so each acquisition keeps std's own guard as the
//! raw guard state, its lifetime extended to `'static`. Sound because that
//! state never outlives the lock: it lives in a guard of the
//! `MeteredRwLock` that owns this raw lock (which borrows it) or in that
//! lock's own write stash (`sync::stash`), and the raw lock is private to
//! [`super::RwLock`]. (Keeping the writer's guard inside the raw lock
//! instead, to make the exclusive state zero-sized as parking_lot's is,
//! measured no faster observed and 2-5 % slower unobserved.)
//!
//! std's own poisoning is not reported here (a raw lock cannot):
//! [`super::RwLock`] reads std's flag after every acquisition
//! (`sync::poison`).

use std::sync::{PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard, TryLockError};

/// `std::sync::RwLock<()>` behind `lock_api::RawRwLock`.
pub(crate) struct StdRawRwLock {
    lock: RwLock<()>,
}

/// The state of one shared acquisition: std's guard.
type Shared = RwLockReadGuard<'static, ()>;
/// The state of one exclusive acquisition: std's guard.
type Exclusive = RwLockWriteGuard<'static, ()>;

impl StdRawRwLock {
    /// `g`, as the raw guard state.
    ///
    /// # Safety
    /// The state must be dropped before `self` is (see the module's doc).
    #[inline(always)]
    unsafe fn shared(&self, g: RwLockReadGuard<'_, ()>) -> Shared {
        // SAFETY: only the lifetime changes; the caller's promise keeps
        // the guard within the lock's life.
        unsafe { std::mem::transmute::<RwLockReadGuard<'_, ()>, Shared>(g) }
    }

    /// As [`StdRawRwLock::shared`], for an exclusive acquisition.
    ///
    /// # Safety
    /// As for [`StdRawRwLock::shared`].
    #[inline(always)]
    unsafe fn exclusive(&self, g: RwLockWriteGuard<'_, ()>) -> Exclusive {
        // SAFETY: as in `shared`.
        unsafe { std::mem::transmute::<RwLockWriteGuard<'_, ()>, Exclusive>(g) }
    }
}

/// std's own poison: set by std's write guard when it drops while its
/// thread panics (and was not panicking when it locked), std's rule.
/// `sync::RwLock` reports it as its own.
impl super::poison::Poison for StdRawRwLock {
    #[inline(always)]
    fn get(&self) -> bool {
        self.lock.is_poisoned()
    }

    fn clear(&self) {
        self.lock.clear_poison();
    }
}

/// std's `try_` result as an `Option`, poison ignored (see the module's doc).
#[inline(always)]
fn attempted<G>(r: Result<G, TryLockError<G>>) -> Option<G> {
    match r {
        Ok(g) => Some(g),
        Err(TryLockError::Poisoned(p)) => Some(p.into_inner()),
        Err(TryLockError::WouldBlock) => None,
    }
}

// SAFETY: std's lock is exclusive: no write lock while any lock is held,
// and no read lock while a write lock is held. Each guard state unlocks
// exactly its own acquisition when dropped.
unsafe impl lock_api::RawRwLock for StdRawRwLock {
    #[allow(clippy::declare_interior_mutable_const)]
    const INIT: Self = StdRawRwLock {
        lock: RwLock::new(()),
    };
    type SharedGuard = Shared;
    type ExclusiveGuard = Exclusive;

    #[inline]
    fn lock_shared(&self) -> Shared {
        let g = self.lock.read().unwrap_or_else(PoisonError::into_inner);
        // SAFETY: the state stays within the lock's life (module doc).
        unsafe { self.shared(g) }
    }

    #[inline]
    fn try_lock_shared(&self) -> Option<Shared> {
        // SAFETY: as in `lock_shared`.
        attempted(self.lock.try_read()).map(|g| unsafe { self.shared(g) })
    }

    #[inline]
    unsafe fn unlock_shared(&self, guard: Shared) {
        drop(guard);
    }

    #[inline]
    fn lock_exclusive(&self) -> Exclusive {
        let g = self.lock.write().unwrap_or_else(PoisonError::into_inner);
        // SAFETY: as in `lock_shared`.
        unsafe { self.exclusive(g) }
    }

    #[inline]
    fn try_lock_exclusive(&self) -> Option<Exclusive> {
        // SAFETY: as in `lock_shared`.
        attempted(self.lock.try_write()).map(|g| unsafe { self.exclusive(g) })
    }

    #[inline]
    unsafe fn unlock_exclusive(&self, guard: Exclusive) {
        drop(guard);
    }

    /// std cannot say without trying: a write attempt, released at once
    /// (never called by [`super::RwLock`], whose API has no `is_locked`).
    fn is_locked(&self) -> bool {
        matches!(self.lock.try_write(), Err(TryLockError::WouldBlock))
    }

    /// As [`Self::is_locked`], with a read attempt (std refuses one while
    /// a writer waits, too).
    fn is_locked_exclusive(&self) -> bool {
        matches!(self.lock.try_read(), Err(TryLockError::WouldBlock))
    }
}
