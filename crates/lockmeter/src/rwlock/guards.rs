//! The guards of [`MeteredRwLock`]: read, write, upgradable and mapped.
//!
//! Every guard carries the [`Hold`] of its acquisition and records it when
//! the lock (in its mode) is released. None is `Send`: the hold is
//! recorded by the thread that acquired.

use std::fmt;
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

/// Shared access to a [`MeteredRwLock`]'s data.
#[must_use = "the lock is released as soon as the guard is dropped"]
pub struct MeteredReadGuard<'a, R: RawRwLock, T: ?Sized> {
    lock: &'a MeteredRwLock<R, T>,
    raw: ManuallyDrop<R::SharedGuard>,
    hold: Hold,
}

/// Exclusive access to a [`MeteredRwLock`]'s data.
#[must_use = "the lock is released as soon as the guard is dropped"]
pub struct MeteredWriteGuard<'a, R: RawRwLock, T: ?Sized> {
    lock: &'a MeteredRwLock<R, T>,
    raw: ManuallyDrop<R::ExclusiveGuard>,
    hold: Hold,
}

/// Upgradable shared access to a [`MeteredRwLock`]'s data: readable now,
/// writable after `upgrade`.
#[must_use = "the lock is released as soon as the guard is dropped"]
pub struct MeteredUpgradableReadGuard<'a, R: RawRwLockUpgrade, T: ?Sized> {
    lock: &'a MeteredRwLock<R, T>,
    raw: ManuallyDrop<R::UpgradableGuard>,
    hold: Hold,
}

/// Shared access to a part of a [`MeteredRwLock`]'s data, made by `map`.
#[must_use = "the lock is released as soon as the guard is dropped"]
pub struct MeteredMappedReadGuard<'a, R: RawRwLock, T: ?Sized> {
    lock: &'a R,
    data: *const T,
    raw: ManuallyDrop<R::SharedGuard>,
    hold: Hold,
    marker: PhantomData<&'a T>,
}

/// Exclusive access to a part of a [`MeteredRwLock`]'s data, made by `map`.
#[must_use = "the lock is released as soon as the guard is dropped"]
pub struct MeteredMappedWriteGuard<'a, R: RawRwLock, T: ?Sized> {
    lock: &'a R,
    data: *mut T,
    raw: ManuallyDrop<R::ExclusiveGuard>,
    hold: Hold,
    marker: PhantomData<&'a mut T>,
}

// SAFETY: sharing a guard only shares `&T`.
unsafe impl<R: RawRwLock + Sync, T: ?Sized + Sync> Sync for MeteredReadGuard<'_, R, T> {}
// SAFETY: sharing a guard only shares `&T`.
unsafe impl<R: RawRwLock + Sync, T: ?Sized + Sync> Sync for MeteredWriteGuard<'_, R, T> {}
// SAFETY: sharing a guard only shares `&T`.
unsafe impl<R: RawRwLockUpgrade + Sync, T: ?Sized + Sync> Sync
    for MeteredUpgradableReadGuard<'_, R, T>
{
}
// SAFETY: sharing a guard only shares `&T`.
unsafe impl<R: RawRwLock + Sync, T: ?Sized + Sync> Sync for MeteredMappedReadGuard<'_, R, T> {}
// SAFETY: sharing a guard only shares `&T`.
unsafe impl<R: RawRwLock + Sync, T: ?Sized + Sync> Sync for MeteredMappedWriteGuard<'_, R, T> {}

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

impl<'a, R: RawRwLock, T: ?Sized> MeteredReadGuard<'a, R, T> {
    pub(super) fn new(lock: &'a MeteredRwLock<R, T>, raw: R::SharedGuard, hold: Hold) -> Self {
        MeteredReadGuard {
            lock,
            raw: ManuallyDrop::new(raw),
            hold,
        }
    }

