//! The v1 snapshot: one process, one measurement window, every lock class.

use std::collections::HashMap;
use std::hash::Hash;

use serde::{Deserialize, Serialize};

use crate::Dist;

/// The state of every instrumented lock in one process over one window.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Snapshot {
    /// Always `"lockmeter"`.
    pub format: String,
    /// Format version; this crate writes 1.
    pub version: u32,
    pub process: ProcessInfo,
    pub window: Window,
    /// The time source: `tsc`, `monotonic` or `mock`.
    pub clock: String,
    /// Records that could not be attributed (a bounded table was full).
    #[serde(default)]
    pub dropped_records: u64,
    /// Which acquisitions had their hold timed. Absent in dumps written
    /// before sampling existed, which timed every hold.
    #[serde(default)]
    pub sampling: Sampling,
    pub locks: Vec<LockStats>,
}

/// How hold times were sampled. Counts are never sampled: every
/// acquisition is counted. Contended acquisitions are always timed; one
/// uncontended acquisition in `uncontended_hold_every` (per thread and
/// call site) is, and `hold_ns` is scaled up from those to stand for all.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Sampling {
    /// 1 times every hold.
    pub uncontended_hold_every: u32,
}

impl Default for Sampling {
    fn default() -> Sampling {
        Sampling {
            uncontended_hold_every: 1,
        }
    }
}

/// Which process the snapshot came from.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProcessInfo {
    pub pid: u32,
    pub name: String,
}

/// The measurement window: wall-clock ends and the monotonic length.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Window {
    pub start_unix_ns: u64,
    pub end_unix_ns: u64,
    pub elapsed_ns: u64,
}

/// The primitive a lock class is made of.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LockKind {
    Spinlock,
    Mutex,
    Rwlock,
    Semaphore,
    Waitqueue,
    /// A condition variable: a wait queue whose waiters sleep with a mutex
    /// released (`lockmeter::Condvar`).
    Condvar,
}

impl LockKind {
    /// The lowercase name used in the format.
    pub fn as_str(self) -> &'static str {
        match self {
            LockKind::Spinlock => "spinlock",
            LockKind::Mutex => "mutex",
            LockKind::Rwlock => "rwlock",
            LockKind::Semaphore => "semaphore",
            LockKind::Waitqueue => "waitqueue",
            LockKind::Condvar => "condvar",
        }
    }

    /// Whether rows of this kind count waits and wake-ups rather than
    /// acquisitions of a lock (wait queues and condition variables).
    pub fn waits_and_wakes(self) -> bool {
        matches!(self, LockKind::Waitqueue | LockKind::Condvar)
    }

    /// Whether a waiter of this kind sleeps in the OS rather than spins.
    pub fn sleeps(self) -> bool {
        !matches!(self, LockKind::Spinlock)
    }
}

/// One lock class: all instances created at one site or given one name.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LockStats {
    /// The class: the explicit name, else the creation site.
    pub id: String,
    /// Display name (the explicit name, else the creation site).
    pub name: String,
    pub kind: LockKind,
    /// Where the (first) instance of this class was created.
    pub created_at: String,
    /// Instances of this class seen acquiring during the window.
    #[serde(default)]
    pub instances: u64,
    /// For a lock inside another primitive (`pipe.sem.lock`), the outer id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent: Option<String>,
    /// Stats summed over all sites.
    pub total: Stats,
    /// One entry per acquisition call site.
    pub sites: Vec<SiteStats>,
    /// Call sites that held the lock while others waited.
    #[serde(default)]
    pub holders: Vec<Holder>,
}

/// Stats of the acquisitions made at one call site.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SiteStats {
    /// `file:line:column` of the caller of `lock()`/`down()`/`wait_*()`.
    pub site: String,
    /// For rwlocks: `read` or `write`; absent for other kinds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<String>,
    #[serde(flatten)]
    pub stats: Stats,
}

/// A call site that held the lock when a waiter arrived.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Holder {
    pub site: String,
    /// Contended acquisitions that found this site holding the lock.
    pub contended: u64,
    /// Total time those acquisitions waited.
    pub wait_ns_total: u64,
}

