//! The stacks one entry captured: a bounded table, written by the entry's
//! thread only and read by snapshots.
//!
//! Allocated on the first capture (a contended, sampled acquisition), so
//! entries that never wait cost one null pointer. A stack is found by a
//! hash of its addresses and side in [`SLOTS`] open-addressing slots; when
//! they are full the stack is counted in `dropped` (and its acquisition's
//! counts are still exact in the entry).
//!
//! Publication: the writer fills a slot's frames and length, then stores
//! its hash with `Release`; a reader that loads a non-zero hash with
//! `Acquire` sees the frames. Estimates are single-writer `f64`s in
//! `AtomicU64` bits, like the entry's counters.

use std::sync::atomic::Ordering::{Acquire, Relaxed, Release};
use std::sync::atomic::{AtomicPtr, AtomicU32, AtomicU64, AtomicUsize};

use lockmeter_model::stacks::Side;

use super::MAX_STACK_DEPTH;

/// Distinct stacks kept per entry (both sides together).
pub(crate) const SLOTS: usize = 32;

/// A single-writer `f64` sum.
#[derive(Default)]
struct Sum(AtomicU64);

impl Sum {
    fn add(&self, v: f64) {
        let cur = f64::from_bits(self.0.load(Relaxed));
        self.0.store((cur + v).to_bits(), Relaxed);
    }
    fn get(&self) -> f64 {
        f64::from_bits(self.0.load(Relaxed))
    }
}

struct Slot {
    /// 0 while free; set last (see the module docs).
    hash: AtomicU64,
    side: AtomicU32,
    len: AtomicU32,
    frames: [AtomicUsize; MAX_STACK_DEPTH],
    captured: AtomicU64,
    contentions: Sum,
    wait_ns: Sum,
    hold_ns: Sum,
}

impl Slot {
    fn new() -> Slot {
        Slot {
            hash: AtomicU64::new(0),
            side: AtomicU32::new(0),
            len: AtomicU32::new(0),
            frames: std::array::from_fn(|_| AtomicUsize::new(0)),
            captured: AtomicU64::new(0),
            contentions: Sum::default(),
            wait_ns: Sum::default(),
            hold_ns: Sum::default(),
        }
    }

    fn matches(&self, side: Side, frames: &[usize]) -> bool {
        self.side.load(Relaxed) == side as u32
            && self.len.load(Relaxed) as usize == frames.len()
            && self
                .frames
                .iter()
                .zip(frames)
                .all(|(a, &b)| a.load(Relaxed) == b)
    }
}

struct Table {
    slots: Box<[Slot]>,
    dropped: AtomicU64,
}

/// Which slot a captured stack went into, so its hold can be added when
/// it ends ([`EntryStacks::add_hold`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct SlotId(pub(super) u32);

/// The captured stacks of one entry, or nothing yet.
pub(crate) struct EntryStacks {
    table: AtomicPtr<Table>,
}

/// One stack as a snapshot reads it.
pub(crate) struct StackRead {
    pub(crate) side: Side,
    pub(crate) frames: Vec<usize>,
    pub(crate) captured: u64,
    pub(crate) contentions: f64,
    pub(crate) wait_ns: f64,
    pub(crate) hold_ns: f64,
}

fn hash(side: Side, frames: &[usize]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325 ^ side as u64;
    for &f in frames {
        h = (h ^ f as u64).wrapping_mul(0x0000_0100_0000_01b3);
    }
    h | 1
}

impl EntryStacks {
    pub(crate) const fn new() -> EntryStacks {
        EntryStacks {
            table: AtomicPtr::new(std::ptr::null_mut()),
        }
    }

    /// Only the owning thread calls this (it allocates the table).
    fn table_mut(&self) -> &Table {
        let mut t = self.table.load(Acquire);
        if t.is_null() {
            let fresh = Box::new(Table {
                slots: (0..SLOTS).map(|_| Slot::new()).collect(),
                dropped: AtomicU64::new(0),
            });
            t = Box::into_raw(fresh);
            // Release: a snapshot that loads the pointer sees the table.
            self.table.store(t, Release);
        }
        // SAFETY: the table, once stored, lives until `self` is dropped.
        unsafe { &*t }
    }

