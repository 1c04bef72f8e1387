//! Per-thread counters for one (class, site, mode).
//!
//! Every [`Entry`] has exactly one writer, the thread that owns its shard,
//! so counters are bumped with a relaxed load and store (a plain `mov` on
//! x86) instead of a locked read-modify-write. Snapshots read them with
//! relaxed loads from another thread: each counter is exact and monotonic,
//! although two counters read a moment apart may straddle an acquisition.

use std::panic::Location;
use std::ptr;
use std::sync::atomic::{AtomicPtr, AtomicU64, Ordering::Relaxed};

use lockmeter_model::dist::{bucket_index, BUCKETS};

use crate::class::SiteKey;

/// A single-writer counter.
#[derive(Debug, Default)]
pub(crate) struct Counter(AtomicU64);

impl Counter {
    #[inline]
    pub(crate) fn add(&self, n: u64) {
        self.0.store(self.0.load(Relaxed).wrapping_add(n), Relaxed);
    }

    #[inline]
    pub(crate) fn sub(&self, n: u64) {
        self.0.store(self.0.load(Relaxed).wrapping_sub(n), Relaxed);
    }

    #[inline]
    pub(crate) fn raise_to(&self, n: u64) {
        if n > self.0.load(Relaxed) {
            self.0.store(n, Relaxed);
        }
    }

    #[inline]
    pub(crate) fn get(&self) -> u64 {
        self.0.load(Relaxed)
    }
}

/// A single-writer log-bucket distribution (see `lockmeter_model::dist`).
pub(crate) struct AtomicDist {
    count: Counter,
    total: Counter,
    min: AtomicU64,
    max: Counter,
    buckets: [Counter; BUCKETS],
}

impl AtomicDist {
    fn new() -> AtomicDist {
        AtomicDist {
            count: Counter::default(),
            total: Counter::default(),
            min: AtomicU64::new(u64::MAX),
            max: Counter::default(),
            buckets: std::array::from_fn(|_| Counter::default()),
        }
    }

    #[inline]
    pub(crate) fn record(&self, ns: u64) {
        self.count.add(1);
        self.total.add(ns);
        self.max.raise_to(ns);
        if ns < self.min.load(Relaxed) {
            self.min.store(ns, Relaxed);
        }
        self.buckets[bucket_index(ns)].add(1);
    }

    /// The model form of the distribution so far.
    pub(crate) fn read(&self) -> lockmeter_model::Dist {
        let count = self.count.get();
        if count == 0 {
            return lockmeter_model::Dist::default();
        }
        // Every value lies between min and max: only their buckets can be
        // non-empty (read first, so a racing record is at worst missed).
        let (min, max) = (self.min.load(Relaxed), self.max.get());
        let (lo, hi) = (bucket_index(min.min(max)), bucket_index(max));
        let mut counts = [0u64; BUCKETS];
        for (count, bucket) in counts[lo..=hi].iter_mut().zip(&self.buckets[lo..=hi]) {
            *count = bucket.get();
        }
        lockmeter_model::Dist::from_buckets(&counts, count, self.total.get(), min, max)
    }
}

/// Holder sites remembered per entry; more spill into one "other" slot.
pub(crate) const HOLDER_SLOTS: usize = 8;

/// A call site that held the lock while this entry's acquisitions waited.
#[derive(Default)]
pub(crate) struct HolderSlot {
    /// Null until claimed; the spill slot stays null.
    pub(crate) site: AtomicPtr<Location<'static>>,
    pub(crate) contended: Counter,
    pub(crate) wait_ns: Counter,
}