    /// The lock this guard reads.
    pub fn rwlock(s: &Self) -> &'a MeteredRwLock<R, T> {
        s.lock
    }

    /// A guard for a part of the data; the hold carries over.
    pub fn map<U: ?Sized, F>(s: Self, f: F) -> MeteredMappedReadGuard<'a, R, U>
    where
        F: FnOnce(&T) -> &U,
    {
        let data: *const U = f(&s);
        let (lock, raw, hold) = into_parts!(s, lock);
        MeteredMappedReadGuard::new(&lock.raw, data, raw, hold)
    }

    /// Like [`map`](Self::map), giving the guard back when `f` finds nothing.
    #[allow(clippy::result_large_err)]
    pub fn try_map<U: ?Sized, F>(s: Self, f: F) -> Result<MeteredMappedReadGuard<'a, R, U>, Self>
    where
        F: FnOnce(&T) -> Option<&U>,
    {
        let Some(data) = f(&s) else { return Err(s) };
        let data: *const U = data;
        let (lock, raw, hold) = into_parts!(s, lock);
        Ok(MeteredMappedReadGuard::new(&lock.raw, data, raw, hold))
    }

    /// Like [`try_map`](Self::try_map), returning `f`'s error beside the guard.
    #[allow(clippy::type_complexity)]
    pub fn try_map_or_err<U: ?Sized, F, E>(
        s: Self,
        f: F,
    ) -> Result<MeteredMappedReadGuard<'a, R, U>, (Self, E)>
    where
        F: FnOnce(&T) -> Result<&U, E>,
    {
        let data: *const U = match f(&s) {
            Ok(data) => data,
            Err(e) => return Err((s, e)),
        };
        let (lock, raw, hold) = into_parts!(s, lock);
        Ok(MeteredMappedReadGuard::new(&lock.raw, data, raw, hold))
    }

    /// Unlocks, runs `f`, and reads again; the reacquisition counts at the
    /// caller's site.
    #[track_caller]
    pub fn unlocked<F, U>(s: &mut Self, f: F) -> U
    where
        F: FnOnce() -> U,
    {
        let site = Location::caller();
        let lock = s.lock;
        // SAFETY: `raw` is this guard's shared lock.
        s.end_hold(|raw| unsafe { lock.raw.unlock_shared(raw) });
        let _relock = OnDrop(|| s.relock(site));
        f()
    }

    fn end_hold(&mut self, unlock: impl FnOnce(R::SharedGuard)) {
        // SAFETY: put back by `relock` before the guard is used again.
        let raw = unsafe { ManuallyDrop::take(&mut self.raw) };
        std::mem::replace(&mut self.hold, Hold::none()).release(|| unlock(raw));
    }

    fn relock(&mut self, site: &'static Location<'static>) {
        let (raw, hold) = self.lock.read_at(site);
        self.raw = ManuallyDrop::new(raw);
        self.hold = hold;
    }
}

impl<R: RawRwLockFair, T: ?Sized> MeteredReadGuard<'_, R, T> {
    /// Unlocks fairly.
    pub fn unlock_fair(s: Self) {
        let (lock, raw, hold) = into_parts!(s, lock);
        // SAFETY: `raw` is this guard's shared lock.
        hold.release(|| unsafe { lock.raw.unlock_shared_fair(raw) });
    }

    /// [`unlocked`](Self::unlocked) with a fair unlock.
    #[track_caller]
    pub fn unlocked_fair<F, U>(s: &mut Self, f: F) -> U
    where
        F: FnOnce() -> U,
    {
        let site = Location::caller();
        let lock = s.lock;
        // SAFETY: `raw` is this guard's shared lock.
        s.end_hold(|raw| unsafe { lock.raw.unlock_shared_fair(raw) });
        let _relock = OnDrop(|| s.relock(site));
        f()
    }

    /// Lets waiting threads have the lock, then reads again (observed:
    /// always, counted at the caller's site).
    #[track_caller]
    pub fn bump(s: &mut Self) {
        if !recorder::observing() {
            // SAFETY: `raw` is this guard's shared lock.
            unsafe { s.lock.raw.bump_shared(&mut s.raw) };
            return;
        }
        Self::unlocked_fair(s, || ());
    }
}

impl<'a, R: RawRwLock, T: ?Sized> MeteredWriteGuard<'a, R, T> {
    pub(super) fn new(lock: &'a MeteredRwLock<R, T>, raw: R::ExclusiveGuard, hold: Hold) -> Self {
        MeteredWriteGuard {
            lock,
            raw: ManuallyDrop::new(raw),
            hold,
        }
    }

