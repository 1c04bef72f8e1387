//! Who made a waiter wait: the per-lock state that tells a releasing
//! holder it is to be blamed, and by how much.
//!
//! A waiter (observed, stacks on, one in `BLAME_EVERY`, which then stands
//! for that many) counts itself in when its wait begins and out when it
//! ends; the first one in also sets `since`. A *timed* holder (one in the
//! hold sample, or a contended one whose timing was forced) reads the word
//! once, just before its unlock, while it still holds the lock (one load of
//! a line it owns). If anyone waits, it is charged, after the unlock, with
//! `waiters × (end − max(since, its start))` and moves `since` to its end,
//! so that each stretch of waiting is charged to the hold that covered it.
//! With one waiter that is exactly the wait; with several, waiter-seconds
//! as the count stood at the release.
//!
//! Untimed holds are not charged: the sampled ones stand for them (the
//! meter weighs each charge by the hold sample's rate). Charging every
//! release that anyone waited for cost a clock read, a read-modify-write
//! of the lock's line just after its unlock (the line the next holder is
//! taking) and a recorder lookup, on most releases of a lock that many
//! threads wait for: `docs/performance.md`, "Session 12".
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

    /// A wait begins at raw clock reading `start`: one compare-exchange,
    /// which for the first waiter in also sets `since`. (A `fetch_add`
    /// followed by a separate compare-exchange of `since` lost it whenever a
    /// second waiter or a charge moved the word in between: the stretch
    /// then ran from a stale `since`, or from 0, the clock's epoch, and
    /// 8 threads on one Mutex blamed holders for 10^12 s in 2 s of run.)
    pub(crate) fn begin_wait(&self, start: u64) {
        let _ = self.0.fetch_update(Relaxed, Relaxed, |w| {
            Some(match w < ONE_WAITER {
                true => ONE_WAITER | stamp(start),
                false => w + ONE_WAITER,
            })
        });
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

    /// The waiting to charge to a hold that began at raw reading `start`
    /// and was released at `end`, as (waiters, raw ticks of the stretch),
    /// moving `since` to `end`. The stretch begins at `since` or at
    /// `start`, whichever is later: a hold is charged only for waiting it
    /// covered, and overlapping read holds split a writer's wait.
    ///
    /// A reading older than `since` (a waiter that began after the holder
    /// read the clock) charges nothing and leaves `since` where it is: a
    /// stretch measured backwards wrapped to ~2^56 ticks.
    pub(crate) fn charge(&self, start: u64, end: u64) -> (u32, u64) {
        let (start, end) = (stamp(start), stamp(end));
        let held = end.wrapping_sub(start) & SINCE_MASK;
        // The stretch up to `end`, or `None` when `end` is older than `since`.
        let stretch = |w: u64| {
            let elapsed = end.wrapping_sub(w & SINCE_MASK) & SINCE_MASK;
            (elapsed <= SINCE_MASK / 2).then_some(elapsed.min(held))
        };
        let before = self
            .0
            .fetch_update(Relaxed, Relaxed, |w| {
                stretch(w).map(|_| (w & !SINCE_MASK) | end)
            })
            .unwrap_or_else(|w| w);
        let ticks = stretch(before).map_or(0, |elapsed| elapsed << SHIFT);
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
        assert_eq!(b.charge(0, 200 << 8), (2, 100 << 8));
        b.end_wait();
        assert_eq!(b.charge(0, 260 << 8), (1, 60 << 8));
        b.end_wait();
        assert!(!b.anyone_waiting());
    }

    /// A holder that read the clock before a waiter began (and counted
    /// itself in) charges that waiter nothing, and the stretch still starts
    /// where the waiter began.
    #[test]
    fn a_charge_read_before_the_wait_began_charges_nothing() {
        let b = Blame::new();
        b.begin_wait(500 << 8);
        assert_eq!(b.charge(0, 400 << 8), (1, 0));
        assert_eq!(b.charge(0, 700 << 8), (1, 200 << 8));
    }

    /// The first waiter in starts the stretch even after the word has
    /// been charged and emptied; a second one joins it.
    #[test]
    fn the_first_waiter_in_always_starts_the_stretch() {
        let b = Blame::new();
        b.begin_wait(100 << 8);
        b.charge(0, 150 << 8);
        b.end_wait();
        b.begin_wait(1000 << 8);
        b.begin_wait(1010 << 8);
        assert_eq!(b.charge(0, 1100 << 8), (2, 100 << 8));
    }

    #[test]
    fn a_stretch_across_the_wrap_is_still_short() {
        let b = Blame::new();
        let start = ((1u64 << 48) - 10) << 8;
        b.begin_wait(start);
        assert_eq!(b.charge(start - (5 << 8), start + (30 << 8)), (1, 30 << 8));
    }

    /// A hold that began after the wait did is charged from its own start
    /// only: the waiting before it was another hold's doing.
    #[test]
    fn a_hold_is_charged_from_its_own_start_at_the_earliest() {
        let b = Blame::new();
        b.begin_wait(100 << 8);
        assert_eq!(b.charge(160 << 8, 200 << 8), (1, 40 << 8));
        // Two read holds overlapping the same wait split it.
        assert_eq!(b.charge(190 << 8, 230 << 8), (1, 30 << 8));
    }
}
