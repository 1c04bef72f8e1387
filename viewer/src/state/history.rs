//! CON %, UTIL % (and for wait queues spurious %) of every lock over the
//! session, for the sparklines.

use std::collections::{HashMap, VecDeque};

use lockmeter_model::Snapshot;

/// Samples kept per lock: ten minutes at the default one-second interval.
pub const CAPACITY: usize = 600;

/// One interval's percentages for one lock.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Sample {
    pub con_pct: f64,
    pub util_pct: f64,
    /// Wait queues: spurious wakeups as a share of wakeups.
    pub spurious_pct: f64,
}

/// Per-lock ring buffers, aligned: every lock gets a sample per interval
/// (zero when it did not appear), so sparklines of two locks line up.
#[derive(Debug, Clone, Default)]
pub struct History {
    series: HashMap<String, VecDeque<Sample>>,
    intervals: usize,
}

impl History {
    /// Records one interval snapshot.
    pub fn push(&mut self, interval: &Snapshot) {
        self.intervals += 1;
        for lock in &interval.locks {
            self.series.entry(lock.id.clone()).or_insert_with(|| {
                let missed = (self.intervals - 1).min(CAPACITY);
                VecDeque::from(vec![Sample::default(); missed])
            });
        }
        for (id, series) in &mut self.series {
            let sample = interval
                .lock(id)
                .map(|l| Sample {
                    con_pct: l.total.con_pct(),
                    util_pct: l.total.util_pct(interval.window.elapsed_ns),
                    spurious_pct: lockmeter_model::percent(
                        l.total.spurious_wakeups,
                        l.total.wakeups,
                    ),
                })
                .unwrap_or_default();
            if series.len() == CAPACITY {
                series.pop_front();
            }
            series.push_back(sample);
        }
    }

    /// Forgets everything (a new target, or a jump in a recording).
    pub fn clear(&mut self) {
        self.series.clear();
        self.intervals = 0;
    }

    /// The samples of lock `id`, oldest first.
    pub fn samples(&self, id: &str) -> Vec<Sample> {
        self.series
            .get(id)
            .map(|s| s.iter().copied().collect())
            .unwrap_or_default()
    }

    /// Intervals seen since the last clear.
    pub fn len(&self) -> usize {
        self.intervals
    }

    pub fn is_empty(&self) -> bool {
        self.intervals == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use lockmeter_model::{LockKind, LockStats, ProcessInfo, Stats};

    fn snap(ids: &[(&str, f64)]) -> Snapshot {
        let mut s = Snapshot::empty(ProcessInfo::default(), "mock");
        for &(id, con) in ids {
            // CON `con`, to a tenth of a percent.
            let total = Stats {
                acquisitions: 1000,
                contended: (con * 10.0).round() as u64,
                ..Stats::default()
            };
            s.locks
                .push(LockStats::new(id, LockKind::Spinlock, total, vec![]));
        }
        s
    }

    #[test]
    fn late_locks_are_padded_so_series_line_up() {
        let mut h = History::default();
        h.push(&snap(&[("a", 1.0)]));
        h.push(&snap(&[("a", 2.0), ("b", 5.0)]));
        h.push(&snap(&[("b", 6.0)]));
        let a: Vec<f64> = h.samples("a").iter().map(|s| s.con_pct).collect();
        let b: Vec<f64> = h.samples("b").iter().map(|s| s.con_pct).collect();
        assert_eq!(a, vec![1.0, 2.0, 0.0]);
        assert_eq!(b, vec![0.0, 5.0, 6.0]);
        assert_eq!(h.len(), 3);
    }

    #[test]
    fn capacity_is_bounded() {
        let mut h = History::default();
        for i in 0..CAPACITY + 10 {
            h.push(&snap(&[("a", i as f64)]));
        }
        let a = h.samples("a");
        assert_eq!(a.len(), CAPACITY);
        assert_eq!(a[0].con_pct, 10.0);
    }
}
