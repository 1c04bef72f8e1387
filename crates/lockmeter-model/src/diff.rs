//! Before/after comparison of two snapshots, to show that a fix worked.
//!
//! Locks are matched by `id` and call sites by `(site, mode)`; a lock or
//! site present on one side only is kept and marked
//! [`Presence::Added`] or [`Presence::Removed`] (a lock that is gone after
//! the fix is the point of many fixes). Every compared number is a
//! [`Change`]: both values, the difference and the relative change.
//! Because two windows rarely have the same length, TOTAL is also compared
//! per second of window.
//!
//! [`diff_text`] prints it for a bug report; [`diff_csv`] for a
//! spreadsheet (both live with the other renderings in
//! [`crate::render`]); [`SnapshotDiff`] serialises to JSON with serde.

use serde::Serialize;

use crate::advice::{advise, Advisory, Thresholds};
use crate::render::SortKey;
pub use crate::render::{diff_csv, diff_text};
use crate::{LockKind, LockStats, ProcessInfo, SiteStats, Snapshot, Stats, Window};

/// Two snapshots compared.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SnapshotDiff {
    pub before: SideInfo,
    pub after: SideInfo,
    /// Every lock of either side, in the order of `after`, then the
    /// removed ones in the order of `before`.
    pub locks: Vec<LockDiff>,
    /// Advisories of either side (default thresholds unless
    /// [`diff_with_thresholds`] was used), and whether the fix resolved them.
    pub advice: Vec<AdviceChange>,
}

/// What one side of the comparison was.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SideInfo {
    pub process: ProcessInfo,
    pub window: Window,
    pub clock: String,
    pub dropped_records: u64,
    /// How hold times were sampled on this side; hold figures of two sides
    /// sampled differently compare estimates of different precision.
    pub sampling: crate::Sampling,
    /// Lock classes in the snapshot.
    pub locks: usize,
    /// Acquisitions of every lock that is not a wait queue.
    pub acquisitions: u64,
    /// `acquisitions` per second of window; `None` for an empty window.
    pub acquisitions_per_sec: Option<f64>,
}

/// Whether a row exists on both sides or only one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Presence {
    Both,
    /// Only after.
    Added,
    /// Only before.
    Removed,
}

impl Presence {
    pub fn as_str(self) -> &'static str {
        match self {
            Presence::Both => "both",
            Presence::Added => "added",
            Presence::Removed => "removed",
        }
    }
}

/// One lock class compared.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LockDiff {
    pub id: String,
    /// The name after (before, for a removed lock).
    pub name: String,
    pub kind: LockKind,
    pub parent: Option<String>,
    pub presence: Presence,
    pub total: StatsDiff,
    pub sites: Vec<SiteDiff>,
}

/// One call site compared.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SiteDiff {
    pub site: String,
    pub mode: Option<String>,
    pub presence: Presence,
    pub stats: StatsDiff,
}

/// One number on both sides.
///
/// `None` means absent (the row is on one side only) or undefined (a rate
/// over an empty window). An absent value counts as zero in `delta`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Change {
    pub before: Option<f64>,
    pub after: Option<f64>,
    /// `after - before`.
    pub delta: Option<f64>,
    /// `100 * delta / before`; `None` when `before` is absent or zero.
    pub delta_pct: Option<f64>,
}

impl Change {
    /// Compares two values, either of which may be missing.
    pub fn between(before: Option<f64>, after: Option<f64>) -> Change {
        let delta = match (before, after) {
            (None, None) => None,
            (b, a) => Some(a.unwrap_or(0.0) - b.unwrap_or(0.0)),
        };
        let delta_pct = match (before, delta) {
            (Some(b), Some(d)) if b != 0.0 => Some(100.0 * d / b.abs()).filter(|p| p.is_finite()),
            _ => None,
        };
        Change {
            before,
            after,
            delta,
            delta_pct,
        }
    }

    /// Whether either side has a value other than zero.
    pub(crate) fn is_nonzero(&self) -> bool {
        self.before.is_some_and(|v| v != 0.0) || self.after.is_some_and(|v| v != 0.0)
    }
}

