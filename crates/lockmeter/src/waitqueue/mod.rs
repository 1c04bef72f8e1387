//! Wait queues with Linux semantics, instrumented.
//!
//! A [`WaitQueue`] is where threads sleep until a condition holds. Waiters
//! re-check their condition after every wake-up; a wake-up that finds it
//! still false is *spurious* and the waiter sleeps again. Exclusive waiters
//! are woken one per wake call (in FIFO or LIFO order); non-exclusive ones
//! all at once. A waiter may state an interest mask, and a keyed wake only
//! wakes waiters whose mask meets the key.
//!
//! The queue's lock can also guard the caller's data (`WaitQueue<T>`): then
//! [`WaitQueue::lock`] returns a guard whose `*_locked` operations add,
//! remove and wake waiters without taking the lock a second time (epoll,
//! whose own lock already guarded its queue, took it twice per event).
//!
//! Recorded per call site: waits that slept, sleeps, spurious wake-ups and
//! wake latency for waiters; wake calls, wakeups and exclusive wakeups for
//! wakers. The queue's own lock is a row of its own, `<queue>.lock`.

mod list;
mod parker;

use std::fmt;
use std::mem::ManuallyDrop;
use std::ops::{Deref, DerefMut};
use std::panic::Location;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::{Duration, Instant};

use lockmeter_model::LockKind;

pub use self::list::WakeOrder;
pub(crate) use self::list::{PendingWakes, WaitList, Waiter};
use crate::class::{Class, Role};
use crate::meter::{Meta, WaitStats, WakeCall};
use crate::primitive::loom_const_fn;
use crate::spinlock::{SpinLock, SpinLockGuard};

/// Every key bit: what unkeyed waits and wakes use.
pub const ALL_KEYS: u64 = u64::MAX;

/// How a waiter waits: exclusive or not, which keys, for how long.
///
/// # Examples
///
/// ```
/// use lockmeter::Wait;
/// use std::time::Duration;
///
/// let w = Wait::exclusive().keyed(0b01).timeout(Duration::from_millis(5));
/// # let _ = w;
/// ```
#[derive(Debug, Clone, Copy)]
pub struct Wait {
    exclusive: bool,
    mask: u64,
    timeout: Option<Duration>,
}

impl Wait {
    /// A non-exclusive wait: every wake call wakes it.
    pub const fn shared() -> Wait {
        Wait {
            exclusive: false,
            mask: ALL_KEYS,
            timeout: None,
        }
    }

    /// An exclusive wait: one wake call wakes one exclusive waiter.
    pub const fn exclusive() -> Wait {
        Wait {
            exclusive: true,
            mask: ALL_KEYS,
            timeout: None,
        }
    }

    /// Only keyed wakes whose key meets `mask` wake this waiter.
    pub const fn keyed(self, mask: u64) -> Wait {
        Wait { mask, ..self }
    }

    /// Give up after `timeout` (counted in RJECT).
    pub const fn timeout(self, timeout: Duration) -> Wait {
        Wait {
            timeout: Some(timeout),
            ..self
        }
    }
}

pub(crate) struct Inner<T> {
    pub(crate) list: WaitList,
    pub(crate) data: T,
}

/// A Linux-style wait queue whose lock can also guard data `T`.
///
/// # Examples
///
/// ```
/// use lockmeter::WaitQueue;
/// use std::sync::atomic::{AtomicBool, Ordering};
/// use std::sync::Arc;
///
/// let q = Arc::new(WaitQueue::named("ready"));
/// let flag = Arc::new(AtomicBool::new(false));
/// let (q2, f2) = (q.clone(), flag.clone());
/// let t = std::thread::spawn(move || q2.wait_event(|| f2.load(Ordering::Acquire)));
/// flag.store(true, Ordering::Release);
/// q.wake_up_all();
/// t.join().unwrap();
/// ```
pub struct WaitQueue<T = ()> {
    inner: SpinLock<Inner<T>>,
    meta: Meta,
}

impl WaitQueue<()> {
    loom_const_fn! {
        /// A FIFO queue whose class is its creation site.
        #[track_caller]
        pub const fn new() -> WaitQueue<()> {
            WaitQueue::with_class(Class::new(None, Location::caller()), WakeOrder::Fifo, ())
        }
    }