    /// The lock this guard writes.
    pub fn rwlock(s: &Self) -> &'a MeteredRwLock<R, T> {
        s.lock
    }

    /// A guard for a part of the data; the hold carries over.
    pub fn map<U: ?Sized, F>(s: Self, f: F) -> MeteredMappedWriteGuard<'a, R, U>
    where
        F: FnOnce(&mut T) -> &mut U,
    {
        // SAFETY: the guard proves the write lock is held.
        let data: *mut U = f(unsafe { &mut *s.lock.data.get() });
        let (lock, raw, hold) = into_parts!(s, lock);
        MeteredMappedWriteGuard::new(&lock.raw, data, raw, hold)
    }

    /// Like [`map`](Self::map), giving the guard back when `f` finds nothing.
    #[allow(clippy::result_large_err)]
    pub fn try_map<U: ?Sized, F>(s: Self, f: F) -> Result<MeteredMappedWriteGuard<'a, R, U>, Self>
    where
        F: FnOnce(&mut T) -> Option<&mut U>,
    {
        // SAFETY: the guard proves the write lock is held.
        let Some(data) = f(unsafe { &mut *s.lock.data.get() }) else {
            return Err(s);
        };
        let data: *mut U = data;
        let (lock, raw, hold) = into_parts!(s, lock);
        Ok(MeteredMappedWriteGuard::new(&lock.raw, data, raw, hold))
    }

    /// Like [`try_map`](Self::try_map), returning `f`'s error beside the guard.
    #[allow(clippy::type_complexity)]
    pub fn try_map_or_err<U: ?Sized, F, E>(
        s: Self,
        f: F,
    ) -> Result<MeteredMappedWriteGuard<'a, R, U>, (Self, E)>
    where
        F: FnOnce(&mut T) -> Result<&mut U, E>,
    {
        // SAFETY: the guard proves the write lock is held.
        let data: *mut U = match f(unsafe { &mut *s.lock.data.get() }) {
            Ok(data) => data,
            Err(e) => return Err((s, e)),
        };
        let (lock, raw, hold) = into_parts!(s, lock);
        Ok(MeteredMappedWriteGuard::new(&lock.raw, data, raw, hold))
    }

    /// Unlocks, runs `f`, and writes again; the reacquisition counts at
    /// the caller's site.
    #[track_caller]
    pub fn unlocked<F, U>(s: &mut Self, f: F) -> U
    where
        F: FnOnce() -> U,
    {
        let site = Location::caller();
        let lock = s.lock;
        // SAFETY: `raw` is this guard's exclusive lock.
        s.end_hold(|raw| unsafe { lock.raw.unlock_exclusive(raw) });
        let _relock = OnDrop(|| s.relock(site));
        f()
    }

    fn end_hold(&mut self, unlock: impl FnOnce(R::ExclusiveGuard)) {
        // SAFETY: put back by `relock` before the guard is used again.
        let raw = unsafe { ManuallyDrop::take(&mut self.raw) };
        std::mem::replace(&mut self.hold, Hold::none()).release(|| unlock(raw));
    }

    fn relock(&mut self, site: &'static Location<'static>) {
        let (raw, hold) = self.lock.write_at(site);
        self.raw = ManuallyDrop::new(raw);
        self.hold = hold;
    }
}

impl<'a, R: RawRwLockDowngrade, T: ?Sized> MeteredWriteGuard<'a, R, T> {
    /// Turns write access into read access without letting a writer in
    /// between: the write hold ends, a read acquisition begins here.
    #[track_caller]
    pub fn downgrade(s: Self) -> MeteredReadGuard<'a, R, T> {
        let (lock, raw, hold) = into_parts!(s, lock);
        let mut shared = None;
        // SAFETY: `raw` is this guard's exclusive lock.
        hold.release(|| shared = Some(unsafe { lock.raw.downgrade(raw) }));
        let shared = shared.expect("release runs its closure");
        let (raw, hold) = lock.begin_held(Mode::Read, Location::caller(), shared);
        MeteredReadGuard::new(lock, raw, hold)
    }
}