/// Counters and distributions of one site, or summed over a lock's sites.
///
/// Lock kinds fill the acquisition fields; wait queues fill the sleeping
/// and waking fields. Every field defaults to zero when absent.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Stats {
    /// Successful acquisitions, including successful try-locks (TOTAL).
    pub acquisitions: u64,
    /// Acquired at the first attempt (NOWAIT).
    pub nowait: u64,
    /// Had to spin or sleep first (SPIN).
    pub contended: u64,
    /// Failed try-locks and timed-out waits (RJECT).
    pub rejected: u64,
    /// Busy-wait iterations, summed.
    pub spins: u64,
    /// Times a waiter blocked in the OS.
    pub sleeps: u64,
    /// Acquisitions by a thread other than the previous holder.
    pub bounces: u64,
    /// `100 * contended / acquisitions` (CON).
    pub con_pct: f64,
    /// `100 * hold_ns.total / window.elapsed_ns` (UTIL).
    pub util_pct: f64,
    /// Time from acquisition to release. With sampling (see [`Sampling`])
    /// an estimate: the timed holds, scaled to stand for every hold.
    pub hold_ns: Dist,
    /// How many of the holds in `hold_ns` were actually timed; equal to
    /// `hold_ns.count` when nothing was sampled. 0 in older dumps.
    pub hold_timed: u64,
    /// Time from the first attempt to acquisition (contended acquisitions);
    /// for wait queues, time asleep per wait.
    pub wait_ns: Dist,
    /// Wait queues: waits that slept at least once.
    pub waits: u64,
    /// Wait queues: calls of any wake function.
    pub wake_calls: u64,
    /// Wait queues: waiters woken.
    pub wakeups: u64,
    /// Wait queues: wake calls that found no waiter to wake (a condvar's
    /// `notify_*` with nobody waiting). Absent (0) in older dumps and
    /// left out when 0.
    #[serde(skip_serializing_if = "is_zero")]
    pub empty_wake_calls: u64,
    /// Wait queues: woken waiters whose condition was still false.
    pub spurious_wakeups: u64,
    /// Wait queues: wakeups of exclusive waiters.
    pub exclusive_wakeups: u64,
    /// Wait queues: most waiters queued at once.
    pub max_waiters: u64,
    /// Wait queues: time from the wake call to the woken waiter running.
    pub wake_latency_ns: Dist,
}

impl Stats {
    /// Adds `other` into `self`. Derived percentages are not touched; call
    /// [`Stats::refresh_derived`] afterwards.
    pub fn merge(&mut self, other: &Stats) {
        self.acquisitions = self.acquisitions.saturating_add(other.acquisitions);
        self.nowait = self.nowait.saturating_add(other.nowait);
        self.contended = self.contended.saturating_add(other.contended);
        self.rejected = self.rejected.saturating_add(other.rejected);
        self.spins = self.spins.saturating_add(other.spins);
        self.sleeps = self.sleeps.saturating_add(other.sleeps);
        self.bounces = self.bounces.saturating_add(other.bounces);
        self.hold_ns.merge(&other.hold_ns);
        self.hold_timed = self.hold_timed.saturating_add(other.hold_timed);
        self.wait_ns.merge(&other.wait_ns);
        self.waits = self.waits.saturating_add(other.waits);
        self.wake_calls = self.wake_calls.saturating_add(other.wake_calls);
        self.wakeups = self.wakeups.saturating_add(other.wakeups);
        self.empty_wake_calls = self.empty_wake_calls.saturating_add(other.empty_wake_calls);
        self.spurious_wakeups = self.spurious_wakeups.saturating_add(other.spurious_wakeups);
        self.exclusive_wakeups = self
            .exclusive_wakeups
            .saturating_add(other.exclusive_wakeups);
        self.max_waiters = self.max_waiters.max(other.max_waiters);
        self.wake_latency_ns.merge(&other.wake_latency_ns);
    }

    /// Recomputes CON % and UTIL % for a window of `elapsed_ns`.
    pub fn refresh_derived(&mut self, elapsed_ns: u64) {
        self.con_pct = percent(self.contended, self.acquisitions);
        self.util_pct = percent(self.hold_ns.total, elapsed_ns);
    }
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// `100 * part / whole`, or 0 for an empty whole.
pub fn percent(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        100.0 * part as f64 / whole as f64
    }
}

impl Snapshot {
    /// An empty snapshot for `process` (no locks, zero window).
    pub fn empty(process: ProcessInfo, clock: &str) -> Snapshot {
        Snapshot {
            format: crate::FORMAT_NAME.to_string(),
            version: crate::FORMAT_VERSION,
            process,
            window: Window::default(),
            clock: clock.to_string(),
            dropped_records: 0,
            sampling: Sampling::default(),
            locks: Vec::new(),
        }
    }

    /// The lock with class `id`, if any.
    pub fn lock(&self, id: &str) -> Option<&LockStats> {
        self.locks.iter().find(|l| l.id == id)
    }
}

impl LockStats {
    /// The stats of call site `site` (any mode), if any.
    pub fn site(&self, site: &str) -> Option<&SiteStats> {
        self.sites.iter().find(|s| s.site == site)
    }
}

impl Snapshot {
    /// The window between two cumulative snapshots of one process: `self`
    /// minus `earlier`. Counters, totals and buckets subtract exactly; a
    /// window's min and max are exact when they were set inside it, else
    /// bounded by the buckets that changed. `max_waiters` and `instances`
    /// keep the later (cumulative) value.
    pub fn since(&self, earlier: &Snapshot) -> Snapshot {
        self.clone().into_since(earlier)
    }