    loom_const_fn! {
        /// A FIFO queue of the class `name`.
        #[track_caller]
        pub const fn named(name: &'static str) -> WaitQueue<()> {
            WaitQueue::with_class(Class::new(Some(name), Location::caller()), WakeOrder::Fifo, ())
        }
    }

    loom_const_fn! {
        /// A queue of the class `name` that wakes exclusive waiters in `order`.
        #[track_caller]
        pub const fn named_with_order(name: &'static str, order: WakeOrder) -> WaitQueue<()> {
            WaitQueue::with_class(Class::new(Some(name), Location::caller()), order, ())
        }
    }
}

impl Default for WaitQueue<()> {
    #[track_caller]
    fn default() -> Self {
        WaitQueue::new()
    }
}

impl<T> WaitQueue<T> {
    loom_const_fn! {
        /// A FIFO queue whose lock also guards `data`.
        #[track_caller]
        pub const fn with_data(data: T) -> WaitQueue<T> {
            WaitQueue::with_class(Class::new(None, Location::caller()), WakeOrder::Fifo, data)
        }
    }

    loom_const_fn! {
        /// A queue of the class `name` whose lock also guards `data`.
        #[track_caller]
        pub const fn named_with_data(name: &'static str, order: WakeOrder, data: T) -> WaitQueue<T> {
            WaitQueue::with_class(Class::new(Some(name), Location::caller()), order, data)
        }
    }

    loom_const_fn! {
        /// A queue of `class`; its lock is `<class>.lock`.
        pub(crate) const fn with_class(class: Class, order: WakeOrder, data: T) -> WaitQueue<T> {
            WaitQueue {
                inner: SpinLock::with_class(class.inner(Role::InnerLock), Inner { list: WaitList::new(order), data }),
                meta: Meta::new(class, LockKind::Waitqueue),
            }
        }
    }

    /// Waits until `cond` holds; every wake call wakes this waiter.
    #[track_caller]
    pub fn wait_event(&self, cond: impl FnMut() -> bool) {
        self.wait_event_with(Wait::shared(), cond);
    }

    /// Waits until `cond` holds as an exclusive waiter.
    #[track_caller]
    pub fn wait_event_exclusive(&self, cond: impl FnMut() -> bool) {
        self.wait_event_with(Wait::exclusive(), cond);
    }

    /// Like [`wait_event`](Self::wait_event), giving up after `timeout`.
    /// Returns whether `cond` held.
    #[track_caller]
    pub fn wait_event_timeout(&self, cond: impl FnMut() -> bool, timeout: Duration) -> bool {
        self.wait_event_with(Wait::shared().timeout(timeout), cond)
    }

    /// Like [`wait_event_exclusive`](Self::wait_event_exclusive), giving up
    /// after `timeout`. Returns whether `cond` held.
    #[track_caller]
    pub fn wait_event_exclusive_timeout(
        &self,
        cond: impl FnMut() -> bool,
        timeout: Duration,
    ) -> bool {
        self.wait_event_with(Wait::exclusive().timeout(timeout), cond)
    }

    /// Waits until `cond` holds; only wakes whose key meets `mask` wake it.
    #[track_caller]
    pub fn wait_event_keyed(&self, mask: u64, cond: impl FnMut() -> bool) {
        self.wait_event_with(Wait::shared().keyed(mask), cond);
    }

    /// Waits as `how` says until `cond` holds. `cond` runs without the
    /// queue's lock, before sleeping and after every wake-up. Returns false
    /// if the wait timed out with `cond` still false.
    #[track_caller]
    pub fn wait_event_with(&self, how: Wait, mut cond: impl FnMut() -> bool) -> bool {
        let mut stats = WaitStats::start(&self.meta, Location::caller());
        if cond() {
            stats.finish(true);
            return true;
        }
        let deadline = how.timeout.map(|t| Instant::now() + t);
        let waiter = Waiter::new(how.exclusive, how.mask);
        let done = loop {
            let queued = self.inner.lock().list.add(&waiter);
            stats.queued(queued);
            if cond() {
                self.inner.lock().list.remove(&waiter);
                break true;
            }
            let signaled = sleep(&mut stats, &waiter, deadline);
            if !signaled {
                // Timed out. A waker may have picked us meanwhile: then the
                // wake-up is ours and `cond` decides, so none is lost.
                let woken = self.inner.lock().list.remove(&waiter);
                waiter.parker.clear();
                if woken {
                    stats.woken(waiter.woken_at.load(Relaxed));
                }
                break cond();
            }
            stats.woken(waiter.woken_at.load(Relaxed));
            if cond() {
                break true;
            }
            stats.spurious();
        };
        stats.finish(done);
        done
    }

