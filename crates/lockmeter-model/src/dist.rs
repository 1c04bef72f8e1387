//! Log-scale duration distributions.
//!
//! Durations are counted in buckets with four sub-buckets per power of two:
//! values 0..=3 ns have a bucket each, and every later octave
//! `[2^e, 2^(e+1))` is split into four equal parts. A percentile is reported
//! as the middle of its bucket, clamped to the observed min and max, so its
//! relative error is at most 1/8 (12.5%). Buckets add up across threads and
//! snapshots, which is what makes per-thread recording mergeable.

use serde::Deserialize;

/// Number of buckets a recorder keeps per distribution.
pub const BUCKETS: usize = 160;

/// Sub-buckets per octave, as a shift (4 = 1 << 2).
const SUB_BITS: u32 = 2;
const SUB: u64 = 1 << SUB_BITS;

/// The bucket that counts a duration of `ns` nanoseconds.
#[inline]
pub fn bucket_index(ns: u64) -> usize {
    if ns < SUB {
        return ns as usize;
    }
    let exp = 63 - ns.leading_zeros(); // >= SUB_BITS
    let sub = (ns >> (exp - SUB_BITS)) & (SUB - 1);
    let idx = SUB + (u64::from(exp - SUB_BITS) << SUB_BITS) + sub;
    (idx as usize).min(BUCKETS - 1)
}

/// The smallest duration counted in bucket `idx`.
pub fn bucket_lower_bound(idx: usize) -> u64 {
    let idx = idx as u64;
    if idx < SUB {
        return idx;
    }
    let exp = (idx - SUB) >> SUB_BITS;
    let sub = (idx - SUB) & (SUB - 1);
    (SUB + sub) << exp
}

/// The largest duration counted in bucket `idx` (inclusive).
pub fn bucket_upper_bound(idx: usize) -> u64 {
    if idx + 1 >= BUCKETS {
        u64::MAX
    } else {
        bucket_lower_bound(idx + 1) - 1
    }
}

/// A distribution of durations in nanoseconds, as it appears in a snapshot.
///
/// Only what is counted is stored; the mean and the percentiles are
/// methods ([`Dist::mean`], [`Dist::p50`], ...), so no change to the counts
/// can leave them stale. Format v1 writes them as fields all the same
/// (`crate::v1`), and a reader ignores the stored values and recomputes
/// them, as it does `con_pct`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(default)]
pub struct Dist {
    /// Samples.
    pub count: u64,
    /// Sum of all samples, in ns.
    pub total: u64,
    /// Smallest sample, in ns.
    pub min: u64,
    /// Largest sample, in ns.
    pub max: u64,
    /// `[upper_bound_ns, count]` for every non-empty bucket, ascending.
    pub buckets: Vec<(u64, u64)>,
}

impl Dist {
    /// The distribution of `samples` (nanoseconds), exact in count, total,
    /// min and max: for tests and hand-made snapshots.
    ///
    /// # Examples
    ///
    /// ```
    /// let d = lockmeter_model::Dist::of_samples(&[10, 30]);
    /// assert_eq!((d.count, d.total, d.min, d.max, d.mean()), (2, 40, 10, 30, 20));
    /// ```
    pub fn of_samples(samples: &[u64]) -> Dist {
        let mut counts = vec![0u64; BUCKETS];
        for &v in samples {
            counts[bucket_index(v)] += 1;
        }
        let min = samples.iter().copied().min().unwrap_or(0);
        let max = samples.iter().copied().max().unwrap_or(0);
        let total = samples.iter().fold(0u64, |a, &v| a.saturating_add(v));
        Dist::from_buckets(&counts, samples.len() as u64, total, min, max)
    }

    /// Builds a distribution from raw per-bucket counts (indexed as
    /// [`bucket_index`]) and the exact count, total, min and max.
    pub fn from_buckets(counts: &[u64], count: u64, total: u64, min: u64, max: u64) -> Dist {
        Dist::from_bucket_range(0, counts.iter().copied(), count, total, min, max)
    }

    /// Like [`Dist::from_buckets`] for the buckets `first..` only (as
    /// many as `counts` yields), the others empty: a recorder reads just
    /// the buckets between its min's and max's, and scanning all
    /// [`BUCKETS`] of a mostly empty array was most of a 10,000-site
    /// snapshot's instructions (callgrind).
    pub fn from_bucket_range(
        first: usize,
        counts: impl IntoIterator<Item = u64>,
        count: u64,
        total: u64,
        min: u64,
        max: u64,
    ) -> Dist {
        let buckets: Vec<(u64, u64)> = (first..)
            .zip(counts)
            .filter(|&(_, c)| c > 0)
            .map(|(i, c)| (bucket_upper_bound(i), c))
            .collect();
        Dist {
            count,
            total,
            min: if count == 0 { 0 } else { min },
            max,
            buckets,
        }
    }

