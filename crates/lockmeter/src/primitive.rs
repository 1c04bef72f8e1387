//! The one place the primitives get their synchronisation types from
//! (named `primitive`, as in crossbeam, so `lockmeter::sync` can be the
//! public std-compatible module).
//!
//! Under `--cfg lockmeter_loom` these are loom's, so the loom models in
//! `tests/loom.rs` explore every interleaving of the lock and queue
//! algorithms. Recording state (counters read by snapshots) deliberately
//! uses `std` atomics directly: it is not part of the algorithms and is
//! switched off in the models.

#[cfg(not(lockmeter_loom))]
pub(crate) use std::sync::atomic::{fence, AtomicBool, AtomicU64, AtomicU8, AtomicUsize, Ordering};

#[cfg(lockmeter_loom)]
pub(crate) use loom::sync::atomic::{
    fence, AtomicBool, AtomicU64, AtomicU8, AtomicUsize, Ordering,
};

/// Spin-wait hint; a yield point for loom.
#[inline]
pub(crate) fn spin_loop() {
    #[cfg(not(lockmeter_loom))]
    std::hint::spin_loop();
    #[cfg(lockmeter_loom)]
    loom::thread::yield_now();
}

/// Gives the CPU away for a moment.
#[inline]
pub(crate) fn yield_now() {
    #[cfg(not(lockmeter_loom))]
    std::thread::yield_now();
    #[cfg(lockmeter_loom)]
    loom::thread::yield_now();
}

/// Defines a `const fn` that is a plain `fn` under loom, whose atomics
/// cannot be built in const context.
macro_rules! loom_const_fn {
    ($(#[$attr:meta])* $vis:vis const fn $($rest:tt)*) => {
        #[cfg(not(lockmeter_loom))]
        $(#[$attr])* $vis const fn $($rest)*
        #[cfg(lockmeter_loom)]
        $(#[$attr])* $vis fn $($rest)*
    };
}
pub(crate) use loom_const_fn;
