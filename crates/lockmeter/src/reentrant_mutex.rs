//! A metered reentrant mutex: parking_lot 0.12's `ReentrantMutex`.
//!
//! The thread that holds the lock may lock it again; the lock is released
//! when the last guard drops. Guards give `&T` only, since several may be
//! alive on one thread. [`MeteredReentrantMutex<R, G, T>`] works over any
//! raw mutex `R` and thread-id source `G`, like lock_api's.
//!
//! # How it counts
//! Every `lock`/`try_lock*` is an acquisition at its site: the first one on
//! a thread may wait; a recursive one never does and counts as NOWAIT. Each
//! guard's hold is its own (recursive holds lie inside the outer one).
//! `unlocked(_fair)` and `bump` release this guard's level only when it is
//! the outermost one (as lock_api), and count the reacquisition.

use std::cell::{Cell, UnsafeCell};
use std::fmt;
use std::marker::PhantomData;
use std::mem::{ManuallyDrop, MaybeUninit};
use std::ops::Deref;
use std::panic::Location;
use std::ptr;
// Not through `crate::primitive`: the owner word is only ever compared
// with the reading thread's own id, so it takes part in no cross-thread
// algorithm; the raw mutex does the synchronisation (as in lock_api).
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};

use lock_api::{GetThreadId, RawMutex, RawMutexFair, RawMutexTimed};
use lockmeter_model::LockKind;

use crate::class::{Class, Mode};
use crate::meter::{self, Hold, Meta};
use crate::on_drop::OnDrop;

impl<R: RawMutex, G: GetThreadId> Core<R, G> {
    fn owned_by_me(&self) -> bool {
        self.owner.load(Relaxed) == self.get_thread_id.nonzero_thread_id().get()
    }

    /// One more level on the owning thread.
    fn enter_again(&self) {
        let n = self.lock_count.get();
        self.lock_count.set(
            n.checked_add(1)
                .expect("ReentrantMutex lock count overflow"),
        );
    }

    /// The first level: the raw lock was just acquired with `g` by the
    /// thread `id`.
    #[inline]
    fn enter_first(&self, g: R::Guard, id: usize) {
        // SAFETY: we hold the raw lock, so no other thread touches the slot.
        unsafe { (*self.raw_guard.get()).write(g) };
        self.owner.store(id, Relaxed);
        self.lock_count.set(1);
    }

    /// This thread's id, and whether it holds the mutex already.
    #[inline]
    fn me(&self) -> (usize, bool) {
        let id = self.get_thread_id.nonzero_thread_id().get();
        (id, self.owner.load(Relaxed) == id)
    }

    /// Leaves one level; the last one unlocks the raw lock with `unlock`.
    ///
    /// # Safety
    /// The current thread must hold a level.
    #[inline]
    unsafe fn leave(&self, unlock: impl FnOnce(&R, R::Guard)) {
        let n = self.lock_count.get() - 1;
        self.lock_count.set(n);
        if n == 0 {
            self.owner.store(0, Relaxed);
            // SAFETY: the owner took the raw lock and stored its guard.
            let g = unsafe { (*self.raw_guard.get()).assume_init_read() };
            unlock(&self.raw, g);
        }
    }

    #[inline]
    fn lock_at(&self, site: &'static Location<'static>) -> Hold {
        // `me` is read inside each path, not once ahead of `acquire`: read
        // before the `observing()` test, the unobserved lock took 1.07 of
        // parking_lot's time, in each path 1.05, with the same instruction
        // count (`docs/performance.md`, "Session 13").
        //
        // The observed path is a call: inlined beside the plain one, its
        // registers were saved and its stack frame set up on every
        // acquisition, observed or not (1.07 of parking_lot's time).
        if !crate::recorder::observing() {
            self.enter_blocking();
            return Hold::none();
        }
        self.lock_observed(site)
    }

