//! A metering adapter over any `lock_api` raw reader-writer lock, with
//! parking_lot 0.12's whole `RwLock` API.
//!
//! Read, write and upgradable acquisitions are recorded as separate rows
//! (the site's `mode` is `read`, `write` or `upgradable`). [`RwLock<T>`] is
//! the drop-in for `parking_lot::RwLock<T>`.
//!
//! # How each path counts
//! - `read`, `read_recursive`, `write`, `upgradable_read` and their `try_`
//!   and timed forms: one acquisition in their mode at the caller's site.
//! - `upgrade` (and `try_upgrade*`): a `write` acquisition at the site of
//!   the upgrade, its wait the time readers took to leave; the upgradable
//!   hold ends once the write lock is had. A failed try counts in RJECT.
//! - `downgrade`, `downgrade_to_upgradable` and the upgradable guard's
//!   `downgrade`: the hold in the old mode ends and a NOWAIT acquisition in
//!   the new mode begins at the call site (the lock is never free between).
//! - a guard's `unlocked(_fair)`, `bump`: as for [`Mutex`](crate::Mutex).

mod guards;
mod recursive;

use std::cell::{Cell, UnsafeCell};
use std::fmt;
use std::panic::Location;

use lock_api::{RawRwLock, RawRwLockFair, RawRwLockTimed, RawRwLockUpgrade, RawRwLockUpgradeTimed};
use lockmeter_model::LockKind;

pub use self::guards::{
    MeteredMappedReadGuard, MeteredMappedWriteGuard, MeteredReadGuard, MeteredUpgradableReadGuard,
    MeteredWriteGuard,
};
pub use self::recursive::{RawRwLockRecursive, RawRwLockRecursiveTimed};
use crate::class::{Class, Mode};
use crate::meter::{self, Hold, Meta};
use crate::recorder;

