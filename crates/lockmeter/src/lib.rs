//! Instrumented locks that tell you where your program waits.
//!
//! `lockmeter` is a lock profiler in the spirit of SGI's Lockmeter. Swap your
//! locks for these, install [`Layer`] in your `tracing` subscriber, and every
//! acquisition is counted per lock class and per call site:
//! contention (CON), utilisation (UTIL), wait and hold distributions,
//! TOTAL/NOWAIT/SPIN/RJECT, the call sites that held the lock while others
//! waited, and for wait queues wake-ups, spurious wake-ups and wake latency.
//!
//! | item | what it is |
//! |---|---|
//! | [`SpinLock`] | test-and-test-and-set spinlock with bounded backoff |
//! | [`Mutex`], [`FairMutex`], [`ReentrantMutex`], [`RwLock`], [`Condvar`] | parking_lot 0.12's API, metered; over any `lock_api` raw lock via [`MeteredMutex`], [`MeteredReentrantMutex`], [`MeteredRwLock`], [`MeteredCondvar`] |
//! | [`sync`] | drop-ins for `std::sync`'s `Mutex`, `RwLock`, `Condvar` (poisoning and all) |
//! | [`Semaphore`] | counting semaphore built from a [`SpinLock`] and a [`WaitQueue`] |
//! | [`WaitQueue`] | Linux-style wait queue: exclusive, keyed, FIFO/LIFO, `*_locked` operations |
//! | [`Layer`], [`Handle`] | the `tracing` layer that records, and what reads it |
//!
//! With no layer in effect, a lock costs one relaxed load more than the
//! bare lock and times nothing. With a layer, every acquisition is counted
//! exactly and every contended one is timed; the hold of one uncontended
//! acquisition in [`DEFAULT_HOLD_SAMPLING`] is timed and the hold figures
//! are scaled up from that sample
//! ([`LayerBuilder::sample_uncontended_holds`] changes the rate).
//!
//! ```
//! use tracing_subscriber::prelude::*;
//!
//! let layer = lockmeter::Layer::new();
//! let handle = layer.handle();
//! tracing::subscriber::with_default(tracing_subscriber::registry().with(layer), || {
//!     let lock = lockmeter::SpinLock::named("quickstart", 0u32);
//!     for _ in 0..10 {
//!         *lock.lock() += 1;
//!     }
//! });
//! let table = lockmeter_model::render::text_table(&handle.snapshot(), &Default::default());
//! assert!(table.contains("quickstart"));
//! ```
//!
//! # Guards stay on their thread
//!
//! A guard's hold is recorded into the per-thread counters of the thread
//! that acquired, which only that thread writes, so no guard is `Send`
//! (each carries the meter's `GuardNoSend` marker). Sharing one is fine
//! when the data is `Sync`:
//!
//! ```
//! fn shareable<T: Sync>(_: &T) {}
//! let m = lockmeter::Mutex::new(0u32);
//! shareable(&m.lock());
//! ```
//!
//! Sending one does not compile, whatever the primitive:
//!
//! ```compile_fail
//! fn sendable<T: Send>(_: T) {}
//! let lock = lockmeter::SpinLock::new(0u32);
//! sendable(lock.lock());
//! ```
//!
//! ```compile_fail
//! fn sendable<T: Send>(_: T) {}
//! let lock = lockmeter::Mutex::new(0u32);
//! sendable(lock.lock());
//! ```
//!
//! ```compile_fail
//! fn sendable<T: Send>(_: T) {}
//! let lock = lockmeter::RwLock::new(0u32);
//! sendable(lock.read());
//! ```
//!
//! ```compile_fail
//! fn sendable<T: Send>(_: T) {}
//! let lock = lockmeter::RwLock::new(0u32);
//! sendable(lock.write());
//! ```
//!
//! ```compile_fail
//! fn sendable<T: Send>(_: T) {}
//! let lock = lockmeter::RwLock::new(0u32);
//! sendable(lock.upgradable_read());
//! ```
//!
//! ```compile_fail
//! fn sendable<T: Send>(_: T) {}
//! let lock = lockmeter::Mutex::new((0u32, 1u32));
//! sendable(lockmeter::MutexGuard::map(lock.lock(), |p| &mut p.0));
//! ```
//!
//! ```compile_fail
//! fn sendable<T: Send>(_: T) {}
//! let lock = lockmeter::ReentrantMutex::new(0u32);
//! sendable(lock.lock());
//! ```
//!
//! ```compile_fail
//! fn sendable<T: Send>(_: T) {}
//! let sem = lockmeter::Semaphore::new(1);
//! sendable(sem.acquire());
//! ```
//!
//! ```compile_fail
//! fn sendable<T: Send>(_: T) {}
//! let queue = lockmeter::WaitQueue::with_data(0u32);
//! sendable(queue.lock());
//! ```