impl<'a, R: RawRwLockUpgradeDowngrade, T: ?Sized> MeteredWriteGuard<'a, R, T> {
    /// Turns write access into upgradable access: the write hold ends, an
    /// upgradable acquisition begins here.
    #[track_caller]
    pub fn downgrade_to_upgradable(s: Self) -> MeteredUpgradableReadGuard<'a, R, T> {
        let (lock, raw, hold) = into_parts!(s, lock);
        let mut up = None;
        // SAFETY: `raw` is this guard's exclusive lock.
        hold.release(|| up = Some(unsafe { lock.raw.downgrade_to_upgradable(raw) }));
        let up = up.expect("release runs its closure");
        let (raw, hold) = lock.begin_held(Mode::Upgradable, Location::caller(), up);
        MeteredUpgradableReadGuard::new(lock, raw, hold)
    }
}

impl<R: RawRwLockFair, T: ?Sized> MeteredWriteGuard<'_, R, T> {
    /// Unlocks fairly.
    pub fn unlock_fair(s: Self) {
        let (lock, raw, hold) = into_parts!(s, lock);
        // SAFETY: `raw` is this guard's exclusive lock.
        hold.release(|| unsafe { lock.raw.unlock_exclusive_fair(raw) });
    }

    /// [`unlocked`](Self::unlocked) with a fair unlock.
    #[track_caller]
    pub fn unlocked_fair<F, U>(s: &mut Self, f: F) -> U
    where
        F: FnOnce() -> U,
    {
        let site = Location::caller();
        let lock = s.lock;
        // SAFETY: `raw` is this guard's exclusive lock.
        s.end_hold(|raw| unsafe { lock.raw.unlock_exclusive_fair(raw) });
        let _relock = OnDrop(|| s.relock(site));
        f()
    }

    /// Lets a waiting thread have the lock, then writes again (observed:
    /// always, counted at the caller's site).
    #[track_caller]
    pub fn bump(s: &mut Self) {
        if !recorder::observing() {
            // SAFETY: `raw` is this guard's exclusive lock.
            unsafe { s.lock.raw.bump_exclusive(&mut s.raw) };
            return;
        }
        Self::unlocked_fair(s, || ());
    }
}

impl<'a, R: RawRwLockUpgrade, T: ?Sized> MeteredUpgradableReadGuard<'a, R, T> {
    pub(super) fn new(lock: &'a MeteredRwLock<R, T>, raw: R::UpgradableGuard, hold: Hold) -> Self {
        MeteredUpgradableReadGuard {
            lock,
            raw: ManuallyDrop::new(raw),
            hold,
        }
    }

    /// The lock this guard reads.
    pub fn rwlock(s: &Self) -> &'a MeteredRwLock<R, T> {
        s.lock
    }

    /// Unlocks, runs `f`, and takes upgradable access again; the
    /// reacquisition counts at the caller's site.
    #[track_caller]
    pub fn unlocked<F, U>(s: &mut Self, f: F) -> U
    where
        F: FnOnce() -> U,
    {
        let site = Location::caller();
        let lock = s.lock;
        // SAFETY: `raw` is this guard's upgradable lock.
        s.end_hold(|raw| unsafe { lock.raw.unlock_upgradable(raw) });
        let _relock = OnDrop(|| s.relock(site));
        f()
    }

    fn end_hold(&mut self, unlock: impl FnOnce(R::UpgradableGuard)) {
        // SAFETY: put back by `relock` before the guard is used again.
        let raw = unsafe { ManuallyDrop::take(&mut self.raw) };
        std::mem::replace(&mut self.hold, Hold::none()).release(|| unlock(raw));
    }

    fn relock(&mut self, site: &'static Location<'static>) {
        let (raw, hold) = self.lock.upgradable_at(site);
        self.raw = ManuallyDrop::new(raw);
        self.hold = hold;
    }

    /// Waits for the readers to leave and takes write access: a `write`
    /// acquisition at the caller's site; the upgradable hold then ends.
    #[track_caller]
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
        match lock.try_upgrade_at(raw, Location::caller()) {
            Ok((w, whold)) => {
                hold.release(|| ());
                Ok(MeteredWriteGuard::new(lock, w, whold))
            }
            Err(raw) => Err(Self::new(lock, raw, hold)),
        }
    }
}

