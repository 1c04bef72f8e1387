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
pub(crate) use std::sync::atomic::{
    fence, AtomicBool, AtomicU32, AtomicU64, AtomicU8, AtomicUsize, Ordering,
};

#[cfg(lockmeter_loom)]
pub(crate) use loom::sync::atomic::{
    fence, AtomicBool, AtomicU32, AtomicU64, AtomicU8, AtomicUsize, Ordering,
};

// `spin_loop` is the spin-wait hint and `yield_now` gives the CPU away for
// a moment; under loom both are a yield point, so a spinning thread lets
// the others run.
#[cfg(not(lockmeter_loom))]
pub(crate) use std::{hint::spin_loop, thread::yield_now};

#[cfg(lockmeter_loom)]
pub(crate) use loom::thread::{yield_now, yield_now as spin_loop};

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
