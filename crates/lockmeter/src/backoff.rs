//! Bounded exponential backoff for spinning waiters.

use crate::primitive;

/// Spin rounds double up to `1 << SPIN_LIMIT` hints; after `YIELD_AFTER`
/// rounds every further round yields the CPU instead, so a preempted holder
/// on a small machine gets to run.
const SPIN_LIMIT: u32 = 6;
const YIELD_AFTER: u32 = 10;

/// Counts the rounds a waiter spun, for the `spins` statistic.
#[derive(Debug, Default)]
pub(crate) struct Backoff {
    rounds: u32,
}

impl Backoff {
    pub(crate) const fn new() -> Backoff {
        Backoff { rounds: 0 }
    }

    /// Waits a little longer than last time.
    #[inline]
    pub(crate) fn snooze(&mut self) {
        if self.rounds < YIELD_AFTER {
            for _ in 0..1u32 << self.rounds.min(SPIN_LIMIT) {
                primitive::spin_loop();
            }
        } else {
            primitive::yield_now();
        }
        self.rounds = self.rounds.saturating_add(1);
    }

    /// Rounds spun so far.
    pub(crate) fn rounds(&self) -> u32 {
        self.rounds
    }
}
