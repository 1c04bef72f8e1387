//! The guards of [`MeteredRwLock`]: read, write, upgradable and mapped.
//!
//! Every guard carries the [`Hold`] of its acquisition and records it when
//! the lock (in its mode) is released. None is `Send`: the hold is
//! recorded by the thread that acquired.

use std::marker::PhantomData;
use std::mem::ManuallyDrop;
use std::ops::{Deref, DerefMut};
use std::panic::Location;
use std::ptr;

use lock_api::{
    RawRwLock, RawRwLockDowngrade, RawRwLockFair, RawRwLockUpgrade, RawRwLockUpgradeDowngrade,
    RawRwLockUpgradeFair, RawRwLockUpgradeTimed,
};

use super::MeteredRwLock;
use crate::class::Mode;
use crate::meter::Hold;
use crate::on_drop::OnDrop;
use crate::recorder;

/// Moves a guard's fields out without running its `Drop`.
macro_rules! into_parts {
    ($s:expr, $($field:ident),*) => {{
        let mut s = ManuallyDrop::new($s);
        // SAFETY: `s` is never used or dropped again; each field is moved
        // out exactly once.
        unsafe {
            let raw = ManuallyDrop::take(&mut s.raw);
            ($(s.$field,)* raw, ptr::read(&s.hold))
        }
    }};
}

// The guards share most of their API, so it is written once, in the three
// macros below, and stamped out per guard, as lock_api does for its guards:
// the guards differ only in the raw guard they carry and in the raw-lock
// method that ends it, which a trait over the guards would have to name
// anyway, at the cost of one more public-looking layer.

