//! What parking_lot 0.12 re-exports as `parking_lot::lock_api`.
//!
//! The traits are lock_api 0.4's own, so `use parking_lot::lock_api::RawMutex`
//! and the 0.4-style raw calls (`raw.lock(); unsafe { raw.unlock() }`)
//! keep compiling. The lock types are lockmeter's generic metered ones,
//! so `lock_api::MutexGuard<'a, parking_lot::RawMutex, T>` is the same
//! type as `parking_lot::MutexGuard<'a, T>`, as in parking_lot.
//!
//! Those generic types take lock_api 0.5 raw locks (what lockmeter is
//! built on). This crate's raw locks are both; a dependent's own 0.4 raw
//! lock is not, see docs/guide.md.

pub use lock_api04::{
    GetThreadId, GuardNoSend, GuardSend, RawMutex, RawMutexFair, RawMutexTimed, RawRwLock,
    RawRwLockDowngrade, RawRwLockFair, RawRwLockRecursive, RawRwLockRecursiveTimed, RawRwLockTimed,
    RawRwLockUpgrade, RawRwLockUpgradeDowngrade, RawRwLockUpgradeFair, RawRwLockUpgradeTimed,
};

pub use lockmeter::{
    MeteredMappedMutexGuard as MappedMutexGuard, MeteredMappedReadGuard as MappedRwLockReadGuard,
    MeteredMappedReentrantMutexGuard as MappedReentrantMutexGuard,
    MeteredMappedWriteGuard as MappedRwLockWriteGuard, MeteredMutex as Mutex,
    MeteredMutexGuard as MutexGuard, MeteredReadGuard as RwLockReadGuard,
    MeteredReentrantMutex as ReentrantMutex, MeteredReentrantMutexGuard as ReentrantMutexGuard,
    MeteredRwLock as RwLock, MeteredUpgradableReadGuard as RwLockUpgradableReadGuard,
    MeteredWriteGuard as RwLockWriteGuard,
};