/// The counters of one (class, site, mode) on one thread.
pub(crate) struct Entry {
    pub(crate) key: SiteKey,
    pub(crate) clock: quanta::Clock,
    /// Acquisitions waiting or holding at least this long emit a WARN event.
    pub(crate) slow_ns: u64,
    /// `sample_every - 1` for a power-of-two `sample_every`: an uncontended
    /// acquisition is timed when `eligible & sample_mask == 0`.
    pub(crate) sample_mask: u64,
    /// Acquisitions are `nowait + contended`, so they cost no store here.
    pub(crate) nowait: Counter,
    pub(crate) contended: Counter,
    pub(crate) rejected: Counter,
    pub(crate) spins: Counter,
    pub(crate) sleeps: Counter,
    pub(crate) bounces: Counter,
    pub(crate) instances: Counter,
    pub(crate) waits: Counter,
    pub(crate) wake_calls: Counter,
    pub(crate) wakeups: Counter,
    pub(crate) empty_wake_calls: Counter,
    pub(crate) spurious_wakeups: Counter,
    pub(crate) exclusive_wakeups: Counter,
    pub(crate) max_waiters: Counter,
    /// Uncontended acquisitions whose hold could be timed: the population
    /// that `hold_sampled` is a sample of.
    pub(crate) eligible: Counter,
    /// Holds after a contended acquisition: every one is timed.
    pub(crate) hold: AtomicDist,
    /// Timed holds of uncontended acquisitions, one in `sample_mask + 1`.
    pub(crate) hold_sampled: AtomicDist,
    pub(crate) wait: AtomicDist,
    pub(crate) wake_latency: AtomicDist,
    pub(crate) holders: [HolderSlot; HOLDER_SLOTS + 1],
    /// Timed guards of this entry not yet released (untimed ones keep no
    /// pointer to it); a shard with such guards is never freed (see
    /// `shard::ThreadState`'s drop).
    pub(crate) outstanding: Counter,
}

impl Entry {
    pub(crate) fn new(
        key: SiteKey,
        clock: quanta::Clock,
        slow_ns: u64,
        sample_every: u64,
    ) -> Entry {
        Entry {
            key,
            clock,
            slow_ns,
            sample_mask: sample_every.max(1).next_power_of_two() - 1,
            nowait: Counter::default(),
            contended: Counter::default(),
            rejected: Counter::default(),
            spins: Counter::default(),
            sleeps: Counter::default(),
            bounces: Counter::default(),
            instances: Counter::default(),
            waits: Counter::default(),
            wake_calls: Counter::default(),
            wakeups: Counter::default(),
            empty_wake_calls: Counter::default(),
            spurious_wakeups: Counter::default(),
            exclusive_wakeups: Counter::default(),
            max_waiters: Counter::default(),
            eligible: Counter::default(),
            hold: AtomicDist::new(),
            hold_sampled: AtomicDist::new(),
            wait: AtomicDist::new(),
            wake_latency: AtomicDist::new(),
            holders: std::array::from_fn(|_| HolderSlot::default()),
            outstanding: Counter::default(),
        }
    }

    /// Counts an uncontended acquisition; whether its hold is timed. The
    /// first at each site is, then one in `sample_mask + 1`.
    #[inline(always)]
    pub(crate) fn sample_uncontended(&self) -> bool {
        let seen = self.eligible.get();
        self.eligible.0.store(seen.wrapping_add(1), Relaxed);
        seen & self.sample_mask == 0
    }

    /// Takes back [`Entry::sample_uncontended`] for a hold that will not
    /// be timed after all (a semaphore `down` keeps no guard).
    pub(crate) fn unsample_uncontended(&self) {
        self.eligible.sub(1);
    }

    /// Every hold: the contended ones, plus the sampled uncontended ones
    /// scaled to stand for all of them; and how many were timed.
    pub(crate) fn hold_estimate(&self) -> (lockmeter_model::Dist, u64) {
        let mut all = self.hold.read();
        let sampled = self.hold_sampled.read();
        let timed = all.count + sampled.count;
        let eligible = self.eligible.get();
        let sampled = if eligible > sampled.count {
            sampled.scaled_to(eligible)
        } else {
            sampled
        };
        if all.count == 0 && all.buckets.is_empty() {
            // Merging into nothing would copy `sampled` as it is.
            return (sampled, timed);
        }
        all.merge(&sampled);
        (all, timed)
    }

    /// Charges a contended acquisition's wait to the site that held the lock.
    pub(crate) fn record_holder(&self, holder: *mut Location<'static>, wait_ns: u64) {
        let spill = &self.holders[HOLDER_SLOTS];
        let slot = if holder.is_null() {
            spill
        } else {
            self.holders[..HOLDER_SLOTS]
                .iter()
                .find(|s| {
                    let cur = s.site.load(Relaxed);
                    if cur.is_null() {
                        s.site.store(holder, Relaxed);
                        true
                    } else {
                        ptr::eq(cur, holder)
                    }
                })
                .unwrap_or(spill)
        };
        slot.contended.add(1);
        slot.wait_ns.add(wait_ns);
    }
}