    /// `total / count`, in ns (0 without samples); exact.
    pub fn mean(&self) -> u64 {
        self.total.checked_div(self.count).unwrap_or(0)
    }

    /// The median, from the buckets, in ns (see [`Dist::percentile`]).
    pub fn p50(&self) -> u64 {
        self.percentile(0.50)
    }

    /// The 90th percentile, from the buckets, in ns.
    pub fn p90(&self) -> u64 {
        self.percentile(0.90)
    }

    /// The 99th percentile, from the buckets, in ns.
    pub fn p99(&self) -> u64 {
        self.percentile(0.99)
    }

    /// The `q`-quantile (0.0..=1.0) estimated from the buckets: the middle
    /// of the bucket it falls in, clamped to `[min, max]`.
    pub fn percentile(&self, q: f64) -> u64 {
        let in_buckets = self
            .buckets
            .iter()
            .fold(0u64, |acc, &(_, c)| acc.saturating_add(c));
        if in_buckets == 0 {
            return 0;
        }
        let rank = ((q.clamp(0.0, 1.0) * in_buckets as f64).ceil() as u64).max(1);
        let mut seen = 0u64;
        for &(upper, c) in &self.buckets {
            seen = seen.saturating_add(c);
            if seen >= rank {
                let lower = lower_bound_of_upper(upper);
                let mid = lower + (upper - lower) / 2;
                let hi = if self.max > 0 { self.max } else { upper };
                return mid.clamp(self.min.min(hi), hi);
            }
        }
        self.max
    }

    /// Adds `other` into `self` (counts, totals and buckets add; min and max
    /// take the extreme).
    pub fn merge(&mut self, other: &Dist) {
        if other.count == 0 && other.buckets.is_empty() {
            return;
        }
        self.min = if self.count == 0 {
            other.min
        } else {
            self.min.min(other.min)
        };
        self.count = self.count.saturating_add(other.count);
        self.total = self.total.saturating_add(other.total);
        self.max = self.max.max(other.max);
        let mut merged: Vec<(u64, u64)> =
            Vec::with_capacity(self.buckets.len() + other.buckets.len());
        let (mut a, mut b) = (
            self.buckets.iter().peekable(),
            other.buckets.iter().peekable(),
        );
        loop {
            match (a.peek(), b.peek()) {
                (Some(&&(ua, ca)), Some(&&(ub, cb))) => {
                    if ua == ub {
                        merged.push((ua, ca.saturating_add(cb)));
                        a.next();
                        b.next();
                    } else if ua < ub {
                        merged.push((ua, ca));
                        a.next();
                    } else {
                        merged.push((ub, cb));
                        b.next();
                    }
                }
                (Some(&&x), None) => {
                    merged.push(x);
                    a.next();
                }
                (None, Some(&&x)) => {
                    merged.push(x);
                    b.next();
                }
                (None, None) => break,
            }
        }
        self.buckets = merged;
    }
}

impl Dist {
    /// This distribution of a sample, scaled to stand for `population`
    /// values: buckets and total grow by `population / count`, buckets are
    /// rounded so they still add up to `population`, min and max stay the
    /// sampled extremes. A `population` below `count` is taken as `count`.
    pub fn scaled_to(&self, population: u64) -> Dist {
        if self.count == 0 || population <= self.count {
            return self.clone();
        }
        let scale = |v: u64| u128::from(v) * u128::from(population) / u128::from(self.count);
        let mut buckets: Vec<(u64, u64)> = Vec::with_capacity(self.buckets.len());
        let mut remainders: Vec<(u128, usize)> = Vec::with_capacity(self.buckets.len());
        let mut assigned: u64 = 0;
        for (i, &(upper, c)) in self.buckets.iter().enumerate() {
            let exact = u128::from(c) * u128::from(population);
            let whole = (exact / u128::from(self.count)) as u64;
            remainders.push((exact % u128::from(self.count), i));
            assigned = assigned.saturating_add(whole);
            buckets.push((upper, whole));
        }
        // Largest remainders first take the units lost to rounding down.
        let in_buckets: u64 = self.buckets.iter().map(|b| b.1).sum();
        let target = if in_buckets == self.count {
            population
        } else {
            scale(in_buckets).min(u128::from(u64::MAX)) as u64
        };
        remainders.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
        for &(_, i) in remainders
            .iter()
            .take(target.saturating_sub(assigned) as usize)
        {
            buckets[i].1 += 1;
        }
        buckets.retain(|b| b.1 > 0);
        Dist {
            count: population,
            total: scale(self.total).min(u128::from(u64::MAX)) as u64,
            min: self.min,
            max: self.max,
            buckets,
        }
    }

