//! A counting semaphore built from the crate's own instrumented parts.
//!
//! Like a Linux semaphore, a [`Semaphore`] is a count plus a wait queue,
//! both guarded by one spinlock. Because those parts are
//! instrumented too, a snapshot shows three rows for a semaphore named
//! `pipe.sem`: the semaphore itself (per caller of `down`), `pipe.sem.lock`
//! (its spinlock, at call sites inside this file and the wait queue) and
//! `pipe.sem.wait` (sleeps, wake-ups and wake latency). That nesting is what
//! exposed the cost of a briefly held semaphore in the original Lockmeter:
//! 58 % contention on the internal spinlock of the semaphore guarding a
//! pipe, which a plain spinlock then replaced.
//!
//! Every operation takes the spinlock, as the Linux semaphore does, observed
//! or not: a profiler must not change the algorithm it measures. The fast
//! paths (a permit free, nobody asleep) hold the bare spinlock guard; the
//! wait queue's guard, which collects wake-ups to send after unlocking, is
//! built only to sleep or to wake.

use std::fmt;
use std::panic::Location;
use std::sync::atomic::Ordering::Relaxed;
use std::time::Duration;

use lockmeter_model::LockKind;

use crate::class::{Class, Mode, Role};
use crate::meter::{Hold, Meta, Probe};
use crate::now;
use crate::primitive::loom_const_fn;
use crate::spinlock::SpinLockGuard;
use crate::waitqueue::{Inner, Wait, WaitQueue, WaitQueueGuard, WakeOrder};

/// A counting semaphore: `down` takes a permit, sleeping until one is free;
/// `up` returns one and wakes one sleeper.
///
/// `down`/`up` count acquisitions and waits; the RAII [`acquire`] also
/// records how long the permit was held (UTIL, HOLD).
///
/// [`acquire`]: Semaphore::acquire
///
/// # Examples
///
/// ```
/// use lockmeter::Semaphore;
///
/// let sem = Semaphore::named("slots", 2);
/// sem.down();
/// assert!(sem.try_down());
/// assert!(!sem.try_down());
/// sem.up();
/// {
///     let _permit = sem.acquire();
/// } // returned here
/// assert_eq!(sem.available(), 1);
/// ```
pub struct Semaphore {
    queue: WaitQueue<usize>,
    meta: Meta,
}

impl Semaphore {
    loom_const_fn! {
        /// A semaphore with `permits` permits, classed by its creation site.
        #[track_caller]
        pub const fn new(permits: usize) -> Semaphore {
            Semaphore::with_class(Class::new(None, Location::caller()), permits)
        }
    }

    loom_const_fn! {
        /// A semaphore with `permits` permits of the class `name`; its parts
        /// are `<name>.lock` and `<name>.wait`.
        #[track_caller]
        pub const fn named(name: &'static str, permits: usize) -> Semaphore {
            Semaphore::with_class(Class::new(Some(name), Location::caller()), permits)
        }
    }

    loom_const_fn! {
        const fn with_class(class: Class, permits: usize) -> Semaphore {
            Semaphore {
                queue: WaitQueue::with_class(class.inner(Role::InnerWait), WakeOrder::Fifo, permits),
                meta: Meta::new(class, LockKind::Semaphore),
            }
        }
    }

    /// Takes a permit, sleeping until one is free.
    #[track_caller]
    #[inline]
    pub fn down(&self) {
        // The fast path's branch is written out here and in `down_timeout`
        // on purpose: shared through a helper returning the held lock in a
        // `Result`, it went through memory and an unobserved down+up went
        // from 0.96 to 2.1 times the bare semaphore (lockmeter-bench). Only
        // what follows a permit taken at once is shared (`took_at_once`,
        // which takes the lock by value and is always inlined).
        let site = Location::caller();
        let probe = Probe::start(&self.meta, site, Mode::Exclusive);
        let mut inner = self.lock_to_take();
        if take_permit(&mut inner.data) {
            self.took_at_once(inner, probe, site);
            return;
        }
        self.sleep_for_permit(inner, probe, site).discard();
        self.note_loose();
    }

    /// Takes a permit if one is free now; a failure counts in RJECT.
    #[track_caller]
    #[inline]
    pub fn try_down(&self) -> bool {
        let site = Location::caller();
        let probe = Probe::start(&self.meta, site, Mode::Exclusive);
        let taken = take_permit(&mut self.lock_to_take().data);
        match probe {
            Some(p) if !taken => p.rejected(),
            probe => self.count_nowait(probe, site),
        }
        taken
    }

    /// Takes a permit, giving up after `timeout` (counted in RJECT).
    #[track_caller]
    pub fn down_timeout(&self, timeout: Duration) -> bool {
        let site = Location::caller();
        let probe = Probe::start(&self.meta, site, Mode::Exclusive);
        let mut inner = self.lock_to_take();
        if take_permit(&mut inner.data) {
            self.took_at_once(inner, probe, site);
            return true;
        }
        let waiting = probe.as_ref().map(|p| self.contended(p));
        let taken = self.sleep_for_permit_until(inner, timeout);
        if let (Some(p), Some(w)) = (probe, waiting) {
            if taken {
                p.acquired_after_wait(&self.meta, site, w, 0, 1).discard();
                self.note_loose();
            } else {
                p.rejected_after_wait(0, 1);
            }
        }
        taken
    }

