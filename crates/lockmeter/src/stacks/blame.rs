//! Who made a waiter wait: the per-lock state that tells a releasing
//! holder it is to be blamed, and by how much.
//!
//! A waiter (observed, stacks on) counts itself in `waiters` when its wait
//! begins and out when it ends; the first one in also sets `since`. A
//! holder reads `waiters` once, just before its unlock, while it still
//! holds the lock (one load of a line it owns: the only cost on the
//! uncontended path). If anyone waits, it is charged, after the unlock,
//! with `waiters × (now − since)` and moves `since` to now, so that each
//! stretch of waiting is charged to the hold that covered it. With one
//! waiter that is exactly the wait; with several, waiter-seconds as the
//! count stood at the release.

use std::sync::atomic::Ordering::Relaxed;
use std::sync::atomic::{AtomicU32, AtomicU64};

/// Embedded in every lock's `Meta`.
#[derive(Default)]
pub(crate) struct Blame {
    waiters: AtomicU32,
    /// The clock reading (raw) from which the current waiting is charged.
    since: AtomicU64,
}

impl Blame {
    pub(crate) const fn new() -> Blame {
        Blame {
            waiters: AtomicU32::new(0),
            since: AtomicU64::new(0),
        }
    }

    /// A wait begins at raw clock reading `start`.
    pub(crate) fn begin_wait(&self, start: u64) {
        if self.waiters.fetch_add(1, Relaxed) == 0 {
            self.since.store(start, Relaxed);
        }
    }

    /// A wait ended (acquired or given up).
    pub(crate) fn end_wait(&self) {
        // Never below zero, even if a wait is ended twice by mistake.
        let _ = self
            .waiters
            .fetch_update(Relaxed, Relaxed, |n| n.checked_sub(1));
    }

    /// Whether a thread waits now. Read by the holder before its unlock.
    #[inline(always)]
    pub(crate) fn anyone_waiting(&self) -> bool {
        self.waiters.load(Relaxed) != 0
    }

    /// The waiting to charge to a hold released at raw reading `now`, as
    /// (waiters, raw start), moving the start to `now`.
    pub(crate) fn charge(&self, now: u64) -> (u32, u64) {
        let n = self.waiters.load(Relaxed);
        let since = self.since.swap(now, Relaxed);
        (n, since)
    }
}

#[cfg(test)]
mod tests {
    use super::Blame;

    #[test]
    fn each_stretch_is_charged_once() {
        let b = Blame::new();
        assert!(!b.anyone_waiting());
        b.begin_wait(100);
        b.begin_wait(150);
        assert!(b.anyone_waiting());
        assert_eq!(b.charge(200), (2, 100));
        b.end_wait();
        assert_eq!(b.charge(260), (1, 200));
        b.end_wait();
        b.end_wait();
        assert!(!b.anyone_waiting());
    }
}