    /// [`Snapshot::since`], reusing `self` rather than copying it.
    pub fn into_since(mut self, earlier: &Snapshot) -> Snapshot {
        self.window = Window {
            start_unix_ns: earlier.window.end_unix_ns,
            end_unix_ns: self.window.end_unix_ns,
            elapsed_ns: self
                .window
                .elapsed_ns
                .saturating_sub(earlier.window.elapsed_ns),
        };
        self.dropped_records = self.dropped_records.saturating_sub(earlier.dropped_records);
        let elapsed_ns = self.window.elapsed_ns;
        // Each lock, site and holder subtracts the first earlier one with
        // its id (any kind, like `Snapshot::lock`), its (site, mode), its
        // site: through an index, as there may be thousands.
        let before_locks = FirstIndex::new(&earlier.locks, |l| l.id.as_str());
        for lock in &mut self.locks {
            let Some(before) = before_locks.get(&lock.id.as_str()) else {
                lock.refresh_derived(elapsed_ns);
                continue;
            };
            lock.total.subtract(&before.total);
            let sites = FirstIndex::new(&before.sites, |s| (s.site.as_str(), s.mode.as_deref()));
            for site in &mut lock.sites {
                if let Some(b) = sites.get(&(site.site.as_str(), site.mode.as_deref())) {
                    site.stats.subtract(&b.stats);
                }
            }
            let holders = FirstIndex::new(&before.holders, |h| h.site.as_str());
            for holder in &mut lock.holders {
                if let Some(b) = holders.get(&holder.site.as_str()) {
                    holder.contended = holder.contended.saturating_sub(b.contended);
                    holder.wait_ns_total = holder.wait_ns_total.saturating_sub(b.wait_ns_total);
                }
            }
            lock.holders.retain(|h| h.contended > 0);
            lock.refresh_derived(elapsed_ns);
        }
        self
    }
}

/// The first item of a slice for each key, found through a hash index
/// built once (first match wins, like `Snapshot::lock`).
struct FirstIndex<'a, T, K> {
    items: &'a [T],
    index: HashMap<K, usize>,
}

impl<'a, T, K: Eq + Hash> FirstIndex<'a, T, K> {
    fn new(items: &'a [T], key: impl Fn(&'a T) -> K) -> Self {
        let mut index = HashMap::with_capacity(items.len());
        for (i, item) in items.iter().enumerate() {
            index.entry(key(item)).or_insert(i);
        }
        FirstIndex { items, index }
    }

    fn get(&self, key: &K) -> Option<&'a T> {
        self.index.get(key).map(|&i| &self.items[i])
    }
}

impl LockStats {
    /// Recomputes CON % and UTIL % of the total and every site.
    pub fn refresh_derived(&mut self, elapsed_ns: u64) {
        self.total.refresh_derived(elapsed_ns);
        for site in &mut self.sites {
            site.stats.refresh_derived(elapsed_ns);
        }
    }
}

