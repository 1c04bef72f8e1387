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
//! lockmeter's own ([`crate::Mutex`], [`crate::RwLock`], [`crate::Condvar`]), so the table
//! shows each class and call site as for those.
//!
//! Differences from std are listed in docs/guide.md ("Differences from std
//! / parking_lot").

mod condvar;
mod mutex;
mod poison;
mod rwlock;

pub use condvar::Condvar;
pub use mutex::{Mutex, MutexGuard};
pub use rwlock::{RwLock, RwLockReadGuard, RwLockWriteGuard};
pub use std::sync::{LockResult, PoisonError, TryLockError, TryLockResult, WaitTimeoutResult};