/// A guard that owns its [`MeteredRwLock`] borrow and can release and
/// reacquire it in place: the struct (not `Send`, `Sync` as `&T` is),
/// `new`, `rwlock`, `unlocked`, and the private `end_hold` / `relock` /
/// `unlock_run` the fair forms share.
macro_rules! relockable_guard {
    (
        $(#[$struct_doc:meta])*
        $guard:ident<R: $bound:ident>, raw: $raw:ident,
        unlock: $unlock:ident, reacquire: $at:ident,
        rwlock: $(#[$rwlock_doc:meta])*
        unlocked: $(#[$unlocked_doc:meta])*
    ) => {
        $(#[$struct_doc])*
        #[must_use = "the lock is released as soon as the guard is dropped"]
        pub struct $guard<'a, R: $bound, T: ?Sized> {
            lock: &'a MeteredRwLock<R, T>,
            raw: ManuallyDrop<R::$raw>,
            hold: Hold,
        }

        // SAFETY: sharing a guard only shares `&T`.
        unsafe impl<R: $bound + Sync, T: ?Sized + Sync> Sync for $guard<'_, R, T> {}

        impl<'a, R: $bound, T: ?Sized> $guard<'a, R, T> {
            pub(super) fn new(lock: &'a MeteredRwLock<R, T>, raw: R::$raw, hold: Hold) -> Self {
                $guard {
                    lock,
                    raw: ManuallyDrop::new(raw),
                    hold,
                }
            }

            $(#[$rwlock_doc])*
            pub fn rwlock(s: &Self) -> &'a MeteredRwLock<R, T> {
                s.lock
            }

            $(#[$unlocked_doc])*
            #[track_caller]
            pub fn unlocked<F, U>(s: &mut Self, f: F) -> U
            where
                F: FnOnce() -> U,
            {
                let lock = s.lock;
                // SAFETY: `raw` is this guard's lock, in the mode `$unlock`
                // releases.
                s.unlock_run(|raw| unsafe { lock.raw.$unlock(raw) }, f)
            }

            /// Ends the hold with `unlock`, runs `f`, and reacquires at the
            /// caller's site, on return or unwind alike.
            #[track_caller]
            fn unlock_run<U>(&mut self, unlock: impl FnOnce(R::$raw), f: impl FnOnce() -> U) -> U {
                let site = Location::caller();
                self.end_hold(unlock);
                let _relock = OnDrop(|| self.relock(site));
                f()
            }

            fn end_hold(&mut self, unlock: impl FnOnce(R::$raw)) {
                // SAFETY: put back by `relock` before the guard is used again.
                let raw = unsafe { ManuallyDrop::take(&mut self.raw) };
                std::mem::replace(&mut self.hold, Hold::none()).release(|| unlock(raw));
            }

            fn relock(&mut self, site: &'static Location<'static>) {
                let (raw, hold) = self.lock.$at(site);
                self.raw = ManuallyDrop::new(raw);
                self.hold = hold;
            }
        }
    };
}

/// The fair-unlock API of a [`relockable_guard!`]: `unlock_fair`,
/// `unlocked_fair` and `bump`.
macro_rules! fair_guard {
    (
        $guard:ident<R: $bound:ident>, unlock_fair: $unlock_fair:ident, bump: $bump:ident,
        $(#[$bump_doc:meta])*
    ) => {
        impl<R: $bound, T: ?Sized> $guard<'_, R, T> {
            /// Unlocks fairly.
            pub fn unlock_fair(s: Self) {
                let (lock, raw, hold) = into_parts!(s, lock);
                // SAFETY: `raw` is this guard's lock, in the mode
                // `$unlock_fair` releases.
                hold.release(|| unsafe { lock.raw.$unlock_fair(raw) });
            }

            /// [`unlocked`](Self::unlocked) with a fair unlock.
            #[track_caller]
            pub fn unlocked_fair<F, U>(s: &mut Self, f: F) -> U
            where
                F: FnOnce() -> U,
            {
                let lock = s.lock;
                // SAFETY: as in `unlock_fair`.
                s.unlock_run(|raw| unsafe { lock.raw.$unlock_fair(raw) }, f)
            }

            $(#[$bump_doc])*
            #[track_caller]
            pub fn bump(s: &mut Self) {
                if !recorder::observing() {
                    // SAFETY: `raw` is this guard's lock, in the mode `$bump`
                    // expects.
                    unsafe { s.lock.raw.$bump(&mut s.raw) };
                    return;
                }
                Self::unlocked_fair(s, || ());
            }
        }
    };
}

relockable_guard! {
    /// Shared access to a [`MeteredRwLock`]'s data.
    MeteredReadGuard<R: RawRwLock>, raw: SharedGuard,
    unlock: unlock_shared, reacquire: read_at,
    rwlock: /// The lock this guard reads.
    unlocked:
    /// Unlocks, runs `f`, and reads again; the reacquisition counts at the
    /// caller's site.
}

relockable_guard! {
    /// Exclusive access to a [`MeteredRwLock`]'s data.
    MeteredWriteGuard<R: RawRwLock>, raw: ExclusiveGuard,
    unlock: unlock_exclusive, reacquire: write_at,
    rwlock: /// The lock this guard writes.
    unlocked:
    /// Unlocks, runs `f`, and writes again; the reacquisition counts at
    /// the caller's site.
}

relockable_guard! {
    /// Upgradable shared access to a [`MeteredRwLock`]'s data: readable now,
    /// writable after `upgrade`.
    MeteredUpgradableReadGuard<R: RawRwLockUpgrade>, raw: UpgradableGuard,
    unlock: unlock_upgradable, reacquire: upgradable_at,
    rwlock: /// The lock this guard reads.
    unlocked:
    /// Unlocks, runs `f`, and takes upgradable access again; the
    /// reacquisition counts at the caller's site.
}

fair_guard! {
    MeteredReadGuard<R: RawRwLockFair>, unlock_fair: unlock_shared_fair, bump: bump_shared,
    /// Lets waiting threads have the lock, then reads again (observed:
    /// always, counted at the caller's site).
}

fair_guard! {
    MeteredWriteGuard<R: RawRwLockFair>, unlock_fair: unlock_exclusive_fair, bump: bump_exclusive,
    /// Lets a waiting thread have the lock, then writes again (observed:
    /// always, counted at the caller's site).
}

fair_guard! {
    MeteredUpgradableReadGuard<R: RawRwLockUpgradeFair>,
    unlock_fair: unlock_upgradable_fair, bump: bump_upgradable,
    /// Lets waiting threads have the lock, then takes upgradable access
    /// again (observed: always, counted at the caller's site).
}

impl<'a, R: RawRwLock, T: ?Sized> MeteredReadGuard<'a, R, T> {
    map_fns! {
        /// A guard for a part of the data; the hold carries over.
        MeteredMappedReadGuard<R>, &T as *const
    }

    fn into_mapped<U: ?Sized>(s: Self, data: *const U) -> MeteredMappedReadGuard<'a, R, U> {
        let (lock, raw, hold) = into_parts!(s, lock);
        MeteredMappedReadGuard::new(&lock.raw, data, raw, hold)
    }
}

impl<'a, R: RawRwLock, T: ?Sized> MeteredWriteGuard<'a, R, T> {
    map_fns! {
        /// A guard for a part of the data; the hold carries over.
        MeteredMappedWriteGuard<R>, &mut T as *mut
    }

    fn into_mapped<U: ?Sized>(s: Self, data: *mut U) -> MeteredMappedWriteGuard<'a, R, U> {
        let (lock, raw, hold) = into_parts!(s, lock);
        MeteredMappedWriteGuard::new(&lock.raw, data, raw, hold)
    }
}

impl<'a, R: RawRwLockDowngrade, T: ?Sized> MeteredWriteGuard<'a, R, T> {
    /// Turns write access into read access without letting a writer in
    /// between: the write hold ends, a read acquisition begins here.
    #[track_caller]
    pub fn downgrade(s: Self) -> MeteredReadGuard<'a, R, T> {
        let (lock, raw, hold) = into_parts!(s, lock);
        // SAFETY: `raw` is this guard's exclusive lock.
        let turn = || unsafe { lock.raw.downgrade(raw) };
        let (raw, hold) = lock.switch_mode(hold, Mode::Read, Location::caller(), turn);
        MeteredReadGuard::new(lock, raw, hold)
    }
}

impl<'a, R: RawRwLockUpgradeDowngrade, T: ?Sized> MeteredWriteGuard<'a, R, T> {
    /// Turns write access into upgradable access: the write hold ends, an
    /// upgradable acquisition begins here.
    #[track_caller]
    pub fn downgrade_to_upgradable(s: Self) -> MeteredUpgradableReadGuard<'a, R, T> {
        Self::downgrade_to_upgradable_at(s, Location::caller())
    }
}

impl<'a, R: RawRwLockUpgrade, T: ?Sized> MeteredUpgradableReadGuard<'a, R, T> {
    /// Waits for the readers to leave and takes write access: a `write`
    /// acquisition at the caller's site; the upgradable hold then ends.
    #[track_caller]
    #[inline]
    pub fn upgrade(s: Self) -> MeteredWriteGuard<'a, R, T> {
        let (lock, raw, hold) = into_parts!(s, lock);
        let (w, whold) = lock.upgrade_at(raw, Location::caller());
        hold.release(|| ());
        MeteredWriteGuard::new(lock, w, whold)
    }

    /// Write access if no reader is left now; the guard back otherwise
    /// (counted in the `write` row's RJECT).
    #[track_caller]
    #[allow(clippy::result_large_err)]
    pub fn try_upgrade(s: Self) -> Result<MeteredWriteGuard<'a, R, T>, Self> {
        let (lock, raw, hold) = into_parts!(s, lock);
        let got = lock.try_upgrade_at(raw, Location::caller());
        Self::upgraded_or_back(lock, hold, got)
    }

    /// The write guard of a successful try-upgrade (the upgradable `hold`
    /// ends), or this guard rebuilt from the raw guard given back.
    #[allow(clippy::result_large_err)]
    fn upgraded_or_back(
        lock: &'a MeteredRwLock<R, T>,
        hold: Hold,
        got: Result<(R::ExclusiveGuard, Hold), R::UpgradableGuard>,
    ) -> Result<MeteredWriteGuard<'a, R, T>, Self> {
        match got {
            Ok((w, whold)) => {
                hold.release(|| ());
                Ok(MeteredWriteGuard::new(lock, w, whold))
            }
            Err(raw) => Err(Self::new(lock, raw, hold)),
        }
    }
}