/// The compared numbers of one lock or site; see [`Metric`] for each.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StatsDiff {
    pub util_pct: Change,
    pub con_pct: Change,
    pub hold_mean_ns: Change,
    pub hold_p99_ns: Change,
    pub hold_max_ns: Change,
    pub wait_mean_ns: Change,
    pub wait_p99_ns: Change,
    pub wait_max_ns: Change,
    pub acquisitions: Change,
    pub acquisitions_per_sec: Change,
    pub nowait: Change,
    pub contended: Change,
    pub rejected: Change,
    pub wakeups: Change,
    pub wakeups_per_call: Change,
    pub spurious_wakeups: Change,
    pub wake_latency_mean_ns: Change,
}

/// A compared number: which field of [`StatsDiff`], its label and unit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Metric {
    Util,
    Con,
    HoldMean,
    HoldP99,
    HoldMax,
    WaitMean,
    WaitP99,
    WaitMax,
    /// TOTAL.
    Acquisitions,
    /// TOTAL per second of window.
    AcquisitionsPerSec,
    Nowait,
    /// SPIN.
    Contended,
    /// RJECT.
    Rejected,
    Wakeups,
    WakeupsPerCall,
    Spurious,
    WakeLatencyMean,
}

/// How a metric's values print.
#[derive(Clone, Copy, PartialEq)]
pub(crate) enum Unit {
    Pct,
    Ns,
    Count,
    PerSec,
    Ratio,
}