    /// [`lock_at`](Self::lock_at) observed, out of line: its common case
    /// makes no call, the others go on out of line (`meter::acquire_in`).
    /// Inlined into `lock_at` as the Mutex's is, it ran 138 -> 121
    /// instructions but 1.71-1.73 -> 1.86-1.87 of parking_lot's time
    /// (`docs/performance.md`, "Session 38").
    #[inline(never)]
    fn lock_observed(&self, site: &'static Location<'static>) -> Hold {
        let Some(rec) = meter::recorder() else {
            self.enter_blocking();
            return Hold::none();
        };
        let ((), hold) = meter::acquire_in(
            rec,
            &self.meta,
            site,
            Mode::Exclusive,
            |_| {},
            || self.enter_blocking(),
            || self.enter(self.me(), || self.raw.try_lock()),
            || (self.enter_blocking(), 0, 0),
        );
        hold
    }

    /// Enters a level, blocking on the raw lock if another thread owns it.
    #[inline]
    fn enter_blocking(&self) {
        self.enter(self.me(), || Some(self.raw.lock()))
            .expect("a blocking lock always enters");
    }

    /// Enters a level: again on the owning thread, else by `acquire`;
    /// `me` is [`me`](Self::me)'s answer.
    #[inline]
    fn enter(&self, me: (usize, bool), acquire: impl FnOnce() -> Option<R::Guard>) -> Option<()> {
        if me.1 {
            self.enter_again();
        } else {
            self.enter_first(acquire()?, me.0);
        }
        Some(())
    }
}

/// A reentrant mutex over the raw lock `R`, identifying threads with `G`,
/// that records contention per call site.
pub struct MeteredReentrantMutex<R: RawMutex, G: GetThreadId, T: ?Sized> {
    core: Core<R, G>,
    data: UnsafeCell<T>,
}

/// Everything but the data: what a guard, mapped or not, needs to enter
/// and leave a level.
struct Core<R: RawMutex, G> {
    raw: R,
    meta: Meta,
    /// The id of the owning thread, or 0.
    owner: AtomicUsize,
    /// Guards alive on the owning thread; touched only by the owner.
    lock_count: Cell<usize>,
    /// The raw lock's guard while held; touched only by the owner.
    raw_guard: UnsafeCell<MaybeUninit<R::Guard>>,
    get_thread_id: G,
}

/// The drop-in replacement for `parking_lot::ReentrantMutex`.
///
/// # Differences from parking_lot
/// - Guards are not `Send`, as in parking_lot.
/// - `raw()` is the inner raw mutex of this crate's `lock_api` 0.5; it
///   bypasses the meter.
/// - Every level is an acquisition of its own (a recursive one NOWAIT).
/// - No `arc_lock`, `serde` or `owning_ref` integrations.
///
/// # Examples
///
/// ```
/// use lockmeter::ReentrantMutex;
/// use std::cell::RefCell;
///
/// let m = ReentrantMutex::named("log", RefCell::new(Vec::new()));
/// let outer = m.lock();
/// m.lock().borrow_mut().push(1); // the same thread locks again
/// outer.borrow_mut().push(2);
/// drop(outer);
/// assert_eq!(*m.lock().borrow(), [1, 2]);
/// ```
pub type ReentrantMutex<T> =
    MeteredReentrantMutex<parking_lot::RawMutex, parking_lot::RawThreadId, T>;

/// The guard of [`ReentrantMutex`].
pub type ReentrantMutexGuard<'a, T> =
    MeteredReentrantMutexGuard<'a, parking_lot::RawMutex, parking_lot::RawThreadId, T>;

/// A [`ReentrantMutexGuard`] narrowed by `map`.
pub type MappedReentrantMutexGuard<'a, T> =
    MeteredMappedReentrantMutexGuard<'a, parking_lot::RawMutex, parking_lot::RawThreadId, T>;

/// A [`ReentrantMutex`] in a `const` or `static` (parking_lot's
/// `const_reentrant_mutex`); its class is the call site.
#[track_caller]
pub const fn const_reentrant_mutex<T>(val: T) -> ReentrantMutex<T> {
    ReentrantMutex::from_class(Class::new(None, Location::caller()), val)
}

