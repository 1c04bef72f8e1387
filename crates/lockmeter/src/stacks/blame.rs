//! Who made a waiter wait: the per-lock state that tells a releasing
//! holder it is to be blamed, and by how much.
//!
//! A waiter (observed, stacks on, one in `BLAME_EVERY`, which then stands
//! for that many) counts itself in when its wait begins and out when it
//! ends; the first one in also sets `since`. A holder
//! reads the word once, just before its unlock, while it still holds the
//! lock (one load of a line it owns: the only cost on the uncontended
//! path). If anyone waits, it is charged, after the unlock, with
//! `waiters × (now − since)` and moves `since` to now, so that each
//! stretch of waiting is charged to the hold that covered it. With one
//! waiter that is exactly the wait; with several, waiter-seconds as the
//! count stood at the release.
//!
//! One word, so that every lock grows by 8 bytes only:
//!
//! ```text
//!  63        48 47                                  0
//! +------------+-------------------------------------+
//! |  waiters   |  since: raw clock >> SHIFT (mod 2^48)  |
//! +------------+-------------------------------------+
//! ```
//!
//! `since` keeps 48 bits of the raw clock divided by 2^SHIFT: it wraps
//! after 2^56 ticks (~290 days of a 3 GHz TSC), and a stretch is measured
//! modulo that, to 256 ticks (~85 ns).

use std::sync::atomic::AtomicU64;
use std::sync::atomic::Ordering::Relaxed;

const SHIFT: u32 = 8;
const SINCE_BITS: u32 = 48;
const SINCE_MASK: u64 = (1 << SINCE_BITS) - 1;
const ONE_WAITER: u64 = 1 << SINCE_BITS;

/// Embedded in every lock's `Meta`.
pub(crate) struct Blame(AtomicU64);

fn stamp(raw: u64) -> u64 {
    (raw >> SHIFT) & SINCE_MASK
}

impl Blame {
    pub(crate) const fn new() -> Blame {
        Blame(AtomicU64::new(0))
    }

    /// A wait begins at raw clock reading `start`: one `fetch_add`, and
    /// for the first waiter one `compare_exchange` to set `since`.
    pub(crate) fn begin_wait(&self, start: u64) {
        let before = self.0.fetch_add(ONE_WAITER, Relaxed);
        if before < ONE_WAITER {
            // First in: start the stretch. If the word moved meanwhile
            // (another waiter, a charge), it has a start already.
            let _ = self.0.compare_exchange(
                before + ONE_WAITER,
                ONE_WAITER | stamp(start),
                Relaxed,
                Relaxed,
            );
        }
    }

    /// A wait ended (acquired or given up); once per `begin_wait`.
    pub(crate) fn end_wait(&self) {
        self.0.fetch_sub(ONE_WAITER, Relaxed);
    }

    /// Whether a thread waits now. Read by the holder before its unlock.
    #[inline(always)]
    pub(crate) fn anyone_waiting(&self) -> bool {
        self.0.load(Relaxed) >= ONE_WAITER
    }

    /// The waiting to charge to a hold released at raw reading `now`, as
    /// (waiters, raw ticks of the stretch), moving the start to `now`.
    pub(crate) fn charge(&self, now: u64) -> (u32, u64) {
        let before = self
            .0
            .fetch_update(Relaxed, Relaxed, |w| Some((w & !SINCE_MASK) | stamp(now)))
            .unwrap_or_else(|w| w);
        let ticks = (stamp(now).wrapping_sub(before & SINCE_MASK) & SINCE_MASK) << SHIFT;
        ((before >> SINCE_BITS) as u32, ticks)
    }
}

#[cfg(test)]
mod tests {
    use super::Blame;

    #[test]
    fn each_stretch_is_charged_once() {
        let b = Blame::new();
        assert!(!b.anyone_waiting());
        b.begin_wait(100 << 8);
        b.begin_wait(150 << 8);
        assert!(b.anyone_waiting());
        assert_eq!(b.charge(200 << 8), (2, 100 << 8));
        b.end_wait();
        assert_eq!(b.charge(260 << 8), (1, 60 << 8));
        b.end_wait();
        assert!(!b.anyone_waiting());
    }

    #[test]
    fn a_stretch_across_the_wrap_is_still_short() {
        let b = Blame::new();
        let start = ((1u64 << 48) - 10) << 8;
        b.begin_wait(start);
        assert_eq!(b.charge(start + (30 << 8)), (1, 30 << 8));
    }
}
