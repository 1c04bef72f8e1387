//! Drop-ins for `std::sync`'s locks: change `use std::sync::{Mutex, Condvar}`
//! to `use lockmeter::sync::{Mutex, Condvar}` and nothing else.
//!
//! | item | std's | what differs |
//! |---|---|---|
//! | [`Mutex`], [`MutexGuard`] | [`std::sync::Mutex`] | metered; [`Mutex::named`] |
//! | [`Condvar`] | [`std::sync::Condvar`] | metered as a wait queue (kind `condvar`); [`WaitTimeoutResult`] is std's |
//! | [`RwLock`] and its guards | [`std::sync::RwLock`] | metered; [`RwLock::named`] |
//! | [`LockResult`], [`TryLockResult`], [`PoisonError`], [`TryLockError`] | re-exported | none: they are std's |
//!
//! Poisoning follows std: a guard dropped while its thread panics poisons
//! its lock; later acquisitions succeed, are counted like any other, and
//! return `Err` until [`Mutex::clear_poison`]. The locks underneath are
//! lockmeter's own ([`crate::Mutex`], [`crate::Condvar`], and a
//! [`crate::MeteredRwLock`] over std's own `RwLock`), so the table shows
//! each class and call site as for those.
//!
//! Differences from std are listed in docs/guide.md ("Differences from std
//! / parking_lot").

/// `is_poisoned`, `clear_poison` and `get_mut` of a std-style lock: a
/// metered lock `inner` and the lock's `poison()` ([`poison::Poison`]).
macro_rules! poison_api {
    ($(#[$is_poisoned_doc:meta])*) => {
        $(#[$is_poisoned_doc])*
        #[inline]
        pub fn is_poisoned(&self) -> bool {
            self.poison().get()
        }

        /// Clears the poison flag.
        #[inline]
        pub fn clear_poison(&self) {
            self.poison().clear();
        }

        /// Mutable access without locking; `Err` if it is poisoned.
        pub fn get_mut(&mut self) -> LockResult<&mut T> {
            let poisoned = self.poison().get();
            poison::result(poisoned, self.inner.get_mut())
        }
    };
}

/// A blocking acquisition and its `try_` form over the metered `inner`
/// lock's methods of the same names, each guard wrapped by `$wrap` (which
/// reports the poison). Both stay `#[inline]`: they are acquisition paths.
macro_rules! acquire_fns {
    ($(
        $(#[$doc:meta])* $lock:ident,
        $(#[$try_doc:meta])* $try:ident -> $guard:ident via $wrap:ident;
    )*) => {$(
        $(#[$doc])*
        #[track_caller]
        #[inline]
        pub fn $lock(&self) -> LockResult<$guard<'_, T>> {
            let inner = self.inner.$lock();
            self.$wrap(inner)
        }

        $(#[$try_doc])*
        #[track_caller]
        #[inline]
        pub fn $try(&self) -> TryLockResult<$guard<'_, T>> {
            poison::try_result(self.inner.$try().map(|inner| self.$wrap(inner)))
        }
    )*};
}

mod condvar;
mod mutex;
mod poison;
mod raw_condvar;
mod raw_mutex;
mod rwlock;
mod stash;
mod std_raw;

pub use condvar::Condvar;
pub use mutex::{Mutex, MutexGuard};
#[cfg(lockmeter_loom)]
#[doc(hidden)]
pub use raw_mutex::StdRawMutex;
pub use rwlock::{RwLock, RwLockReadGuard, RwLockWriteGuard};
pub use std::sync::{LockResult, PoisonError, TryLockError, TryLockResult, WaitTimeoutResult};
