//! A metering adapter over any `lock_api` raw mutex, with parking_lot 0.12's
//! whole mutex API.
//!
//! [`MeteredMutex<R, T>`] wraps a raw lock `R` the way `lock_api::Mutex`
//! does, and records each acquisition at its caller's site. [`Mutex<T>`] is
//! the drop-in for `parking_lot::Mutex<T>` and [`FairMutex<T>`] for
//! `parking_lot::FairMutex<T>`; meter your own raw lock with
//! `MeteredMutex<YourRawMutex, T>`.
//!
//! # How each path counts
//! - `lock`, `try_lock*`: one acquisition at the caller's site (a failed
//!   try counts in RJECT).
//! - `MutexGuard::unlocked(_fair)` and `bump`: the hold ends, and the
//!   reacquisition is one acquisition at the site of the `unlocked`/`bump`
//!   call. Unobserved, `bump` is the raw lock's own (it hands the lock over
//!   only when someone waits); observed, it always releases and reacquires
//!   fairly, so the hand-off is counted.
//! - `map`, `try_map`, `try_map_or_err`: the hold carries over to the
//!   mapped guard and ends when it drops.
//! - `leak` and `make_guard_unchecked`/`force_unlock`: a hold nobody ends
//!   or nobody started is not timed; a leaked guard's acquisition still
//!   counts.

use std::cell::UnsafeCell;
use std::fmt;
use std::marker::PhantomData;
use std::mem::ManuallyDrop;
use std::ops::{Deref, DerefMut};
use std::panic::Location;
use std::ptr;

use lock_api::{RawMutex, RawMutexFair, RawMutexTimed};
use lockmeter_model::LockKind;

use crate::class::{Class, Mode};
use crate::meter::{self, Hold, Meta};
use crate::on_drop::OnDrop;
use crate::recorder;

/// A mutex over the raw lock `R` that records contention per call site.
///
/// `repr(C)` puts the per-instance fields first and the lock word right
/// before the data, so the lock word and the data share a cache line
/// wherever a bare lock's would, and a line-aligned lock keeps all three on
/// one line (see the layout of `meter::Meta`).
#[repr(C)]
pub struct MeteredMutex<R: RawMutex, T: ?Sized> {
    meta: Meta,
    raw: R,
    data: UnsafeCell<T>,
}

/// The drop-in replacement for `parking_lot::Mutex`.
///
/// # Differences from parking_lot
/// - Guards are never `Send` (parking_lot's default; its `send_guard`
///   feature is not offered): a hold is recorded by the acquiring thread.
/// - `raw()` is the raw lock of this crate's `lock_api` 0.5 (parking_lot
///   0.13), and anything done through it is not metered.
/// - Observed, `MutexGuard::bump` always unlocks fairly and locks again (so
///   the hand-off is counted); parking_lot's does nothing when nobody waits.
/// - A leaked guard's hold (`MutexGuard::leak`) is not timed;
///   `make_guard_unchecked` and `force_unlock` need `R::Guard: Default`
///   (true of every parking_lot raw lock).
/// - No `arc_lock`, `serde` or `owning_ref` integrations.
///
/// How each path is counted: docs/format.md, "How each acquisition path
/// counts".
///
/// # Examples
///
/// ```
/// use lockmeter::Mutex;
///
/// let m = Mutex::named("config", vec![1, 2]);
/// m.lock().push(3);
/// assert_eq!(m.lock().len(), 3);
/// assert!(m.try_lock_for(std::time::Duration::from_millis(1)).is_some());
/// ```
pub type Mutex<T> = MeteredMutex<parking_lot::RawMutex, T>;

/// The guard of [`Mutex`].
pub type MutexGuard<'a, T> = MeteredMutexGuard<'a, parking_lot::RawMutex, T>;

/// A [`MutexGuard`] narrowed to a part of the data by `MutexGuard::map`.
pub type MappedMutexGuard<'a, T> = MeteredMappedMutexGuard<'a, parking_lot::RawMutex, T>;