impl Stats {
    /// Subtracts an earlier cumulative value of the same counters.
    pub fn subtract(&mut self, earlier: &Stats) {
        self.acquisitions = self.acquisitions.saturating_sub(earlier.acquisitions);
        self.nowait = self.nowait.saturating_sub(earlier.nowait);
        self.contended = self.contended.saturating_sub(earlier.contended);
        self.rejected = self.rejected.saturating_sub(earlier.rejected);
        self.spins = self.spins.saturating_sub(earlier.spins);
        self.sleeps = self.sleeps.saturating_sub(earlier.sleeps);
        self.bounces = self.bounces.saturating_sub(earlier.bounces);
        self.hold_ns.subtract(&earlier.hold_ns);
        self.hold_timed = self.hold_timed.saturating_sub(earlier.hold_timed);
        self.wait_ns.subtract(&earlier.wait_ns);
        self.waits = self.waits.saturating_sub(earlier.waits);
        self.wake_calls = self.wake_calls.saturating_sub(earlier.wake_calls);
        self.wakeups = self.wakeups.saturating_sub(earlier.wakeups);
        self.empty_wake_calls = self
            .empty_wake_calls
            .saturating_sub(earlier.empty_wake_calls);
        self.spurious_wakeups = self
            .spurious_wakeups
            .saturating_sub(earlier.spurious_wakeups);
        self.exclusive_wakeups = self
            .exclusive_wakeups
            .saturating_sub(earlier.exclusive_wakeups);
        self.wake_latency_ns.subtract(&earlier.wake_latency_ns);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dist::{bucket_index, BUCKETS};

    /// `since` as a linear search per lock, site and holder.
    fn linear_since(later: &Snapshot, earlier: &Snapshot) -> Snapshot {
        let mut out = later.clone();
        out.window = Window {
            start_unix_ns: earlier.window.end_unix_ns,
            end_unix_ns: later.window.end_unix_ns,
            elapsed_ns: (later.window.elapsed_ns).saturating_sub(earlier.window.elapsed_ns),
        };
        out.dropped_records = later
            .dropped_records
            .saturating_sub(earlier.dropped_records);
        for lock in &mut out.locks {
            let Some(before) = earlier.lock(&lock.id) else {
                lock.refresh_derived(out.window.elapsed_ns);
                continue;
            };
            lock.total.subtract(&before.total);
            for site in &mut lock.sites {
                let same = |s: &&SiteStats| s.site == site.site && s.mode == site.mode;
                if let Some(b) = before.sites.iter().find(same) {
                    site.stats.subtract(&b.stats);
                }
            }
            for holder in &mut lock.holders {
                if let Some(b) = before.holders.iter().find(|h| h.site == holder.site) {
                    holder.contended = holder.contended.saturating_sub(b.contended);
                    holder.wait_ns_total = holder.wait_ns_total.saturating_sub(b.wait_ns_total);
                }
            }
            lock.holders.retain(|h| h.contended > 0);
            lock.refresh_derived(out.window.elapsed_ns);
        }
        out
    }

    struct Rng(u64);

    impl Rng {
        fn below(&mut self, n: u64) -> u64 {
            self.0 = self
                .0
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (self.0 >> 33) % n.max(1)
        }
    }

    fn stats(rng: &mut Rng, scale: u64) -> Stats {
        let mut counts = vec![0u64; BUCKETS];
        let (mut count, mut total, mut min, mut max) = (0, 0, u64::MAX, 0);
        for _ in 0..rng.below(6) {
            let bits = rng.below(30);
            let v = rng.below(1 << bits);
            let c = 1 + rng.below(scale);
            counts[bucket_index(v)] += c;
            (count, total, min, max) = (count + c, total + v * c, min.min(v), max.max(v));
        }
        let acquisitions = rng.below(100 * scale);
        Stats {
            acquisitions,
            contended: acquisitions / 3,
            spins: rng.below(1000 * scale),
            max_waiters: rng.below(9),
            wait_ns: Dist::from_buckets(&counts, count, total, min, max),
            ..Stats::default()
        }
    }

    /// Locks with repeated ids, sites and holders, so that "the first
    /// one" matters, and enough of them to need an index.
    fn snapshot(rng: &mut Rng, scale: u64, elapsed_ns: u64) -> Snapshot {
        let mut snap = Snapshot::empty(ProcessInfo::default(), "mock");
        snap.window.elapsed_ns = elapsed_ns;
        snap.window.end_unix_ns = elapsed_ns + 7;
        snap.dropped_records = rng.below(3 * scale);
        let kinds = [LockKind::Mutex, LockKind::Rwlock];
        for _ in 0..rng.below(12) {
            let id = format!("lock{}", rng.below(6));
            let sites = (0..rng.below(30))
                .map(|_| SiteStats {
                    site: format!("src/a.rs:{}:5", rng.below(25)),
                    mode: [None, Some("read".to_string())][rng.below(2) as usize].clone(),
                    stats: stats(rng, scale),
                })
                .collect();
            let holders = (0..rng.below(20))
                .map(|_| Holder {
                    site: format!("src/b.rs:{}:9", rng.below(15)),
                    contended: rng.below(10 * scale),
                    wait_ns_total: rng.below(1000 * scale),
                })
                .collect();
            snap.locks.push(LockStats {
                name: id.clone(),
                id,
                kind: kinds[rng.below(2) as usize],
                created_at: "src/c.rs:1:1".to_string(),
                instances: rng.below(4),
                parent: None,
                total: stats(rng, 20 * scale),
                sites,
                holders,
            });
        }
        snap
    }

    #[test]
    fn since_equals_a_linear_search() {
        for seed in 0..200 {
            let mut rng = Rng(seed);
            let mut earlier = snapshot(&mut rng, 1, 1_000);
            let mut later = snapshot(&mut rng, 3, 5_000);
            if seed % 2 == 0 {
                // As a recorder writes them: sites sorted, without repeats.
                for lock in earlier.locks.iter_mut().chain(&mut later.locks) {
                    lock.sites
                        .sort_by(|a, b| (&a.site, &a.mode).cmp(&(&b.site, &b.mode)));
                    lock.sites
                        .dedup_by(|a, b| (&a.site, &a.mode) == (&b.site, &b.mode));
                }
            }
            let want = linear_since(&later, &earlier);
            assert_eq!(later.since(&earlier), want, "seed {seed}");
            assert_eq!(later.clone().into_since(&earlier), want, "seed {seed}");
            assert_eq!(
                later.since(&later),
                linear_since(&later, &later),
                "seed {seed}"
            );
        }
    }
}
