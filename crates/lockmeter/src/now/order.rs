//! Lock order (lockdep's half of lock_stat): every acquisition made while
//! the thread holds other locks adds an edge, held class and site →
//! acquired class and site, with a count and the time spent waiting for
//! the inner lock while the outer was held.
//!
//! Each thread counts its edges in a fixed table of its own (one writer,
//! no lock, no allocation); edges beyond its size are counted as dropped.
//! A snapshot sums the tables of live threads and the edges of exited ones.
//! Recording is opt-in ([`super::set_lock_order`]): it costs a table probe
//! per held lock on every nested acquisition.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering::*};
use std::sync::Mutex;

use lockmeter_model::now::{inversions, LockOrder, OrderEdge};

use super::table::Rec;
use super::thread::ThreadSlot;
use crate::class::format_location;
use crate::recorder::entry::Entry;

/// Edges one thread keeps; a power of two.
const EDGE_SLOTS: usize = 256;
/// Slots probed before an edge is dropped.
const PROBES: usize = 16;

struct EdgeSlot {
    held: AtomicUsize,
    acquired: AtomicUsize,
    recorder: AtomicUsize,
    /// 0 while the slot is free; stored last when it is claimed.
    count: AtomicU64,
    wait_ns: AtomicU64,
}

/// One thread's edges, keyed by the (held, acquired) entries.
pub(crate) struct Edges {
    slots: Box<[EdgeSlot]>,
    dropped: AtomicU64,
}

impl Edges {
    pub(crate) fn new() -> Edges {
        Edges {
            slots: (0..EDGE_SLOTS)
                .map(|_| EdgeSlot {
                    held: AtomicUsize::new(0),
                    acquired: AtomicUsize::new(0),
                    recorder: AtomicUsize::new(0),
                    count: AtomicU64::new(0),
                    wait_ns: AtomicU64::new(0),
                })
                .collect(),
            dropped: AtomicU64::new(0),
        }
    }

    /// Counts `held` → `acquired` (owning thread only).
    fn add(&self, held: usize, acquired: usize, recorder: usize, wait_ns: u64) {
        let h = (held ^ acquired.rotate_left(17)).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 40;
        for i in 0..PROBES {
            let s = &self.slots[(h + i) & (EDGE_SLOTS - 1)];
            let count = s.count.load(Relaxed);
            if count == 0 {
                s.held.store(held, Relaxed);
                s.acquired.store(acquired, Relaxed);
                s.recorder.store(recorder, Relaxed);
                s.wait_ns.store(wait_ns, Relaxed);
                // Release: a reader that sees the count sees the key.
                s.count.store(1, Release);
                return;
            }
            if s.held.load(Relaxed) == held
                && s.acquired.load(Relaxed) == acquired
                && s.recorder.load(Relaxed) == recorder
            {
                s.count.store(count + 1, Relaxed);
                if wait_ns != 0 {
                    s.wait_ns.store(s.wait_ns.load(Relaxed) + wait_ns, Relaxed);
                }
                return;
            }
        }
        self.dropped.store(self.dropped.load(Relaxed) + 1, Relaxed);
    }

    /// Every edge claimed so far, as (held, acquired, recorder, count, wait).
    fn read(&self) -> impl Iterator<Item = (usize, usize, usize, u64, u64)> + '_ {
        self.slots.iter().filter_map(|s| {
            // Acquire: pairs with the Release store claiming the slot.
            let count = s.count.load(Acquire);
            (count != 0).then(|| {
                (
                    s.held.load(Relaxed),
                    s.acquired.load(Relaxed),
                    s.recorder.load(Relaxed),
                    count,
                    s.wait_ns.load(Relaxed),
                )
            })
        })
    }
}

/// Records the edges from every lock `slot` holds to `acquired`, for
/// holds counted by the same recorder.
#[cold]
#[inline(never)]
pub(crate) fn record(slot: &ThreadSlot, acquired: &Rec, wait_ns: u64) {
    for held in slot.table.held_now() {
        if held.recorder == acquired.recorder && held.lock != acquired.lock {
            slot.edges.add(
                held.what & !Rec::LOOSE,
                acquired.what & !Rec::LOOSE,
                acquired.recorder,
                wait_ns,
            );
        }
    }
}