/// The drop-in replacement for `parking_lot::FairMutex`: a mutex whose
/// every unlock is fair (the lock is handed to the next waiter). Its rows
/// are of kind `mutex`; it differs from parking_lot's as [`Mutex`] does.
///
/// # Examples
///
/// ```
/// use lockmeter::FairMutex;
///
/// let m = FairMutex::named("fair", 0);
/// *m.lock() += 1;
/// assert_eq!(*m.lock(), 1);
/// ```
pub type FairMutex<T> = MeteredMutex<parking_lot::RawFairMutex, T>;

/// The guard of [`FairMutex`].
pub type FairMutexGuard<'a, T> = MeteredMutexGuard<'a, parking_lot::RawFairMutex, T>;

/// A [`FairMutexGuard`] narrowed by `map`.
pub type MappedFairMutexGuard<'a, T> = MeteredMappedMutexGuard<'a, parking_lot::RawFairMutex, T>;

/// A [`Mutex`] in a `const` or `static` (parking_lot's `const_mutex`); its
/// class is the call site.
#[track_caller]
pub const fn const_mutex<T>(val: T) -> Mutex<T> {
    Mutex::from_class(Class::new(None, Location::caller()), val)
}

/// A [`FairMutex`] in a `const` or `static` (parking_lot's
/// `const_fair_mutex`); its class is the call site.
#[track_caller]
pub const fn const_fair_mutex<T>(val: T) -> FairMutex<T> {
    FairMutex::from_class(Class::new(None, Location::caller()), val)
}

// SAFETY: the raw lock gives access to `T` to one thread at a time.
unsafe impl<R: RawMutex + Send, T: ?Sized + Send> Send for MeteredMutex<R, T> {}
// SAFETY: as above.
unsafe impl<R: RawMutex + Sync, T: ?Sized + Send> Sync for MeteredMutex<R, T> {}

impl<R: RawMutex, T> MeteredMutex<R, T> {
    class_constructors! {
        new: /// A mutex whose class is its creation site.
        named: /// A mutex of the class `name`.
    }

    /// A mutex over an existing raw lock (lock_api's `const_new`); its
    /// class is the call site.
    #[track_caller]
    pub const fn const_new(raw: R, value: T) -> Self {
        Self::from_raw(raw, value)
    }

    /// A mutex over an existing raw lock (lock_api's `from_raw`).
    #[track_caller]
    pub const fn from_raw(raw: R, value: T) -> Self {
        MeteredMutex {
            raw,
            meta: Meta::new(Class::new(None, Location::caller()), LockKind::Mutex),
            data: UnsafeCell::new(value),
        }
    }

    pub(crate) const fn from_class(class: Class, value: T) -> Self {
        MeteredMutex {
            raw: R::INIT,
            meta: Meta::new(class, LockKind::Mutex),
            data: UnsafeCell::new(value),
        }
    }

    /// Consumes the mutex, returning the data.
    pub fn into_inner(self) -> T {
        self.data.into_inner()
    }
}

