//! Sums of many site rows into a lock's total, without merging them one
//! distribution at a time.

use lockmeter_model::dist::{bucket_index, bucket_upper_bound, BUCKETS};
use lockmeter_model::{Dist, Stats};

/// A sum of [`Stats`], equal to merging them one by one into
/// `Stats::default()` with [`Stats::merge`], without building a merged
/// distribution (a fresh bucket list and three percentiles) per step.
#[derive(Default)]
pub(super) struct StatsSum {
    /// Everything but the distributions, which stay empty here.
    counts: Stats,
    hold_ns: DistSum,
    wait_ns: DistSum,
    wake_latency_ns: DistSum,
}

impl StatsSum {
    pub(super) fn add(&mut self, stats: &mut Stats) {
        // Stats::merge skips empty distributions: lend it the counters only.
        let hold_ns = std::mem::take(&mut stats.hold_ns);
        let wait_ns = std::mem::take(&mut stats.wait_ns);
        let wake_latency_ns = std::mem::take(&mut stats.wake_latency_ns);
        self.counts.merge(stats);
        self.hold_ns.add(&hold_ns);
        self.wait_ns.add(&wait_ns);
        self.wake_latency_ns.add(&wake_latency_ns);
        stats.hold_ns = hold_ns;
        stats.wait_ns = wait_ns;
        stats.wake_latency_ns = wake_latency_ns;
    }

    pub(super) fn finish(self) -> Stats {
        Stats {
            hold_ns: self.hold_ns.finish(),
            wait_ns: self.wait_ns.finish(),
            wake_latency_ns: self.wake_latency_ns.finish(),
            ..self.counts
        }
    }
}

/// A sum of distributions, equal to merging them one by one into
/// `Dist::default()` with [`Dist::merge`]: counts per bucket index add up
/// in an array. Distributions built here always have ascending, non-empty
/// buckets on the bucket grid; anything else is merged the slow way.
#[derive(Default)]
struct DistSum {
    /// Count, total, min and max so far; no buckets.
    head: Dist,
    /// Whether anything was merged (else the sum is `Dist::default()`).
    merged: bool,
    counts: Option<Box<[u64; BUCKETS]>>,
    /// The sum so far, once an unusual distribution was seen.
    slow: Option<Dist>,
}

impl DistSum {
    fn add(&mut self, d: &Dist) {
        if let Some(slow) = &mut self.slow {
            slow.merge(d);
            return;
        }
        if d.count == 0 && d.buckets.is_empty() {
            return;
        }
        let on_grid = d
            .buckets
            .iter()
            .all(|&(upper, c)| c > 0 && bucket_upper_bound(bucket_index(upper)) == upper)
            && d.buckets.windows(2).all(|w| w[0].0 < w[1].0);
        if !on_grid {
            let mut slow = std::mem::take(self).finish();
            slow.merge(d);
            self.slow = Some(slow);
            return;
        }
        // Count, total and extremes add up as `Dist::merge` adds them; the
        // buckets go into the array.
        self.head.merge(&Dist {
            count: d.count,
            total: d.total,
            min: d.min,
            max: d.max,
            ..Dist::default()
        });
        self.merged = true;
        if !d.buckets.is_empty() {
            let counts = self.counts.get_or_insert_with(|| Box::new([0; BUCKETS]));
            for &(upper, c) in &d.buckets {
                let i = bucket_index(upper);
                counts[i] = counts[i].saturating_add(c);
            }
        }
    }

    fn finish(self) -> Dist {
        if let Some(slow) = self.slow {
            return slow;
        }
        if !self.merged {
            return Dist::default();
        }
        let head = self.head;
        match self.counts {
            Some(counts) => {
                Dist::from_buckets(&counts[..], head.count, head.total, head.min, head.max)
            }
            None => head,
        }
    }
}