    /// Wakes every non-exclusive waiter and one exclusive waiter. Returns
    /// how many were woken.
    #[track_caller]
    pub fn wake_up(&self) -> usize {
        self.wake_with(ALL_KEYS, 1, Location::caller())
    }

    /// Wakes every non-exclusive waiter and up to `nr` exclusive ones.
    #[track_caller]
    pub fn wake_up_nr(&self, nr: usize) -> usize {
        self.wake_with(ALL_KEYS, nr, Location::caller())
    }

    /// Wakes every waiter.
    #[track_caller]
    pub fn wake_up_all(&self) -> usize {
        self.wake_with(ALL_KEYS, usize::MAX, Location::caller())
    }

    /// Wakes the non-exclusive waiters whose mask meets `key`, and one
    /// exclusive one whose mask meets it.
    #[track_caller]
    pub fn wake_up_key(&self, key: u64) -> usize {
        self.wake_with(key, 1, Location::caller())
    }

    fn wake_with(&self, key: u64, nr_exclusive: usize, site: &'static Location<'static>) -> usize {
        let mut pending = PendingWakes::default();
        let mut inner = self.inner.lock();
        let woken = wake_locked(
            &self.meta,
            &mut inner.list,
            key,
            nr_exclusive,
            site,
            &mut pending,
        );
        drop(inner);
        pending.unpark_all();
        woken
    }

    /// Takes the queue's lock (a row of its own, `<queue>.lock`) for the
    /// `*_locked` operations and the data it guards.
    #[track_caller]
    pub fn lock(&self) -> WaitQueueGuard<'_, T> {
        WaitQueueGuard::new(self, self.inner.lock())
    }

    /// The queue's lock without a [`WaitQueueGuard`] around it: for fast
    /// paths that neither wait nor wake (a semaphore with a permit free).
    /// The guard, with its list of pending wake-ups, is 64 bytes that such
    /// a path would only copy around; [`WaitQueueGuard::from_lock`] makes
    /// one when it is needed after all.
    #[track_caller]
    #[inline]
    pub(crate) fn lock_plain(&self) -> SpinLockGuard<'_, Inner<T>> {
        self.inner.lock()
    }

    /// Waiters queued right now.
    #[track_caller]
    pub fn waiters(&self) -> usize {
        self.inner.lock().list.len()
    }

    /// Sets the order exclusive waiters are woken in.
    pub fn set_order(&mut self, order: WakeOrder) {
        self.inner.get_mut().list = WaitList::new(order);
    }
}

/// Wakes under the held lock and records the wake call at `site`.
pub(crate) fn wake_locked(
    meta: &Meta,
    list: &mut WaitList,
    key: u64,
    nr: usize,
    site: &'static Location<'static>,
    pending: &mut PendingWakes,
) -> usize {
    let call = WakeCall::start(meta, site);
    let waiting = list.len() as u64;
    let woken = list.wake(key, nr, call.stamp(), pending);
    call.finish(waiting, woken.total, woken.exclusive);
    woken.total as usize
}

/// The held lock of a [`WaitQueue`]: access to its data and the `*_locked`
/// operations, which never take the lock a second time.
#[must_use = "the lock is released as soon as the guard is dropped"]
pub struct WaitQueueGuard<'a, T> {
    queue: &'a WaitQueue<T>,
    /// Dropped by hand in `Drop`, before the pending wake-ups are sent.
    inner: ManuallyDrop<SpinLockGuard<'a, Inner<T>>>,
    /// Waiters woken under this guard; unparked once the lock is released.
    pending: PendingWakes,
}

impl<T> Drop for WaitQueueGuard<'_, T> {
    fn drop(&mut self) {
        // SAFETY: `inner` is dropped exactly once, here.
        unsafe { ManuallyDrop::drop(&mut self.inner) };
        self.pending.unpark_all();
    }
}

impl<'a, T> WaitQueueGuard<'a, T> {
    /// Wraps a lock taken with [`WaitQueue::lock_plain`] on `queue`.
    pub(crate) fn from_lock(queue: &'a WaitQueue<T>, inner: SpinLockGuard<'a, Inner<T>>) -> Self {
        WaitQueueGuard::new(queue, inner)
    }