impl<R: RawRwLockUpgradeFair, T: ?Sized> MeteredUpgradableReadGuard<'_, R, T> {
    /// Unlocks fairly.
    pub fn unlock_fair(s: Self) {
        let (lock, raw, hold) = into_parts!(s, lock);
        // SAFETY: `raw` is this guard's upgradable lock.
        hold.release(|| unsafe { lock.raw.unlock_upgradable_fair(raw) });
    }

    /// [`unlocked`](Self::unlocked) with a fair unlock.
    #[track_caller]
    pub fn unlocked_fair<F, U>(s: &mut Self, f: F) -> U
    where
        F: FnOnce() -> U,
    {
        let site = Location::caller();
        let lock = s.lock;
        // SAFETY: `raw` is this guard's upgradable lock.
        s.end_hold(|raw| unsafe { lock.raw.unlock_upgradable_fair(raw) });
        let _relock = OnDrop(|| s.relock(site));
        f()
    }

    /// Lets waiting threads have the lock, then takes upgradable access
    /// again (observed: always, counted at the caller's site).
    #[track_caller]
    pub fn bump(s: &mut Self) {
        if !recorder::observing() {
            // SAFETY: `raw` is this guard's upgradable lock.
            unsafe { s.lock.raw.bump_upgradable(&mut s.raw) };
            return;
        }
        Self::unlocked_fair(s, || ());
    }
}

impl<'a, R: RawRwLockUpgradeDowngrade, T: ?Sized> MeteredUpgradableReadGuard<'a, R, T> {
    /// Turns upgradable access into plain read access: the upgradable
    /// hold ends, a read acquisition begins here.
    #[track_caller]
    pub fn downgrade(s: Self) -> MeteredReadGuard<'a, R, T> {
        let (lock, raw, hold) = into_parts!(s, lock);
        let mut shared = None;
        // SAFETY: `raw` is this guard's upgradable lock.
        hold.release(|| shared = Some(unsafe { lock.raw.downgrade_upgradable(raw) }));
        let shared = shared.expect("release runs its closure");
        let (raw, hold) = lock.begin_held(Mode::Read, Location::caller(), shared);
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
        let site = Location::caller();
        // SAFETY: `raw` is put back on every path below.
        let raw = unsafe { ManuallyDrop::take(&mut self.raw) };
        match self.lock.try_upgrade_at(raw, site) {
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
        let mut up = None;
        // SAFETY: `raw` is this guard's exclusive lock.
        hold.release(|| up = Some(unsafe { lock.raw.downgrade_to_upgradable(raw) }));
        let up = up.expect("release runs its closure");
        let (raw, hold) = lock.begin_held(Mode::Upgradable, site, up);
        MeteredUpgradableReadGuard::new(lock, raw, hold)
    }
}

impl<'a, R: RawRwLockUpgradeTimed, T: ?Sized> MeteredUpgradableReadGuard<'a, R, T> {
    /// Write access if the readers leave within `timeout`; the guard back
    /// otherwise (counted in the `write` row's RJECT).
    #[track_caller]
    #[allow(clippy::result_large_err)]
    pub fn try_upgrade_for(
        s: Self,
        timeout: R::Duration,
    ) -> Result<MeteredWriteGuard<'a, R, T>, Self> {
        let (lock, raw, hold) = into_parts!(s, lock);
        // SAFETY: `up` is this guard's upgradable lock.
        let got = lock.try_upgrade_timed_at(raw, Location::caller(), |r, up| unsafe {
            r.try_upgrade_for(up, timeout)
        });
        match got {
            Ok((w, whold)) => {
                hold.release(|| ());
                Ok(MeteredWriteGuard::new(lock, w, whold))
            }
            Err(raw) => Err(Self::new(lock, raw, hold)),
        }
    }

    /// Write access if the readers leave by `deadline`; the guard back
    /// otherwise (counted in the `write` row's RJECT).
    #[track_caller]
    #[allow(clippy::result_large_err)]
    pub fn try_upgrade_until(
        s: Self,
        deadline: R::Instant,
    ) -> Result<MeteredWriteGuard<'a, R, T>, Self> {
        let (lock, raw, hold) = into_parts!(s, lock);
        // SAFETY: `up` is this guard's upgradable lock.
        let got = lock.try_upgrade_timed_at(raw, Location::caller(), |r, up| unsafe {
            r.try_upgrade_until(up, deadline)
        });
        match got {
            Ok((w, whold)) => {
                hold.release(|| ());
                Ok(MeteredWriteGuard::new(lock, w, whold))
            }
            Err(raw) => Err(Self::new(lock, raw, hold)),
        }
    }
}