impl<'a, R: RawRwLockUpgradeDowngrade, T: ?Sized> MeteredUpgradableReadGuard<'a, R, T> {
    /// Turns upgradable access into plain read access: the upgradable
    /// hold ends, a read acquisition begins here.
    #[track_caller]
    pub fn downgrade(s: Self) -> MeteredReadGuard<'a, R, T> {
        let (lock, raw, hold) = into_parts!(s, lock);
        // SAFETY: `raw` is this guard's upgradable lock.
        let turn = || unsafe { lock.raw.downgrade_upgradable(raw) };
        let (raw, hold) = lock.switch_mode(hold, Mode::Read, Location::caller(), turn);
        MeteredReadGuard::new(lock, raw, hold)
    }

    /// Upgrades, runs `f` on the data, and downgrades back to upgradable.
    #[track_caller]
    pub fn with_upgraded<Ret, F: FnOnce(&mut T) -> Ret>(&mut self, f: F) -> Ret {
        let site = Location::caller();
        // SAFETY: `raw` is put back by `run_upgraded`.
        let raw = unsafe { ManuallyDrop::take(&mut self.raw) };
        let (w, whold) = self.lock.upgrade_at(raw, site);
        self.run_upgraded(w, whold, site, f)
    }

    /// Like [`with_upgraded`](Self::with_upgraded) if the upgrade succeeds
    /// now; `None` (counted in RJECT) otherwise.
    #[track_caller]
    pub fn try_with_upgraded<Ret, F: FnOnce(&mut T) -> Ret>(&mut self, f: F) -> Option<Ret> {
        let (lock, site) = (self.lock, Location::caller());
        self.try_run_upgraded(site, |raw| lock.try_upgrade_at(raw, site), f)
    }

    /// Tries to upgrade with `upgrade` and, if it succeeds, runs `f` as
    /// [`run_upgraded`](Self::run_upgraded) does; else puts the raw guard
    /// back and returns `None`.
    fn try_run_upgraded<Ret>(
        &mut self,
        site: &'static Location<'static>,
        upgrade: impl FnOnce(
            R::UpgradableGuard,
        ) -> Result<(R::ExclusiveGuard, Hold), R::UpgradableGuard>,
        f: impl FnOnce(&mut T) -> Ret,
    ) -> Option<Ret> {
        // SAFETY: `raw` is put back on every path below.
        let raw = unsafe { ManuallyDrop::take(&mut self.raw) };
        match upgrade(raw) {
            Ok((w, whold)) => Some(self.run_upgraded(w, whold, site, f)),
            Err(raw) => {
                self.raw = ManuallyDrop::new(raw);
                None
            }
        }
    }

    /// Runs `f` under the write lock `w`, then downgrades back into this
    /// guard, on return or unwind alike (as lock_api).
    fn run_upgraded<Ret>(
        &mut self,
        w: R::ExclusiveGuard,
        whold: Hold,
        site: &'static Location<'static>,
        f: impl FnOnce(&mut T) -> Ret,
    ) -> Ret {
        std::mem::replace(&mut self.hold, Hold::none()).release(|| ());
        let lock = self.lock;
        let mut writer = Some(MeteredWriteGuard::new(lock, w, whold));
        let this = &mut *self;
        let _restore = OnDrop(|| {
            let Some(writer) = writer.take() else { return };
            let back = MeteredWriteGuard::downgrade_to_upgradable_at(writer, site);
            let (_, raw, hold) = into_parts!(back, lock);
            this.raw = ManuallyDrop::new(raw);
            this.hold = hold;
        });
        // SAFETY: `writer` holds the write lock until `_restore` runs.
        f(unsafe { &mut *lock.data.get() })
    }
}

