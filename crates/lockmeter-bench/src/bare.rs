//! The bare primitives the instrumented ones are compared against.
//!
//! This file is also compiled into `crates/lockmeter/benches` (through a
//! `#[path]` module), so it depends on nothing but `std` and `parking_lot`.
//!
//! - [`BareSpinLock`]: the same test-and-test-and-set algorithm and backoff
//!   limits as `lockmeter::SpinLock`, with no metering at all.
//! - `Mutex`/`RwLock`: `parking_lot`'s own types (used directly), since
//!   `lockmeter::Mutex` and `lockmeter::RwLock` wrap `parking_lot`'s raw locks.
//! - [`BareSemaphore`]: the simplest honest counting semaphore, a
//!   `parking_lot::Mutex<usize>` and a `parking_lot::Condvar`. It is not the
//!   same algorithm as `lockmeter::Semaphore` (a spinlock-guarded count plus
//!   a wait queue); it is what a user would otherwise write.

#![allow(dead_code)]

use std::cell::UnsafeCell;
use std::ops::{Deref, DerefMut};
use std::sync::atomic::{AtomicBool, Ordering};

/// Spin rounds double up to `1 << SPIN_LIMIT` hints, then every round past
/// `YIELD_AFTER` yields: the limits `lockmeter::SpinLock` uses.
const SPIN_LIMIT: u32 = 6;
const YIELD_AFTER: u32 = 10;

/// A plain test-and-test-and-set spinlock.
pub struct BareSpinLock<T> {
    locked: AtomicBool,
    data: UnsafeCell<T>,
}

// SAFETY: the lock hands out access to `T` to one thread at a time.
unsafe impl<T: Send> Sync for BareSpinLock<T> {}

impl<T> BareSpinLock<T> {
    /// An unlocked spinlock holding `value`.
    pub const fn new(value: T) -> BareSpinLock<T> {
        BareSpinLock {
            locked: AtomicBool::new(false),
            data: UnsafeCell::new(value),
        }
    }

    /// Acquires the lock, spinning until it is free.
    #[inline]
    pub fn lock(&self) -> BareSpinGuard<'_, T> {
        if !self.try_acquire() {
            self.spin();
        }
        BareSpinGuard { lock: self }
    }

    /// One attempt: the guard if the lock was free.
    ///
    /// Not `then_some(BareSpinGuard { .. })`: its argument is built
    /// whether or not the attempt succeeded, and dropping the unused guard
    /// unlocked the lock another thread held (sessions 15-21's `least`
    /// SpinLock rows and the SpinLock twins' CON were measured so).
    #[inline]
    pub fn try_lock(&self) -> Option<BareSpinGuard<'_, T>> {
        if self.try_acquire() {
            Some(BareSpinGuard { lock: self })
        } else {
            None
        }
    }

    /// One strong attempt, as `lockmeter::SpinLock` makes.
    #[inline]
    fn try_acquire(&self) -> bool {
        // Acquire: pairs with the Release store of the previous unlock.
        self.locked
            .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_ok()
    }

    #[cold]
    fn spin(&self) {
        let mut rounds = 0u32;
        loop {
            while self.locked.load(Ordering::Relaxed) {
                snooze(&mut rounds);
            }
            if self.try_acquire() {
                return;
            }
            snooze(&mut rounds);
        }
    }
}

fn snooze(rounds: &mut u32) {
    if *rounds < YIELD_AFTER {
        for _ in 0..1u32 << (*rounds).min(SPIN_LIMIT) {
            std::hint::spin_loop();
        }
    } else {
        std::thread::yield_now();
    }
    *rounds = rounds.saturating_add(1);
}

/// Access to a [`BareSpinLock`]'s data; unlocks on drop.
pub struct BareSpinGuard<'a, T> {
    lock: &'a BareSpinLock<T>,
}

impl<T> Deref for BareSpinGuard<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        // SAFETY: the guard proves the lock is held.
        unsafe { &*self.lock.data.get() }
    }
}

impl<T> DerefMut for BareSpinGuard<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: the guard proves the lock is held, exclusively.
        unsafe { &mut *self.lock.data.get() }
    }
}

impl<T> Drop for BareSpinGuard<'_, T> {
    #[inline]
    fn drop(&mut self) {
        // Release: publishes the critical section to the next acquirer.
        self.lock.locked.store(false, Ordering::Release);
    }
}

/// A counting semaphore over a `parking_lot` mutex and condition variable.
pub struct BareSemaphore {
    count: parking_lot::Mutex<usize>,
    cv: parking_lot::Condvar,
}

impl BareSemaphore {
    /// A semaphore with `permits` permits.
    pub const fn new(permits: usize) -> BareSemaphore {
        BareSemaphore {
            count: parking_lot::Mutex::new(permits),
            cv: parking_lot::Condvar::new(),
        }
    }

    /// Takes a permit, sleeping until one is free.
    #[inline]
    pub fn down(&self) {
        let mut count = self.count.lock();
        while *count == 0 {
            self.cv.wait(&mut count);
        }
        *count -= 1;
    }

    /// Returns a permit and wakes one sleeper, if any.
    #[inline]
    pub fn up(&self) {
        *self.count.lock() += 1;
        self.cv.notify_one();
    }
}
