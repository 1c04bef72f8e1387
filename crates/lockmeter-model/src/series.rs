//! Bounded label sets for metric exporters: which call sites of a lock
//! class get series of their own, and what goes into `site="(other)"`.
//!
//! A metrics engine stores one time series per label set, so an exporter
//! cannot give every call site of every lock its own series. [`SiteBound`]
//! turns a cumulative [`Snapshot`] into at most a bounded number of series
//! per lock class and mode, and keeps every exposed counter monotonic
//! across calls, which a scraper needs to compute rates:
//!
//! - At each call the sites of a class are ranked by cumulative wait time
//!   (then acquisitions, then name). Every site in the current top N that
//!   has no series yet gets one, while the class has fewer than
//!   [`SiteBound::max_sites`] (2N).
//! - The set is sticky: once a site has its own series it keeps it, so a
//!   site that falls out of the top N does not vanish and reappear.
//! - Every other site is summed into `(other)`, per mode.
//! - A site that gets its own series after it was already counted in
//!   `(other)` (it was present at an earlier call) starts from zero: its
//!   count at that call stays in `(other)` as a frozen base. A site first
//!   seen at the call that gives it a series starts with its full count.
//!
//! So every value is a sum of non-decreasing terms, and at every call the
//! series of a class add up exactly to the class's total over its sites.
//! This module does no I/O; the Prometheus exporter encodes its output.

use std::collections::{HashMap, HashSet};

use crate::{LockKind, Snapshot, Stats};

/// The `site` label of the series that sums a class's other sites.
pub const OTHER_SITE: &str = "(other)";

/// One exposed series: a lock class, a call site (or [`OTHER_SITE`]), a
/// mode (`read`/`write` for rwlocks, else empty), and its cumulative stats.
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    /// The lock class id.
    pub lock: String,
    /// The primitive of the class.
    pub kind: LockKind,
    /// The call site, or [`OTHER_SITE`].
    pub site: String,
    /// `read`/`write` for rwlocks, else empty.
    pub mode: String,
    /// Counters and distributions; derived percentages are not filled.
    pub stats: Stats,
}

/// (site, mode) of one row of a class.
type SiteKey = (String, String);

/// What is remembered about one lock class between calls.
#[derive(Debug, Default)]
struct ClassState {
    /// Sites with a series of their own, each with the base subtracted
    /// from it (zero unless it was counted in `(other)` first).
    exposed: HashMap<SiteKey, Stats>,
    /// Sites seen at an earlier call: those counted in `(other)` so far.
    seen: HashSet<SiteKey>,
    /// Modes whose `(other)` series was ever exposed: it stays.
    other_modes: HashSet<String>,
}

/// The sticky top-N selection of call sites per lock class (see the module
/// docs). One per exporter; feed it cumulative snapshots of one process.
#[derive(Debug)]
pub struct SiteBound {
    top: usize,
    classes: HashMap<String, ClassState>,
}

impl SiteBound {
    /// The default N: sites per class ranked into series of their own.
    pub const DEFAULT_TOP_SITES: usize = 10;

    /// Ranks the top `top_sites` (at least 1) sites of each class.
    pub fn new(top_sites: usize) -> SiteBound {
        SiteBound {
            top: top_sites.max(1),
            classes: HashMap::new(),
        }
    }

    /// N, the sites per class ranked into series at each call.
    pub fn top_sites(&self) -> usize {
        self.top
    }

    /// The most sites of one class that ever get series of their own (2N);
    /// with one `(other)` per mode, the bound on series per class.
    pub fn max_sites(&self) -> usize {
        self.top.saturating_mul(2)
    }