impl<'a, R: RawRwLockUpgradeDowngrade, T: ?Sized> MeteredWriteGuard<'a, R, T> {
    fn downgrade_to_upgradable_at(
        s: Self,
        site: &'static Location<'static>,
    ) -> MeteredUpgradableReadGuard<'a, R, T> {
        let (lock, raw, hold) = into_parts!(s, lock);
        // SAFETY: `raw` is this guard's exclusive lock.
        let turn = || unsafe { lock.raw.downgrade_to_upgradable(raw) };
        let (raw, hold) = lock.switch_mode(hold, Mode::Upgradable, site, turn);
        MeteredUpgradableReadGuard::new(lock, raw, hold)
    }
}

impl<'a, R: RawRwLockUpgradeTimed, T: ?Sized> MeteredUpgradableReadGuard<'a, R, T> {
    timed_pair! {
        /// Write access if the readers leave within `timeout`; the guard back
        /// otherwise (counted in the `write` row's RJECT).
        fn try_upgrade_for(timeout: R::Duration) = R::try_upgrade_for;
        /// Write access if the readers leave by `deadline`; the guard back
        /// otherwise (counted in the `write` row's RJECT).
        fn try_upgrade_until(deadline: R::Instant) = R::try_upgrade_until;
        #[track_caller]
        #[allow(clippy::result_large_err)]
        pub fn [] (s: Self,) limit () -> Result<MeteredWriteGuard<'a, R, T>, Self>,
        |wait, limit| {
            let (lock, raw, hold) = into_parts!(s, lock);
            // SAFETY: `up` is this guard's upgradable lock.
            let wait = |r: &R, up| unsafe { wait(r, up, limit) };
            let got = lock.try_upgrade_timed_at(raw, Location::caller(), wait);
            Self::upgraded_or_back(lock, hold, got)
        }
    }
}