// SAFETY: the data moves with the mutex; owner-only state moves with it.
unsafe impl<R: RawMutex + Send, G: GetThreadId + Send, T: ?Sized + Send> Send
    for MeteredReentrantMutex<R, G, T>
{
}
// SAFETY: other threads only read `owner` and use `raw`; `lock_count` and
// `raw_guard` are touched by the owning thread only. Guards give `&T` to
// one thread at a time (T: Send, as lock_api requires).
unsafe impl<R: RawMutex + Sync, G: GetThreadId + Sync, T: ?Sized + Send> Sync
    for MeteredReentrantMutex<R, G, T>
{
}

impl<R: RawMutex, G: GetThreadId, T> MeteredReentrantMutex<R, G, T> {
    class_constructors! {
        new: /// A reentrant mutex whose class is its creation site.
        named: /// A reentrant mutex of the class `name`.
    }

    /// A reentrant mutex over existing parts (lock_api's `const_new`).
    #[track_caller]
    pub const fn const_new(raw: R, get_thread_id: G, value: T) -> Self {
        Self::from_raw(raw, get_thread_id, value)
    }

    /// A reentrant mutex over existing parts (lock_api's `from_raw`).
    #[track_caller]
    pub const fn from_raw(raw: R, get_thread_id: G, value: T) -> Self {
        Self::from_parts(
            Class::new(None, Location::caller()),
            raw,
            get_thread_id,
            value,
        )
    }

    const fn from_class(class: Class, value: T) -> Self {
        Self::from_parts(class, R::INIT, G::INIT, value)
    }

    const fn from_parts(class: Class, raw: R, get_thread_id: G, value: T) -> Self {
        MeteredReentrantMutex {
            core: Core {
                raw,
                meta: Meta::new(class, LockKind::Mutex),
                owner: AtomicUsize::new(0),
                lock_count: Cell::new(0),
                raw_guard: UnsafeCell::new(MaybeUninit::uninit()),
                get_thread_id,
            },
            data: UnsafeCell::new(value),
        }
    }

    /// Consumes the mutex, returning the data.
    pub fn into_inner(self) -> T {
        self.data.into_inner()
    }
}

impl<R: RawMutex, G: GetThreadId, T: ?Sized> MeteredReentrantMutex<R, G, T> {
    /// Acquires the mutex, blocking unless this thread holds it already.
    #[track_caller]
    #[inline]
    pub fn lock(&self) -> MeteredReentrantMutexGuard<'_, R, G, T> {
        let hold = self.core.lock_at(Location::caller());
        MeteredReentrantMutexGuard::new(self, hold)
    }

    /// Acquires the mutex if it is free or this thread holds it; a failure
    /// counts in RJECT.
    #[track_caller]
    pub fn try_lock(&self) -> Option<MeteredReentrantMutexGuard<'_, R, G, T>> {
        let me = self.core.me();
        meter::try_acquire(&self.core.meta, Location::caller(), Mode::Exclusive, || {
            self.core.enter(me, || self.core.raw.try_lock())
        })
        .map(|((), hold)| MeteredReentrantMutexGuard::new(self, hold))
    }

    /// Mutable access without locking: `&mut self` proves exclusivity.
    pub fn get_mut(&mut self) -> &mut T {
        self.data.get_mut()
    }

    /// Whether the mutex is held right now, by any thread.
    pub fn is_locked(&self) -> bool {
        self.core.raw.is_locked()
    }

    /// Whether the current thread holds the mutex.
    pub fn is_owned_by_current_thread(&self) -> bool {
        self.core.owned_by_me()
    }

    /// A raw pointer to the data.
    pub fn data_ptr(&self) -> *mut T {
        self.data.get()
    }

    /// The inner raw mutex. Anything done through it is not metered.
    ///
    /// # Safety
    /// Unlocking it while a guard exists is undefined behaviour.
    pub unsafe fn raw(&self) -> &R {
        &self.core.raw
    }

    /// A guard for a level taken some other way (a forgotten guard's);
    /// not counted, not timed.
    ///
    /// # Safety
    /// The current thread must hold a level no guard accounts for.
    pub unsafe fn make_guard_unchecked(&self) -> MeteredReentrantMutexGuard<'_, R, G, T> {
        MeteredReentrantMutexGuard::new(self, Hold::none())
    }

    /// Leaves a level whose guard was forgotten; its hold is never recorded.
    ///
    /// # Safety
    /// The current thread must hold a level through a forgotten guard.
    pub unsafe fn force_unlock(&self) {
        // SAFETY: the caller promises this thread holds a level.
        unsafe { self.core.leave(|raw, g| raw.unlock(g)) }
    }
}

