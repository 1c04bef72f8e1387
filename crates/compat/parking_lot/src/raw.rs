//! parking_lot 0.12's raw lock types, under both `lock_api` trait families.
//!
//! Each is a newtype over parking_lot 0.13's raw lock of the same name.
//! It implements lock_api **0.4**'s traits (the ones parking_lot 0.12
//! dependents name as `parking_lot::lock_api::RawMutex` and call as
//! `raw.lock(); raw.unlock()`) and lock_api **0.5**'s (the ones
//! lockmeter's metered types are generic over). 0.5's guard state for these
//! locks is a zero-sized marker, so the 0.4 side, which keeps no state,
//! makes one up when it unlocks.
//!
//! Raw locks are not metered: only the locks built on them are (see the
//! crate docs).

use std::num::NonZeroUsize;
use std::time::{Duration, Instant};

use lock_api04 as v4;
use lock_api05 as v5;
use lockmeter::{RawRwLockRecursive as _, RawRwLockRecursiveTimed as _};
use parking_lot013 as pl;
// 0.5's methods on the 0.13 locks inside.
use v5::{
    RawMutex as _, RawMutexFair as _, RawMutexTimed as _, RawRwLock as _, RawRwLockDowngrade as _,
    RawRwLockFair as _, RawRwLockTimed as _, RawRwLockUpgrade as _, RawRwLockUpgradeDowngrade as _,
    RawRwLockUpgradeFair as _, RawRwLockUpgradeTimed as _,
};

/// The 0.13 lock's (zero-sized) guard state, made up for a 0.4-style
/// unlock, which has none to pass.
fn state<G: Default>() -> G {
    G::default()
}

/// Raw mutex type backed by the parking lot (parking_lot 0.12's `RawMutex`).
pub struct RawMutex(pl::RawMutex);

/// Raw fair mutex type backed by the parking lot: every unlock is fair.
pub struct RawFairMutex(pl::RawFairMutex);

/// Raw reader-writer lock type backed by the parking lot.
pub struct RawRwLock(pl::RawRwLock);

/// Implementation of the `GetThreadId` trait for `lock_api::ReentrantMutex`.
pub struct RawThreadId;

macro_rules! raw_mutex {
    ($ty:ident) => {
        // SAFETY: forwards to parking_lot 0.13's lock of the same kind,
        // which upholds 0.5's contract; the guard state is a marker.
        unsafe impl v5::RawMutex for $ty {
            #[allow(clippy::declare_interior_mutable_const)]
            const INIT: Self = $ty(<pl::$ty as v5::RawMutex>::INIT);
            type Guard = <pl::$ty as v5::RawMutex>::Guard;
            #[inline]
            fn lock(&self) -> Self::Guard {
                self.0.lock()
            }
            #[inline]
            fn try_lock(&self) -> Option<Self::Guard> {
                self.0.try_lock()
            }
            #[inline]
            unsafe fn unlock(&self, guard: Self::Guard) {
                // SAFETY: the caller's contract is ours.
                unsafe { self.0.unlock(guard) }
            }
            #[inline]
            fn is_locked(&self) -> bool {
                self.0.is_locked()
            }
        }

        // SAFETY: as above.
        unsafe impl v5::RawMutexFair for $ty {
            #[inline]
            unsafe fn unlock_fair(&self, guard: Self::Guard) {
                // SAFETY: the caller's contract is ours.
                unsafe { self.0.unlock_fair(guard) }
            }
            #[inline]
            unsafe fn bump(&self, guard: &mut Self::Guard) {
                // SAFETY: the caller's contract is ours.
                unsafe { self.0.bump(guard) }
            }
        }

        // SAFETY: as above.
        unsafe impl v5::RawMutexTimed for $ty {
            type Duration = Duration;
            type Instant = Instant;
            #[inline]
            fn try_lock_for(&self, timeout: Duration) -> Option<Self::Guard> {
                self.0.try_lock_for(timeout)
            }
            #[inline]
            fn try_lock_until(&self, deadline: Instant) -> Option<Self::Guard> {
                self.0.try_lock_until(deadline)
            }
        }

        // SAFETY: the same lock under 0.4's stateless signatures; unlock is
        // only called by a holder, as 0.4 requires.
        unsafe impl v4::RawMutex for $ty {
            #[allow(clippy::declare_interior_mutable_const)]
            const INIT: Self = <$ty as v5::RawMutex>::INIT;
            type GuardMarker = v4::GuardNoSend;
            #[inline]
            fn lock(&self) {
                keep(self.0.lock());
            }
            #[inline]
            fn try_lock(&self) -> bool {
                kept(self.0.try_lock())
            }
            #[inline]
            unsafe fn unlock(&self) {
                // SAFETY: the caller holds the lock (0.4's contract).
                unsafe { self.0.unlock(state()) }
            }
            #[inline]
            fn is_locked(&self) -> bool {
                self.0.is_locked()
            }
        }

        // SAFETY: as above.
        unsafe impl v4::RawMutexFair for $ty {
            #[inline]
            unsafe fn unlock_fair(&self) {
                // SAFETY: the caller holds the lock.
                unsafe { self.0.unlock_fair(state()) }
            }
            #[inline]
            unsafe fn bump(&self) {
                let mut g = state();
                // SAFETY: the caller holds the lock; it still does after.
                unsafe { self.0.bump(&mut g) };
                keep(g);
            }
        }

        // SAFETY: as above.
        unsafe impl v4::RawMutexTimed for $ty {
            type Duration = Duration;
            type Instant = Instant;
            #[inline]
            fn try_lock_for(&self, timeout: Duration) -> bool {
                kept(self.0.try_lock_for(timeout))
            }
            #[inline]
            fn try_lock_until(&self, deadline: Instant) -> bool {
                kept(self.0.try_lock_until(deadline))
            }
        }
    };
}