    fn table(&self) -> Option<&Table> {
        let t = self.table.load(Acquire);
        // SAFETY: as in `table_mut`.
        (!t.is_null()).then(|| unsafe { &*t })
    }

    /// Adds one captured stack of weight `weight` (= 1/p) that waited
    /// `wait_ns`. Only the entry's thread calls this.
    pub(crate) fn record(
        &self,
        side: Side,
        frames: &[usize],
        weight: f64,
        wait_ns: u64,
    ) -> Option<SlotId> {
        let t = self.table_mut();
        let h = hash(side, frames);
        let mut i = (h as usize) % SLOTS;
        for _ in 0..SLOTS {
            let slot = &t.slots[i];
            let cur = slot.hash.load(Relaxed);
            if cur == 0 {
                for (a, &b) in slot.frames.iter().zip(frames) {
                    a.store(b, Relaxed);
                }
                slot.len.store(frames.len() as u32, Relaxed);
                slot.side.store(side as u32, Relaxed);
                slot.hash.store(h, Release);
            }
            if cur == 0 || (cur == h && slot.matches(side, frames)) {
                slot.captured
                    .store(slot.captured.load(Relaxed) + 1, Relaxed);
                slot.contentions.add(weight);
                slot.wait_ns.add(weight * wait_ns as f64);
                return Some(SlotId(i as u32));
            }
            i = (i + 1) % SLOTS;
        }
        t.dropped.store(t.dropped.load(Relaxed) + 1, Relaxed);
        None
    }

    /// The hold that followed a captured wait, with the wait's weight.
    pub(crate) fn add_hold(&self, slot: SlotId, weight: f64, hold_ns: u64) {
        if let Some(t) = self.table() {
            if let Some(s) = t.slots.get(slot.0 as usize) {
                s.hold_ns.add(weight * hold_ns as f64);
            }
        }
    }

    /// Every stack so far, and how many were dropped.
    pub(crate) fn read(&self) -> (Vec<StackRead>, u64) {
        let Some(t) = self.table() else {
            return (Vec::new(), 0);
        };
        let mut out = Vec::new();
        for s in t.slots.iter() {
            if s.hash.load(Acquire) == 0 {
                continue;
            }
            let len = (s.len.load(Relaxed) as usize).min(MAX_STACK_DEPTH);
            out.push(StackRead {
                side: if s.side.load(Relaxed) == Side::Holder as u32 {
                    Side::Holder
                } else {
                    Side::Waiter
                },
                frames: s.frames[..len].iter().map(|f| f.load(Relaxed)).collect(),
                captured: s.captured.load(Relaxed),
                contentions: s.contentions.get(),
                wait_ns: s.wait_ns.get(),
                hold_ns: s.hold_ns.get(),
            });
        }
        (out, t.dropped.load(Relaxed))
    }
}

impl Drop for EntryStacks {
    fn drop(&mut self) {
        let t = *self.table.get_mut();
        if !t.is_null() {
            // SAFETY: made by `Box::into_raw` in `table_mut`, dropped once.
            drop(unsafe { Box::from_raw(t) });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_stacks_share_a_slot_and_a_full_table_counts_drops() {
        let s = EntryStacks::new();
        assert!(s.read().0.is_empty());
        let a = s.record(Side::Waiter, &[1, 2, 3], 2.0, 10).unwrap();
        let b = s.record(Side::Waiter, &[1, 2, 3], 1.0, 30).unwrap();
        assert_eq!(a, b);
        // Same frames, other side: another stack.
        assert_ne!(s.record(Side::Holder, &[1, 2, 3], 1.0, 5), Some(a));
        s.add_hold(a, 2.0, 7);
        for i in 0..SLOTS + 3 {
            s.record(Side::Waiter, &[100 + i], 1.0, 1);
        }
        let (stacks, dropped) = s.read();
        assert_eq!(stacks.len(), SLOTS);
        assert_eq!(dropped, 5);
        let w = stacks
            .iter()
            .find(|x| x.side == Side::Waiter && x.frames == [1, 2, 3])
            .unwrap();
        assert_eq!(
            (w.captured, w.contentions, w.wait_ns, w.hold_ns),
            (2, 3.0, 50.0, 14.0)
        );
    }
}
