//! What the metering core calls on the contended path: capture a waiter's
//! stack after its wait, a holder's when it releases a lock others wait
//! for. Every function here is out of line (`#[cold]`): the uncontended
//! path never calls them.

use lockmeter_model::stacks::Side;

use super::table::SlotId;
use super::{capture, weight_of, MAX_STACK_DEPTH};
use crate::recorder::entry::Entry;
use crate::recorder::Recorder;

/// A captured waiter stack, carried by the hold so that the time held
/// after the wait is added to the same stack.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Captured {
    slot: SlotId,
    weight: f64,
}

/// An `Option<Captured>` in one word, as a hold carries it: every field a
/// guard carries is one more register through the acquisition's merge of
/// paths, and the unobserved path pays for it. Zero is `None`; otherwise
/// the slot plus one is the low half and the weight, as an `f32` (a
/// relative error of 6e-8 on a sampling weight), the high half.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct PackedCaptured(u64);

impl PackedCaptured {
    /// No stack was captured.
    pub(crate) const NONE: PackedCaptured = PackedCaptured(0);

    #[inline]
    pub(crate) fn pack(c: Option<Captured>) -> PackedCaptured {
        match c {
            None => PackedCaptured::NONE,
            Some(c) => PackedCaptured(
                u64::from((c.weight as f32).to_bits()) << 32 | u64::from(c.slot.0 + 1),
            ),
        }
    }

    #[inline]
    pub(crate) fn unpack(self) -> Option<Captured> {
        let slot = (self.0 & u64::from(u32::MAX)) as u32;
        (slot != 0).then(|| Captured {
            slot: SlotId(slot - 1),
            weight: f64::from(f32::from_bits((self.0 >> 32) as u32)),
        })
    }
}

/// After a contended wait of `wait_ns`: maybe captures the waiter's stack
/// (with probability `min(1, wait / rate)`). Inside the critical section:
/// only the fallback of [`before_wait`].
#[cold]
#[inline(never)]
pub(crate) fn waiter(rec: &Recorder, e: &Entry, wait_ns: u64) -> Option<Captured> {
    // The rate in effect: an overhead budget may have raised it.
    let weight = weight_of(rec.probe.stack_rate_ns(), wait_ns)?;
    let mut buf = [0usize; MAX_STACK_DEPTH];
    let n = capture(&mut buf[..rec.stacks.depth]);
    let slot = e.stacks.record(Side::Waiter, &buf[..n], weight, wait_ns)?;
    Some(Captured { slot, weight })
}

/// How far ahead of a wait the capture is drawn: a wait up to this many
/// times its site's mean is sampled exactly as [`weight_of`] would.
const AHEAD: f64 = 4.0;

/// What [`before_wait`] did about the waiter's stack.
#[derive(Clone, Copy, Debug)]
pub(crate) enum PreWait {
    /// Stacks are off.
    Off,
    /// The thread's buffer is taken by an outer wait (a wait inside a
    /// wait, as a wait queue's own lock): decide after the wait, as
    /// [`waiter`] does.
    After,
    /// Not drawn ahead: no capture for this wait.
    Skipped,
    /// Captured ahead into the thread's buffer with probability `p`.
    Captured { p: f64 },
}

/// The stack captured ahead of a wait; one per thread, since a thread
/// waits for one lock at a time (a wait inside a wait gets [`PreWait::After`]).
struct Ahead {
    frames: [usize; MAX_STACK_DEPTH],
    len: usize,
    taken: bool,
}

thread_local! {
    static AHEAD_BUF: std::cell::RefCell<Ahead> = const {
        std::cell::RefCell::new(Ahead { frames: [0; MAX_STACK_DEPTH], len: 0, taken: false })
    };
}