impl<R: RawMutexFair, G: GetThreadId, T: ?Sized> MeteredReentrantMutex<R, G, T> {
    /// [`force_unlock`](Self::force_unlock), unlocking fairly.
    ///
    /// # Safety
    /// As for `force_unlock`.
    pub unsafe fn force_unlock_fair(&self) {
        // SAFETY: the caller promises this thread holds a level.
        unsafe { self.core.leave(|raw, g| raw.unlock_fair(g)) }
    }
}

impl<R: RawMutexTimed, G: GetThreadId, T: ?Sized> MeteredReentrantMutex<R, G, T> {
    timed_pair! {
        /// Acquires the mutex, giving up after `timeout` (counted in RJECT).
        fn try_lock_for(timeout: R::Duration) = R::try_lock_for;
        /// Acquires the mutex, giving up at `deadline` (counted in RJECT).
        fn try_lock_until(deadline: R::Instant) = R::try_lock_until;
        #[track_caller]
        pub fn [] (&self,) limit () -> Option<MeteredReentrantMutexGuard<'_, R, G, T>>,
        |wait, limit| {
            let me = self.core.me();
            let raw = &self.core.raw;
            meter::acquire_timed(
                &self.core.meta,
                Location::caller(),
                Mode::Exclusive,
                || self.core.enter(me, || raw.try_lock()),
                || (self.core.enter(me, || wait(raw, limit)), 0, 0),
            )
            .map(|((), hold)| MeteredReentrantMutexGuard::new(self, hold))
        }
    }
}

from_and_default!([R: RawMutex, G: GetThreadId,] MeteredReentrantMutex<R, G, T> => value);

impl<R: RawMutex, G: GetThreadId, T: ?Sized + fmt::Debug> fmt::Debug
    for MeteredReentrantMutex<R, G, T>
{
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut d = f.debug_struct("ReentrantMutex");
        let me = self.core.me();
        match self.core.enter(me, || self.core.raw.try_lock()) {
            Some(()) => {
                // SAFETY: this thread holds a level until `leave` below.
                d.field("data", &unsafe { &*self.data.get() });
                // SAFETY: the level just entered.
                unsafe { self.core.leave(|raw, g| raw.unlock(g)) };
            }
            None => {
                d.field("data", &format_args!("<locked>"));
            }
        }
        d.finish()
    }
}

/// Shared access to a [`MeteredReentrantMutex`]'s data; leaves one level
/// and records its hold on drop. Not `Send`: the level is this thread's.
#[must_use = "the lock is released as soon as the guard is dropped"]
pub struct MeteredReentrantMutexGuard<'a, R: RawMutex, G: GetThreadId, T: ?Sized> {
    lock: &'a MeteredReentrantMutex<R, G, T>,
    hold: Hold,
    marker: PhantomData<*const ()>,
}

// SAFETY: sharing the guard only shares `&T`.
unsafe impl<R: RawMutex + Sync, G: GetThreadId + Sync, T: ?Sized + Sync> Sync
    for MeteredReentrantMutexGuard<'_, R, G, T>
{
}

