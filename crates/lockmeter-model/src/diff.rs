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
//! The numbers compared are the diffable rows of the metric table
//! ([`crate::metric`]).
//!
//! [`crate::render::diff_text`] prints it for a bug report;
//! [`crate::render::diff_csv`] for a spreadsheet; [`SnapshotDiff`]
//! serialises to JSON with serde. (This module depends on no rendering.)

use serde::Serialize;

use crate::advice::{advise, Advisory, Thresholds};
use crate::metric::{per_sec, Metric};
use crate::{LockKind, LockStats, ProcessInfo, SiteStats, Snapshot, Stats, Window};

/// Two snapshots compared.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SnapshotDiff {
    /// The snapshot compared from.
    pub before: SideInfo,
    /// The snapshot compared to.
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
    /// The process the snapshot came from.
    pub process: ProcessInfo,
    /// The snapshot's time window.
    pub window: Window,
    /// The clock that timed it.
    pub clock: String,
    /// Records the recorder had to drop (counts are low by as many).
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
    /// On both sides.
    Both,
    /// Only after.
    Added,
    /// Only before.
    Removed,
}

impl Presence {
    /// The lowercase name, as serialized.
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
    /// The lock class id both sides were matched by.
    pub id: String,
    /// The name after (before, for a removed lock).
    pub name: String,
    /// The kind of lock.
    pub kind: LockKind,
    /// The id of the lock this one is nested in, if any.
    pub parent: Option<String>,
    /// Whether the lock is on both sides.
    pub presence: Presence,
    /// The lock's totals compared.
    pub total: StatsDiff,
    /// Its call sites compared, matched by site and mode.
    pub sites: Vec<SiteDiff>,
}

/// One call site compared.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SiteDiff {
    /// The call site (`file:line:col`).
    pub site: String,
    /// The acquisition mode (`read`, `write`, ...), if the kind has modes.
    pub mode: Option<String>,
    /// Whether the site is on both sides.
    pub presence: Presence,
    /// The site's numbers compared.
    pub stats: StatsDiff,
}

/// One number on both sides.
///
/// `None` means absent (the row is on one side only) or undefined (a rate
/// over an empty window). An absent value counts as zero in `delta`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Change {
    /// The value before; `None` if absent or undefined.
    pub before: Option<f64>,
    /// The value after; `None` if absent or undefined.
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

/// The compared numbers of one lock or site: one [`Change`] per diffable
/// [`Metric`], serialized as an object keyed by the metric's name in table
/// order (`util_pct`, `con_pct`, ...).
#[derive(Debug, Clone, PartialEq)]
pub struct StatsDiff {
    /// Indexed by `Metric as usize`; metrics that do not diff stay empty.
    changes: Vec<Change>,
}

const NO_CHANGE: Change = Change {
    before: None,
    after: None,
    delta: None,
    delta_pct: None,
};

impl StatsDiff {
    /// The change of one metric (all `None` for a metric that does not diff).
    pub fn get(&self, m: Metric) -> &Change {
        self.changes.get(m as usize).unwrap_or(&NO_CHANGE)
    }

    /// Compares `before` with `after`, over the windows `(b_ns, a_ns)`.
    fn new((before, after): Pair<'_, Stats>, (b_ns, a_ns): (u64, u64)) -> StatsDiff {
        let changes = Metric::ALL
            .iter()
            .map(|&m| match m.def().diffable {
                true => Change::between(
                    before.and_then(|s| m.value(s, b_ns)),
                    after.and_then(|s| m.value(s, a_ns)),
                ),
                false => NO_CHANGE,
            })
            .collect();
        StatsDiff { changes }
    }
}