impl<R: RawMutex, T: ?Sized> MeteredMutex<R, T> {
    /// Acquires the mutex, blocking until it is available.
    #[track_caller]
    #[inline]
    pub fn lock(&self) -> MeteredMutexGuard<'_, R, T> {
        let (raw, hold) = self.lock_at(Location::caller());
        self.guard(raw, hold)
    }

    /// One metered blocking acquisition at `site`, inline in the caller
    /// as every primitive's: unobserved, the raw lock; observed,
    /// `meter::acquire_in`'s common case, with the line asked for first.
    ///
    /// From session 21 to 37 the observed part was one out-of-line
    /// function, so that every caller ran the same machine code: inlined on
    /// that session's Intel host, its cost moved with each caller's
    /// register allocation, and self-accounting's calibration loop got a
    /// cheaper copy than the bench's loops. Out of line, it saved and
    /// restored six registers on every acquisition, because tracing's
    /// `get_default` keeps its scoped path (a call, during register
    /// allocation) inline wherever it is called. Inline, the caller's own
    /// saved registers serve: on the AMD host of session 38 the observed
    /// lock/unlock went 122 -> 103 instructions and 1.41-1.50 -> 1.15-1.18
    /// of the bare lock, the same in a library crate's loop, with the
    /// unobserved rows unchanged (`docs/performance.md`, "Session 38").
    /// Self-accounting's rows with eight copies of the code at eight line
    /// offsets check that the calibration's copy costs what callers' do.
    #[inline(always)]
    pub(crate) fn lock_at(&self, site: &'static Location<'static>) -> (R::Guard, Hold) {
        let raw = &self.raw;
        meter::acquire_hinted(
            &self.meta,
            site,
            Mode::Exclusive,
            |own_line| own_line.hint(raw),
            || raw.lock(),
            || raw.try_lock(),
            || (raw.lock(), 0, 0),
        )
    }

    /// Acquires the mutex if it is free; a failure counts in RJECT.
    #[track_caller]
    #[inline]
    pub fn try_lock(&self) -> Option<MeteredMutexGuard<'_, R, T>> {
        meter::try_acquire(&self.meta, Location::caller(), Mode::Exclusive, || {
            self.raw.try_lock()
        })
        .map(|(raw, hold)| self.guard(raw, hold))
    }

    /// Whether the mutex is held right now (a momentary answer).
    pub fn is_locked(&self) -> bool {
        self.raw.is_locked()
    }

    /// Mutable access without locking: `&mut self` proves exclusivity.
    pub fn get_mut(&mut self) -> &mut T {
        self.data.get_mut()
    }

    /// A raw pointer to the data, for FFI-style use under the lock.
    pub fn data_ptr(&self) -> *mut T {
        self.data.get()
    }

    /// The raw lock. Acquisitions made through it are not metered.
    ///
    /// # Safety
    /// Unlocking the raw lock while a guard of this mutex exists is
    /// undefined behaviour, as in lock_api.
    pub unsafe fn raw(&self) -> &R {
        &self.raw
    }

    /// A guard for a lock acquired some other way (through [`raw`](Self::raw)
    /// or a forgotten guard). It is not counted and its hold is not timed.
    ///
    /// # Safety
    /// The mutex must be held by the current context, with no other guard.
    pub unsafe fn make_guard_unchecked(&self) -> MeteredMutexGuard<'_, R, T>
    where
        R::Guard: Default,
    {
        self.guard(R::Guard::default(), Hold::none())
    }

    /// Unlocks a mutex whose guard was forgotten (`mem::forget`); the
    /// forgotten guard's hold is never recorded.
    ///
    /// # Safety
    /// The mutex must be held by a guard that was forgotten.
    pub unsafe fn force_unlock(&self)
    where
        R::Guard: Default,
    {
        // SAFETY: the caller promises the lock is held and its guard gone;
        // the raw guard is a token the raw lock issued (`Default` for
        // parking_lot's zero-sized markers).
        unsafe { self.raw.unlock(R::Guard::default()) }
    }

    fn guard(&self, raw: R::Guard, hold: Hold) -> MeteredMutexGuard<'_, R, T> {
        MeteredMutexGuard {
            lock: self,
            raw: ManuallyDrop::new(raw),
            hold,
        }
    }
}

impl<R: RawMutexFair, T: ?Sized> MeteredMutex<R, T> {
    /// [`force_unlock`](Self::force_unlock), unlocking fairly.
    ///
    /// # Safety
    /// As for `force_unlock`.
    pub unsafe fn force_unlock_fair(&self)
    where
        R::Guard: Default,
    {
        // SAFETY: as in `force_unlock`.
        unsafe { self.raw.unlock_fair(R::Guard::default()) }
    }
}

impl<R: RawMutexTimed, T: ?Sized> MeteredMutex<R, T> {
    timed_pair! {
        /// Acquires the mutex, giving up after `timeout` (counted in RJECT).
        fn try_lock_for(timeout: R::Duration) = R::try_lock_for;
        /// Acquires the mutex, giving up at `deadline` (counted in RJECT).
        fn try_lock_until(deadline: R::Instant) = R::try_lock_until;
        #[track_caller]
        pub fn [] (&self,) limit () -> Option<MeteredMutexGuard<'_, R, T>>, |wait, limit| {
            meter::acquire_timed(
                &self.meta,
                Location::caller(),
                Mode::Exclusive,
                || self.raw.try_lock(),
                || (wait(&self.raw, limit), 0, 0),
            )
            .map(|(raw, hold)| self.guard(raw, hold))
        }
    }
}

from_and_default!([R: RawMutex,] MeteredMutex<R, T> => value);

