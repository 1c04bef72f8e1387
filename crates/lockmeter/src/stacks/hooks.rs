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
/// (with probability `min(1, wait / rate)`).
#[cold]
#[inline(never)]
pub(crate) fn waiter(rec: &Recorder, e: &Entry, wait_ns: u64) -> Option<Captured> {
    let weight = weight_of(rec.stacks.rate_ns, wait_ns)?;
    let mut buf = [0usize; MAX_STACK_DEPTH];
    let n = capture(&mut buf[..rec.stacks.depth]);
    let slot = e.stacks.record(Side::Waiter, &buf[..n], weight, wait_ns)?;
    Some(Captured { slot, weight })
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
