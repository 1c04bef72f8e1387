//! Self-accounting: what lockmeter itself cost, per lock class (a v1
//! extension, the snapshot's `self_cost`).
//!
//! The recorder measures what its own operations cost once, at runtime
//! ([`OpCosts`], a short calibration on a private lock), and every
//! snapshot multiplies those costs by the exact counts of each class
//! ([`SelfCost::estimate`]): acquisitions, contended ones, timed holds,
//! captured stacks. The result splits into what lockmeter added **inside**
//! critical sections (between the acquisition and the release: it lengthens
//! every hold, so UTIL, and makes waiters wait longer, so CON) and what it
//! added **outside** them, on the acquisition path. A class whose own share
//! of held time passes [`FLAG_SHARE_PCT`] is flagged in the text table.
//!
//! The estimate is a pure function of the costs and the counts, so a window
//! ([`crate::Snapshot::since`]) or a merge recomputes it from its own counts
//! rather than subtracting estimates. See `docs/performance.md`
//! ("Self-accounting") for the method and its measured error.

use serde::{Deserialize, Serialize};

use crate::stacks::{Side, Stacks};
use crate::{percent, LockKind, LockStats, Snapshot};

/// A class whose lockmeter share of held time passes this (in %) may have
/// had its UTIL and CON moved by lockmeter itself.
pub const FLAG_SHARE_PCT: f64 = 5.0;

/// The snapshot's `self_cost`: the measured per-operation costs, the
/// estimate per lock class, and the overhead budget if one was set.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct SelfCost {
    /// What each recording operation was measured to cost.
    pub costs: OpCosts,
    /// One entry per lock class of the snapshot, in the order of `locks`.
    pub locks: Vec<LockSelfCost>,
    /// The overhead budget (`LOCKMETER_BUDGET`), when one was set.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub budget: Option<Budget>,
}

/// Per-operation costs in nanoseconds, measured at runtime by timing the
/// recording paths on a private lock (never an application lock).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct OpCosts {
    /// Wall time the calibration took, all its measurements together.
    pub calibration_ns: u64,
    /// Operations timed per measurement.
    pub iterations: u64,
    /// How this process's acquisitions find the recorder: `global` (the
    /// layer is the global default, one pointer compare) or `scoped`.
    pub lookup: String,
    /// The cost of one observed acquisition and release over the bare lock,
    /// per kind measured. Kinds not listed use the first entry.
    pub kinds: Vec<KindCost>,
    /// Added by a timed uncontended hold: two clock reads and the
    /// distribution update, outside the critical section.
    pub timed_hold_ns: f64,
    /// Added inside the critical section by a contended acquisition: the
    /// clock read that ends the wait and its counters, and the held-lock
    /// record's change from waiting to holding (left out before session
    /// 36).
    pub contended_inside_ns: f64,
    /// Added outside it by a contended acquisition: the clock reads that
    /// start the wait and end the hold, the wait distribution and holder
    /// table, and the held-lock record of the wait.
    pub contended_outside_ns: f64,
    /// Added inside the critical section by a contended acquisition whose
    /// timing the sample left out (`Stats::wait_untimed`): its counters
    /// and the holder table's count, no clock read, and the held-lock
    /// record's change as for [`OpCosts::contended_inside_ns`]. 0 in
    /// older dumps, which timed every one.
    pub contended_untimed_inside_ns: f64,
    /// Added outside it by such an acquisition: the clock read that
    /// starts the wait (the sample decides after it), and the held-lock
    /// record of the wait.
    pub contended_untimed_outside_ns: f64,
    /// One stack capture at the configured depth (0 when stacks are off).
    /// A waiter's capture is inside the critical section, a holder's
    /// outside.
    pub stack_capture_ns: f64,
    /// How many times the process measured `kinds` so far: at the first
    /// snapshot and at up to seven later ones, after gaps that double from
    /// a second (up to two, a second apart, before session 33). 0 in older
    /// dumps, which measured once.
    pub calibrations: u32,
    /// Which of those measurements `kinds` comes from, counting from 1:
    /// the one whose observed locks ran fastest, so on the calmest core.
    /// 0 in older dumps.
    pub calibration_kept: u32,
}

/// What one observed acquisition of one kind adds over the bare lock.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KindCost {
    /// The kind it was measured on.
    pub kind: LockKind,
    /// Between the acquisition and the release: counters, the holder and
    /// owner notes, the held-lock table, the release's checks.
    pub inside_ns: f64,
    /// Before the attempt: finding the recorder and the thread's entry,
    /// the hold sample's check.
    pub outside_ns: f64,
}