impl<R: RawMutex, T: ?Sized + fmt::Debug> fmt::Debug for MeteredMutex<R, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut d = f.debug_struct("Mutex");
        if self
            .try_lock_unmetered(|data| d.field("data", &data))
            .is_none()
        {
            d.field("data", &format_args!("<locked>"));
        }
        d.finish()
    }
}

/// Access to a [`MeteredMutex`]'s data; unlocks and records the hold on drop.
///
/// Not `Send`: the hold is recorded by the thread that acquired.
#[must_use = "the lock is released as soon as the guard is dropped"]
pub struct MeteredMutexGuard<'a, R: RawMutex, T: ?Sized> {
    lock: &'a MeteredMutex<R, T>,
    raw: ManuallyDrop<R::Guard>,
    hold: Hold,
}

// SAFETY: sharing the guard only shares `&T`.
unsafe impl<R: RawMutex + Sync, T: ?Sized + Sync> Sync for MeteredMutexGuard<'_, R, T> {}

impl<'a, R: RawMutex, T: ?Sized> MeteredMutexGuard<'a, R, T> {
    /// The mutex this guard holds.
    pub fn mutex(s: &Self) -> &'a MeteredMutex<R, T> {
        s.lock
    }

    /// The guard's parts, without running its `Drop`.
    fn into_parts(s: Self) -> (&'a MeteredMutex<R, T>, R::Guard, Hold) {
        let mut s = ManuallyDrop::new(s);
        // SAFETY: `s` is never used or dropped again; each field is moved
        // out exactly once.
        unsafe {
            let raw = ManuallyDrop::take(&mut s.raw);
            (s.lock, raw, ptr::read(&s.hold))
        }
    }

    map_fns! {
        /// A guard for a part of the data; the hold carries over.
        MeteredMappedMutexGuard<R>, &mut T as *mut
    }

    fn into_mapped<U: ?Sized>(s: Self, data: *mut U) -> MeteredMappedMutexGuard<'a, R, U> {
        let (lock, raw, hold) = Self::into_parts(s);
        MeteredMappedMutexGuard::new(&lock.raw, data, raw, hold)
    }

    /// Unlocks, runs `f`, and locks again; the reacquisition counts at the
    /// caller's site.
    #[track_caller]
    pub fn unlocked<F, U>(s: &mut Self, f: F) -> U
    where
        F: FnOnce() -> U,
    {
        let lock = s.lock;
        // SAFETY: `raw` is the state of this guard's acquisition.
        s.unlock_run(|raw| unsafe { lock.raw.unlock(raw) }, f)
    }

    /// Ends the hold with `unlock`, runs `f`, and reacquires at the
    /// caller's site, on return or unwind alike.
    #[track_caller]
    fn unlock_run<U>(&mut self, unlock: impl FnOnce(R::Guard), f: impl FnOnce() -> U) -> U {
        let site = Location::caller();
        self.end_hold(unlock);
        let _relock = OnDrop(|| self.relock(site));
        f()
    }

    /// Ends the hold with `unlock`, leaving the guard with no lock held
    /// until [`relock`](Self::relock).
    pub(crate) fn end_hold(&mut self, unlock: impl FnOnce(R::Guard)) {
        // SAFETY: `raw` is taken here and put back by `relock` before the
        // guard is used or dropped again (callers pair them).
        let raw = unsafe { ManuallyDrop::take(&mut self.raw) };
        let hold = std::mem::replace(&mut self.hold, Hold::none());
        hold.release(|| unlock(raw));
    }

    /// Reacquires after [`end_hold`](Self::end_hold), metered at `site`.
    pub(crate) fn relock(&mut self, site: &'static Location<'static>) {
        let (raw, hold) = self.lock.lock_at(site);
        self.raw = ManuallyDrop::new(raw);
        self.hold = hold;
    }

    /// Ends the hold but keeps the lock, for a `Condvar` wait, whose raw
    /// condvar unlocks and relocks it;
    /// [`begin_reacquired_hold`](Self::begin_reacquired_hold) follows.
    pub(crate) fn end_hold_keep_locked(&mut self) {
        let hold = std::mem::replace(&mut self.hold, Hold::none());
        hold.release(|| ());
    }

    /// The raw lock and this acquisition's raw state, for a raw condvar.
    pub(crate) fn raw_parts(&mut self) -> (&'a R, &mut R::Guard) {
        (&self.lock.raw, &mut self.raw)
    }

    /// The hold of the reacquisition a raw condvar's wait made, counted
    /// at `site`: contended, waiting since `woken_at`, when a notify then
    /// woke it; else NOWAIT.
    pub(crate) fn begin_reacquired_hold(
        &mut self,
        site: &'static Location<'static>,
        woken_at: Option<u64>,
    ) {
        self.hold = meter::reacquired(&self.lock.meta, site, Mode::Exclusive, woken_at);
    }

    /// The data as a `&'a mut T` for ever: the lock stays held. The
    /// acquisition counts; its hold is not timed.
    pub fn leak(s: Self) -> &'a mut T {
        let (lock, raw, hold) = Self::into_parts(s);
        std::mem::forget(raw);
        hold.discard();
        // SAFETY: the lock stays held for ever, so this is the only access.
        unsafe { &mut *lock.data.get() }
    }
}