impl<'a, R: RawRwLockUpgradeTimed + RawRwLockUpgradeDowngrade, T: ?Sized>
    MeteredUpgradableReadGuard<'a, R, T>
{
    timed_pair! {
        /// [`try_with_upgraded`](Self::try_with_upgraded), waiting up to `timeout`.
        fn try_with_upgraded_for(timeout: R::Duration) = R::try_upgrade_for;
        /// [`try_with_upgraded`](Self::try_with_upgraded), waiting until `deadline`.
        fn try_with_upgraded_until(deadline: R::Instant) = R::try_upgrade_until;
        #[track_caller]
        pub fn [Ret, F: FnOnce(&mut T) -> Ret] (&mut self,) limit (, f: F) -> Option<Ret>,
        |wait, limit| {
            let (lock, site) = (self.lock, Location::caller());
            // SAFETY: `up` is this guard's upgradable lock.
            let wait = |r: &R, up| unsafe { wait(r, up, limit) };
            self.try_run_upgraded(site, |raw| lock.try_upgrade_timed_at(raw, site, wait), f)
        }
    }
}

/// A guard narrowed by `map` to a part of the data, over the raw lock
/// alone: the struct (not `Send`, `Sync` as `&T` is), `new`, the `map`
/// forms again, and `unlock_fair` through `$unlock_fair`.
macro_rules! mapped_guard {
    (
        $(#[$doc:meta])* $guard:ident, raw: $raw:ident, &mut T as *mut,
        unlock_fair: $unlock_fair:ident
    ) => {
        mapped_guard!(@ (mut) $(#[$doc])* $guard, $raw, *mut, $unlock_fair);
    };
    (
        $(#[$doc:meta])* $guard:ident, raw: $raw:ident, &T as *const,
        unlock_fair: $unlock_fair:ident
    ) => {
        mapped_guard!(@ () $(#[$doc])* $guard, $raw, *const, $unlock_fair);
    };
    (
        @ ($($mut:ident)?) $(#[$struct_doc:meta])* $guard:ident, $raw:ident, *$ptr:tt,
        $unlock_fair:ident
    ) => {
        $(#[$struct_doc])*
        #[must_use = "the lock is released as soon as the guard is dropped"]
        pub struct $guard<'a, R: RawRwLock, T: ?Sized> {
            lock: &'a R,
            data: *$ptr T,
            raw: ManuallyDrop<R::$raw>,
            hold: Hold,
            marker: PhantomData<&'a $($mut)? T>,
        }

        // SAFETY: sharing a guard only shares `&T`.
        unsafe impl<R: RawRwLock + Sync, T: ?Sized + Sync> Sync for $guard<'_, R, T> {}

        impl<'a, R: RawRwLock, T: ?Sized> $guard<'a, R, T> {
            fn new(lock: &'a R, data: *$ptr T, raw: R::$raw, hold: Hold) -> Self {
                $guard {
                    lock,
                    data,
                    raw: ManuallyDrop::new(raw),
                    hold,
                    marker: PhantomData,
                }
            }

            map_fns! {
                /// Narrows the guard further.
                $guard<R>, &$($mut)? T as *$ptr
            }

            fn into_mapped<U: ?Sized>(s: Self, data: *$ptr U) -> $guard<'a, R, U> {
                let (lock, raw, hold) = into_parts!(s, lock);
                $guard::new(lock, data, raw, hold)
            }
        }

        impl<R: RawRwLockFair, T: ?Sized> $guard<'_, R, T> {
            /// Unlocks fairly.
            pub fn unlock_fair(s: Self) {
                let (lock, raw, hold) = into_parts!(s, lock);
                // SAFETY: `raw` is this guard's lock, in the mode
                // `$unlock_fair` releases.
                hold.release(|| unsafe { lock.$unlock_fair(raw) });
            }
        }
    };
}

mapped_guard! {
    /// Shared access to a part of a [`MeteredRwLock`]'s data, made by `map`.
    MeteredMappedReadGuard, raw: SharedGuard, &T as *const,
    unlock_fair: unlock_shared_fair
}

mapped_guard! {
    /// Exclusive access to a part of a [`MeteredRwLock`]'s data, made by `map`.
    MeteredMappedWriteGuard, raw: ExclusiveGuard, &mut T as *mut,
    unlock_fair: unlock_exclusive_fair
}

impl<'a, R: RawRwLock, T: ?Sized> MeteredMappedReadGuard<'a, R, T> {
    /// lock_api 0.4's name for [`try_map_or_err`](Self::try_map_or_err) on
    /// this guard.
    #[allow(clippy::type_complexity)]
    pub fn try_map_or_else<U: ?Sized, F, E>(
        s: Self,
        f: F,
    ) -> Result<MeteredMappedReadGuard<'a, R, U>, (Self, E)>
    where
        F: FnOnce(&T) -> Result<&U, E>,
    {
        Self::try_map_or_err(s, f)
    }
}

/// `Deref` (and, for `mut`, `DerefMut`) to the data at the pointer `$data`
/// computes from the guard `$g`, and a `Drop` that ends the hold and
/// releases with `$unlock` on the raw lock `$raw_lock` (where `blaming`
/// is given, a timed hold others waited for is blamed for their wait:
/// `stacks::blame`). The drop stays `#[inline]`: it is the release path.
///
/// `untimed_apart` (read guards) tests for an untimed (unobserved) hold
/// first and releases it with no closure: with one closure for every
/// path, a read guard's state (std's guard, two words, under
/// `sync::RwLock`) went to the stack on the unobserved path too, where
/// the observed paths take it by address (callgrind, unobserved
/// `sync::RwLock` read: 38 instructions, std's 20; 36 apart). The write
/// guard keeps one test: apart, LLVM ordered the tests worse and the
/// unobserved upgrade went from 41 to 46 instructions.
macro_rules! guard_access {
    ($(
        $guard:ident<R: $bound:ident> $($mut:ident)?: |$g:ident| $data:expr,
        $raw_lock:expr, $unlock:ident $(, $blaming:ident $($apart:ident)?)?;
    )*) => {$(
        impl<R: $bound, T: ?Sized> Deref for $guard<'_, R, T> {
            type Target = T;
            fn deref(&self) -> &T {
                let $g = self;
                // SAFETY: the guard proves the lock is held in its mode,
                // which lets everyone holding it read.
                unsafe { &*$data }
            }
        }

        $(guard_access!(@ $mut $guard<R: $bound> |$g| $data);)?

        impl<R: $bound, T: ?Sized> Drop for $guard<'_, R, T> {
            #[inline]
            fn drop(&mut self) {
                // SAFETY: `raw` is taken exactly once, here.
                let raw = unsafe { ManuallyDrop::take(&mut self.raw) };
                let $g = &*self;
                let lock: &R = $raw_lock;
                guard_access!(@release self, lock, raw, $unlock $(, $blaming $($apart)?)?);
            }
        }
    )*};
    (@ mut $guard:ident<R: $bound:ident> |$g:ident| $data:expr) => {
        impl<R: $bound, T: ?Sized> DerefMut for $guard<'_, R, T> {
            fn deref_mut(&mut self) -> &mut T {
                let $g = self;
                // SAFETY: the guard proves the write lock is held, exclusively.
                unsafe { &mut *$data }
            }
        }
    };
    // SAFETY (each arm): `$raw` is the state of this guard's acquisition,
    // in the mode `$unlock` releases, and is used once.
    (@release $s:ident, $lock:ident, $raw:ident, $unlock:ident, blaming untimed_apart) => {
        if $s.hold.is_untimed() {
            // SAFETY: as above.
            return unsafe { $lock.$unlock($raw) };
        }
        guard_access!(@release $s, $lock, $raw, $unlock, blaming)
    };
    (@release $s:ident, $lock:ident, $raw:ident, $unlock:ident, blaming) => {
        // SAFETY: as above.
        $s.hold.release_blaming(&$s.lock.meta, move || unsafe { $lock.$unlock($raw) })
    };
    (@release $s:ident, $lock:ident, $raw:ident, $unlock:ident) => {
        // SAFETY: as above.
        $s.hold.release(move || unsafe { $lock.$unlock($raw) })
    };
}

guard_access! {
    MeteredReadGuard<R: RawRwLock>: |g| g.lock.data.get(),
        &g.lock.raw, unlock_shared, blaming untimed_apart;
    MeteredWriteGuard<R: RawRwLock> mut: |g| g.lock.data.get(),
        &g.lock.raw, unlock_exclusive, blaming;
    MeteredUpgradableReadGuard<R: RawRwLockUpgrade>: |g| g.lock.data.get(),
        &g.lock.raw, unlock_upgradable;
    MeteredMappedReadGuard<R: RawRwLock>: |g| g.data, g.lock, unlock_shared;
    MeteredMappedWriteGuard<R: RawRwLock> mut: |g| g.data, g.lock, unlock_exclusive;
}

fmt_as_data!(
    [R: RawRwLock,] MeteredReadGuard<'_, R, T>,
    [R: RawRwLock,] MeteredWriteGuard<'_, R, T>,
    [R: RawRwLockUpgrade,] MeteredUpgradableReadGuard<'_, R, T>,
    [R: RawRwLock,] MeteredMappedReadGuard<'_, R, T>,
    [R: RawRwLock,] MeteredMappedWriteGuard<'_, R, T>,
);

impl<R: RawRwLock, T: ?Sized> MeteredWriteGuard<'_, R, T> {
    /// The raw lock state and the hold, without unlocking, for wrappers
    /// that keep the parts in the lock (`sync::RwLock`).
    pub(crate) fn into_raw_parts(s: Self) -> (R::ExclusiveGuard, Hold) {
        let (_, raw, hold) = into_parts!(s, lock);
        (raw, hold)
    }
}

impl<R: RawRwLock, T: ?Sized> MeteredRwLock<R, T> {
    /// A write guard again from [`MeteredWriteGuard::into_raw_parts`].
    ///
    /// # Safety
    /// `raw` and `hold` are the parts of a write guard of `self` whose lock
    /// is still held, and no other guard of that acquisition exists.
    pub(crate) unsafe fn write_guard_from_parts(
        &self,
        raw: R::ExclusiveGuard,
        hold: Hold,
    ) -> MeteredWriteGuard<'_, R, T> {
        MeteredWriteGuard::new(self, raw, hold)
    }
}
