//! What is held and waited on at one moment, the deadlocks found, and the
//! order locks are taken in: the `now`, `deadlocks` and `lock_order` fields
//! of a snapshot (format v1 extensions, see `docs/format.md`).
//!
//! Unlike the stats, these are not counts over a window: `now` is the state
//! when the snapshot was taken, `deadlocks` every cycle found since the
//! layer was built, and `lock_order` every nesting seen since then.

use serde::{Deserialize, Serialize};

use crate::LockKind;

/// A thread, as `ps -L` and a debugger name it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(default)]
pub struct ThreadRef {
    /// The OS thread id (Linux `gettid`).
    pub tid: u64,
    /// The thread's name, or `""` for an unnamed thread.
    pub name: String,
}

impl ThreadRef {
    /// `name (tid)`, or `thread tid` for an unnamed thread.
    pub fn label(&self) -> String {
        if self.name.is_empty() {
            format!("thread {}", self.tid)
        } else {
            format!("{} ({})", self.name, self.tid)
        }
    }
}

/// Every lock instance held or waited on when the snapshot was taken.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Now {
    /// Wall-clock time of the picture.
    pub at_unix_ns: u64,
    /// One entry per instance, the longest hold first.
    pub locks: Vec<NowLock>,
    /// Who waits behind whom, when a holder waits itself: each chain starts
    /// at a waiter nobody waits for and follows the first holder.
    pub chains: Vec<Chain>,
    /// Threads whose state changed on every attempt to read it, left out.
    pub unreadable_threads: u64,
    /// Holds not shown because a thread held more locks at once than its
    /// table has room for.
    pub untracked_holds: u64,
}

impl Now {
    /// Whether nothing is held or waited on.
    pub fn is_empty(&self) -> bool {
        self.locks.is_empty() && self.unreadable_threads == 0 && self.untracked_holds == 0
    }

    /// The longest hold, if anything is held.
    pub fn longest_hold_ns(&self) -> Option<u64> {
        self.locks
            .iter()
            .flat_map(|l| l.holders.iter().map(|h| h.held_ns))
            .max()
    }
}

/// One lock instance that is held or waited on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NowLock {
    /// The instance: its address, `0x...`. Two instances of one class differ.
    pub instance: String,
    /// The class id, as in `locks[].id`.
    pub id: String,
    /// The primitive it is.
    pub kind: LockKind,
    /// Every holder: one for an exclusive lock, every reader of an rwlock,
    /// every `acquire()` permit of a semaphore.
    #[serde(default)]
    pub holders: Vec<NowHolder>,
    /// Every thread waiting to acquire it.
    #[serde(default)]
    pub waiters: Vec<NowWaiter>,
}

/// A thread holding a lock.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NowHolder {
    /// The thread.
    pub thread: ThreadRef,
    /// Where it acquired the lock.
    pub site: String,
    /// `read` or `write` for rwlocks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<String>,
    /// How long it has held it (to the watchdog's 10 ms tick).
    pub held_ns: u64,
    /// Held longer than the stall threshold (`LOCKMETER_STALL`).
    #[serde(default)]
    pub stalled: bool,
}

/// A thread waiting to acquire a lock.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NowWaiter {
    /// The thread.
    pub thread: ThreadRef,
    /// Where it is waiting (the caller of `lock()`).
    pub site: String,
    /// `read` or `write` for rwlocks; absent for other kinds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<String>,
    /// How long it has waited so far.
    pub waiting_ns: u64,
    /// Waiting longer than the stall threshold.
    #[serde(default)]
    pub stalled: bool,
}

/// T1 waits on L1, held by T2, which waits on L2, held by T3 ...
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Chain {
    /// One link per waiting thread, in order.
    pub links: Vec<ChainLink>,
    /// The thread at the end: it holds the last lock and is not waiting
    /// (absent when the chain closes into a cycle).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ends_at: Option<ThreadRef>,
    /// The chain came back to a thread already in it.
    pub cycle: bool,
}

/// One thread of a chain and the lock it waits on.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct ChainLink {
    /// The thread.
    pub thread: ThreadRef,
    /// The class id of the lock it waits on.
    pub waits_on: String,
    /// The instance, `0x...` (see [`NowLock::instance`]).
    pub instance: String,
    /// Where it waits.
    pub site: String,
}

/// A cycle of threads each waiting on a lock held by the next: found by
/// the watchdog, confirmed on two scans with nobody's state changed.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Deadlock {
    /// When it was confirmed.
    pub detected_unix_ns: u64,
    /// The threads of the cycle, each followed by the one it waits for.
    pub threads: Vec<DeadlockedThread>,
}