#![warn(missing_docs)]

// First: its macros are used by the lock modules below.
#[macro_use]
mod guard_api;
mod backoff;
mod class;
mod clock;
mod condvar;
mod env;
#[cfg(unix)]
pub mod export;
mod hint;
mod layer;
mod meter;
mod mutex;
mod now;
mod on_drop;
mod primitive;
mod recorder;
mod reentrant_mutex;
mod report;
mod rwlock;
mod semaphore;
mod slow;
mod spinlock;
mod stacks;
pub mod sync;
mod thread_ptrs;
mod waitqueue;

pub use condvar::{Condvar, MeteredCondvar, WaitTimeoutResult};
pub use layer::{Handle, Layer, LayerBuilder, DEFAULT_HOLD_SAMPLING, DEFAULT_SLOW_THRESHOLD};
pub use lockmeter_model as model;
pub use mutex::{
    const_fair_mutex, const_mutex, FairMutex, FairMutexGuard, MappedFairMutexGuard,
    MappedMutexGuard, MeteredMappedMutexGuard, MeteredMutex, MeteredMutexGuard, Mutex, MutexGuard,
};
pub use now::DEFAULT_DEADLOCK_INTERVAL;
pub use reentrant_mutex::{
    const_reentrant_mutex, MappedReentrantMutexGuard, MeteredMappedReentrantMutexGuard,
    MeteredReentrantMutex, MeteredReentrantMutexGuard, ReentrantMutex, ReentrantMutexGuard,
};

/// Whether this thread finds its recorder the scoped-dispatcher way
/// (`recorder::current`), for `tests/global_dispatcher.rs` only: a thread
/// back under the global layer must not pay for that way.
#[doc(hidden)]
pub fn __thread_takes_scoped_way() -> bool {
    thread_ptrs::found_scoped_layer()
}

/// The `now` tables' seqlock, for the loom models in `tests/loom.rs` only.
#[cfg(lockmeter_loom)]
#[doc(hidden)]
pub mod loom_now {
    pub use crate::now::table::{Rec, Table, View};
}

/// The raw mutex under `sync::Mutex` (std's algorithm), for the loom
/// models in `tests/loom.rs` only.
#[cfg(lockmeter_loom)]
#[doc(hidden)]
pub mod loom_sync {
    pub use crate::sync::StdRawMutex;
}
pub use rwlock::{
    const_rwlock, MappedRwLockReadGuard, MappedRwLockWriteGuard, MeteredMappedReadGuard,
    MeteredMappedWriteGuard, MeteredReadGuard, MeteredRwLock, MeteredUpgradableReadGuard,
    MeteredWriteGuard, RawRwLockRecursive, RawRwLockRecursiveTimed, RwLock, RwLockReadGuard,
    RwLockUpgradableReadGuard, RwLockWriteGuard,
};
pub use semaphore::{Semaphore, SemaphorePermit};
pub use spinlock::{SpinLock, SpinLockGuard};
pub use stacks::{DEFAULT_SKIP_FRAMES, DEFAULT_STACK_DEPTH, DEFAULT_STACK_RATE, MAX_STACK_DEPTH};
pub use waitqueue::{Wait, WaitQueue, WaitQueueGuard, WakeOrder, ALL_KEYS};