impl Metric {
    /// Every metric, in display order.
    pub const ALL: &'static [Metric] = &[
        Metric::Util,
        Metric::Con,
        Metric::HoldMean,
        Metric::HoldP99,
        Metric::HoldMax,
        Metric::WaitMean,
        Metric::WaitP99,
        Metric::WaitMax,
        Metric::Acquisitions,
        Metric::AcquisitionsPerSec,
        Metric::Nowait,
        Metric::Contended,
        Metric::Rejected,
        Metric::Wakeups,
        Metric::WakeupsPerCall,
        Metric::Spurious,
        Metric::WakeLatencyMean,
    ];

    /// The field name in [`StatsDiff`] (and the CSV column prefix).
    pub fn name(self) -> &'static str {
        match self {
            Metric::Util => "util_pct",
            Metric::Con => "con_pct",
            Metric::HoldMean => "hold_mean_ns",
            Metric::HoldP99 => "hold_p99_ns",
            Metric::HoldMax => "hold_max_ns",
            Metric::WaitMean => "wait_mean_ns",
            Metric::WaitP99 => "wait_p99_ns",
            Metric::WaitMax => "wait_max_ns",
            Metric::Acquisitions => "acquisitions",
            Metric::AcquisitionsPerSec => "acquisitions_per_sec",
            Metric::Nowait => "nowait",
            Metric::Contended => "contended",
            Metric::Rejected => "rejected",
            Metric::Wakeups => "wakeups",
            Metric::WakeupsPerCall => "wakeups_per_call",
            Metric::Spurious => "spurious_wakeups",
            Metric::WakeLatencyMean => "wake_latency_mean_ns",
        }
    }

    /// The label in [`diff_text`], after the Lockmeter columns.
    pub fn label(self) -> &'static str {
        match self {
            Metric::Util => "UTIL",
            Metric::Con => "CON",
            Metric::HoldMean => "HOLD MEAN",
            Metric::HoldP99 => "HOLD P99",
            Metric::HoldMax => "HOLD MAX",
            Metric::WaitMean => "WAIT MEAN",
            Metric::WaitP99 => "WAIT P99",
            Metric::WaitMax => "WAIT MAX",
            Metric::Acquisitions => "TOTAL",
            Metric::AcquisitionsPerSec => "TOTAL/s",
            Metric::Nowait => "NOWAIT",
            Metric::Contended => "SPIN",
            Metric::Rejected => "RJECT",
            Metric::Wakeups => "WAKEUPS",
            Metric::WakeupsPerCall => "WAKEUPS/call",
            Metric::Spurious => "SPURIOUS",
            Metric::WakeLatencyMean => "WAKE LAT",
        }
    }

    pub(crate) fn unit(self) -> Unit {
        match self {
            Metric::Util | Metric::Con => Unit::Pct,
            Metric::HoldMean
            | Metric::HoldP99
            | Metric::HoldMax
            | Metric::WaitMean
            | Metric::WaitP99
            | Metric::WaitMax
            | Metric::WakeLatencyMean => Unit::Ns,
            Metric::AcquisitionsPerSec => Unit::PerSec,
            Metric::WakeupsPerCall => Unit::Ratio,
            Metric::Acquisitions
            | Metric::Nowait
            | Metric::Contended
            | Metric::Rejected
            | Metric::Wakeups
            | Metric::Spurious => Unit::Count,
        }
    }

    /// The metric a table sort key compares, if any.
    pub fn for_sort_key(key: SortKey) -> Option<Metric> {
        Some(match key {
            SortKey::Util => Metric::Util,
            SortKey::Con => Metric::Con,
            SortKey::HoldMean => Metric::HoldMean,
            SortKey::HoldP99 => Metric::HoldP99,
            SortKey::HoldMax => Metric::HoldMax,
            SortKey::WaitMean => Metric::WaitMean,
            SortKey::WaitP99 => Metric::WaitP99,
            SortKey::WaitMax => Metric::WaitMax,
            SortKey::Total => Metric::Acquisitions,
            SortKey::Nowait => Metric::Nowait,
            SortKey::Spin => Metric::Contended,
            SortKey::Rject => Metric::Rejected,
            SortKey::Wakeups => Metric::Wakeups,
            SortKey::Spurious => Metric::Spurious,
            SortKey::WakeLatency => Metric::WakeLatencyMean,
            SortKey::Name => return None,
        })
    }

    /// The value of this metric in `s` over a window of `elapsed_ns`.
    fn value(self, s: &Stats, elapsed_ns: u64) -> Option<f64> {
        Some(match self {
            Metric::Util => s.util_pct,
            Metric::Con => s.con_pct,
            Metric::HoldMean => s.hold_ns.mean as f64,
            Metric::HoldP99 => s.hold_ns.p99 as f64,
            Metric::HoldMax => s.hold_ns.max as f64,
            Metric::WaitMean => s.wait_ns.mean as f64,
            Metric::WaitP99 => s.wait_ns.p99 as f64,
            Metric::WaitMax => s.wait_ns.max as f64,
            Metric::Acquisitions => s.acquisitions as f64,
            Metric::AcquisitionsPerSec => return per_sec(s.acquisitions, elapsed_ns),
            Metric::Nowait => s.nowait as f64,
            Metric::Contended => s.contended as f64,
            Metric::Rejected => s.rejected as f64,
            Metric::Wakeups => s.wakeups as f64,
            Metric::WakeupsPerCall => {
                if s.wake_calls == 0 {
                    return None;
                }
                s.wakeups as f64 / s.wake_calls as f64
            }
            Metric::Spurious => s.spurious_wakeups as f64,
            Metric::WakeLatencyMean => s.wake_latency_ns.mean as f64,
        })
    }
}

impl StatsDiff {
    /// The change of one metric.
    pub fn get(&self, m: Metric) -> &Change {
        match m {
            Metric::Util => &self.util_pct,
            Metric::Con => &self.con_pct,
            Metric::HoldMean => &self.hold_mean_ns,
            Metric::HoldP99 => &self.hold_p99_ns,
            Metric::HoldMax => &self.hold_max_ns,
            Metric::WaitMean => &self.wait_mean_ns,
            Metric::WaitP99 => &self.wait_p99_ns,
            Metric::WaitMax => &self.wait_max_ns,
            Metric::Acquisitions => &self.acquisitions,
            Metric::AcquisitionsPerSec => &self.acquisitions_per_sec,
            Metric::Nowait => &self.nowait,
            Metric::Contended => &self.contended,
            Metric::Rejected => &self.rejected,
            Metric::Wakeups => &self.wakeups,
            Metric::WakeupsPerCall => &self.wakeups_per_call,
            Metric::Spurious => &self.spurious_wakeups,
            Metric::WakeLatencyMean => &self.wake_latency_mean_ns,
        }
    }