    /// Returns a permit and wakes one sleeper.
    #[inline]
    pub fn up(&self) {
        if crate::recorder::observing() {
            self.note_loose();
        }
        self.give_back();
    }

    /// `up` for a [`SemaphorePermit`]: the permit was a guarded one.
    #[inline]
    fn give_back(&self) {
        let mut inner = self.queue.lock_plain(); // not #[track_caller]: a site in this file
        inner.data += 1;
        if inner.list.len() > 0 {
            self.wake_sleeper(inner);
        }
    }

    /// Takes a permit and returns it when the [`SemaphorePermit`] drops,
    /// recording the hold time (sampled like any uncontended hold).
    #[track_caller]
    #[inline]
    pub fn acquire(&self) -> SemaphorePermit<'_> {
        let site = Location::caller();
        let probe = Probe::start(&self.meta, site, Mode::Exclusive);
        let mut inner = self.lock_to_take();
        let hold = if take_permit(&mut inner.data) {
            drop(inner);
            probe.map_or(Hold::none(), |p| p.acquired_nowait(&self.meta, site))
        } else {
            self.sleep_for_permit(inner, probe, site)
        };
        SemaphorePermit { sem: self, hold }
    }

    /// Permits free right now.
    pub fn available(&self) -> usize {
        self.queue.lock_plain().data
    }

    /// The spinlock, taken to look for a permit. Not `#[track_caller]`, so
    /// that the `.lock` row shows this site inside the semaphore rather than
    /// the caller of `down`.
    #[inline(always)]
    fn lock_to_take(&self) -> SpinLockGuard<'_, Inner<usize>> {
        self.queue.lock_plain()
    }

    /// The `down` that found no permit: sleeps on the queue (recorded in
    /// the `.wait` row) until it takes one, and counts as contended.
    #[inline(never)]
    fn sleep_for_permit(
        &self,
        inner: SpinLockGuard<'_, Inner<usize>>,
        probe: Option<Probe>,
        site: &'static Location<'static>,
    ) -> Hold {
        let waiting = probe.as_ref().map(|p| self.contended(p));
        drop(
            WaitQueueGuard::from_lock(&self.queue, inner).wait_event_exclusive_locked(take_permit),
        );
        match (probe, waiting) {
            (Some(p), Some(w)) => p.acquired_after_wait(&self.meta, site, w, 0, 1),
            _ => Hold::none(),
        }
    }

    /// [`Semaphore::down_timeout`]'s sleep on the queue, for at most
    /// `timeout`; whether it took a permit. Not `#[track_caller]`, as
    /// [`Semaphore::sleep_for_permit`]: the `.wait` and `.lock` rows show
    /// this site inside the semaphore.
    fn sleep_for_permit_until(
        &self,
        inner: SpinLockGuard<'_, Inner<usize>>,
        timeout: Duration,
    ) -> bool {
        let wait = Wait::exclusive().timeout(timeout);
        let (guard, taken) =
            WaitQueueGuard::from_lock(&self.queue, inner).wait_event_locked_with(wait, take_permit);
        drop(guard);
        taken
    }

    /// The wait of `probe` begins; see `Meta::loose`.
    fn contended(&self, probe: &Probe) -> crate::meter::Waiting {
        let w = probe.contended(&self.meta);
        if self.meta.loose.load(Relaxed) {
            now::wait_is_loose();
        }
        w
    }

    /// A permit was taken at once: releases the lock, then counts.
    #[inline(always)]
    fn took_at_once(
        &self,
        inner: SpinLockGuard<'_, Inner<usize>>,
        probe: Option<Probe>,
        site: &'static Location<'static>,
    ) {
        drop(inner);
        self.count_nowait(probe, site);
    }

    /// Counts a permit taken at once (a `down` not tied to a permit guard,
    /// so the semaphore is loose), if observed.
    #[inline(always)]
    fn count_nowait(&self, probe: Option<Probe>, site: &'static Location<'static>) {
        if let Some(p) = probe {
            p.acquired_nowait_untimed(&self.meta, site);
            self.note_loose();
        }
    }

    /// Marks the semaphore loose (see `Meta::loose`), writing only once.
    #[inline]
    fn note_loose(&self) {
        if !self.meta.loose.load(Relaxed) {
            self.meta.loose.store(true, Relaxed);
        }
    }

    /// An `up` that found sleepers: wakes one, after the lock is released.
    #[cold]
    #[inline(never)]
    fn wake_sleeper(&self, inner: SpinLockGuard<'_, Inner<usize>>) {
        WaitQueueGuard::from_lock(&self.queue, inner).wake_up_locked();
    }
}

/// Takes one permit from the count, if any.
fn take_permit(count: &mut usize) -> bool {
    if *count > 0 {
        *count -= 1;
        true
    } else {
        false
    }
}

impl fmt::Debug for Semaphore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Semaphore")
            .field("class", &self.meta.class().id())
            .field("available", &self.available())
            .finish()
    }
}

/// A permit of a [`Semaphore`]; `up` runs when it drops.
#[must_use = "the permit is returned as soon as it is dropped"]
pub struct SemaphorePermit<'a> {
    sem: &'a Semaphore,
    hold: Hold,
}

impl Drop for SemaphorePermit<'_> {
    fn drop(&mut self) {
        self.hold
            .release_blaming(&self.sem.meta, || self.sem.give_back());
    }
}
