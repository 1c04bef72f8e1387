//! parking_lot 0.12's public API on lockmeter's metered locks.
//!
//! Patch it in and every parking_lot 0.12 lock in the dependency tree,
//! the async runtime's among them, is counted per creation site and call
//! site, with no code change:
//!
//! ```toml
//! [patch.crates-io]
//! parking_lot = { path = "…/lockmeter/crates/compat/parking_lot" }
//! ```
//!
//! Then install `lockmeter::Layer` in the program's subscriber as usual.
//!
//! | item | built on |
//! |---|---|
//! | [`Mutex`], [`FairMutex`], [`ReentrantMutex`], [`RwLock`] and their guards | lockmeter's `Metered*` types over this crate's raw locks |
//! | [`RawMutex`], [`RawFairMutex`], [`RawRwLock`], [`RawThreadId`] | parking_lot 0.13's raw locks, under lock_api 0.4's and 0.5's traits |
//! | [`lock_api`] | lock_api 0.4's traits, with lockmeter's generic lock types |
//! | [`Condvar`], [`WaitTimeoutResult`] | lockmeter's metered condition variable over parking_lot 0.13's raw one ([`RawCondvar`]) |
//! | [`Once`], [`OnceState`] | parking_lot 0.13's (not a lock: not metered) |
//!
//! Every lock constructor and acquisition is `#[track_caller]`, so the
//! class is where the dependent created the lock and the site is where it
//! locked: when a dependent wraps parking_lot in one module of its own
//! (tokio does), both point into that module.
//!
//! What differs from parking_lot 0.12 is listed in lockmeter's
//! docs/guide.md, "Differences from std / parking_lot".

#![warn(missing_docs)]

pub mod lock_api;
mod raw;

pub use raw::{RawCondvar, RawFairMutex, RawMutex, RawRwLock, RawThreadId};

pub use lockmeter::WaitTimeoutResult;

/// A condition variable (parking_lot's, requeue and all), metered: waits,
/// notifies and wake-ups per call site, for this crate's [`Mutex`].
pub type Condvar = lockmeter::MeteredCondvar<RawCondvar>;
pub use parking_lot013::{Once, OnceState};

#[cfg(feature = "deadlock_detection")]
pub use parking_lot013::deadlock;

/// A mutual exclusion primitive useful for protecting shared data.
pub type Mutex<T> = lock_api::Mutex<RawMutex, T>;
/// An RAII guard of [`Mutex`]; unlocks (and records the hold) on drop.
pub type MutexGuard<'a, T> = lock_api::MutexGuard<'a, RawMutex, T>;
/// A guard of part of a [`Mutex`]'s data (`MutexGuard::map`).
pub type MappedMutexGuard<'a, T> = lock_api::MappedMutexGuard<'a, RawMutex, T>;

/// A mutex whose every unlock is fair.
pub type FairMutex<T> = lock_api::Mutex<RawFairMutex, T>;
/// An RAII guard of [`FairMutex`].
pub type FairMutexGuard<'a, T> = lock_api::MutexGuard<'a, RawFairMutex, T>;
/// A guard of part of a [`FairMutex`]'s data.
pub type MappedFairMutexGuard<'a, T> = lock_api::MappedMutexGuard<'a, RawFairMutex, T>;

/// A mutex that its holder can lock again.
pub type ReentrantMutex<T> = lock_api::ReentrantMutex<RawMutex, RawThreadId, T>;
/// An RAII guard of [`ReentrantMutex`].
pub type ReentrantMutexGuard<'a, T> = lock_api::ReentrantMutexGuard<'a, RawMutex, RawThreadId, T>;
/// A guard of part of a [`ReentrantMutex`]'s data.
pub type MappedReentrantMutexGuard<'a, T> =
    lock_api::MappedReentrantMutexGuard<'a, RawMutex, RawThreadId, T>;

/// A reader-writer lock.
pub type RwLock<T> = lock_api::RwLock<RawRwLock, T>;
/// Shared access to a [`RwLock`].
pub type RwLockReadGuard<'a, T> = lock_api::RwLockReadGuard<'a, RawRwLock, T>;
/// Exclusive access to a [`RwLock`].
pub type RwLockWriteGuard<'a, T> = lock_api::RwLockWriteGuard<'a, RawRwLock, T>;
/// Shared access to a [`RwLock`] that can be upgraded to exclusive.
pub type RwLockUpgradableReadGuard<'a, T> = lock_api::RwLockUpgradableReadGuard<'a, RawRwLock, T>;
/// Shared access to part of a [`RwLock`]'s data.
pub type MappedRwLockReadGuard<'a, T> = lock_api::MappedRwLockReadGuard<'a, RawRwLock, T>;
/// Exclusive access to part of a [`RwLock`]'s data.
pub type MappedRwLockWriteGuard<'a, T> = lock_api::MappedRwLockWriteGuard<'a, RawRwLock, T>;

/// A new mutex, usable in `const` and `static` items.
#[track_caller]
pub const fn const_mutex<T>(val: T) -> Mutex<T> {
    Mutex::new(val)
}

/// A new fair mutex, usable in `const` and `static` items.
#[track_caller]
pub const fn const_fair_mutex<T>(val: T) -> FairMutex<T> {
    FairMutex::new(val)
}

/// A new reentrant mutex, usable in `const` and `static` items.
#[track_caller]
pub const fn const_reentrant_mutex<T>(val: T) -> ReentrantMutex<T> {
    ReentrantMutex::new(val)
}

/// A new reader-writer lock, usable in `const` and `static` items.
#[track_caller]
pub const fn const_rwlock<T>(val: T) -> RwLock<T> {
    RwLock::new(val)
}