impl<'a, R: RawRwLockUpgradeTimed + RawRwLockUpgradeDowngrade, T: ?Sized>
    MeteredUpgradableReadGuard<'a, R, T>
{
    /// [`try_with_upgraded`](Self::try_with_upgraded), waiting up to `timeout`.
    #[track_caller]
    pub fn try_with_upgraded_for<Ret, F: FnOnce(&mut T) -> Ret>(
        &mut self,
        timeout: R::Duration,
        f: F,
    ) -> Option<Ret> {
        let site = Location::caller();
        // SAFETY: `raw` is put back on every path below.
        let raw = unsafe { ManuallyDrop::take(&mut self.raw) };
        // SAFETY: `up` is this guard's upgradable lock.
        let got = self
            .lock
            .try_upgrade_timed_at(raw, site, |r, up| unsafe { r.try_upgrade_for(up, timeout) });
        match got {
            Ok((w, whold)) => Some(self.run_upgraded(w, whold, site, f)),
            Err(raw) => {
                self.raw = ManuallyDrop::new(raw);
                None
            }
        }
    }

    /// [`try_with_upgraded`](Self::try_with_upgraded), waiting until `deadline`.
    #[track_caller]
    pub fn try_with_upgraded_until<Ret, F: FnOnce(&mut T) -> Ret>(
        &mut self,
        deadline: R::Instant,
        f: F,
    ) -> Option<Ret> {
        let site = Location::caller();
        // SAFETY: `raw` is put back on every path below.
        let raw = unsafe { ManuallyDrop::take(&mut self.raw) };
        // SAFETY: `up` is this guard's upgradable lock.
        let got = self.lock.try_upgrade_timed_at(raw, site, |r, up| unsafe {
            r.try_upgrade_until(up, deadline)
        });
        match got {
            Ok((w, whold)) => Some(self.run_upgraded(w, whold, site, f)),
            Err(raw) => {
                self.raw = ManuallyDrop::new(raw);
                None
            }
        }
    }
}

impl<'a, R: RawRwLock, T: ?Sized> MeteredMappedReadGuard<'a, R, T> {
    fn new(lock: &'a R, data: *const T, raw: R::SharedGuard, hold: Hold) -> Self {
        MeteredMappedReadGuard {
            lock,
            data,
            raw: ManuallyDrop::new(raw),
            hold,
            marker: PhantomData,
        }
    }

    /// Narrows the guard further.
    pub fn map<U: ?Sized, F>(s: Self, f: F) -> MeteredMappedReadGuard<'a, R, U>
    where
        F: FnOnce(&T) -> &U,
    {
        let data: *const U = f(&s);
        let (lock, raw, hold) = into_parts!(s, lock);
        MeteredMappedReadGuard::new(lock, data, raw, hold)
    }

    /// Like [`map`](Self::map), giving the guard back when `f` finds nothing.
    #[allow(clippy::result_large_err)]
    pub fn try_map<U: ?Sized, F>(s: Self, f: F) -> Result<MeteredMappedReadGuard<'a, R, U>, Self>
    where
        F: FnOnce(&T) -> Option<&U>,
    {
        let Some(data) = f(&s) else { return Err(s) };
        let data: *const U = data;
        let (lock, raw, hold) = into_parts!(s, lock);
        Ok(MeteredMappedReadGuard::new(lock, data, raw, hold))
    }

    /// Like [`try_map`](Self::try_map), returning `f`'s error beside the guard.
    #[allow(clippy::type_complexity)]
    pub fn try_map_or_err<U: ?Sized, F, E>(
        s: Self,
        f: F,
    ) -> Result<MeteredMappedReadGuard<'a, R, U>, (Self, E)>
    where
        F: FnOnce(&T) -> Result<&U, E>,
    {
        let data: *const U = match f(&s) {
            Ok(data) => data,
            Err(e) => return Err((s, e)),
        };
        let (lock, raw, hold) = into_parts!(s, lock);
        Ok(MeteredMappedReadGuard::new(lock, data, raw, hold))
    }

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

impl<R: RawRwLockFair, T: ?Sized> MeteredMappedReadGuard<'_, R, T> {
    /// Unlocks fairly.
    pub fn unlock_fair(s: Self) {
        let (lock, raw, hold) = into_parts!(s, lock);
        // SAFETY: `raw` is this guard's shared lock.
        hold.release(|| unsafe { lock.unlock_shared_fair(raw) });
    }
}

