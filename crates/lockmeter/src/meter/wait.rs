//! What waits on and wake calls of a wait queue record.
//!
//! The wait queue decides when to sleep and whom to wake; these types are
//! how it tells the meter, so that, as for locks, only the meter writes
//! entries.

use std::panic::Location;

use super::{Meta, Probe};
use crate::class::Mode;

/// What one wait did, recorded once when it ends.
pub(crate) struct WaitStats {
    probe: Option<Probe>,
    asleep_from: u64,
    slept: bool,
    sleeps: u64,
}

impl WaitStats {
    /// A wait on the queue `meta` begins at `site`.
    pub(crate) fn start(meta: &Meta, site: &'static Location<'static>) -> WaitStats {
        WaitStats {
            probe: Probe::start(meta, site, Mode::Exclusive),
            asleep_from: 0,
            slept: false,
            sleeps: 0,
        }
    }

    /// The waiter joined the queue, which now holds `len` waiters.
    pub(crate) fn queued(&mut self, len: usize) {
        if let Some(p) = &self.probe {
            p.entry().note_waiters(len as u64);
        }
    }

    /// The waiter is about to sleep; the wait is timed from its first sleep.
    pub(crate) fn sleeping(&mut self) {
        let now = match self.slept {
            false => self.probe.as_ref().map(Probe::now),
            true => None,
        };
        self.note_sleep(now);
    }

    /// [`sleeping`](Self::sleeping), reading the clock for every sleep
    /// (a condvar's, which needs when each began); the reading, when
    /// observed.
    pub(crate) fn sleeping_now(&mut self) -> Option<u64> {
        let now = self.probe.as_ref().map(Probe::now);
        self.note_sleep(now);
        now
    }

    fn note_sleep(&mut self, now: Option<u64>) {
        if let (Some(now), false) = (now, self.slept) {
            self.asleep_from = now;
        }
        self.slept = true;
        self.sleeps += 1;
    }

    /// The waiter was woken by a waker that picked it at `picked_at` (a
    /// [`WakeCall::stamp`]; 0 when the waker was not observed).
    pub(crate) fn woken(&mut self, picked_at: u64) {
        let Some(p) = &self.probe else { return };
        if picked_at != 0 {
            let e = p.entry();
            e.record_wake_latency(e.clock().delta_as_nanos(picked_at, e.clock().raw()));
        }
    }

    /// The wait was refused before it slept (a condvar met a second
    /// mutex): it counts as given up.
    /// Nothing more is recorded for this wait afterwards.
    pub(crate) fn refused(&mut self) {
        if let Some(p) = self.probe.take() {
            p.entry().count_rejected(0, 0);
        }
    }

    /// A wake-up found the condition still false.
    pub(crate) fn spurious(&mut self) {
        if let Some(p) = &self.probe {
            p.entry().count_spurious_wakeup();
        }
    }

    /// The wait ended: with its condition true (`done`) or timed out. A
    /// wait that never slept counts as NOWAIT, one that slept as contended.
    pub(crate) fn finish(self, done: bool) {
        let Some(p) = &self.probe else { return };
        let e = p.entry();
        if self.slept {
            let ns = e.clock().delta_as_nanos(self.asleep_from, e.clock().raw());
            e.record_sleeping_wait(self.sleeps, ns);
        }
        match (done, self.slept) {
            (true, true) => e.count_contended(0, 0),
            (true, false) => e.count_nowait_unheld(),
            (false, _) => e.count_rejected(0, 0),
        }
    }
}

/// One wake call on a queue, recorded when it is done.
pub(crate) struct WakeCall {
    probe: Option<Probe>,
}

impl WakeCall {
    /// A wake call on the queue `meta` at `site`.
    pub(crate) fn start(meta: &Meta, site: &'static Location<'static>) -> WakeCall {
        WakeCall {
            probe: Probe::start(meta, site, Mode::Exclusive),
        }
    }

    /// The time stamp to leave on woken waiters, for their wake latency
    /// (0 when unobserved).
    pub(crate) fn stamp(&self) -> u64 {
        self.probe.as_ref().map_or(0, Probe::now)
    }

    /// The call found nobody waiting.
    pub(crate) fn finish_empty(self) {
        if let Some(p) = self.probe {
            p.entry().count_empty_wake_call();
        }
    }

    /// The call found `waiting` waiters and woke `woken`, `exclusive` of
    /// them exclusive ones.
    pub(crate) fn finish(self, waiting: u64, woken: u64, exclusive: u64) {
        if let Some(p) = self.probe {
            p.entry().count_wake_call(waiting, woken, exclusive);
        }
    }
}