/// The estimate for one lock class.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct LockSelfCost {
    /// The class ([`LockStats::id`]).
    pub id: String,
    /// Estimated ns lockmeter added inside this class's critical sections.
    pub inside_ns: u64,
    /// Estimated ns lockmeter added on its acquisition paths, outside them.
    pub outside_ns: u64,
}

impl LockSelfCost {
    /// The share of `held_ns` (the class's `hold_ns.total`) that is
    /// lockmeter's own work inside the critical section, in %; `None` when
    /// nothing was held (wait queues, untimed holds).
    pub fn held_pct(&self, held_ns: u64) -> Option<f64> {
        (held_ns > 0).then(|| percent(self.inside_ns, held_ns))
    }
}

/// What the overhead budget decided at its last evaluation.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Budget {
    /// The budget, a fraction (0.01 for `1%`).
    pub fraction: f64,
    /// What the fraction is of: `thread_time`, the window's wall time times
    /// the threads that used an observed lock in it.
    pub basis: String,
    /// The estimated cost over the last evaluated period, as a fraction of
    /// the basis.
    pub estimated_fraction: f64,
    /// What the exact counts alone cost over that period (no sampling can
    /// go below it), as a fraction of the basis.
    pub floor_fraction: f64,
    /// Whether the estimate was within the budget after lowering.
    pub met: bool,
    /// Every rate lowered since the layer was built.
    pub lowered: Vec<Lowered>,
}

/// One sampling rate the budget lowered.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Lowered {
    /// `uncontended_hold_every` (one hold in N timed) or `stack_rate_ns`
    /// (a wait of d captured with probability d / rate).
    pub what: String,
    /// The configured value.
    pub from: u64,
    /// The value now.
    pub to: u64,
}

/// The cost of one acquisition of `kind` in `costs`.
fn kind_cost(costs: &OpCosts, kind: LockKind) -> (f64, f64) {
    costs
        .kinds
        .iter()
        .find(|k| k.kind == kind)
        .or(costs.kinds.first())
        .map_or((0.0, 0.0), |k| (k.inside_ns, k.outside_ns))
}

/// Stacks captured per side for class `id`.
fn captures(stacks: &Stacks, id: &str) -> (u64, u64) {
    let mut waiter = 0u64;
    let mut holder = 0u64;
    for s in stacks.samples.iter().filter(|s| s.lock == id) {
        match s.side {
            Side::Waiter => waiter = waiter.saturating_add(s.captured),
            Side::Holder => holder = holder.saturating_add(s.captured),
        }
    }
    (waiter, holder)
}

/// `n` operations of `ns` each, rounded, saturating.
fn times(n: u64, ns: f64) -> f64 {
    n as f64 * ns.max(0.0)
}

impl SelfCost {
    /// The estimate for `lock`, from `costs` and the lock's exact counts
    /// (and, for stack captures, the `captured` counts in `stacks`).
    pub fn estimate(costs: &OpCosts, lock: &LockStats, stacks: &Stacks) -> LockSelfCost {
        let s = &lock.total;
        let (inside, outside) = kind_cost(costs, lock.kind);
        // Timed contended acquisitions cost their clock reads; the ones the
        // sample left untimed only their counts.
        let (timed_contended, untimed_contended) = (s.contended_timed(), s.wait_untimed);
        // Every path looks its entry up first: successful acquisitions,
        // failed attempts, wake calls.
        let looked_up = s
            .acquisitions
            .saturating_add(s.rejected)
            .saturating_add(s.wake_calls);
        let (waiter, holder) = captures(stacks, &lock.id);
        let inside_ns = times(s.acquisitions, inside)
            + times(timed_contended, costs.contended_inside_ns)
            + times(untimed_contended, costs.contended_untimed_inside_ns)
            + times(waiter, costs.stack_capture_ns);
        let outside_ns = times(looked_up, outside)
            + times(s.uncontended_holds_timed(), costs.timed_hold_ns)
            + times(timed_contended, costs.contended_outside_ns)
            + times(untimed_contended, costs.contended_untimed_outside_ns)
            + times(holder, costs.stack_capture_ns);
        LockSelfCost {
            id: lock.id.clone(),
            inside_ns: inside_ns.round() as u64,
            outside_ns: outside_ns.round() as u64,
        }
    }

    /// Recomputes [`SelfCost::locks`] for every lock of `snap`.
    pub fn refresh(&mut self, snap_locks: &[LockStats], stacks: &Stacks) {
        self.locks = snap_locks
            .iter()
            .map(|l| SelfCost::estimate(&self.costs, l, stacks))
            .collect();
    }

    /// The estimate for class `id`, if the snapshot has one.
    pub fn lock(&self, id: &str) -> Option<&LockSelfCost> {
        self.locks.iter().find(|l| l.id == id)
    }
}