raw_mutex!(RawMutex);
raw_mutex!(RawFairMutex);

type Shared = <pl::RawRwLock as v5::RawRwLock>::SharedGuard;
type Exclusive = <pl::RawRwLock as v5::RawRwLock>::ExclusiveGuard;
type Upgradable = <pl::RawRwLock as v5::RawRwLockUpgrade>::UpgradableGuard;

// SAFETY: forwards to parking_lot 0.13's `RawRwLock`.
unsafe impl v5::RawRwLock for RawRwLock {
    #[allow(clippy::declare_interior_mutable_const)]
    const INIT: Self = RawRwLock(<pl::RawRwLock as v5::RawRwLock>::INIT);
    type SharedGuard = Shared;
    type ExclusiveGuard = Exclusive;
    #[inline]
    fn lock_shared(&self) -> Shared {
        self.0.lock_shared()
    }
    #[inline]
    fn try_lock_shared(&self) -> Option<Shared> {
        self.0.try_lock_shared()
    }
    #[inline]
    unsafe fn unlock_shared(&self, guard: Shared) {
        // SAFETY: the caller's contract is ours.
        unsafe { self.0.unlock_shared(guard) }
    }
    #[inline]
    fn lock_exclusive(&self) -> Exclusive {
        self.0.lock_exclusive()
    }
    #[inline]
    fn try_lock_exclusive(&self) -> Option<Exclusive> {
        self.0.try_lock_exclusive()
    }
    #[inline]
    unsafe fn unlock_exclusive(&self, guard: Exclusive) {
        // SAFETY: the caller's contract is ours.
        unsafe { self.0.unlock_exclusive(guard) }
    }
    #[inline]
    fn is_locked(&self) -> bool {
        self.0.is_locked()
    }
    #[inline]
    fn is_locked_exclusive(&self) -> bool {
        self.0.is_locked_exclusive()
    }
}

// SAFETY: forwards.
unsafe impl v5::RawRwLockFair for RawRwLock {
    #[inline]
    unsafe fn unlock_shared_fair(&self, guard: Shared) {
        // SAFETY: the caller's contract is ours.
        unsafe { self.0.unlock_shared_fair(guard) }
    }
    #[inline]
    unsafe fn unlock_exclusive_fair(&self, guard: Exclusive) {
        // SAFETY: the caller's contract is ours.
        unsafe { self.0.unlock_exclusive_fair(guard) }
    }
    #[inline]
    unsafe fn bump_shared(&self, guard: &mut Shared) {
        // SAFETY: the caller's contract is ours.
        unsafe { self.0.bump_shared(guard) }
    }
    #[inline]
    unsafe fn bump_exclusive(&self, guard: &mut Exclusive) {
        // SAFETY: the caller's contract is ours.
        unsafe { self.0.bump_exclusive(guard) }
    }
}

// SAFETY: forwards.
unsafe impl v5::RawRwLockDowngrade for RawRwLock {
    #[inline]
    unsafe fn downgrade(&self, guard: Exclusive) -> Shared {
        // SAFETY: the caller's contract is ours.
        unsafe { self.0.downgrade(guard) }
    }
}