impl<R: RawMutex, G: GetThreadId> Core<R, G> {
    /// Ends `hold` and leaves a level, unlocking with `unlock` if last.
    ///
    /// # Safety
    /// The current thread must hold the level `hold` belongs to.
    unsafe fn release(&self, hold: &Hold, unlock: impl FnOnce(&R, R::Guard)) {
        // SAFETY: as the caller promises.
        hold.release(|| unsafe { self.leave(unlock) });
    }
}

impl<'a, R: RawMutex, G: GetThreadId, T: ?Sized> MeteredReentrantMutexGuard<'a, R, G, T> {
    fn new(lock: &'a MeteredReentrantMutex<R, G, T>, hold: Hold) -> Self {
        MeteredReentrantMutexGuard {
            lock,
            hold,
            marker: PhantomData,
        }
    }

    fn into_parts(s: Self) -> (&'a MeteredReentrantMutex<R, G, T>, Hold) {
        let s = ManuallyDrop::new(s);
        // SAFETY: `s` is never used or dropped again.
        (s.lock, unsafe { ptr::read(&s.hold) })
    }

    fn into_mapped<U: ?Sized>(
        s: Self,
        data: *const U,
    ) -> MeteredMappedReentrantMutexGuard<'a, R, G, U> {
        let (lock, hold) = Self::into_parts(s);
        MeteredMappedReentrantMutexGuard {
            core: &lock.core,
            data,
            hold,
            marker: PhantomData,
        }
    }

    /// The mutex this guard holds.
    pub fn remutex(s: &Self) -> &'a MeteredReentrantMutex<R, G, T> {
        s.lock
    }

    map_fns! {
        /// A guard for a part of the data; the hold carries over.
        MeteredMappedReentrantMutexGuard<R, G>, &T as *const
    }

    /// Leaves this level, runs `f`, and enters again; the reacquisition
    /// counts at the caller's site.
    #[track_caller]
    pub fn unlocked<F, U>(s: &mut Self, f: F) -> U
    where
        F: FnOnce() -> U,
    {
        // SAFETY: this guard holds a level on this thread; `g` is the raw
        // lock's guard if it was the last.
        unsafe { s.unlock_run(|raw, g| raw.unlock(g), f) }
    }

    /// Ends the hold and leaves this level with `unlock`, runs `f`, and
    /// enters again at the caller's site, on return or unwind alike.
    ///
    /// # Safety
    /// `unlock` must release the raw lock's guard it is given.
    #[track_caller]
    unsafe fn unlock_run<U>(
        &mut self,
        unlock: impl FnOnce(&R, R::Guard),
        f: impl FnOnce() -> U,
    ) -> U {
        let site = Location::caller();
        let hold = std::mem::replace(&mut self.hold, Hold::none());
        // SAFETY: this guard holds a level on this thread; `unlock` is as
        // the caller promises.
        unsafe { self.lock.core.release(&hold, unlock) };
        let _relock = OnDrop(|| self.hold = self.lock.core.lock_at(site));
        f()
    }
}

impl<R: RawMutexFair, G: GetThreadId, T: ?Sized> MeteredReentrantMutexGuard<'_, R, G, T> {
    /// Leaves this level, unlocking fairly if it was the last.
    pub fn unlock_fair(s: Self) {
        let (lock, hold) = Self::into_parts(s);
        // SAFETY: this guard held a level on this thread.
        unsafe { lock.core.release(&hold, |raw, g| raw.unlock_fair(g)) };
    }

    /// [`unlocked`](Self::unlocked) with a fair unlock.
    #[track_caller]
    pub fn unlocked_fair<F, U>(s: &mut Self, f: F) -> U
    where
        F: FnOnce() -> U,
    {
        // SAFETY: `unlock_fair` releases the raw guard.
        unsafe { s.unlock_run(|raw, g| raw.unlock_fair(g), f) }
    }

    /// Lets a waiting thread have the lock if this is the only level, then
    /// takes it back; the reacquisition counts at the caller's site.
    #[track_caller]
    pub fn bump(s: &mut Self) {
        if s.lock.core.lock_count.get() == 1 {
            Self::unlocked_fair(s, || ());
        }
    }
}