/// The text of one side of an edge.
/// # Safety
/// `what` must be the address of a live entry (see `thread`'s module doc).
unsafe fn describe(what: usize) -> (String, String) {
    // SAFETY: the caller guarantees the entry is alive.
    let e = unsafe { &*(what as *const Entry) };
    (e.key().class.id(), format_location(e.key().site))
}

type EdgeKey = (usize, String, String, String, String);

/// Edges of exited threads, per recorder address.
static RETIRED: Mutex<Option<HashMap<EdgeKey, (u64, u64)>>> = Mutex::new(None);
/// Edges exited threads had no room for.
static RETIRED_DROPPED: AtomicU64 = AtomicU64::new(0);

fn merge_into(map: &mut HashMap<EdgeKey, (u64, u64)>, slot: &ThreadSlot, only: Option<usize>) {
    for (held, acquired, recorder, count, wait) in slot.edges.read() {
        if only.is_some_and(|r| r != recorder) {
            continue;
        }
        // SAFETY: `slot` is registered (or being retired by its own
        // thread) and its entries outlive that (see `thread`).
        let ((h, hs), (a, as_)) = unsafe { (describe(held), describe(acquired)) };
        let v = map.entry((recorder, h, hs, a, as_)).or_default();
        v.0 += count;
        v.1 += wait;
    }
}

/// Keeps the edges of a thread that exits.
pub(crate) fn retire(slot: &ThreadSlot) {
    let mut retired = RETIRED.lock().unwrap_or_else(|e| e.into_inner());
    merge_into(retired.get_or_insert_with(HashMap::new), slot, None);
    drop(retired);
    // Not attributed to a recorder: every snapshot shows it.
    RETIRED_DROPPED.fetch_add(slot.edges.dropped.load(Relaxed), Relaxed);
}

/// Forgets the edges of a recorder that is gone.
pub(crate) fn forget(recorder: usize) {
    let mut retired = RETIRED.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(map) = retired.as_mut() {
        map.retain(|k, _| k.0 != recorder);
    }
}

/// The lock order seen by `recorder`: live threads' edges plus retired ones.
pub(crate) fn of(recorder: usize, slots: &[std::sync::Arc<ThreadSlot>]) -> LockOrder {
    let mut map = HashMap::new();
    let mut dropped = 0;
    for slot in slots {
        merge_into(&mut map, slot, Some(recorder));
        dropped += slot.edges.dropped.load(Relaxed);
    }
    if let Some(r) = RETIRED.lock().unwrap_or_else(|e| e.into_inner()).as_ref() {
        for (k, v) in r.iter().filter(|(k, _)| k.0 == recorder) {
            let e = map.entry(k.clone()).or_default();
            e.0 += v.0;
            e.1 += v.1;
        }
    }
    dropped += RETIRED_DROPPED.load(Relaxed);
    let mut edges: Vec<OrderEdge> = map
        .into_iter()
        .map(
            |((_, held, held_site, acquired, acquired_site), (count, wait))| OrderEdge {
                held,
                held_site,
                acquired,
                acquired_site,
                count,
                wait_ns_total: wait,
            },
        )
        .collect();
    edges.sort_by(|a, b| {
        b.count.cmp(&a.count).then_with(|| {
            (&a.held, &a.held_site, &a.acquired, &a.acquired_site).cmp(&(
                &b.held,
                &b.held_site,
                &b.acquired,
                &b.acquired_site,
            ))
        })
    });
    LockOrder {
        recorded: super::lock_order_on(),
        inversions: inversions(&edges),
        edges,
        dropped_edges: dropped,
    }
}

#[cfg(test)]
mod tests {
    use super::Edges;

    #[test]
    fn edges_count_and_sum_their_waits() {
        let e = Edges::new();
        e.add(8, 16, 1, 0);
        e.add(8, 16, 1, 50);
        e.add(16, 8, 1, 0);
        e.add(8, 16, 2, 0);
        let mut got: Vec<_> = e.read().collect();
        got.sort();
        assert_eq!(
            got,
            vec![(8, 16, 1, 2, 50), (8, 16, 2, 1, 0), (16, 8, 1, 1, 0)]
        );
    }

    #[test]
    fn a_full_table_drops_and_counts() {
        let e = Edges::new();
        for i in 0..2_000usize {
            e.add(8 * i, 8, 1, 0);
        }
        let kept = e.read().count() as u64;
        assert_eq!(
            kept + e.dropped.load(std::sync::atomic::Ordering::Relaxed),
            2_000
        );
    }
}