impl Snapshot {
    /// Recomputes the per-class estimates of `self_cost` (if any) from the
    /// snapshot's own counts; done by every window and merge.
    pub fn refresh_self_cost(&mut self) {
        if let Some(sc) = self.self_cost.as_mut() {
            sc.refresh(&self.locks, &self.stacks);
        }
    }

    /// Lockmeter's share of class `id`'s held time, in % (see
    /// [`LockSelfCost::held_pct`]); `None` without self-accounting.
    pub fn self_share_pct(&self, id: &str) -> Option<f64> {
        let lock = self.lock(id)?;
        self.self_cost
            .as_ref()?
            .lock(id)?
            .held_pct(lock.total.hold_ns.total)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Dist, Stats};

    fn costs() -> OpCosts {
        OpCosts {
            kinds: vec![
                KindCost {
                    kind: LockKind::Mutex,
                    inside_ns: 2.0,
                    outside_ns: 1.0,
                },
                KindCost {
                    kind: LockKind::Spinlock,
                    inside_ns: 3.0,
                    outside_ns: 1.5,
                },
            ],
            timed_hold_ns: 20.0,
            contended_inside_ns: 10.0,
            contended_outside_ns: 30.0,
            stack_capture_ns: 1000.0,
            ..OpCosts::default()
        }
    }

    fn lock(kind: LockKind, total: Stats) -> LockStats {
        LockStats {
            id: "l".into(),
            display_name: None,
            kind,
            created_at: "x".into(),
            instances: 1,
            parent: None,
            total,
            sites: Vec::new(),
            holders: Vec::new(),
        }
    }

    #[test]
    fn the_estimate_is_costs_times_counts() {
        let total = Stats {
            acquisitions: 100,
            contended: 10,
            rejected: 5,
            hold_timed: 12,
            hold_ns: Dist {
                total: 10_000,
                ..Dist::default()
            },
            ..Stats::default()
        };
        let e = SelfCost::estimate(&costs(), &lock(LockKind::Mutex, total), &Stacks::default());
        assert_eq!(e.inside_ns, 100 * 2 + 10 * 10);
        assert_eq!(e.outside_ns, 105 + 2 * 20 + 10 * 30);
        assert_eq!(e.held_pct(10_000), Some(3.0));
        assert_eq!(e.held_pct(0), None);
        // Each kind its own costs; an unmeasured kind the first one's.
        let ten_of = |kind| {
            let total = Stats {
                acquisitions: 10,
                ..Stats::default()
            };
            let e = SelfCost::estimate(&costs(), &lock(kind, total), &Stacks::default());
            (e.inside_ns, e.outside_ns)
        };
        assert_eq!(ten_of(LockKind::Spinlock), (30, 15));
        assert_eq!(ten_of(LockKind::Rwlock), (20, 10));
    }

    #[test]
    fn contended_acquisitions_left_untimed_cost_only_their_counts() {
        let costs = OpCosts {
            contended_untimed_inside_ns: 1.0,
            contended_untimed_outside_ns: 3.0,
            ..costs()
        };
        // 10 contended, 6 of them untimed: 4 timed ones, each with its
        // hold among the 12 timed, so 8 timed uncontended holds.
        let total = Stats {
            acquisitions: 100,
            contended: 10,
            wait_untimed: 6,
            hold_timed: 12,
            ..Stats::default()
        };
        assert_eq!(
            (total.contended_timed(), total.uncontended_holds_timed()),
            (4, 8)
        );
        let e = SelfCost::estimate(&costs, &lock(LockKind::Mutex, total), &Stacks::default());
        assert_eq!(e.inside_ns, 100 * 2 + 4 * 10 + 6);
        assert_eq!(e.outside_ns, 100 + 8 * 20 + 4 * 30 + 6 * 3);
    }

    #[test]
    fn captured_stacks_count_on_their_side() {
        use crate::stacks::StackSample;
        let sample = |side, captured| StackSample {
            lock: "l".into(),
            site: "s".into(),
            mode: None,
            side,
            frames: vec![],
            captured,
            contentions: 0.0,
            wait_ns: 0.0,
            hold_ns: 0.0,
        };
        let stacks = Stacks {
            samples: vec![
                sample(Side::Waiter, 3),
                sample(Side::Holder, 2),
                StackSample {
                    lock: "other".into(),
                    ..sample(Side::Waiter, 50)
                },
            ],
            ..Stacks::default()
        };
        let e = SelfCost::estimate(&costs(), &lock(LockKind::Mutex, Stats::default()), &stacks);
        assert_eq!((e.inside_ns, e.outside_ns), (3000, 2000));
    }
}
