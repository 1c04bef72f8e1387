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
//! Both families are written by two macros, one method a line:
//! `v5_forward!` passes a 0.5 method to the inner lock as is;
//! `v4_stateless!` turns a 0.4 method into the 0.5 call of the same name,
//! dropping or making up the guard state by the method's kind.
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

/// Raw mutex type backed by the parking lot (parking_lot 0.12's `RawMutex`).
pub struct RawMutex(pl::RawMutex);

/// Raw fair mutex type backed by the parking lot: every unlock is fair.
pub struct RawFairMutex(pl::RawFairMutex);

/// Raw reader-writer lock type backed by the parking lot.
pub struct RawRwLock(pl::RawRwLock);

/// Implementation of the `GetThreadId` trait for `lock_api::ReentrantMutex`.
pub struct RawThreadId;

/// 0.5 methods that call the inner 0.13 lock's method of the same name
/// with the same arguments. One line a method:
/// `fn name(arg: Type) -> Ret;` or `unsafe fn name(arg: Type) -> Ret;`.
macro_rules! v5_forward {
    () => {};
    (fn $name:ident($($a:ident: $t:ty),*) $(-> $ret:ty)?; $($rest:tt)*) => {
        #[inline]
        fn $name(&self $(, $a: $t)*) $(-> $ret)? {
            self.0.$name($($a),*)
        }
        v5_forward!($($rest)*);
    };
    (unsafe fn $name:ident($($a:ident: $t:ty),*) $(-> $ret:ty)?; $($rest:tt)*) => {
        #[inline]
        unsafe fn $name(&self $(, $a: $t)*) $(-> $ret)? {
            // SAFETY: the caller's contract is ours.
            unsafe { self.0.$name($($a),*) }
        }
        v5_forward!($($rest)*);
    };
}

/// 0.4 methods (no guard state) over the 0.5 methods of the same name, by
/// kind, one line a method:
/// - `query name;`: `fn name(&self) -> bool`, as is;
/// - `acquire name;`: takes the lock, forgets the 0.5 state;
/// - `attempt name(args);`: `-> bool`, forgets the state on success;
/// - `release name;`: unlocks a lock the caller holds, with a made-up state;
/// - `held name;`: downgrades or upgrades a lock the caller holds, with a
///   made-up state, forgetting the new one;
/// - `bump name;`: lets waiters in and takes the lock back;
/// - `try_upgrade name(args);`: `-> bool`, forgetting either outcome's state.
///
/// Every `unsafe` one is called only by a holder of the matching mode, as
/// 0.4 requires, so the made-up state is the holder's.
macro_rules! v4_stateless {
    () => {};
    (query $name:ident; $($rest:tt)*) => {
        #[inline]
        fn $name(&self) -> bool {
            self.0.$name()
        }
        v4_stateless!($($rest)*);
    };
    (acquire $name:ident; $($rest:tt)*) => {
        #[inline]
        fn $name(&self) {
            keep(self.0.$name());
        }
        v4_stateless!($($rest)*);
    };
    (attempt $name:ident($($a:ident: $t:ty),*); $($rest:tt)*) => {
        #[inline]
        fn $name(&self $(, $a: $t)*) -> bool {
            kept(self.0.$name($($a),*))
        }
        v4_stateless!($($rest)*);
    };
    (release $name:ident; $($rest:tt)*) => {
        #[inline]
        unsafe fn $name(&self) {
            // SAFETY: the caller holds the lock in the mode this method
            // releases (0.4's contract); the state is a marker.
            unsafe { self.0.$name(state()) }
        }
        v4_stateless!($($rest)*);
    };
    (held $name:ident; $($rest:tt)*) => {
        #[inline]
        unsafe fn $name(&self) {
            // SAFETY: the caller holds the lock in the mode this method
            // leaves (0.4's contract); the state is a marker.
            keep(unsafe { self.0.$name(state()) });
        }
        v4_stateless!($($rest)*);
    };
    (bump $name:ident; $($rest:tt)*) => {
        #[inline]
        unsafe fn $name(&self) {
            let mut g = state();
            // SAFETY: the caller holds the lock; it still does after.
            unsafe { self.0.$name(&mut g) };
            keep(g);
        }
        v4_stateless!($($rest)*);
    };
    (try_upgrade $name:ident($($a:ident: $t:ty),*); $($rest:tt)*) => {
        #[inline]
        unsafe fn $name(&self $(, $a: $t)*) -> bool {
            // SAFETY: the caller holds the upgradable lock.
            upgraded(unsafe { self.0.$name(state() $(, $a)*) })
        }
        v4_stateless!($($rest)*);
    };
}