// SAFETY: forwards.
unsafe impl v5::RawRwLockTimed for RawRwLock {
    type Duration = Duration;
    type Instant = Instant;
    #[inline]
    fn try_lock_shared_for(&self, timeout: Duration) -> Option<Shared> {
        self.0.try_lock_shared_for(timeout)
    }
    #[inline]
    fn try_lock_shared_until(&self, deadline: Instant) -> Option<Shared> {
        self.0.try_lock_shared_until(deadline)
    }
    #[inline]
    fn try_lock_exclusive_for(&self, timeout: Duration) -> Option<Exclusive> {
        self.0.try_lock_exclusive_for(timeout)
    }
    #[inline]
    fn try_lock_exclusive_until(&self, deadline: Instant) -> Option<Exclusive> {
        self.0.try_lock_exclusive_until(deadline)
    }
}

// SAFETY: forwards.
unsafe impl v5::RawRwLockUpgrade for RawRwLock {
    type UpgradableGuard = Upgradable;
    #[inline]
    fn lock_upgradable(&self) -> Upgradable {
        self.0.lock_upgradable()
    }
    #[inline]
    fn try_lock_upgradable(&self) -> Option<Upgradable> {
        self.0.try_lock_upgradable()
    }
    #[inline]
    unsafe fn unlock_upgradable(&self, guard: Upgradable) {
        // SAFETY: the caller's contract is ours.
        unsafe { self.0.unlock_upgradable(guard) }
    }
    #[inline]
    unsafe fn upgrade(&self, guard: Upgradable) -> Exclusive {
        // SAFETY: the caller's contract is ours.
        unsafe { self.0.upgrade(guard) }
    }
    #[inline]
    unsafe fn try_upgrade(&self, guard: Upgradable) -> Result<Exclusive, Upgradable> {
        // SAFETY: the caller's contract is ours.
        unsafe { self.0.try_upgrade(guard) }
    }
}

// SAFETY: forwards.
unsafe impl v5::RawRwLockUpgradeFair for RawRwLock {
    #[inline]
    unsafe fn unlock_upgradable_fair(&self, guard: Upgradable) {
        // SAFETY: the caller's contract is ours.
        unsafe { self.0.unlock_upgradable_fair(guard) }
    }
    #[inline]
    unsafe fn bump_upgradable(&self, guard: &mut Upgradable) {
        // SAFETY: the caller's contract is ours.
        unsafe { self.0.bump_upgradable(guard) }
    }
}

// SAFETY: forwards.
unsafe impl v5::RawRwLockUpgradeDowngrade for RawRwLock {
    #[inline]
    unsafe fn downgrade_upgradable(&self, guard: Upgradable) -> Shared {
        // SAFETY: the caller's contract is ours.
        unsafe { self.0.downgrade_upgradable(guard) }
    }
    #[inline]
    unsafe fn downgrade_to_upgradable(&self, guard: Exclusive) -> Upgradable {
        // SAFETY: the caller's contract is ours.
        unsafe { self.0.downgrade_to_upgradable(guard) }
    }
}

// SAFETY: forwards.
unsafe impl v5::RawRwLockUpgradeTimed for RawRwLock {
    #[inline]
    fn try_lock_upgradable_for(&self, timeout: Duration) -> Option<Upgradable> {
        self.0.try_lock_upgradable_for(timeout)
    }
    #[inline]
    fn try_lock_upgradable_until(&self, deadline: Instant) -> Option<Upgradable> {
        self.0.try_lock_upgradable_until(deadline)
    }
    #[inline]
    unsafe fn try_upgrade_for(
        &self,
        guard: Upgradable,
        timeout: Duration,
    ) -> Result<Exclusive, Upgradable> {
        // SAFETY: the caller's contract is ours.
        unsafe { self.0.try_upgrade_for(guard, timeout) }
    }
    #[inline]
    unsafe fn try_upgrade_until(
        &self,
        guard: Upgradable,
        deadline: Instant,
    ) -> Result<Exclusive, Upgradable> {
        // SAFETY: the caller's contract is ours.
        unsafe { self.0.try_upgrade_until(guard, deadline) }
    }
}

/// Drops a 0.5 lock's guard state without unlocking (0.4 keeps none; the
/// state is a marker, so nothing is lost).
#[inline]
fn keep<G>(guard: G) {
    std::mem::forget(guard);
}

/// Whether a 0.5 try-operation succeeded, keeping the lock on success.
#[inline]
fn kept<G>(guard: Option<G>) -> bool {
    guard.map(keep).is_some()
}

/// `Ok` from a 0.5 try-upgrade, forgetting either side's state.
#[inline]
fn upgraded<A, B>(r: Result<A, B>) -> bool {
    match r {
        Ok(a) => {
            keep(a);
            true
        }
        Err(b) => {
            keep(b);
            false
        }
    }
}