impl Serialize for StatsDiff {
    fn serialize<S: serde::Serializer>(&self, ser: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = ser.serialize_map(None)?;
        for m in Metric::diffable() {
            map.serialize_entry(m.def().name, self.get(m))?;
        }
        map.end()
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
    /// The lowercase name, as serialized.
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
    /// What became of it.
    pub status: AdviceStatus,
    /// The advisory (the one after, unless resolved).
    pub advisory: Advisory,
}

/// Compares two snapshots, with advisories under default [`Thresholds`].
pub fn diff(before: &Snapshot, after: &Snapshot) -> SnapshotDiff {
    diff_with_thresholds(before, after, &Thresholds::default())
}

/// [`diff`] with the advisories computed under `t`.
pub fn diff_with_thresholds(before: &Snapshot, after: &Snapshot, t: &Thresholds) -> SnapshotDiff {
    let windows = (before.window.elapsed_ns, after.window.elapsed_ns);
    let locks = pair_up(&before.locks, &after.locks, |b, a| b.id == a.id)
        .into_iter()
        .map(|pair| lock_diff(pair, windows))
        .collect();
    SnapshotDiff {
        before: side_info(before),
        after: side_info(after),
        locks,
        advice: advice_changes(advise(before, t), advise(after, t)),
    }
}

/// A row on both sides; one of them may be missing.
type Pair<'a, T> = (Option<&'a T>, Option<&'a T>);

/// Matches the rows of two sides: each row of `after` with the first
/// unused row of `before` that is the `same` (`same(before, after)`), in
/// `after`'s order, then the rows only `before` has, in its order.
fn pair_up<'a, T>(
    before: &'a [T],
    after: &'a [T],
    same: impl Fn(&T, &T) -> bool,
) -> Vec<Pair<'a, T>> {
    let mut used = vec![false; before.len()];
    let mut pairs = Vec::with_capacity(after.len());
    for a in after {
        let i = before
            .iter()
            .zip(&used)
            .position(|(b, u)| !*u && same(b, a));
        if let Some(i) = i {
            used[i] = true;
        }
        pairs.push((i.and_then(|i| before.get(i)), Some(a)));
    }
    let gone = before.iter().zip(&used).filter(|(_, u)| !**u);
    pairs.extend(gone.map(|(b, _)| (Some(b), None)));
    pairs
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

fn presence<T>((before, after): Pair<'_, T>) -> Presence {
    match (before, after) {
        (Some(_), None) => Presence::Removed,
        (None, Some(_)) => Presence::Added,
        _ => Presence::Both,
    }
}

fn lock_diff<'a>(pair @ (before, after): Pair<'a, LockStats>, windows: (u64, u64)) -> LockDiff {
    // One side is always present; `before` is the fallback for naming.
    let named = after.or(before);
    let sites_of = |l: Option<&'a LockStats>| -> &'a [SiteStats] { l.map_or(&[], |l| &l.sites) };
    let sites = pair_up(sites_of(before), sites_of(after), |b, a| {
        b.site == a.site && b.mode == a.mode
    });
    LockDiff {
        id: named.map(|l| l.id.clone()).unwrap_or_default(),
        name: named.map(|l| l.name().to_string()).unwrap_or_default(),
        kind: named.map_or(LockKind::Mutex, |l| l.kind),
        parent: after
            .and_then(|l| l.parent.clone())
            .or_else(|| before.and_then(|l| l.parent.clone())),
        presence: presence(pair),
        total: StatsDiff::new((before.map(|l| &l.total), after.map(|l| &l.total)), windows),
        sites: sites.into_iter().map(|p| site_diff(p, windows)).collect(),
    }
}

fn site_diff(pair @ (before, after): Pair<'_, SiteStats>, windows: (u64, u64)) -> SiteDiff {
    let named = after.or(before);
    SiteDiff {
        site: named.map(|s| s.site.clone()).unwrap_or_default(),
        mode: named.and_then(|s| s.mode.clone()),
        presence: presence(pair),
        stats: StatsDiff::new((before.map(|s| &s.stats), after.map(|s| &s.stats)), windows),
    }
}

/// Pairs advisories by lock, rule and site.
fn advice_changes(before: Vec<Advisory>, after: Vec<Advisory>) -> Vec<AdviceChange> {
    let same =
        |a: &Advisory, b: &Advisory| a.lock_id == b.lock_id && a.kind == b.kind && a.site == b.site;
    let mut out: Vec<AdviceChange> = pair_up(&before, &after, same)
        .into_iter()
        .filter_map(|pair| {
            let (status, advisory) = match pair {
                (Some(_), Some(a)) => (AdviceStatus::Remains, a),
                (None, Some(a)) => (AdviceStatus::New, a),
                (Some(b), None) => (AdviceStatus::Resolved, b),
                (None, None) => return None,
            };
            let advisory = advisory.clone();
            Some(AdviceChange { status, advisory })
        })
        .collect();
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
}