/// The 0.13 lock's (zero-sized) guard state, made up for a 0.4-style
/// unlock, which has none to pass.
fn state<G: Default>() -> G {
    G::default()
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

macro_rules! raw_mutex {
    ($ty:ident) => {
        // SAFETY: forwards to parking_lot 0.13's lock of the same kind,
        // which upholds 0.5's contract; the guard state is a marker.
        unsafe impl v5::RawMutex for $ty {
            #[allow(clippy::declare_interior_mutable_const)]
            const INIT: Self = $ty(<pl::$ty as v5::RawMutex>::INIT);
            type Guard = <pl::$ty as v5::RawMutex>::Guard;
            v5_forward! {
                fn lock() -> Self::Guard;
                fn try_lock() -> Option<Self::Guard>;
                unsafe fn unlock(guard: Self::Guard);
                fn is_locked() -> bool;
            }
        }

        // SAFETY: as above.
        unsafe impl v5::RawMutexFair for $ty {
            v5_forward! {
                unsafe fn unlock_fair(guard: Self::Guard);
                unsafe fn bump(guard: &mut Self::Guard);
            }
        }

        // SAFETY: as above.
        unsafe impl v5::RawMutexTimed for $ty {
            type Duration = Duration;
            type Instant = Instant;
            v5_forward! {
                fn try_lock_for(timeout: Duration) -> Option<Self::Guard>;
                fn try_lock_until(deadline: Instant) -> Option<Self::Guard>;
            }
        }

        // SAFETY: the same lock under 0.4's stateless signatures; unlock is
        // only called by a holder, as 0.4 requires.
        unsafe impl v4::RawMutex for $ty {
            #[allow(clippy::declare_interior_mutable_const)]
            const INIT: Self = <$ty as v5::RawMutex>::INIT;
            type GuardMarker = v4::GuardNoSend;
            v4_stateless! {
                acquire lock;
                attempt try_lock();
                release unlock;
                query is_locked;
            }
        }

        // SAFETY: as above.
        unsafe impl v4::RawMutexFair for $ty {
            v4_stateless! {
                release unlock_fair;
                bump bump;
            }
        }

        // SAFETY: as above.
        unsafe impl v4::RawMutexTimed for $ty {
            type Duration = Duration;
            type Instant = Instant;
            v4_stateless! {
                attempt try_lock_for(timeout: Duration);
                attempt try_lock_until(deadline: Instant);
            }
        }
    };
}

raw_mutex!(RawMutex);
raw_mutex!(RawFairMutex);

type Shared = <pl::RawRwLock as v5::RawRwLock>::SharedGuard;
type Exclusive = <pl::RawRwLock as v5::RawRwLock>::ExclusiveGuard;
type Upgradable = <pl::RawRwLock as v5::RawRwLockUpgrade>::UpgradableGuard;

// lock_api 0.5: every trait forwards to parking_lot 0.13's `RawRwLock`,
// which upholds 0.5's contract.

// SAFETY: forwards to parking_lot 0.13's `RawRwLock`.
unsafe impl v5::RawRwLock for RawRwLock {
    #[allow(clippy::declare_interior_mutable_const)]
    const INIT: Self = RawRwLock(<pl::RawRwLock as v5::RawRwLock>::INIT);
    type SharedGuard = Shared;
    type ExclusiveGuard = Exclusive;
    v5_forward! {
        fn lock_shared() -> Shared;
        fn try_lock_shared() -> Option<Shared>;
        unsafe fn unlock_shared(guard: Shared);
        fn lock_exclusive() -> Exclusive;
        fn try_lock_exclusive() -> Option<Exclusive>;
        unsafe fn unlock_exclusive(guard: Exclusive);
        fn is_locked() -> bool;
        fn is_locked_exclusive() -> bool;
    }
}

// SAFETY: forwards.
unsafe impl v5::RawRwLockFair for RawRwLock {
    v5_forward! {
        unsafe fn unlock_shared_fair(guard: Shared);
        unsafe fn unlock_exclusive_fair(guard: Exclusive);
        unsafe fn bump_shared(guard: &mut Shared);
        unsafe fn bump_exclusive(guard: &mut Exclusive);
    }
}

// SAFETY: forwards.
unsafe impl v5::RawRwLockDowngrade for RawRwLock {
    v5_forward! {
        unsafe fn downgrade(guard: Exclusive) -> Shared;
    }
}

// SAFETY: forwards.
unsafe impl v5::RawRwLockTimed for RawRwLock {
    type Duration = Duration;
    type Instant = Instant;
    v5_forward! {
        fn try_lock_shared_for(timeout: Duration) -> Option<Shared>;
        fn try_lock_shared_until(deadline: Instant) -> Option<Shared>;
        fn try_lock_exclusive_for(timeout: Duration) -> Option<Exclusive>;
        fn try_lock_exclusive_until(deadline: Instant) -> Option<Exclusive>;
    }
}

// SAFETY: forwards.
unsafe impl v5::RawRwLockUpgrade for RawRwLock {
    type UpgradableGuard = Upgradable;
    v5_forward! {
        fn lock_upgradable() -> Upgradable;
        fn try_lock_upgradable() -> Option<Upgradable>;
        unsafe fn unlock_upgradable(guard: Upgradable);
        unsafe fn upgrade(guard: Upgradable) -> Exclusive;
        unsafe fn try_upgrade(guard: Upgradable) -> Result<Exclusive, Upgradable>;
    }
}

// SAFETY: forwards.
unsafe impl v5::RawRwLockUpgradeFair for RawRwLock {
    v5_forward! {
        unsafe fn unlock_upgradable_fair(guard: Upgradable);
        unsafe fn bump_upgradable(guard: &mut Upgradable);
    }
}

// SAFETY: forwards.
unsafe impl v5::RawRwLockUpgradeDowngrade for RawRwLock {
    v5_forward! {
        unsafe fn downgrade_upgradable(guard: Upgradable) -> Shared;
        unsafe fn downgrade_to_upgradable(guard: Exclusive) -> Upgradable;
    }
}

// SAFETY: forwards.
unsafe impl v5::RawRwLockUpgradeTimed for RawRwLock {
    v5_forward! {
        fn try_lock_upgradable_for(timeout: Duration) -> Option<Upgradable>;
        fn try_lock_upgradable_until(deadline: Instant) -> Option<Upgradable>;
        unsafe fn try_upgrade_for(guard: Upgradable, timeout: Duration)
            -> Result<Exclusive, Upgradable>;
        unsafe fn try_upgrade_until(guard: Upgradable, deadline: Instant)
            -> Result<Exclusive, Upgradable>;
    }
}

// SAFETY: forwards to lockmeter's recursive admission on the 0.13 lock
// (lockmeter's `RawRwLockRecursive` says why that is 0.12's behaviour).
unsafe impl lockmeter::RawRwLockRecursive for RawRwLock {
    v5_forward! {
        fn lock_shared_recursive() -> Shared;
        fn try_lock_shared_recursive() -> Option<Shared>;
    }
}

// SAFETY: as above.
unsafe impl lockmeter::RawRwLockRecursiveTimed for RawRwLock {
    v5_forward! {
        fn try_lock_shared_recursive_for(timeout: Duration) -> Option<Shared>;
        fn try_lock_shared_recursive_until(deadline: Instant) -> Option<Shared>;
    }
}

// lock_api 0.4: the same lock under 0.4's stateless signatures; every
// unlock, downgrade or upgrade is only called by a holder of the matching
// mode, as 0.4 requires, so the made-up state is the holder's.

// SAFETY: as above.
unsafe impl v4::RawRwLock for RawRwLock {
    #[allow(clippy::declare_interior_mutable_const)]
    const INIT: Self = <RawRwLock as v5::RawRwLock>::INIT;
    type GuardMarker = v4::GuardNoSend;
    v4_stateless! {
        acquire lock_shared;
        attempt try_lock_shared();
        release unlock_shared;
        acquire lock_exclusive;
        attempt try_lock_exclusive();
        release unlock_exclusive;
        query is_locked;
        query is_locked_exclusive;
    }
}

// SAFETY: as above.
unsafe impl v4::RawRwLockFair for RawRwLock {
    v4_stateless! {
        release unlock_shared_fair;
        release unlock_exclusive_fair;
        bump bump_shared;
        bump bump_exclusive;
    }
}

// SAFETY: as above.
unsafe impl v4::RawRwLockDowngrade for RawRwLock {
    v4_stateless! {
        held downgrade;
    }
}

// SAFETY: as above.
unsafe impl v4::RawRwLockTimed for RawRwLock {
    type Duration = Duration;
    type Instant = Instant;
    v4_stateless! {
        attempt try_lock_shared_for(timeout: Duration);
        attempt try_lock_shared_until(deadline: Instant);
        attempt try_lock_exclusive_for(timeout: Duration);
        attempt try_lock_exclusive_until(deadline: Instant);
    }
}

// SAFETY: as above.
unsafe impl v4::RawRwLockRecursive for RawRwLock {
    v4_stateless! {
        acquire lock_shared_recursive;
        attempt try_lock_shared_recursive();
    }
}

// SAFETY: as above.
unsafe impl v4::RawRwLockRecursiveTimed for RawRwLock {
    v4_stateless! {
        attempt try_lock_shared_recursive_for(timeout: Duration);
        attempt try_lock_shared_recursive_until(deadline: Instant);
    }
}

// SAFETY: as above.
unsafe impl v4::RawRwLockUpgrade for RawRwLock {
    v4_stateless! {
        acquire lock_upgradable;
        attempt try_lock_upgradable();
        release unlock_upgradable;
        held upgrade;
        try_upgrade try_upgrade();
    }
}

// SAFETY: as above.
unsafe impl v4::RawRwLockUpgradeFair for RawRwLock {
    v4_stateless! {
        release unlock_upgradable_fair;
        bump bump_upgradable;
    }
}

// SAFETY: as above.
unsafe impl v4::RawRwLockUpgradeDowngrade for RawRwLock {
    v4_stateless! {
        held downgrade_upgradable;
        held downgrade_to_upgradable;
    }
}

// SAFETY: as above.
unsafe impl v4::RawRwLockUpgradeTimed for RawRwLock {
    v4_stateless! {
        attempt try_lock_upgradable_for(timeout: Duration);
        attempt try_lock_upgradable_until(deadline: Instant);
        try_upgrade try_upgrade_for(timeout: Duration);
        try_upgrade try_upgrade_until(deadline: Instant);
    }
}

/// `GetThreadId` of one lock_api version: the 0.13 crate's thread id.
macro_rules! thread_id {
    ($v:ident) => {
        // SAFETY: a thread-local's address is unique among live threads
        // and never zero, as parking_lot 0.12's `RawThreadId` relies on.
        unsafe impl $v::GetThreadId for RawThreadId {
            #[allow(clippy::declare_interior_mutable_const)]
            const INIT: Self = RawThreadId;
            #[inline]
            fn nonzero_thread_id(&self) -> NonZeroUsize {
                v5::GetThreadId::nonzero_thread_id(&pl::RawThreadId)
            }
        }
    };
}

thread_id!(v4);
thread_id!(v5);

/// parking_lot 0.13's raw condvar for this crate's [`RawMutex`] (not in
/// parking_lot 0.12's API: [`crate::Condvar`] is built on it, so that its
/// waits take this crate's `MutexGuard` and requeue onto the lock inside).
pub struct RawCondvar(pl::RawCondvar);

// SAFETY: forwards to parking_lot's raw condvar with the raw mutex inside
// ours, which is the lock ours locks and unlocks: its contract is theirs.
unsafe impl v5::RawCondvar for RawCondvar {
    #[allow(clippy::declare_interior_mutable_const)]
    const INIT: Self = RawCondvar(<pl::RawCondvar as v5::RawCondvar>::INIT);
    type RawMutex = RawMutex;

    #[inline]
    unsafe fn wait(&self, mutex: &RawMutex, guard: &mut <RawMutex as v5::RawMutex>::Guard) {
        // SAFETY: the caller's contract, for the lock inside `mutex`.
        unsafe { v5::RawCondvar::wait(&self.0, &mutex.0, guard) }
    }

    #[inline]
    fn notify_one(&self) -> bool {
        v5::RawCondvar::notify_one(&self.0)
    }

    #[inline]
    fn notify_all(&self) -> usize {
        v5::RawCondvar::notify_all(&self.0)
    }
}

// SAFETY: as above.
unsafe impl v5::RawCondvarTimed for RawCondvar {
    fn checked_duration_to_instant(timeout: &Duration) -> Option<Instant> {
        <pl::RawCondvar as v5::RawCondvarTimed>::checked_duration_to_instant(timeout)
    }

    #[inline]
    unsafe fn wait_until(
        &self,
        mutex: &RawMutex,
        guard: &mut <RawMutex as v5::RawMutex>::Guard,
        timeout: &Instant,
    ) -> bool {
        // SAFETY: as in `wait`.
        unsafe { v5::RawCondvarTimed::wait_until(&self.0, &mutex.0, guard, timeout) }
    }
}