/// Before a contended wait: draws whether the waiter's stack is to be
/// captured and, if so, captures it now, while it waits anyway, instead
/// of inside the critical section after the wait, where a 5 µs capture
/// lengthened the hold every other waiter waits for (with 8 threads on a
/// Mutex, the `work` row went from 0.59 to 0.84 of bare with stacks off).
///
/// The draw is made with `p = min(1, AHEAD * mean / rate)`, `mean` the
/// site's mean wait so far (1 before the first); [`after_wait`] keeps the
/// capture with probability `min(1, (wait / rate) / p)`, so a wait is kept
/// with probability `min(p, wait / rate)` in all, and its weight `1/that`
/// keeps the waiter-seconds per stack unbiased. Waits up to `AHEAD` times
/// the mean are sampled exactly as Go's block profile would.
#[cold]
#[inline(never)]
pub(crate) fn before_wait(rec: &Recorder, e: &Entry) -> PreWait {
    let rate = rec.stacks.rate_ns;
    if rate == 0 {
        return PreWait::Off;
    }
    let p = match e.mean_wait_ns() {
        None => 1.0,
        Some(mean) => (AHEAD * mean as f64 / rate as f64).clamp(f64::MIN_POSITIVE, 1.0),
    };
    if p < 1.0 && (super::random() >> 11) as f64 * (1.0 / (1u64 << 53) as f64) >= p {
        return PreWait::Skipped;
    }
    AHEAD_BUF
        .try_with(|b| {
            let Ok(mut b) = b.try_borrow_mut() else {
                return PreWait::After;
            };
            if b.taken {
                return PreWait::After;
            }
            let depth = rec.stacks.depth;
            b.len = capture(&mut b.frames[..depth]);
            b.taken = true;
            PreWait::Captured { p }
        })
        .unwrap_or(PreWait::After)
}

/// After the wait of `wait_ns` that [`before_wait`] prepared for: keeps or
/// drops the capture (inside the critical section, but only a draw and,
/// when kept, the table insert of the frames).
#[inline]
pub(crate) fn after_wait(
    rec: &Recorder,
    e: &Entry,
    pre: PreWait,
    wait_ns: u64,
) -> Option<Captured> {
    match pre {
        PreWait::Off | PreWait::Skipped => None,
        PreWait::After => waiter(rec, e, wait_ns),
        PreWait::Captured { p } => keep_ahead(rec.stacks.rate_ns, e, p, wait_ns),
    }
}

#[cold]
#[inline(never)]
fn keep_ahead(rate_ns: u64, e: &Entry, p: f64, wait_ns: u64) -> Option<Captured> {
    // P(keep | drawn) = min(1, (wait / rate) / p).
    let by_time = wait_ns.max(1) as f64 / rate_ns as f64;
    let kept = by_time.min(p);
    let keep = kept >= p || (super::random() >> 11) as f64 * (1.0 / (1u64 << 53) as f64) < kept / p;
    AHEAD_BUF
        .try_with(|b| {
            let mut b = b.try_borrow_mut().ok()?;
            b.taken = false;
            if !keep {
                return None;
            }
            let weight = 1.0 / kept;
            let slot = e
                .stacks
                .record(Side::Waiter, &b.frames[..b.len], weight, wait_ns)?;
            Some(Captured { slot, weight })
        })
        .ok()
        .flatten()
}

/// A wait prepared by [`before_wait`] ended without the lock (a timed wait
/// gave up, or the acquisition unwound): frees the thread's buffer.
#[cold]
pub(crate) fn abandon_wait(pre: PreWait) {
    if let PreWait::Captured { .. } = pre {
        let _ = AHEAD_BUF.try_with(|b| {
            if let Ok(mut b) = b.try_borrow_mut() {
                b.taken = false;
            }
        });
    }
}

/// The hold after a captured wait ended after `hold_ns`.
#[inline]
pub(crate) fn waiter_held(e: &Entry, c: Captured, hold_ns: u64) {
    e.stacks.add_hold(c.slot, c.weight, hold_ns);
}

/// A hold that made others wait `blamed_ns` (waiter-time) was released,
/// and its stack is to be captured with weight `weight`.
#[cold]
#[inline(never)]
pub(crate) fn holder(rec: &Recorder, e: &Entry, weight: f64, blamed_ns: u64) {
    let mut buf = [0usize; MAX_STACK_DEPTH];
    let n = capture(&mut buf[..rec.stacks.depth]);
    e.stacks.record(Side::Holder, &buf[..n], weight, blamed_ns);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_packed_capture_unpacks_to_itself() {
        assert!(PackedCaptured::NONE.unpack().is_none());
        for (slot, weight) in [(0u32, 1.0f64), (7, 3.5), (u32::MAX - 1, 1e9)] {
            let c = Captured {
                slot: SlotId(slot),
                weight,
            };
            let back = PackedCaptured::pack(Some(c)).unpack().unwrap();
            assert_eq!(back.slot, c.slot);
            assert!((back.weight - weight).abs() <= weight * 1e-7);
        }
    }
}