    /// Subtracts an earlier cumulative value of the same distribution (see
    /// [`crate::Snapshot::since`]).
    pub fn subtract(&mut self, earlier: &Dist) {
        let count = self.count.saturating_sub(earlier.count);
        if count == 0 {
            *self = Dist::default();
            return;
        }
        let mut buckets = Vec::with_capacity(self.buckets.len());
        for &(upper, c) in &self.buckets {
            let before = earlier
                .buckets
                .iter()
                .find(|b| b.0 == upper)
                .map_or(0, |b| b.1);
            if c > before {
                buckets.push((upper, c - before));
            }
        }
        let top = buckets.last().map_or(self.max, |b| b.0);
        let bottom = buckets
            .first()
            .map_or(self.min, |b| lower_bound_of_upper(b.0));
        // A new extreme was set inside the window; otherwise the changed
        // buckets bound it.
        self.max = if self.max > earlier.max {
            self.max
        } else {
            self.max.min(top)
        };
        self.min = if earlier.count == 0 || self.min < earlier.min {
            self.min
        } else {
            self.min.max(bottom)
        };
        self.count = count;
        self.total = self.total.saturating_sub(earlier.total);
        self.buckets = buckets;
    }
}

/// The lower bound of the bucket whose inclusive upper bound is `upper`.
/// Bounds not on the bucket grid (from a foreign writer) yield `upper / 2`.
fn lower_bound_of_upper(upper: u64) -> u64 {
    let idx = bucket_index(upper);
    if bucket_upper_bound(idx) == upper {
        bucket_lower_bound(idx)
    } else {
        upper / 2
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_value_falls_inside_its_bucket() {
        for v in (0..5000u64).chain([1 << 20, (1 << 30) + 12345, 1 << 41]) {
            let i = bucket_index(v);
            assert!(bucket_lower_bound(i) <= v, "{v} below bucket {i}");
            assert!(v <= bucket_upper_bound(i), "{v} above bucket {i}");
        }
        assert_eq!(bucket_index(u64::MAX), BUCKETS - 1);
    }

    #[test]
    fn buckets_are_contiguous() {
        for i in 0..BUCKETS - 1 {
            assert_eq!(bucket_upper_bound(i) + 1, bucket_lower_bound(i + 1));
        }
    }

    #[test]
    fn percentiles_are_within_an_eighth() {
        let mut counts = vec![0u64; BUCKETS];
        let values: Vec<u64> = (1..=1000).map(|i| i * 37).collect();
        for &v in &values {
            counts[bucket_index(v)] += 1;
        }
        let total = values.iter().sum();
        let d = Dist::from_buckets(&counts, 1000, total, 37, 37_000);
        for (q, exact) in [(0.5, values[499]), (0.9, values[899]), (0.99, values[989])] {
            let got = d.percentile(q) as f64;
            let err = (got - exact as f64).abs() / exact as f64;
            assert!(err <= 0.125, "q={q} got {got} exact {exact}");
        }
    }

    #[test]
    fn merge_adds_counts_and_buckets() {
        let mut a = vec![0u64; BUCKETS];
        let mut b = vec![0u64; BUCKETS];
        a[bucket_index(10)] += 2;
        b[bucket_index(10)] += 1;
        b[bucket_index(1000)] += 1;
        let mut da = Dist::from_buckets(&a, 2, 20, 10, 10);
        let db = Dist::from_buckets(&b, 2, 1010, 10, 1000);
        da.merge(&db);
        assert_eq!(da.count, 4);
        assert_eq!(da.total, 1030);
        assert_eq!(da.max, 1000);
        assert_eq!(da.buckets.iter().map(|b| b.1).sum::<u64>(), 4);
        assert_eq!(da.buckets.len(), 2);
    }

    #[test]
    fn scaling_a_sample_keeps_its_shape_and_adds_up() {
        let mut counts = vec![0u64; BUCKETS];
        counts[bucket_index(10)] += 3;
        counts[bucket_index(1000)] += 1;
        let sample = Dist::from_buckets(&counts, 4, 3 * 10 + 1000, 10, 1000);
        let scaled = sample.scaled_to(4 * 64 + 5);
        assert_eq!(scaled.count, 261);
        assert_eq!(scaled.buckets.iter().map(|b| b.1).sum::<u64>(), 261);
        assert_eq!(scaled.mean(), sample.mean());
        assert_eq!((scaled.min, scaled.max), (10, 1000));
        assert_eq!(scaled.p50(), sample.p50());
        // Three quarters of the scaled values sit where three quarters of
        // the sample did (196 of 261, rounding included).
        assert_eq!(scaled.buckets[0].1, 196);
    }

    #[test]
    fn scaling_to_no_more_than_the_sample_changes_nothing() {
        let mut counts = vec![0u64; BUCKETS];
        counts[bucket_index(7)] += 2;
        let sample = Dist::from_buckets(&counts, 2, 14, 7, 7);
        assert_eq!(sample.scaled_to(2), sample);
        assert_eq!(sample.scaled_to(1), sample);
        assert_eq!(Dist::default().scaled_to(100), Dist::default());
    }
}