impl<'a, R: RawRwLock, T: ?Sized> MeteredMappedWriteGuard<'a, R, T> {
    fn new(lock: &'a R, data: *mut T, raw: R::ExclusiveGuard, hold: Hold) -> Self {
        MeteredMappedWriteGuard {
            lock,
            data,
            raw: ManuallyDrop::new(raw),
            hold,
            marker: PhantomData,
        }
    }

    /// Narrows the guard further.
    pub fn map<U: ?Sized, F>(s: Self, f: F) -> MeteredMappedWriteGuard<'a, R, U>
    where
        F: FnOnce(&mut T) -> &mut U,
    {
        // SAFETY: the guard proves the write lock is held.
        let data: *mut U = f(unsafe { &mut *s.data });
        let (lock, raw, hold) = into_parts!(s, lock);
        MeteredMappedWriteGuard::new(lock, data, raw, hold)
    }

    /// Like [`map`](Self::map), giving the guard back when `f` finds nothing.
    #[allow(clippy::result_large_err)]
    pub fn try_map<U: ?Sized, F>(s: Self, f: F) -> Result<MeteredMappedWriteGuard<'a, R, U>, Self>
    where
        F: FnOnce(&mut T) -> Option<&mut U>,
    {
        // SAFETY: the guard proves the write lock is held.
        let Some(data) = f(unsafe { &mut *s.data }) else {
            return Err(s);
        };
        let data: *mut U = data;
        let (lock, raw, hold) = into_parts!(s, lock);
        Ok(MeteredMappedWriteGuard::new(lock, data, raw, hold))
    }

    /// Like [`try_map`](Self::try_map), returning `f`'s error beside the guard.
    #[allow(clippy::type_complexity)]
    pub fn try_map_or_err<U: ?Sized, F, E>(
        s: Self,
        f: F,
    ) -> Result<MeteredMappedWriteGuard<'a, R, U>, (Self, E)>
    where
        F: FnOnce(&mut T) -> Result<&mut U, E>,
    {
        // SAFETY: the guard proves the write lock is held.
        let data: *mut U = match f(unsafe { &mut *s.data }) {
            Ok(data) => data,
            Err(e) => return Err((s, e)),
        };
        let (lock, raw, hold) = into_parts!(s, lock);
        Ok(MeteredMappedWriteGuard::new(lock, data, raw, hold))
    }
}

impl<R: RawRwLockFair, T: ?Sized> MeteredMappedWriteGuard<'_, R, T> {
    /// Unlocks fairly.
    pub fn unlock_fair(s: Self) {
        let (lock, raw, hold) = into_parts!(s, lock);
        // SAFETY: `raw` is this guard's exclusive lock.
        hold.release(|| unsafe { lock.unlock_exclusive_fair(raw) });
    }
}

impl<R: RawRwLock, T: ?Sized> Deref for MeteredReadGuard<'_, R, T> {
    type Target = T;
    fn deref(&self) -> &T {
        // SAFETY: the guard proves a read lock is held.
        unsafe { &*self.lock.data.get() }
    }
}

impl<R: RawRwLock, T: ?Sized> Deref for MeteredWriteGuard<'_, R, T> {
    type Target = T;
    fn deref(&self) -> &T {
        // SAFETY: the guard proves the write lock is held.
        unsafe { &*self.lock.data.get() }
    }
}

impl<R: RawRwLock, T: ?Sized> DerefMut for MeteredWriteGuard<'_, R, T> {
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: the guard proves the write lock is held, exclusively.
        unsafe { &mut *self.lock.data.get() }
    }
}

impl<R: RawRwLockUpgrade, T: ?Sized> Deref for MeteredUpgradableReadGuard<'_, R, T> {
    type Target = T;
    fn deref(&self) -> &T {
        // SAFETY: the guard proves a (shared) upgradable lock is held.
        unsafe { &*self.lock.data.get() }
    }
}