impl<R: RawMutex, G: GetThreadId, T: ?Sized> Deref for MeteredReentrantMutexGuard<'_, R, G, T> {
    type Target = T;
    fn deref(&self) -> &T {
        // SAFETY: the guard proves this thread holds the lock; only `&T`
        // is handed out.
        unsafe { &*self.lock.data.get() }
    }
}

impl<R: RawMutex, G: GetThreadId, T: ?Sized> Drop for MeteredReentrantMutexGuard<'_, R, G, T> {
    #[inline]
    fn drop(&mut self) {
        // SAFETY: this guard holds a level on this thread.
        unsafe { self.lock.core.release(&self.hold, |raw, g| raw.unlock(g)) };
    }
}

/// A guard for a part of a [`MeteredReentrantMutex`]'s data, made by `map`.
#[must_use = "the lock is released as soon as the guard is dropped"]
pub struct MeteredMappedReentrantMutexGuard<'a, R: RawMutex, G: GetThreadId, T: ?Sized> {
    core: &'a Core<R, G>,
    data: *const T,
    hold: Hold,
    marker: PhantomData<&'a T>,
}

// SAFETY: sharing the guard only shares `&T`.
unsafe impl<R: RawMutex + Sync, G: GetThreadId + Sync, T: ?Sized + Sync> Sync
    for MeteredMappedReentrantMutexGuard<'_, R, G, T>
{
}

impl<'a, R: RawMutex, G: GetThreadId, T: ?Sized> MeteredMappedReentrantMutexGuard<'a, R, G, T> {
    fn into_mapped<U: ?Sized>(
        s: Self,
        data: *const U,
    ) -> MeteredMappedReentrantMutexGuard<'a, R, G, U> {
        let s = ManuallyDrop::new(s);
        MeteredMappedReentrantMutexGuard {
            core: s.core,
            data,
            // SAFETY: `s` is never used or dropped again.
            hold: unsafe { ptr::read(&s.hold) },
            marker: PhantomData,
        }
    }

    map_fns! {
        /// Narrows the guard further.
        MeteredMappedReentrantMutexGuard<R, G>, &T as *const
    }
}

impl<R: RawMutexFair, G: GetThreadId, T: ?Sized> MeteredMappedReentrantMutexGuard<'_, R, G, T> {
    /// Leaves this level, unlocking fairly if it was the last.
    pub fn unlock_fair(s: Self) {
        let s = ManuallyDrop::new(s);
        // SAFETY: `s` is never used or dropped again.
        let hold = unsafe { ptr::read(&s.hold) };
        // SAFETY: this guard held a level on this thread.
        unsafe { s.core.release(&hold, |raw, g| raw.unlock_fair(g)) };
    }
}

impl<R: RawMutex, G: GetThreadId, T: ?Sized> Deref
    for MeteredMappedReentrantMutexGuard<'_, R, G, T>
{
    type Target = T;
    fn deref(&self) -> &T {
        // SAFETY: the guard proves this thread holds the lock.
        unsafe { &*self.data }
    }
}

impl<R: RawMutex, G: GetThreadId, T: ?Sized> Drop
    for MeteredMappedReentrantMutexGuard<'_, R, G, T>
{
    #[inline]
    fn drop(&mut self) {
        // SAFETY: this guard holds a level on this thread.
        unsafe { self.core.release(&self.hold, |raw, g| raw.unlock(g)) };
    }
}

fmt_as_data!(
    [R: RawMutex, G: GetThreadId,] MeteredReentrantMutexGuard<'_, R, G, T>,
    [R: RawMutex, G: GetThreadId,] MeteredMappedReentrantMutexGuard<'_, R, G, T>,
);