// SAFETY: the same lock under 0.4's stateless signatures; every unlock,
// downgrade or upgrade is only called by a holder of the matching mode, as
// 0.4 requires, so the made-up state is the holder's.
unsafe impl v4::RawRwLock for RawRwLock {
    #[allow(clippy::declare_interior_mutable_const)]
    const INIT: Self = <RawRwLock as v5::RawRwLock>::INIT;
    type GuardMarker = v4::GuardNoSend;
    #[inline]
    fn lock_shared(&self) {
        keep(self.0.lock_shared());
    }
    #[inline]
    fn try_lock_shared(&self) -> bool {
        kept(self.0.try_lock_shared())
    }
    #[inline]
    unsafe fn unlock_shared(&self) {
        // SAFETY: the caller holds a shared lock.
        unsafe { self.0.unlock_shared(state()) }
    }
    #[inline]
    fn lock_exclusive(&self) {
        keep(self.0.lock_exclusive());
    }
    #[inline]
    fn try_lock_exclusive(&self) -> bool {
        kept(self.0.try_lock_exclusive())
    }
    #[inline]
    unsafe fn unlock_exclusive(&self) {
        // SAFETY: the caller holds the exclusive lock.
        unsafe { self.0.unlock_exclusive(state()) }
    }
    #[inline]
    fn is_locked(&self) -> bool {
        self.0.is_locked()
    }
    #[inline]
    fn is_locked_exclusive(&self) -> bool {
        self.0.is_locked_exclusive()
    }
}

// SAFETY: as above.
unsafe impl v4::RawRwLockFair for RawRwLock {
    #[inline]
    unsafe fn unlock_shared_fair(&self) {
        // SAFETY: the caller holds a shared lock.
        unsafe { self.0.unlock_shared_fair(state()) }
    }
    #[inline]
    unsafe fn unlock_exclusive_fair(&self) {
        // SAFETY: the caller holds the exclusive lock.
        unsafe { self.0.unlock_exclusive_fair(state()) }
    }
    #[inline]
    unsafe fn bump_shared(&self) {
        let mut g = state();
        // SAFETY: the caller holds a shared lock; it still does after.
        unsafe { self.0.bump_shared(&mut g) };
        keep(g);
    }
    #[inline]
    unsafe fn bump_exclusive(&self) {
        let mut g = state();
        // SAFETY: the caller holds the exclusive lock; it still does after.
        unsafe { self.0.bump_exclusive(&mut g) };
        keep(g);
    }
}

// SAFETY: as above.
unsafe impl v4::RawRwLockDowngrade for RawRwLock {
    #[inline]
    unsafe fn downgrade(&self) {
        // SAFETY: the caller holds the exclusive lock.
        keep(unsafe { self.0.downgrade(state()) });
    }
}

// SAFETY: as above.
unsafe impl v4::RawRwLockTimed for RawRwLock {
    type Duration = Duration;
    type Instant = Instant;
    #[inline]
    fn try_lock_shared_for(&self, timeout: Duration) -> bool {
        kept(self.0.try_lock_shared_for(timeout))
    }
    #[inline]
    fn try_lock_shared_until(&self, deadline: Instant) -> bool {
        kept(self.0.try_lock_shared_until(deadline))
    }
    #[inline]
    fn try_lock_exclusive_for(&self, timeout: Duration) -> bool {
        kept(self.0.try_lock_exclusive_for(timeout))
    }
    #[inline]
    fn try_lock_exclusive_until(&self, deadline: Instant) -> bool {
        kept(self.0.try_lock_exclusive_until(deadline))
    }
}

// SAFETY: forwards to lockmeter's recursive admission on the 0.13 lock
// (lockmeter's `RawRwLockRecursive` says why that is 0.12's behaviour).
unsafe impl lockmeter::RawRwLockRecursive for RawRwLock {
    #[inline]
    fn lock_shared_recursive(&self) -> Shared {
        self.0.lock_shared_recursive()
    }
    #[inline]
    fn try_lock_shared_recursive(&self) -> Option<Shared> {
        self.0.try_lock_shared_recursive()
    }
}

// SAFETY: as above.
unsafe impl lockmeter::RawRwLockRecursiveTimed for RawRwLock {
    #[inline]
    fn try_lock_shared_recursive_for(&self, timeout: Duration) -> Option<Shared> {
        self.0.try_lock_shared_recursive_for(timeout)
    }
    #[inline]
    fn try_lock_shared_recursive_until(&self, deadline: Instant) -> Option<Shared> {
        self.0.try_lock_shared_recursive_until(deadline)
    }
}

