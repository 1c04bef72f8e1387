//! The poison flag std's locks carry, with std's rules: a guard dropped
//! while its thread panics (and that was not panicking when it locked)
//! poisons the lock; every later acquisition still succeeds but reports
//! the poison, until `clear_poison`.
//!
//! [`Poison`] is where a drop-in keeps it: `sync::Mutex`, over
//! parking_lot's raw lock, in its own [`Flag`]; `sync::RwLock`, over
//! std's own lock, in that lock's flag, which std's guard already sets
//! (a second flag cost every write two more `panicking()` tests).

use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::{LockResult, PoisonError, TryLockError, TryLockResult};
use std::thread;

/// Whether a holder panicked. A plain std atomic, not the loom shim's: it
/// is not part of any lock algorithm, and it must be built in `const fn`.
/// Relaxed is enough, as in std: the lock's own acquire/release orders it
/// against the data.
pub(crate) struct Flag(AtomicBool);

/// What a guard remembers to decide, at drop, whether it poisons.
pub(crate) struct Guard {
    panicking: bool,
}

impl Guard {
    /// Called with the lock just acquired.
    #[inline(always)]
    pub(crate) fn new() -> Guard {
        Guard {
            panicking: thread::panicking(),
        }
    }
}

impl Flag {
    pub(crate) const fn new() -> Flag {
        Flag(AtomicBool::new(false))
    }

    /// Called with the lock still held, just before it is released.
    #[inline]
    pub(crate) fn done(&self, guard: &Guard) {
        if !guard.panicking && thread::panicking() {
            self.0.store(true, Relaxed);
        }
    }
}

/// Where a std-style lock keeps whether a holder panicked.
pub(crate) trait Poison {
    /// Whether a holder panicked (a momentary answer).
    fn get(&self) -> bool;

    /// Forgets that a holder panicked.
    fn clear(&self);

    /// `Ok(value)` or, if a holder panicked, `Err(PoisonError(value))`.
    #[inline(always)]
    fn result<T>(&self, value: T) -> LockResult<T> {
        result(self.get(), value)
    }
}

impl Poison for Flag {
    #[inline]
    fn get(&self) -> bool {
        self.0.load(Relaxed)
    }

    fn clear(&self) {
        self.0.store(false, Relaxed);
    }
}

/// `Ok(value)`, or `Err(PoisonError(value))` if `poisoned`.
#[inline(always)]
pub(crate) fn result<T>(poisoned: bool, value: T) -> LockResult<T> {
    match poisoned {
        true => Err(PoisonError::new(value)),
        false => Ok(value),
    }
}

/// std's `Debug` of a lock: `Name { data: .., poisoned: false, .. }`.
/// `look` shows the data through the function it is given if it can
/// without waiting (and without counting), else `locked` stands in.
pub(crate) fn fmt_lock<T: ?Sized + fmt::Debug>(
    f: &mut fmt::Formatter<'_>,
    name: &str,
    poisoned: bool,
    locked: &dyn fmt::Debug,
    look: impl FnOnce(&mut dyn FnMut(&T)) -> Option<()>,
) -> fmt::Result {
    let mut d = f.debug_struct(name);
    if look(&mut |data| {
        d.field("data", &data);
    })
    .is_none()
    {
        d.field("data", locked);
    }
    d.field("poisoned", &poisoned);
    d.finish_non_exhaustive()
}

/// A `try_` acquisition in std's terms: `WouldBlock` when it failed, else
/// the guard, as `Poisoned` if a holder panicked.
#[inline(always)]
pub(crate) fn try_result<G>(got: Option<LockResult<G>>) -> TryLockResult<G> {
    match got {
        Some(guard) => Ok(guard?),
        None => Err(TryLockError::WouldBlock),
    }
}

/// `Ok(value)` or, on a poisoned flag, `Err(PoisonError(value))`.
pub(crate) fn map_result<T, U>(result: LockResult<T>, f: impl FnOnce(T) -> U) -> LockResult<U> {
    match result {
        Ok(t) => Ok(f(t)),
        Err(e) => Err(PoisonError::new(f(e.into_inner()))),
    }
}