impl<R: RawRwLock, T: ?Sized> Deref for MeteredMappedReadGuard<'_, R, T> {
    type Target = T;
    fn deref(&self) -> &T {
        // SAFETY: the guard proves a read lock is held.
        unsafe { &*self.data }
    }
}

impl<R: RawRwLock, T: ?Sized> Deref for MeteredMappedWriteGuard<'_, R, T> {
    type Target = T;
    fn deref(&self) -> &T {
        // SAFETY: the guard proves the write lock is held.
        unsafe { &*self.data }
    }
}

impl<R: RawRwLock, T: ?Sized> DerefMut for MeteredMappedWriteGuard<'_, R, T> {
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: the guard proves the write lock is held, exclusively.
        unsafe { &mut *self.data }
    }
}

impl<R: RawRwLock, T: ?Sized> Drop for MeteredReadGuard<'_, R, T> {
    #[inline]
    fn drop(&mut self) {
        // SAFETY: `raw` is taken exactly once, here.
        let raw = unsafe { ManuallyDrop::take(&mut self.raw) };
        // SAFETY: `raw` is the state of this guard's shared acquisition.
        self.hold
            .release_blaming(&self.lock.meta, Mode::Read, || unsafe {
                self.lock.raw.unlock_shared(raw)
            });
    }
}

impl<R: RawRwLock, T: ?Sized> Drop for MeteredWriteGuard<'_, R, T> {
    #[inline]
    fn drop(&mut self) {
        // SAFETY: `raw` is taken exactly once, here.
        let raw = unsafe { ManuallyDrop::take(&mut self.raw) };
        // SAFETY: `raw` is the state of this guard's exclusive acquisition.
        self.hold
            .release_blaming(&self.lock.meta, Mode::Write, || unsafe {
                self.lock.raw.unlock_exclusive(raw)
            });
    }
}

impl<R: RawRwLockUpgrade, T: ?Sized> Drop for MeteredUpgradableReadGuard<'_, R, T> {
    #[inline]
    fn drop(&mut self) {
        // SAFETY: `raw` is taken exactly once, here.
        let raw = unsafe { ManuallyDrop::take(&mut self.raw) };
        // SAFETY: `raw` is the state of this guard's upgradable acquisition.
        self.hold
            .release(|| unsafe { self.lock.raw.unlock_upgradable(raw) });
    }
}

impl<R: RawRwLock, T: ?Sized> Drop for MeteredMappedReadGuard<'_, R, T> {
    #[inline]
    fn drop(&mut self) {
        // SAFETY: `raw` is taken exactly once, here.
        let raw = unsafe { ManuallyDrop::take(&mut self.raw) };
        // SAFETY: `raw` is the state of this guard's shared acquisition.
        self.hold
            .release(|| unsafe { self.lock.unlock_shared(raw) });
    }
}

impl<R: RawRwLock, T: ?Sized> Drop for MeteredMappedWriteGuard<'_, R, T> {
    #[inline]
    fn drop(&mut self) {
        // SAFETY: `raw` is taken exactly once, here.
        let raw = unsafe { ManuallyDrop::take(&mut self.raw) };
        // SAFETY: `raw` is the state of this guard's exclusive acquisition.
        self.hold
            .release(|| unsafe { self.lock.unlock_exclusive(raw) });
    }
}

/// `Debug` and `Display` show the data, as lock_api's guards do.
macro_rules! fmt_as_data {
    ($($guard:ident: $bound:ident),*) => {$(
        impl<R: $bound, T: ?Sized + fmt::Debug> fmt::Debug for $guard<'_, R, T> {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                fmt::Debug::fmt(&**self, f)
            }
        }
        impl<R: $bound, T: ?Sized + fmt::Display> fmt::Display for $guard<'_, R, T> {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                fmt::Display::fmt(&**self, f)
            }
        }
    )*};
}

fmt_as_data!(
    MeteredReadGuard: RawRwLock,
    MeteredWriteGuard: RawRwLock,
    MeteredUpgradableReadGuard: RawRwLockUpgrade,
    MeteredMappedReadGuard: RawRwLock,
    MeteredMappedWriteGuard: RawRwLock
);