    /// The series of `cumulative`, a snapshot of everything since the
    /// process started (not a window: counters must only grow between
    /// calls). Ordered by the snapshot's lock order, then site order, with
    /// each class's `(other)` series last.
    pub fn series(&mut self, cumulative: &Snapshot) -> Vec<Series> {
        let mut out = Vec::new();
        let max_sites = self.max_sites();
        for lock in &cumulative.locks {
            let state = self.classes.entry(lock.id.clone()).or_default();
            let key_of = |s: &crate::SiteStats| -> SiteKey {
                (s.site.clone(), s.mode.clone().unwrap_or_default())
            };
            let mut ranked: Vec<&crate::SiteStats> = lock.sites.iter().collect();
            ranked.sort_by(|a, b| {
                b.stats
                    .wait_ns
                    .total
                    .cmp(&a.stats.wait_ns.total)
                    .then(b.stats.acquisitions.cmp(&a.stats.acquisitions))
                    .then_with(|| (&a.site, &a.mode).cmp(&(&b.site, &b.mode)))
            });
            for site in ranked.into_iter().take(self.top) {
                if state.exposed.len() >= max_sites {
                    break;
                }
                let key = key_of(site);
                if state.exposed.contains_key(&key) {
                    continue;
                }
                // Counted in (other) until now: that part stays there.
                let base = if state.seen.contains(&key) {
                    site.stats.clone()
                } else {
                    Stats::default()
                };
                state.exposed.insert(key, base);
            }

            let mut other: Vec<(String, Stats)> = Vec::new();
            let mut add_other =
                |mode: &str, stats: &Stats| match other.iter_mut().find(|(m, _)| m == mode) {
                    Some((_, sum)) => sum.merge(stats),
                    None => other.push((mode.to_string(), stats.clone())),
                };
            for site in &lock.sites {
                let key = key_of(site);
                match state.exposed.get(&key) {
                    Some(base) => {
                        let mut stats = site.stats.clone();
                        stats.subtract(base);
                        if *base != Stats::default() {
                            add_other(&key.1, base);
                        }
                        out.push(Series {
                            lock: lock.id.clone(),
                            kind: lock.kind,
                            site: key.0,
                            mode: key.1,
                            stats,
                        });
                    }
                    None => {
                        add_other(&key.1, &site.stats);
                        state.seen.insert(key);
                    }
                }
            }
            for mode in &state.other_modes {
                if !other.iter().any(|(m, _)| m == mode) {
                    other.push((mode.clone(), Stats::default()));
                }
            }
            other.sort_by(|a, b| a.0.cmp(&b.0));
            for (mode, stats) in other {
                state.other_modes.insert(mode.clone());
                out.push(Series {
                    lock: lock.id.clone(),
                    kind: lock.kind,
                    site: OTHER_SITE.to_string(),
                    mode,
                    stats,
                });
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Dist, LockStats, ProcessInfo, SiteStats};

    fn site(name: &str, acquisitions: u64, wait_total: u64) -> SiteStats {
        let stats = Stats {
            acquisitions,
            wait_ns: Dist {
                count: u64::from(wait_total > 0),
                total: wait_total,
                ..Dist::default()
            },
            ..Stats::default()
        };
        SiteStats::at(name, stats)
    }

    fn snap(sites: Vec<SiteStats>) -> Snapshot {
        let mut s = Snapshot::empty(ProcessInfo::default(), "mock");
        let total = Stats::default();
        s.locks
            .push(LockStats::new("l", LockKind::Mutex, total, sites));
        s
    }

    fn acq(series: &[Series], site: &str) -> Option<u64> {
        series
            .iter()
            .find(|s| s.site == site)
            .map(|s| s.stats.acquisitions)
    }

    #[test]
    fn few_sites_are_all_exposed_exactly() {
        let mut b = SiteBound::new(3);
        let out = b.series(&snap(vec![site("a", 5, 0), site("b", 7, 9)]));
        assert_eq!(out.len(), 2);
        assert_eq!(acq(&out, "a"), Some(5));
        assert_eq!(acq(&out, "b"), Some(7));
    }

    #[test]
    fn the_rest_is_other_and_a_late_riser_starts_from_zero() {
        let mut b = SiteBound::new(1);
        let out = b.series(&snap(vec![site("a", 5, 100), site("b", 7, 1)]));
        assert_eq!(acq(&out, "a"), Some(5));
        assert_eq!(acq(&out, OTHER_SITE), Some(7));
        assert_eq!(acq(&out, "b"), None);
        // b overtakes a: it gets a series from zero, (other) keeps its 10.
        let out = b.series(&snap(vec![site("a", 6, 100), site("b", 10, 500)]));
        assert_eq!(acq(&out, "a"), Some(6));
        assert_eq!(acq(&out, "b"), Some(0));
        assert_eq!(acq(&out, OTHER_SITE), Some(10));
        let out = b.series(&snap(vec![site("a", 6, 100), site("b", 13, 500)]));
        assert_eq!(acq(&out, "b"), Some(3));
        assert_eq!(acq(&out, OTHER_SITE), Some(10));
        // A third site cannot get one: 2N = 2 sites are exposed.
        let out = b.series(&snap(vec![
            site("a", 6, 100),
            site("b", 13, 500),
            site("c", 1, 9000),
        ]));
        assert_eq!(acq(&out, "c"), None);
        assert_eq!(acq(&out, OTHER_SITE), Some(11));
    }
}