impl Deadlock {
    /// One line: `T1 waits on A at s1 (held by T2); T2 waits on B ...`.
    pub fn summary(&self) -> String {
        self.threads
            .iter()
            .map(|t| {
                format!(
                    "{} waits on {} at {} (held by {})",
                    t.thread.label(),
                    t.waits_on.id,
                    t.waits_on.site,
                    t.held_by
                        .iter()
                        .map(ThreadRef::label)
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            })
            .collect::<Vec<_>>()
            .join("; ")
    }
}

/// One thread of a deadlock.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct DeadlockedThread {
    /// The thread.
    pub thread: ThreadRef,
    /// The lock it waits on and where.
    pub waits_on: LockAt,
    /// The threads of the cycle holding that lock.
    pub held_by: Vec<ThreadRef>,
    /// Every lock it holds, where each was acquired.
    pub holds: Vec<LockAt>,
}

/// A lock instance and a call site.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct LockAt {
    /// The class id, as in `locks[].id`.
    pub id: String,
    /// The instance, `0x...` (see [`NowLock::instance`]).
    pub instance: String,
    /// The call site, `file:line:column`.
    pub site: String,
    /// `read` or `write` for rwlocks; absent for other kinds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mode: Option<String>,
}

/// Lock order: which lock classes were acquired while which were held.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct LockOrder {
    /// Whether order recording was on (`LOCKMETER_LOCK_ORDER=1`,
    /// `LayerBuilder::lock_order`); without it `edges` stays empty.
    pub recorded: bool,
    /// One edge per (held class and site, acquired class and site), the
    /// most frequent first.
    pub edges: Vec<OrderEdge>,
    /// Pairs of classes acquired in both orders.
    pub inversions: Vec<Inversion>,
    /// Edges not kept because a thread's edge table was full.
    pub dropped_edges: u64,
}

impl LockOrder {
    /// Whether there is nothing to show.
    pub fn is_empty(&self) -> bool {
        !self.recorded && self.edges.is_empty() && self.dropped_edges == 0
    }
}

/// `acquired` was taken at `acquired_site` while `held` (taken at
/// `held_site`) was held by the same thread.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct OrderEdge {
    /// The class held.
    pub held: String,
    /// Where the held lock was acquired.
    pub held_site: String,
    /// The class acquired while `held` was held.
    pub acquired: String,
    /// Where it was acquired.
    pub acquired_site: String,
    /// How often.
    pub count: u64,
    /// Time spent waiting for `acquired` while `held` was held.
    pub wait_ns_total: u64,
}

/// `first` was held while `second` was acquired, and `second` held while
/// `first` was acquired: two threads doing both at once deadlock.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Inversion {
    /// The class whose id sorts first.
    pub first: String,
    /// The other class.
    pub second: String,
    /// The heaviest edge first → second.
    pub forward: OrderEdge,
    /// The heaviest edge second → first.
    pub backward: OrderEdge,
}

impl Inversion {
    /// The advisory text, naming all four sites.
    pub fn message(&self) -> String {
        format!(
            "lock order inversion: {a} held at {ah} while acquiring {b} at {ba} ({n} times), \
             but {b} held at {bh} while acquiring {a} at {aa} ({m} times); \
             two threads doing both at once deadlock: take {a} and {b} in one order",
            a = self.first,
            b = self.second,
            ah = self.forward.held_site,
            ba = self.forward.acquired_site,
            n = self.forward.count,
            bh = self.backward.held_site,
            aa = self.backward.acquired_site,
            m = self.backward.count,
        )
    }
}

/// The inversions in `edges`: class pairs seen in both orders. Edges
/// between instances of one class are not inversions (code that orders
/// instances by address does that).
pub fn inversions(edges: &[OrderEdge]) -> Vec<Inversion> {
    use std::collections::BTreeMap;
    let mut heaviest: BTreeMap<(&str, &str), &OrderEdge> = BTreeMap::new();
    for e in edges.iter().filter(|e| e.held != e.acquired) {
        let slot = heaviest.entry((&e.held, &e.acquired)).or_insert(e);
        if e.count > slot.count {
            *slot = e;
        }
    }
    heaviest
        .iter()
        .filter(|((a, b), _)| a < b)
        .filter_map(|((a, b), fwd)| {
            let back = heaviest.get(&(*b, *a))?;
            Some(Inversion {
                first: a.to_string(),
                second: b.to_string(),
                forward: (*fwd).clone(),
                backward: (*back).clone(),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn edge(a: &str, b: &str, count: u64) -> OrderEdge {
        OrderEdge {
            held: a.into(),
            held_site: format!("{a}.rs:1:1"),
            acquired: b.into(),
            acquired_site: format!("{b}.rs:2:2"),
            count,
            wait_ns_total: 0,
        }
    }

    #[test]
    fn both_orders_make_one_inversion_naming_four_sites() {
        let found = inversions(&[edge("a", "b", 3), edge("b", "a", 1), edge("a", "c", 9)]);
        assert_eq!(found.len(), 1);
        let msg = found[0].message();
        for site in ["a.rs:1:1", "b.rs:2:2", "b.rs:1:1", "a.rs:2:2"] {
            assert!(msg.contains(site), "{msg}");
        }
    }

    #[test]
    fn one_order_and_one_class_are_not_inversions() {
        assert!(inversions(&[edge("a", "b", 3), edge("a", "a", 2), edge("b", "c", 1)]).is_empty());
    }
}