    /// Compares `before` (over `b_ns`) with `after` (over `a_ns`).
    fn new(before: Option<&Stats>, b_ns: u64, after: Option<&Stats>, a_ns: u64) -> StatsDiff {
        let c = |m: Metric| {
            Change::between(
                before.and_then(|s| m.value(s, b_ns)),
                after.and_then(|s| m.value(s, a_ns)),
            )
        };
        StatsDiff {
            util_pct: c(Metric::Util),
            con_pct: c(Metric::Con),
            hold_mean_ns: c(Metric::HoldMean),
            hold_p99_ns: c(Metric::HoldP99),
            hold_max_ns: c(Metric::HoldMax),
            wait_mean_ns: c(Metric::WaitMean),
            wait_p99_ns: c(Metric::WaitP99),
            wait_max_ns: c(Metric::WaitMax),
            acquisitions: c(Metric::Acquisitions),
            acquisitions_per_sec: c(Metric::AcquisitionsPerSec),
            nowait: c(Metric::Nowait),
            contended: c(Metric::Contended),
            rejected: c(Metric::Rejected),
            wakeups: c(Metric::Wakeups),
            wakeups_per_call: c(Metric::WakeupsPerCall),
            spurious_wakeups: c(Metric::Spurious),
            wake_latency_mean_ns: c(Metric::WakeLatencyMean),
        }
    }
}

/// What became of an advisory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum AdviceStatus {
    /// Raised before, not after.
    Resolved,
    /// Raised on both sides (the message is the one after).
    Remains,
    /// Raised after only.
    New,
}

impl AdviceStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            AdviceStatus::Resolved => "resolved",
            AdviceStatus::Remains => "remains",
            AdviceStatus::New => "new",
        }
    }
}

/// An advisory and what became of it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AdviceChange {
    pub status: AdviceStatus,
    pub advisory: Advisory,
}

/// Compares two snapshots, with advisories under default [`Thresholds`].
pub fn diff(before: &Snapshot, after: &Snapshot) -> SnapshotDiff {
    diff_with_thresholds(before, after, &Thresholds::default())
}

/// [`diff`] with the advisories computed under `t`.
pub fn diff_with_thresholds(before: &Snapshot, after: &Snapshot, t: &Thresholds) -> SnapshotDiff {
    let (b_ns, a_ns) = (before.window.elapsed_ns, after.window.elapsed_ns);
    let mut used = vec![false; before.locks.len()];
    let mut locks = Vec::with_capacity(after.locks.len());
    for a in &after.locks {
        let b = take_match(&before.locks, &mut used, |b| b.id == a.id);
        locks.push(lock_diff(b, b_ns, Some(a), a_ns));
    }
    for (b, _) in before.locks.iter().zip(&used).filter(|(_, u)| !**u) {
        locks.push(lock_diff(Some(b), b_ns, None, a_ns));
    }
    SnapshotDiff {
        before: side_info(before),
        after: side_info(after),
        locks,
        advice: advice_changes(advise(before, t), advise(after, t)),
    }
}

/// The first unused item matching `pred`, marked used.
fn take_match<'a, T>(
    items: &'a [T],
    used: &mut [bool],
    pred: impl Fn(&T) -> bool,
) -> Option<&'a T> {
    let i = items
        .iter()
        .zip(used.iter())
        .position(|(x, u)| !*u && pred(x))?;
    used[i] = true;
    items.get(i)
}

fn side_info(s: &Snapshot) -> SideInfo {
    let acquisitions = s
        .locks
        .iter()
        .filter(|l| !l.kind.waits_and_wakes())
        .fold(0u64, |acc, l| acc.saturating_add(l.total.acquisitions));
    SideInfo {
        process: s.process.clone(),
        window: s.window,
        clock: s.clock.clone(),
        dropped_records: s.dropped_records,
        sampling: s.sampling,
        locks: s.locks.len(),
        acquisitions,
        acquisitions_per_sec: per_sec(acquisitions, s.window.elapsed_ns),
    }
}

fn per_sec(n: u64, elapsed_ns: u64) -> Option<f64> {
    (elapsed_ns > 0).then(|| n as f64 * 1e9 / elapsed_ns as f64)
}

fn presence<T>(before: Option<T>, after: Option<T>) -> Presence {
    match (before, after) {
        (Some(_), None) => Presence::Removed,
        (None, Some(_)) => Presence::Added,
        _ => Presence::Both,
    }
}