impl<'a, R: RawMutexFair, T: ?Sized> MeteredMutexGuard<'a, R, T> {
    /// Unlocks fairly: the lock goes to the next waiter, if any.
    pub fn unlock_fair(s: Self) {
        let (lock, raw, hold) = Self::into_parts(s);
        // SAFETY: `raw` is the state of this guard's acquisition.
        hold.release(|| unsafe { lock.raw.unlock_fair(raw) });
    }

    /// [`unlocked`](Self::unlocked) with a fair unlock.
    #[track_caller]
    pub fn unlocked_fair<F, U>(s: &mut Self, f: F) -> U
    where
        F: FnOnce() -> U,
    {
        let lock = s.lock;
        // SAFETY: `raw` is the state of this guard's acquisition.
        s.unlock_run(|raw| unsafe { lock.raw.unlock_fair(raw) }, f)
    }

    /// Lets a waiting thread have the lock, then takes it back. Observed,
    /// always a fair unlock and a reacquisition counted at the caller's site.
    #[track_caller]
    pub fn bump(s: &mut Self) {
        if !recorder::observing() {
            // SAFETY: `raw` is the state of this guard's acquisition.
            unsafe { s.lock.raw.bump(&mut s.raw) };
            return;
        }
        Self::unlocked_fair(s, || ());
    }
}

impl<R: RawMutex, T: ?Sized> Deref for MeteredMutexGuard<'_, R, T> {
    type Target = T;
    fn deref(&self) -> &T {
        // SAFETY: the guard proves the lock is held.
        unsafe { &*self.lock.data.get() }
    }
}

impl<R: RawMutex, T: ?Sized> DerefMut for MeteredMutexGuard<'_, R, T> {
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: the guard proves the lock is held, exclusively.
        unsafe { &mut *self.lock.data.get() }
    }
}

impl<R: RawMutex, T: ?Sized> Drop for MeteredMutexGuard<'_, R, T> {
    #[inline]
    fn drop(&mut self) {
        // SAFETY: `raw` is taken exactly once, here.
        let raw = unsafe { ManuallyDrop::take(&mut self.raw) };
        // SAFETY: `raw` is the state of this guard's acquisition.
        self.hold
            .release_blaming(&self.lock.meta, || unsafe { self.lock.raw.unlock(raw) });
    }
}

/// A guard for a part of a [`MeteredMutex`]'s data, made by
/// `MeteredMutexGuard::map`. It holds the whole lock; the hold of the guard
/// it was made from ends when it drops.
///
/// It cannot be unlocked temporarily (no `unlocked`), as in lock_api.
#[must_use = "the lock is released as soon as the guard is dropped"]
pub struct MeteredMappedMutexGuard<'a, R: RawMutex, T: ?Sized> {
    lock: &'a R,
    data: *mut T,
    raw: ManuallyDrop<R::Guard>,
    hold: Hold,
    marker: PhantomData<&'a mut T>,
}

// SAFETY: sharing the guard only shares `&T`.
unsafe impl<R: RawMutex + Sync, T: ?Sized + Sync> Sync for MeteredMappedMutexGuard<'_, R, T> {}