/// The timed forms of the acquisitions: a row per mode gives its
/// `_for` / `_until` pair (see `timed_pair!`), which tries `$try` at once,
/// then waits with the raw lock's timed method, and wraps the raw guard in
/// `$guard`.
macro_rules! timed_acquisitions {
    ($(
        $(#[$for_doc:meta])* $for:ident = $wait_for:ident,
        $(#[$until_doc:meta])* $until:ident = $wait_until:ident,
        $mode:ident: $try:ident -> $guard:ident;
    )*) => {$(
        timed_pair! {
            $(#[$for_doc])*
            fn $for(timeout: R::Duration) = R::$wait_for;
            $(#[$until_doc])*
            fn $until(deadline: R::Instant) = R::$wait_until;
            #[track_caller]
            pub fn [] (&self,) limit () -> Option<$guard<'_, R, T>>, |wait, limit| {
                meter::acquire_timed(
                    &self.meta,
                    Location::caller(),
                    Mode::$mode,
                    || self.raw.$try(),
                    || (wait(&self.raw, limit), 0, 0),
                )
                .map(|(raw, hold)| $guard::new(self, raw, hold))
            }
        }
    )*};
}

/// The plain acquisitions of a mode: the blocking `$lock` (and its
/// `$at`, metered at a given site, which guards use to reacquire) over the
/// raw lock's `$raw_lock`, and `$try` over `$raw_try`. All stay
/// `#[inline]`: they are the acquisition paths.
macro_rules! acquisitions {
    ($(
        $(#[$doc:meta])* $lock:ident / $at:ident = $raw_lock:ident,
        $(#[$try_doc:meta])* $try:ident = $raw_try:ident,
        $mode:ident -> $guard:ident($raw_guard:ident);
    )*) => {$(
        $(#[$doc])*
        #[track_caller]
        #[inline]
        pub fn $lock(&self) -> $guard<'_, R, T> {
            let (raw, hold) = self.$at(Location::caller());
            $guard::new(self, raw, hold)
        }

        #[inline]
        pub(crate) fn $at(&self, site: &'static Location<'static>) -> (R::$raw_guard, Hold) {
            meter::acquire(
                &self.meta,
                site,
                Mode::$mode,
                || self.raw.$raw_lock(),
                || self.raw.$raw_try(),
                || (self.raw.$raw_lock(), 0, 0),
            )
        }

        $(#[$try_doc])*
        #[track_caller]
        #[inline]
        pub fn $try(&self) -> Option<$guard<'_, R, T>> {
            meter::try_acquire(&self.meta, Location::caller(), Mode::$mode, || {
                self.raw.$raw_try()
            })
            .map(|(raw, hold)| $guard::new(self, raw, hold))
        }
    )*};
}

/// `force_unlock_*`: releases, through the raw lock's `$unlock`, a lock
/// held in that mode through a forgotten guard. The raw guard token is
/// `Default`, as parking_lot's zero-sized markers are.
macro_rules! force_unlocks {
    ($( $(#[$doc:meta])* $name:ident = $unlock:ident($raw_guard:ident); )*) => {$(
        $(#[$doc])*
        pub unsafe fn $name(&self)
        where
            R::$raw_guard: Default,
        {
            // SAFETY: the caller promises a lock held in this mode through
            // a forgotten guard.
            unsafe { self.raw.$unlock(Default::default()) }
        }
    )*};
}

/// A reader-writer lock over the raw lock `R` that records contention per
/// call site and mode.
///
/// `repr(C)`: the per-instance fields, then the lock word right before the
/// data (see `MeteredMutex`).
#[repr(C)]
pub struct MeteredRwLock<R: RawRwLock, T: ?Sized> {
    meta: Meta,
    raw: R,
    data: UnsafeCell<T>,
}

/// The drop-in replacement for `parking_lot::RwLock`.
///
/// # Differences from parking_lot
/// - Guards are never `Send`, as with parking_lot's default features.
/// - `read_recursive` and its `try_` forms exist for raw locks that
///   implement [`RawRwLockRecursive`] (parking_lot's `RawRwLock` does);
///   lock_api 0.5 has no such trait.
/// - `raw()` is this crate's `lock_api` 0.5 lock and bypasses the meter.
/// - Observed, a guard's `bump` always unlocks fairly and locks again.
/// - `MappedRwLockReadGuard::try_map_or_else` (lock_api 0.4's name) is
///   offered beside `try_map_or_err`.
/// - No `arc_lock`, `serde` or `owning_ref` integrations.
///
/// # Examples
///
/// ```
/// use lockmeter::{RwLock, RwLockUpgradableReadGuard};
///
/// let table = RwLock::named("routes", vec!["/"]);
/// assert_eq!(table.read().len(), 1);
/// table.write().push("/about");
/// assert_eq!(table.try_read().map(|t| t.len()), Some(2));
///
/// let up = table.upgradable_read();
/// if !up.contains(&"/blog") {
///     RwLockUpgradableReadGuard::upgrade(up).push("/blog");
/// }
/// assert_eq!(table.read_recursive().len(), 3);
/// ```
pub type RwLock<T> = MeteredRwLock<parking_lot::RawRwLock, T>;

/// The read guard of [`RwLock`].
pub type RwLockReadGuard<'a, T> = MeteredReadGuard<'a, parking_lot::RawRwLock, T>;
/// The write guard of [`RwLock`].
pub type RwLockWriteGuard<'a, T> = MeteredWriteGuard<'a, parking_lot::RawRwLock, T>;
/// The upgradable read guard of [`RwLock`].
pub type RwLockUpgradableReadGuard<'a, T> =
    MeteredUpgradableReadGuard<'a, parking_lot::RawRwLock, T>;
/// A [`RwLockReadGuard`] narrowed by `map`.
pub type MappedRwLockReadGuard<'a, T> = MeteredMappedReadGuard<'a, parking_lot::RawRwLock, T>;
/// A [`RwLockWriteGuard`] narrowed by `map`.
pub type MappedRwLockWriteGuard<'a, T> = MeteredMappedWriteGuard<'a, parking_lot::RawRwLock, T>;

/// A [`RwLock`] in a `const` or `static` (parking_lot's `const_rwlock`);
/// its class is the call site.
#[track_caller]
pub const fn const_rwlock<T>(val: T) -> RwLock<T> {
    RwLock::from_class(Class::new(None, Location::caller()), val)
}

// SAFETY: readers share `&T` (needs Sync), writers get `&mut T` (needs Send).
unsafe impl<R: RawRwLock + Send, T: ?Sized + Send> Send for MeteredRwLock<R, T> {}
// SAFETY: as above.
unsafe impl<R: RawRwLock + Sync, T: ?Sized + Send + Sync> Sync for MeteredRwLock<R, T> {}

impl<R: RawRwLock, T> MeteredRwLock<R, T> {
    class_constructors! {
        new: /// A lock whose class is its creation site.
        named: /// A lock of the class `name`.
    }

    /// A lock over an existing raw lock (lock_api's `const_new`).
    #[track_caller]
    pub const fn const_new(raw: R, value: T) -> Self {
        Self::from_raw(raw, value)
    }

    /// A lock over an existing raw lock (lock_api's `from_raw`).
    #[track_caller]
    pub const fn from_raw(raw: R, value: T) -> Self {
        MeteredRwLock {
            raw,
            meta: Meta::new(Class::new(None, Location::caller()), LockKind::Rwlock),
            data: UnsafeCell::new(value),
        }
    }

    const fn from_class(class: Class, value: T) -> Self {
        MeteredRwLock {
            raw: R::INIT,
            meta: Meta::new(class, LockKind::Rwlock),
            data: UnsafeCell::new(value),
        }
    }

    /// Consumes the lock, returning the data.
    pub fn into_inner(self) -> T {
        self.data.into_inner()
    }
}

impl<R: RawRwLock, T: ?Sized> MeteredRwLock<R, T> {
    acquisitions! {
        /// Acquires shared read access, blocking while a writer holds the lock.
        read / read_at = lock_shared,
        /// Read access if available now; a failure counts in RJECT.
        try_read = try_lock_shared,
        Read -> MeteredReadGuard(SharedGuard);

        /// Acquires exclusive write access, blocking until no one holds the lock.
        write / write_at = lock_exclusive,
        /// Write access if available now; a failure counts in RJECT.
        try_write = try_lock_exclusive,
        Write -> MeteredWriteGuard(ExclusiveGuard);
    }

    /// A NOWAIT acquisition in `mode` at `site` of a lock already had
    /// (after a downgrade): counted, hold timed when sampled.
    pub(crate) fn begin_held<G>(
        &self,
        mode: Mode,
        site: &'static Location<'static>,
        held: G,
    ) -> (G, Hold) {
        let mut held = Some(held);
        meter::try_acquire(&self.meta, site, mode, || held.take())
            .expect("a lock already held is acquired at the first attempt")
    }

    /// Ends `hold` while `turn` changes the raw lock's mode, then begins a
    /// NOWAIT acquisition of the new mode at `site` ([`begin_held`]); the
    /// lock is never free between.
    ///
    /// [`begin_held`]: Self::begin_held
    pub(crate) fn switch_mode<G>(
        &self,
        hold: Hold,
        mode: Mode,
        site: &'static Location<'static>,
        turn: impl FnOnce() -> G,
    ) -> (G, Hold) {
        let mut turned = None;
        hold.release(|| turned = Some(turn()));
        let turned = turned.expect("release runs its closure");
        self.begin_held(mode, site, turned)
    }

    /// Whether anyone holds the lock right now.
    pub fn is_locked(&self) -> bool {
        self.raw.is_locked()
    }

    /// Whether a writer holds the lock right now.
    pub fn is_locked_exclusive(&self) -> bool {
        self.raw.is_locked_exclusive()
    }

    /// Mutable access without locking: `&mut self` proves exclusivity.
    pub fn get_mut(&mut self) -> &mut T {
        self.data.get_mut()
    }

    /// A raw pointer to the data.
    pub fn data_ptr(&self) -> *mut T {
        self.data.get()
    }

    /// The raw lock. Acquisitions made through it are not metered.
    ///
    /// # Safety
    /// Unlocking the raw lock while a guard of this lock exists is
    /// undefined behaviour, as in lock_api.
    pub unsafe fn raw(&self) -> &R {
        &self.raw
    }

    /// A read guard for a shared lock taken some other way; not counted,
    /// not timed.
    ///
    /// # Safety
    /// The current context must hold a shared lock no guard accounts for.
    pub unsafe fn make_read_guard_unchecked(&self) -> MeteredReadGuard<'_, R, T>
    where
        R::SharedGuard: Default,
    {
        MeteredReadGuard::new(self, Default::default(), Hold::none())
    }

    /// A write guard for an exclusive lock taken some other way; not
    /// counted, not timed.
    ///
    /// # Safety
    /// The current context must hold the exclusive lock, with no guard.
    pub unsafe fn make_write_guard_unchecked(&self) -> MeteredWriteGuard<'_, R, T>
    where
        R::ExclusiveGuard: Default,
    {
        MeteredWriteGuard::new(self, Default::default(), Hold::none())
    }

    force_unlocks! {
        /// Releases a shared lock whose guard was forgotten; that hold is
        /// never recorded.
        ///
        /// # Safety
        /// A shared lock must be held through a forgotten guard.
        force_unlock_read = unlock_shared(SharedGuard);

        /// Releases an exclusive lock whose guard was forgotten; that hold is
        /// never recorded.
        ///
        /// # Safety
        /// The exclusive lock must be held through a forgotten guard.
        force_unlock_write = unlock_exclusive(ExclusiveGuard);
    }
}

impl<R: RawRwLockFair, T: ?Sized> MeteredRwLock<R, T> {
    force_unlocks! {
        /// [`force_unlock_read`](Self::force_unlock_read), unlocking fairly.
        ///
        /// # Safety
        /// As for `force_unlock_read`.
        force_unlock_read_fair = unlock_shared_fair(SharedGuard);

        /// [`force_unlock_write`](Self::force_unlock_write), unlocking fairly.
        ///
        /// # Safety
        /// As for `force_unlock_write`.
        force_unlock_write_fair = unlock_exclusive_fair(ExclusiveGuard);
    }
}

impl<R: RawRwLockTimed, T: ?Sized> MeteredRwLock<R, T> {
    timed_acquisitions! {
        /// Read access, giving up after `timeout` (counted in RJECT).
        try_read_for = try_lock_shared_for,
        /// Read access, giving up at `deadline` (counted in RJECT).
        try_read_until = try_lock_shared_until,
        Read: try_lock_shared -> MeteredReadGuard;

        /// Write access, giving up after `timeout` (counted in RJECT).
        try_write_for = try_lock_exclusive_for,
        /// Write access, giving up at `deadline` (counted in RJECT).
        try_write_until = try_lock_exclusive_until,
        Write: try_lock_exclusive -> MeteredWriteGuard;
    }
}

impl<R: RawRwLockRecursive, T: ?Sized> MeteredRwLock<R, T> {
    /// Read access that does not queue behind a waiting writer, so a
    /// thread that already reads cannot deadlock by reading again. Counted
    /// in the `read` rows.
    #[track_caller]
    #[inline]
    pub fn read_recursive(&self) -> MeteredReadGuard<'_, R, T> {
        let (raw, hold) = meter::acquire(
            &self.meta,
            Location::caller(),
            Mode::Read,
            || self.raw.lock_shared_recursive(),
            || self.raw.try_lock_shared_recursive(),
            || (self.raw.lock_shared_recursive(), 0, 0),
        );
        MeteredReadGuard::new(self, raw, hold)
    }

    /// [`read_recursive`](Self::read_recursive) if available now; a failure
    /// counts in RJECT.
    #[track_caller]
    pub fn try_read_recursive(&self) -> Option<MeteredReadGuard<'_, R, T>> {
        meter::try_acquire(&self.meta, Location::caller(), Mode::Read, || {
            self.raw.try_lock_shared_recursive()
        })
        .map(|(raw, hold)| MeteredReadGuard::new(self, raw, hold))
    }
}

impl<R: RawRwLockRecursiveTimed, T: ?Sized> MeteredRwLock<R, T> {
    timed_acquisitions! {
        /// [`read_recursive`](Self::read_recursive), giving up after `timeout`.
        try_read_recursive_for = try_lock_shared_recursive_for,
        /// [`read_recursive`](Self::read_recursive), giving up at `deadline`.
        try_read_recursive_until = try_lock_shared_recursive_until,
        Read: try_lock_shared_recursive -> MeteredReadGuard;
    }
}

impl<R: RawRwLockUpgrade, T: ?Sized> MeteredRwLock<R, T> {
    acquisitions! {
        /// Shared access that can later be upgraded to write access; only one
        /// upgradable reader at a time, beside any number of plain readers.
        upgradable_read / upgradable_at = lock_upgradable,
        /// Upgradable access if available now; a failure counts in RJECT.
        try_upgradable_read = try_lock_upgradable,
        Upgradable -> MeteredUpgradableReadGuard(UpgradableGuard);
    }

    /// An upgradable guard for a lock taken some other way; not counted,
    /// not timed.
    ///
    /// # Safety
    /// The current context must hold an upgradable lock with no guard.
    pub unsafe fn make_upgradable_guard_unchecked(&self) -> MeteredUpgradableReadGuard<'_, R, T>
    where
        R::UpgradableGuard: Default,
    {
        MeteredUpgradableReadGuard::new(self, Default::default(), Hold::none())
    }

    /// One metered upgrade of `up` at `site`: a `write` acquisition.
    ///
    /// Unobserved, the raw upgrade alone, inline: through the guard slot
    /// the observed path needs, the unobserved upgrade cost 112
    /// instructions per upgradable_read + upgrade against parking_lot's 22
    /// (callgrind).
    #[inline]
    pub(crate) fn upgrade_at(
        &self,
        up: R::UpgradableGuard,
        site: &'static Location<'static>,
    ) -> (R::ExclusiveGuard, Hold) {
        if !recorder::observing() {
            // SAFETY: `up` is this lock's upgradable guard, held.
            return (unsafe { self.raw.upgrade(up) }, Hold::none());
        }
        self.upgrade_observed(up, site)
    }

    /// [`upgrade_at`](Self::upgrade_at) observed
    /// (`meter::acquire_observed`: the test is not made again).
    #[inline(never)]
    fn upgrade_observed(
        &self,
        up: R::UpgradableGuard,
        site: &'static Location<'static>,
    ) -> (R::ExclusiveGuard, Hold) {
        let slot = Cell::new(Some(up));
        let take = || slot.take().expect("the upgradable guard is used once");
        meter::acquire_observed(
            &self.meta,
            site,
            Mode::Write,
            // SAFETY: `take()` is this guard's upgradable lock, held.
            || unsafe { self.raw.upgrade(take()) },
            // SAFETY: as above; a failed try gives the guard back.
            || attempt_from(&slot, |up| unsafe { self.raw.try_upgrade(up) }),
            // SAFETY: as above.
            || (unsafe { self.raw.upgrade(take()) }, 0, 0),
        )
    }

    /// One metered try-upgrade at `site`; gives `up` back on failure.
    pub(crate) fn try_upgrade_at(
        &self,
        up: R::UpgradableGuard,
        site: &'static Location<'static>,
    ) -> Result<(R::ExclusiveGuard, Hold), R::UpgradableGuard> {
        let slot = Cell::new(Some(up));
        let got = meter::try_acquire(&self.meta, site, Mode::Write, || {
            // SAFETY: the slot holds this guard's upgradable lock, held.
            attempt_from(&slot, |up| unsafe { self.raw.try_upgrade(up) })
        });
        got.ok_or_else(|| {
            slot.take()
                .expect("a failed try-upgrade gives the guard back")
        })
    }
}

impl<R: RawRwLockUpgradeTimed, T: ?Sized> MeteredRwLock<R, T> {
    timed_acquisitions! {
        /// Upgradable access, giving up after `timeout` (counted in RJECT).
        try_upgradable_read_for = try_lock_upgradable_for,
        /// Upgradable access, giving up at `deadline` (counted in RJECT).
        try_upgradable_read_until = try_lock_upgradable_until,
        Upgradable: try_lock_upgradable -> MeteredUpgradableReadGuard;
    }

    /// One metered timed upgrade at `site`: `wait` is called with the raw
    /// lock and `up`, and tries to upgrade until its deadline.
    pub(crate) fn try_upgrade_timed_at(
        &self,
        up: R::UpgradableGuard,
        site: &'static Location<'static>,
        wait: impl FnOnce(&R, R::UpgradableGuard) -> Result<R::ExclusiveGuard, R::UpgradableGuard>,
    ) -> Result<(R::ExclusiveGuard, Hold), R::UpgradableGuard> {
        let slot = Cell::new(Some(up));
        let got = meter::acquire_timed(
            &self.meta,
            site,
            Mode::Write,
            // SAFETY: the slot holds this guard's upgradable lock, held.
            || attempt_from(&slot, |up| unsafe { self.raw.try_upgrade(up) }),
            || (attempt_from(&slot, |up| wait(&self.raw, up)), 0, 0),
        );
        got.ok_or_else(|| slot.take().expect("a failed upgrade gives the guard back"))
    }
}

/// Runs `attempt` on the guard in `slot`; a guard it gives back (a failed
/// try) goes back in the slot, for the next attempt or the caller. `None`
/// when the slot is empty or the attempt fails.
fn attempt_from<G, W>(
    slot: &Cell<Option<G>>,
    attempt: impl FnOnce(G) -> Result<W, G>,
) -> Option<W> {
    match attempt(slot.take()?) {
        Ok(w) => Some(w),
        Err(g) => {
            slot.set(Some(g));
            None
        }
    }
}

from_and_default!([R: RawRwLock,] MeteredRwLock<R, T> => value);

impl<R: RawRwLock, T: ?Sized + fmt::Debug> fmt::Debug for MeteredRwLock<R, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut d = f.debug_struct("RwLock");
        if self
            .try_read_unmetered(|data| d.field("data", &data))
            .is_none()
        {
            d.field("data", &format_args!("<locked>"));
        }
        d.finish()
    }
}

impl<R: RawRwLock, T: ?Sized> MeteredRwLock<R, T> {
    /// Runs `f` on the data if no writer holds the lock, without counting:
    /// for `Debug` impls of wrappers, which look rather than acquire.
    pub(crate) fn try_read_unmetered<U>(&self, f: impl FnOnce(&T) -> U) -> Option<U> {
        let g = self.raw.try_lock_shared()?;
        // SAFETY: we hold a read lock until `unlock_shared` below.
        let out = f(unsafe { &*self.data.get() });
        // SAFETY: `g` is the state of the acquisition just made.
        unsafe { self.raw.unlock_shared(g) };
        Some(out)
    }
}
