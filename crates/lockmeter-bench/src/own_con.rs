//! The bare lock's own contention in a contended row's mix.
//!
//! lockmeter's CON % for a row says how often its instrumented lock was
//! found taken. Set beside the same figure for the bare lock, it shows how
//! much of that contention lockmeter itself caused: each nanosecond it adds
//! inside the critical section lets more attempts find the lock taken, and
//! a waiter that was made to wait comes back in step with the holder, so
//! collisions feed each other (`docs/performance.md`, "Session 19").
//!
//! The bare lock cannot count its own failed attempts, so a twin of it is
//! taken as lockmeter takes a lock, one `try_lock` and then the blocking
//! `lock` when that fails, with each failure counted in a thread-local
//! (no shared line: the count must not change the contention it counts).

use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use crate::contended::Take;
use crate::least::Raw;

thread_local! {
    /// Failed first attempts of this thread since its last [`flush`].
    static FAILED: Cell<u64> = const { Cell::new(0) };
}

/// Failed first attempts of every thread that has flushed.
static FAILED_TOTAL: AtomicU64 = AtomicU64::new(0);

/// A bare lock taken by one attempt, then the blocking lock, with each
/// failed attempt counted.
pub struct CountingTwin<L>(pub L);

impl<L: Raw> Take for CountingTwin<L> {
    #[inline]
    fn take(&self) {
        let mut g = match self.0.attempt() {
            Some(g) => g,
            None => {
                FAILED.with(|f| f.set(f.get() + 1));
                self.0.wait()
            }
        };
        *g += 1;
    }
}

/// Adds this thread's failed attempts to the total; each worker thread
/// calls it as it leaves its loop.
pub fn flush() {
    let n = FAILED.with(|f| f.replace(0));
    FAILED_TOTAL.fetch_add(n, Relaxed);
}

/// The failed attempts flushed since the last call, and resets the total.
pub fn take_failed() -> u64 {
    FAILED_TOTAL.swap(0, Relaxed)
}

/// Serializes the tests that count: the total is one per process.
#[cfg(test)]
pub(crate) static COUNTING: std::sync::Mutex<()> = std::sync::Mutex::new(());

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Barrier;

    /// A twin taken while another thread holds it counts the failure, and
    /// only after a flush; a free one counts nothing.
    #[test]
    fn counts_failed_attempts_once_flushed() {
        let _one = COUNTING.lock().unwrap_or_else(|e| e.into_inner());
        take_failed();
        let twin = CountingTwin(parking_lot::Mutex::new(0u64));
        twin.take();
        flush();
        assert_eq!(take_failed(), 0, "a free lock is no failure");

        let (held, taken) = (Barrier::new(2), Barrier::new(2));
        std::thread::scope(|s| {
            s.spawn(|| {
                let g = twin.0.lock();
                held.wait();
                // Long enough for the other thread's attempt to fail.
                std::thread::sleep(std::time::Duration::from_millis(50));
                drop(g);
                taken.wait();
            });
            held.wait();
            twin.take();
            assert_eq!(take_failed(), 0, "not flushed yet");
            flush();
            taken.wait();
        });
        assert_eq!(take_failed(), 1);
        assert_eq!(*twin.0.lock(), 2);
    }
}