// SAFETY: as above, under 0.4's stateless signatures.
unsafe impl v4::RawRwLockRecursive for RawRwLock {
    #[inline]
    fn lock_shared_recursive(&self) {
        keep(self.0.lock_shared_recursive());
    }
    #[inline]
    fn try_lock_shared_recursive(&self) -> bool {
        kept(self.0.try_lock_shared_recursive())
    }
}

// SAFETY: as above.
unsafe impl v4::RawRwLockRecursiveTimed for RawRwLock {
    #[inline]
    fn try_lock_shared_recursive_for(&self, timeout: Duration) -> bool {
        kept(self.0.try_lock_shared_recursive_for(timeout))
    }
    #[inline]
    fn try_lock_shared_recursive_until(&self, deadline: Instant) -> bool {
        kept(self.0.try_lock_shared_recursive_until(deadline))
    }
}

// SAFETY: as above.
unsafe impl v4::RawRwLockUpgrade for RawRwLock {
    #[inline]
    fn lock_upgradable(&self) {
        keep(self.0.lock_upgradable());
    }
    #[inline]
    fn try_lock_upgradable(&self) -> bool {
        kept(self.0.try_lock_upgradable())
    }
    #[inline]
    unsafe fn unlock_upgradable(&self) {
        // SAFETY: the caller holds the upgradable lock.
        unsafe { self.0.unlock_upgradable(state()) }
    }
    #[inline]
    unsafe fn upgrade(&self) {
        // SAFETY: the caller holds the upgradable lock.
        keep(unsafe { self.0.upgrade(state()) });
    }
    #[inline]
    unsafe fn try_upgrade(&self) -> bool {
        // SAFETY: the caller holds the upgradable lock.
        upgraded(unsafe { self.0.try_upgrade(state()) })
    }
}

// SAFETY: as above.
unsafe impl v4::RawRwLockUpgradeFair for RawRwLock {
    #[inline]
    unsafe fn unlock_upgradable_fair(&self) {
        // SAFETY: the caller holds the upgradable lock.
        unsafe { self.0.unlock_upgradable_fair(state()) }
    }
    #[inline]
    unsafe fn bump_upgradable(&self) {
        let mut g = state();
        // SAFETY: the caller holds the upgradable lock; it still does after.
        unsafe { self.0.bump_upgradable(&mut g) };
        keep(g);
    }
}

// SAFETY: as above.
unsafe impl v4::RawRwLockUpgradeDowngrade for RawRwLock {
    #[inline]
    unsafe fn downgrade_upgradable(&self) {
        // SAFETY: the caller holds the upgradable lock.
        keep(unsafe { self.0.downgrade_upgradable(state()) });
    }
    #[inline]
    unsafe fn downgrade_to_upgradable(&self) {
        // SAFETY: the caller holds the exclusive lock.
        keep(unsafe { self.0.downgrade_to_upgradable(state()) });
    }
}

// SAFETY: as above.
unsafe impl v4::RawRwLockUpgradeTimed for RawRwLock {
    #[inline]
    fn try_lock_upgradable_for(&self, timeout: Duration) -> bool {
        kept(self.0.try_lock_upgradable_for(timeout))
    }
    #[inline]
    fn try_lock_upgradable_until(&self, deadline: Instant) -> bool {
        kept(self.0.try_lock_upgradable_until(deadline))
    }
    #[inline]
    unsafe fn try_upgrade_for(&self, timeout: Duration) -> bool {
        // SAFETY: the caller holds the upgradable lock.
        upgraded(unsafe { self.0.try_upgrade_for(state(), timeout) })
    }
    #[inline]
    unsafe fn try_upgrade_until(&self, deadline: Instant) -> bool {
        // SAFETY: the caller holds the upgradable lock.
        upgraded(unsafe { self.0.try_upgrade_until(state(), deadline) })
    }
}

// SAFETY: a thread-local's address is unique among live threads and
// never zero, as parking_lot 0.12's `RawThreadId` relies on.
unsafe impl v4::GetThreadId for RawThreadId {
    #[allow(clippy::declare_interior_mutable_const)]
    const INIT: Self = RawThreadId;
    #[inline]
    fn nonzero_thread_id(&self) -> NonZeroUsize {
        v5::GetThreadId::nonzero_thread_id(&pl::RawThreadId)
    }
}

// SAFETY: as above.
unsafe impl v5::GetThreadId for RawThreadId {
    #[allow(clippy::declare_interior_mutable_const)]
    const INIT: Self = RawThreadId;
    #[inline]
    fn nonzero_thread_id(&self) -> NonZeroUsize {
        v5::GetThreadId::nonzero_thread_id(&pl::RawThreadId)
    }
}