impl<'a, R: RawMutex, T: ?Sized> MeteredMappedMutexGuard<'a, R, T> {
    fn new(lock: &'a R, data: *mut T, raw: R::Guard, hold: Hold) -> Self {
        MeteredMappedMutexGuard {
            lock,
            data,
            raw: ManuallyDrop::new(raw),
            hold,
            marker: PhantomData,
        }
    }

    fn into_parts(s: Self) -> (&'a R, *mut T, R::Guard, Hold) {
        let mut s = ManuallyDrop::new(s);
        // SAFETY: `s` is never used or dropped again; each field is moved
        // out exactly once.
        unsafe {
            let raw = ManuallyDrop::take(&mut s.raw);
            (s.lock, s.data, raw, ptr::read(&s.hold))
        }
    }

    map_fns! {
        /// Narrows the guard further.
        MeteredMappedMutexGuard<R>, &mut T as *mut
    }

    fn into_mapped<U: ?Sized>(s: Self, data: *mut U) -> MeteredMappedMutexGuard<'a, R, U> {
        let (lock, _, raw, hold) = Self::into_parts(s);
        MeteredMappedMutexGuard::new(lock, data, raw, hold)
    }
}

impl<R: RawMutexFair, T: ?Sized> MeteredMappedMutexGuard<'_, R, T> {
    /// Unlocks fairly: the lock goes to the next waiter, if any.
    pub fn unlock_fair(s: Self) {
        let (lock, _, raw, hold) = Self::into_parts(s);
        // SAFETY: `raw` is the state of this guard's acquisition.
        hold.release(|| unsafe { lock.unlock_fair(raw) });
    }
}

impl<R: RawMutex, T: ?Sized> Deref for MeteredMappedMutexGuard<'_, R, T> {
    type Target = T;
    fn deref(&self) -> &T {
        // SAFETY: the guard proves the lock is held.
        unsafe { &*self.data }
    }
}

impl<R: RawMutex, T: ?Sized> DerefMut for MeteredMappedMutexGuard<'_, R, T> {
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: the guard proves the lock is held, exclusively.
        unsafe { &mut *self.data }
    }
}

impl<R: RawMutex, T: ?Sized> Drop for MeteredMappedMutexGuard<'_, R, T> {
    #[inline]
    fn drop(&mut self) {
        // SAFETY: `raw` is taken exactly once, here.
        let raw = unsafe { ManuallyDrop::take(&mut self.raw) };
        // SAFETY: `raw` is the state of this guard's acquisition.
        self.hold.release(|| unsafe { self.lock.unlock(raw) });
    }
}

fmt_as_data!(
    [R: RawMutex,] MeteredMutexGuard<'_, R, T>,
    [R: RawMutex,] MeteredMappedMutexGuard<'_, R, T>,
);

impl<R: RawMutex, T: ?Sized> MeteredMutex<R, T> {
    /// Runs `f` on the data if the lock is free, without counting: for
    /// `Debug` impls of wrappers, which look rather than acquire.
    pub(crate) fn try_lock_unmetered<U>(&self, f: impl FnOnce(&T) -> U) -> Option<U> {
        let g = self.raw.try_lock()?;
        // SAFETY: we hold the lock until `unlock` below.
        let out = f(unsafe { &*self.data.get() });
        // SAFETY: `g` is the state of the acquisition just made.
        unsafe { self.raw.unlock(g) };
        Some(out)
    }

    /// A guard again from [`MeteredMutexGuard::into_raw_parts`], for
    /// wrappers that keep the parts in the lock (`sync::Mutex`).
    ///
    /// # Safety
    /// `raw` and `hold` are the parts of a guard of `self` whose lock is
    /// still held, and no other guard of that acquisition exists.
    pub(crate) unsafe fn guard_from_parts(
        &self,
        raw: R::Guard,
        hold: Hold,
    ) -> MeteredMutexGuard<'_, R, T> {
        self.guard(raw, hold)
    }
}

impl<R: RawMutex, T: ?Sized> MeteredMutexGuard<'_, R, T> {
    /// The raw lock state and the hold, without unlocking.
    pub(crate) fn into_raw_parts(s: Self) -> (R::Guard, Hold) {
        let (_, raw, hold) = Self::into_parts(s);
        (raw, hold)
    }
}