fn lock_diff(
    before: Option<&LockStats>,
    b_ns: u64,
    after: Option<&LockStats>,
    a_ns: u64,
) -> LockDiff {
    // One side is always present; `before` is the fallback for naming.
    let named = after.or(before);
    let empty_sites: &[SiteStats] = &[];
    let b_sites = before.map_or(empty_sites, |l| &l.sites);
    let a_sites = after.map_or(empty_sites, |l| &l.sites);
    let mut used = vec![false; b_sites.len()];
    let mut sites = Vec::with_capacity(a_sites.len());
    for a in a_sites {
        let b = take_match(b_sites, &mut used, |b| b.site == a.site && b.mode == a.mode);
        sites.push(site_diff(b, b_ns, Some(a), a_ns));
    }
    for (b, _) in b_sites.iter().zip(&used).filter(|(_, u)| !**u) {
        sites.push(site_diff(Some(b), b_ns, None, a_ns));
    }
    LockDiff {
        id: named.map(|l| l.id.clone()).unwrap_or_default(),
        name: named.map(|l| l.name.clone()).unwrap_or_default(),
        kind: named.map_or(LockKind::Mutex, |l| l.kind),
        parent: after
            .and_then(|l| l.parent.clone())
            .or_else(|| before.and_then(|l| l.parent.clone())),
        presence: presence(before, after),
        total: StatsDiff::new(
            before.map(|l| &l.total),
            b_ns,
            after.map(|l| &l.total),
            a_ns,
        ),
        sites,
    }
}

fn site_diff(
    before: Option<&SiteStats>,
    b_ns: u64,
    after: Option<&SiteStats>,
    a_ns: u64,
) -> SiteDiff {
    let named = after.or(before);
    SiteDiff {
        site: named.map(|s| s.site.clone()).unwrap_or_default(),
        mode: named.and_then(|s| s.mode.clone()),
        presence: presence(before, after),
        stats: StatsDiff::new(
            before.map(|s| &s.stats),
            b_ns,
            after.map(|s| &s.stats),
            a_ns,
        ),
    }
}

/// Pairs advisories by lock, rule and site.
fn advice_changes(before: Vec<Advisory>, after: Vec<Advisory>) -> Vec<AdviceChange> {
    let same =
        |a: &Advisory, b: &Advisory| a.lock_id == b.lock_id && a.kind == b.kind && a.site == b.site;
    let mut used = vec![false; before.len()];
    let mut out = Vec::new();
    for a in after {
        let status = if take_match(&before, &mut used, |b| same(b, &a)).is_some() {
            AdviceStatus::Remains
        } else {
            AdviceStatus::New
        };
        out.push(AdviceChange {
            status,
            advisory: a,
        });
    }
    for (b, _) in before.into_iter().zip(used).filter(|(_, u)| !*u) {
        out.push(AdviceChange {
            status: AdviceStatus::Resolved,
            advisory: b,
        });
    }
    out.sort_by(|x, y| {
        let (a, b) = (&x.advisory, &y.advisory);
        a.lock_id
            .cmp(&b.lock_id)
            .then(a.kind.cmp(&b.kind))
            .then_with(|| a.site.cmp(&b.site))
    });
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_absent_side_counts_as_zero_and_nothing_is_relative_to_zero() {
        let gone = Change::between(Some(58.0), None);
        assert_eq!((gone.delta, gone.delta_pct), (Some(-58.0), Some(-100.0)));
        let new = Change::between(None, Some(5.0));
        assert_eq!((new.delta, new.delta_pct), (Some(5.0), None));
        let from_zero = Change::between(Some(0.0), Some(5.0));
        assert_eq!((from_zero.delta, from_zero.delta_pct), (Some(5.0), None));
        let halved = Change::between(Some(40.0), Some(20.0));
        assert_eq!((halved.delta, halved.delta_pct), (Some(-20.0), Some(-50.0)));
        assert_eq!(Change::between(None, None).delta, None);
    }

    #[test]
    fn every_sort_key_but_name_has_a_metric() {
        for &key in SortKey::ALL {
            assert_eq!(
                Metric::for_sort_key(key).is_none(),
                key == SortKey::Name,
                "{key}"
            );
        }
    }
}