    fn new(queue: &'a WaitQueue<T>, inner: SpinLockGuard<'a, Inner<T>>) -> Self {
        WaitQueueGuard {
            queue,
            inner: ManuallyDrop::new(inner),
            pending: PendingWakes::default(),
        }
    }

    fn wake(&mut self, key: u64, nr: usize, site: &'static Location<'static>) -> usize {
        wake_locked(
            &self.queue.meta,
            &mut self.inner.list,
            key,
            nr,
            site,
            &mut self.pending,
        )
    }

    /// [`WaitQueue::wake_up`] under the held lock.
    #[track_caller]
    pub fn wake_up_locked(&mut self) -> usize {
        self.wake(ALL_KEYS, 1, Location::caller())
    }

    /// [`WaitQueue::wake_up_nr`] under the held lock.
    #[track_caller]
    pub fn wake_up_nr_locked(&mut self, nr: usize) -> usize {
        self.wake(ALL_KEYS, nr, Location::caller())
    }

    /// [`WaitQueue::wake_up_all`] under the held lock.
    #[track_caller]
    pub fn wake_up_all_locked(&mut self) -> usize {
        self.wake(ALL_KEYS, usize::MAX, Location::caller())
    }

    /// [`WaitQueue::wake_up_key`] under the held lock.
    #[track_caller]
    pub fn wake_up_key_locked(&mut self, key: u64) -> usize {
        self.wake(key, 1, Location::caller())
    }

    /// Waiters queued right now.
    pub fn waiters(&self) -> usize {
        self.inner.list.len()
    }

    /// Waits until `cond(&mut data)` holds, as a non-exclusive waiter. The
    /// condition runs under the lock; the lock is dropped while asleep and
    /// retaken to re-check (like `wait_event_interruptible_locked`).
    #[track_caller]
    pub fn wait_event_locked(self, cond: impl FnMut(&mut T) -> bool) -> Self {
        self.wait_event_locked_with(Wait::shared(), cond).0
    }

    /// [`wait_event_locked`](Self::wait_event_locked) as an exclusive waiter.
    #[track_caller]
    pub fn wait_event_exclusive_locked(self, cond: impl FnMut(&mut T) -> bool) -> Self {
        self.wait_event_locked_with(Wait::exclusive(), cond).0
    }

    /// Waits as `how` says until `cond(&mut data)` holds, under the lock.
    /// Returns the guard and whether `cond` held (false: timed out).
    #[track_caller]
    pub fn wait_event_locked_with(
        mut self,
        how: Wait,
        mut cond: impl FnMut(&mut T) -> bool,
    ) -> (Self, bool) {
        let queue = self.queue;
        let mut stats = WaitStats::start(&queue.meta, Location::caller());
        if cond(&mut self.inner.data) {
            stats.finish(true);
            return (self, true);
        }
        let deadline = how.timeout.map(|t| Instant::now() + t);
        let waiter = Waiter::new(how.exclusive, how.mask);
        let done = loop {
            let queued = self.inner.list.add(&waiter);
            stats.queued(queued);
            drop(self);
            let signaled = sleep(&mut stats, &waiter, deadline);
            self = WaitQueueGuard::new(queue, queue.inner.lock());
            let woken = if signaled {
                true
            } else {
                self.inner.list.remove(&waiter)
            };
            if !signaled {
                waiter.parker.clear();
            }
            if woken {
                stats.woken(waiter.woken_at.load(Relaxed));
            }
            if cond(&mut self.inner.data) {
                break true;
            }
            if !signaled {
                break false;
            }
            stats.spurious();
        };
        stats.finish(done);
        (self, done)
    }
}

impl<T> Deref for WaitQueueGuard<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.inner.data
    }
}

impl<T> DerefMut for WaitQueueGuard<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        &mut self.inner.data
    }
}

impl<T> fmt::Debug for WaitQueue<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WaitQueue")
            .field("class", &self.meta.class().id())
            .finish_non_exhaustive()
    }
}

/// Sleeps until signaled or `deadline`; returns whether signaled.
pub(crate) fn sleep(
    stats: &mut WaitStats,
    waiter: &Arc<Waiter>,
    deadline: Option<Instant>,
) -> bool {
    stats.sleeping();
    waiter.parker.park(deadline)
}
