//! Snapshot arithmetic, in one place: the window between two cumulative
//! snapshots ([`Snapshot::since`]), back-to-back windows of one process
//! summed ([`Snapshot::concat`]), and snapshots of several processes merged
//! by lock class and call site ([`Snapshot::merge`]).
//!
//! Counters and distributions add and subtract exactly (saturating at the
//! ends of `u64`); high-water marks (`max_waiters`) take the larger value.
//! Rows are matched by lock id, then `(site, mode)`, and holders by site;
//! where a side repeats a key, the first row with it is the one matched.

use std::collections::HashMap;
use std::hash::Hash;

use crate::{Dist, Holder, LockStats, SiteStats, Snapshot, Stats, Window};

impl Stats {
    /// Adds `other` into `self`. (CON and UTIL are methods, so nothing
    /// derived needs refreshing.)
    pub fn merge(&mut self, other: &Stats) {
        self.combine(other, u64::saturating_add, Dist::merge);
        self.max_waiters = self.max_waiters.max(other.max_waiters);
    }

    /// Subtracts an earlier cumulative value of the same counters.
    /// `max_waiters`, a high-water mark, keeps the later value.
    pub fn subtract(&mut self, earlier: &Stats) {
        self.combine(earlier, u64::saturating_sub, Dist::subtract);
    }

    /// Applies `count` to every event counter and `dist` to every
    /// distribution, each with the same field of `other`. The one list of
    /// what adds and subtracts; the destructuring is exhaustive, so a new
    /// field of [`Stats`] must be placed here. `max_waiters` is the
    /// caller's.
    fn combine(&mut self, other: &Stats, count: fn(u64, u64) -> u64, dist: fn(&mut Dist, &Dist)) {
        let Stats {
            acquisitions,
            nowait,
            contended,
            rejected,
            spins,
            sleeps,
            bounces,
            hold_ns,
            hold_timed,
            wait_ns,
            wait_untimed,
            waits,
            wake_calls,
            wakeups,
            empty_wake_calls,
            spurious_wakeups,
            exclusive_wakeups,
            max_waiters: _,
            wake_latency_ns,
        } = self;
        let counters = [
            (acquisitions, other.acquisitions),
            (nowait, other.nowait),
            (contended, other.contended),
            (rejected, other.rejected),
            (spins, other.spins),
            (sleeps, other.sleeps),
            (bounces, other.bounces),
            (hold_timed, other.hold_timed),
            (wait_untimed, other.wait_untimed),
            (waits, other.waits),
            (wake_calls, other.wake_calls),
            (wakeups, other.wakeups),
            (empty_wake_calls, other.empty_wake_calls),
            (spurious_wakeups, other.spurious_wakeups),
            (exclusive_wakeups, other.exclusive_wakeups),
        ];
        for (mine, theirs) in counters {
            *mine = count(*mine, theirs);
        }
        dist(hold_ns, &other.hold_ns);
        dist(wait_ns, &other.wait_ns);
        dist(wake_latency_ns, &other.wake_latency_ns);
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
        self.stacks = Box::new(self.stacks.since(&earlier.stacks));
        // Each lock, site and holder subtracts the first earlier one with
        // its id (any kind, like `Snapshot::lock`), its (site, mode), its
        // site: through an index, as there may be thousands.
        let before_locks = FirstIndex::new(&earlier.locks, |l| l.id.as_str());
        for lock in &mut self.locks {
            let Some(before) = before_locks.get(&lock.id.as_str()) else {
                continue;
            };
            lock.total.subtract(&before.total);
            let sites = FirstIndex::new(&before.sites, SiteStats::key);
            for site in &mut lock.sites {
                if let Some(b) = sites.get(&site.key()) {
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
        }
        // Estimates of the window's own counts, not differences of two.
        self.refresh_self_cost();
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

impl Snapshot {
    /// Whether `self` continues the window of `earlier`: the same start and
    /// no shorter. A process that reset its window (or restarted) does
    /// not, and its snapshot stands whole rather than subtracted.
    pub fn continues(&self, earlier: &Snapshot) -> bool {
        self.window.start_unix_ns == earlier.window.start_unix_ns
            && self.window.elapsed_ns >= earlier.window.elapsed_ns
    }

    /// Adds `next`, the window right after `self` in the same process,
    /// into `self`: one window covering both. Instances keep the larger
    /// count (the same locks, seen again).
    pub fn extend_with(&mut self, next: &Snapshot) {
        self.window.end_unix_ns = next.window.end_unix_ns;
        self.window.elapsed_ns = self
            .window
            .elapsed_ns
            .saturating_add(next.window.elapsed_ns);
        self.dropped_records = self.dropped_records.saturating_add(next.dropped_records);
        self.stacks.add(&next.stacks);
        self.process = next.process.clone();
        // A moment and cumulative lists: the later window's stand.
        self.now = next.now.clone();
        self.deadlocks = next.deadlocks.clone();
        self.lock_order = next.lock_order.clone();
        add_locks(&mut self.locks, &next.locks, u64::max);
        if next.self_cost.is_some() {
            self.self_cost = next.self_cost.clone();
        }
        self.refresh_self_cost();
    }

    /// Back-to-back windows of one process summed into one covering them
    /// all; `None` for no frames.
    pub fn concat(frames: &[Snapshot]) -> Option<Snapshot> {
        let (first, rest) = frames.split_first()?;
        let mut out = first.clone();
        for frame in rest {
            out.extend_with(frame);
        }
        Some(out)
    }

    /// This snapshot with every call-site row marked with its process's
    /// pid, so that a [`Snapshot::merge`] keeps the processes' rows apart
    /// (a process column) while lock rows still sum.
    pub fn with_pids(mut self) -> Snapshot {
        let pid = self.process.pid;
        for site in self.locks.iter_mut().flat_map(|l| l.sites.iter_mut()) {
            site.pid = Some(pid);
        }
        self
    }

    /// Whether call-site rows carry their process ([`Snapshot::with_pids`]
    /// then [`Snapshot::merge`]): the renderings then show a process column.
    pub fn has_pids(&self) -> bool {
        self.locks
            .iter()
            .any(|l| l.sites.iter().any(|s| s.pid.is_some()))
    }

    /// Snapshots of several processes over about the same time, merged by
    /// lock class and call site (and process, where [`Snapshot::with_pids`]
    /// marked the rows): every count and distribution is the exact
    /// sum, instances add up, `max_waiters` is the largest. The window
    /// spans all of them, its length the longest (so UTIL is the summed
    /// hold time over that, like a class with several instances); the
    /// process is pid 0 named after the distinct names, joined by `+`;
    /// sampling is the coarsest. Each class is one row even where an input
    /// repeated it. `None` for no snapshots.
    pub fn merge(snaps: &[Snapshot]) -> Option<Snapshot> {
        let (first, rest) = snaps.split_first()?;
        let mut out = Snapshot {
            locks: Vec::new(),
            stacks: Box::default(),
            ..first.clone()
        };
        out.stacks.add(&first.stacks);
        // The first snapshot goes through `add_locks` too, so that a class
        // it repeats still comes out as one row.
        add_locks(&mut out.locks, &first.locks, u64::saturating_add);
        let mut names = vec![first.process.name.clone()];
        for s in rest {
            out.window = Window {
                start_unix_ns: out.window.start_unix_ns.min(s.window.start_unix_ns),
                end_unix_ns: out.window.end_unix_ns.max(s.window.end_unix_ns),
                elapsed_ns: out.window.elapsed_ns.max(s.window.elapsed_ns),
            };
            out.dropped_records = out.dropped_records.saturating_add(s.dropped_records);
            out.stacks.add(&s.stacks);
            out.sampling.uncontended_hold_every = out
                .sampling
                .uncontended_hold_every
                .max(s.sampling.uncontended_hold_every);
            out.sampling.contended_wait_every = out
                .sampling
                .contended_wait_every
                .max(s.sampling.contended_wait_every);
            if out.clock != s.clock {
                out.clock = "mixed".to_string();
            }
            if !names.contains(&s.process.name) {
                names.push(s.process.name.clone());
            }
            add_locks(&mut out.locks, &s.locks, u64::saturating_add);
        }
        // Costs of the first process that has them, applied to the sums.
        out.self_cost = snaps.iter().find_map(|s| s.self_cost.clone());
        out.refresh_self_cost();
        if !rest.is_empty() {
            out.process = crate::ProcessInfo {
                pid: 0,
                name: names.join("+"),
            };
        }
        Some(out)
    }
}

/// Adds every lock of `more` into `locks`, matched by id (sites by
/// [`SiteStats::key`], holders by site); unmatched rows are appended.
/// `instances` combines with `instances`.
fn add_locks(locks: &mut Vec<LockStats>, more: &[LockStats], instances: fn(u64, u64) -> u64) {
    let mut by_id = first_positions(locks, |l| l.id.clone());
    for lock in more {
        let Some(&i) = by_id.get(&lock.id) else {
            by_id.insert(lock.id.clone(), locks.len());
            locks.push(lock.clone());
            continue;
        };
        let mine = &mut locks[i];
        mine.total.merge(&lock.total);
        mine.instances = instances(mine.instances, lock.instances);
        let key = |s: &SiteStats| (s.site.clone(), s.mode.clone(), s.pid);
        let mut sites = first_positions(&mine.sites, key);
        for site in &lock.sites {
            match sites.get(&key(site)) {
                Some(&j) => mine.sites[j].stats.merge(&site.stats),
                None => {
                    sites.insert(key(site), mine.sites.len());
                    mine.sites.push(site.clone());
                }
            }
        }
        let mut holders = first_positions(&mine.holders, |h| h.site.clone());
        for holder in &lock.holders {
            match holders.get(&holder.site) {
                Some(&j) => {
                    let h = &mut mine.holders[j];
                    h.contended = h.contended.saturating_add(holder.contended);
                    h.wait_ns_total = h.wait_ns_total.saturating_add(holder.wait_ns_total);
                }
                None => {
                    holders.insert(holder.site.clone(), mine.holders.len());
                    mine.holders.push(Holder::clone(holder));
                }
            }
        }
    }
}

/// The position of the first item with each key.
fn first_positions<T, K: Eq + Hash>(items: &[T], key: impl Fn(&T) -> K) -> HashMap<K, usize> {
    let mut index = HashMap::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        index.entry(key(item)).or_insert(i);
    }
    index
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dist::{bucket_index, BUCKETS};
    use crate::{Dist, LockKind, ProcessInfo, SiteStats};

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
                    pid: None,
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
                display_name: None,
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

    /// Every acquisition count of a snapshot, by (lock, site, mode).
    fn site_counts(s: &Snapshot) -> HashMap<(String, String, Option<String>), u64> {
        let mut out = HashMap::new();
        for l in &s.locks {
            for site in &l.sites {
                *out.entry((l.id.clone(), site.site.clone(), site.mode.clone()))
                    .or_insert(0) += site.stats.acquisitions;
            }
        }
        out
    }

    #[test]
    fn a_merge_of_processes_sums_every_class_and_site_exactly() {
        for seed in 0..100 {
            let mut rng = Rng(seed);
            let snaps: Vec<Snapshot> = (0..1 + rng.below(4))
                .map(|i| {
                    let mut s = snapshot(&mut rng, 2, 1_000 * (i + 1));
                    s.process = ProcessInfo {
                        pid: 10 + i as u32,
                        name: format!("p{}", i % 2),
                    };
                    s
                })
                .collect();
            let merged = Snapshot::merge(&snaps).unwrap();
            // Every (lock, site, mode) count is the sum over the inputs'
            // first rows per lock id (later duplicates of an id inside one
            // snapshot merge into its first row too).
            let mut want: HashMap<_, u64> = HashMap::new();
            let mut want_total: HashMap<String, u64> = HashMap::new();
            let mut want_waits = HashMap::new();
            for s in &snaps {
                for (k, v) in site_counts(s) {
                    *want.entry(k).or_insert(0) += v;
                }
                for l in &s.locks {
                    *want_total.entry(l.id.clone()).or_insert(0) += l.total.acquisitions;
                    let w: &mut u64 = want_waits.entry(l.id.clone()).or_insert(0);
                    *w += l.total.wait_ns.count;
                }
            }
            assert_eq!(site_counts(&merged), want, "seed {seed}");
            let ids: Vec<&str> = merged.locks.iter().map(|l| l.id.as_str()).collect();
            let mut unique = ids.clone();
            unique.sort_unstable();
            unique.dedup();
            assert_eq!(ids.len(), unique.len(), "seed {seed}: an id twice");
            for l in &merged.locks {
                assert_eq!(l.total.acquisitions, want_total[&l.id], "seed {seed}");
                assert_eq!(l.total.wait_ns.count, want_waits[&l.id], "seed {seed}");
                let in_buckets: u64 = l.total.wait_ns.buckets.iter().map(|b| b.1).sum();
                assert_eq!(in_buckets, l.total.wait_ns.count, "seed {seed}");
            }
            let longest = snaps.iter().map(|s| s.window.elapsed_ns).max().unwrap();
            assert_eq!(merged.window.elapsed_ns, longest);
            if snaps.len() > 1 {
                assert_eq!(merged.process.pid, 0);
            }
        }
        assert!(Snapshot::merge(&[]).is_none());
    }

    #[test]
    fn instances_add_up_across_processes_but_not_across_windows() {
        let mut rng = Rng(7);
        let mut a = snapshot(&mut rng, 1, 1_000);
        a.locks.truncate(1);
        a.locks[0].instances = 3;
        let merged = Snapshot::merge(&[a.clone(), a.clone()]).unwrap();
        assert_eq!(merged.locks[0].instances, 6);
        let both = Snapshot::concat(&[a.clone(), a.clone()]).unwrap();
        assert_eq!(both.locks[0].instances, 3);
        assert_eq!(both.window.elapsed_ns, 2_000);
        assert_eq!(
            both.locks[0].total.acquisitions,
            2 * a.locks[0].total.acquisitions
        );
    }

    #[test]
    fn a_reset_window_does_not_continue_the_old_one() {
        let mut rng = Rng(3);
        let earlier = snapshot(&mut rng, 1, 5_000);
        let mut later = earlier.clone();
        later.window.elapsed_ns = 6_000;
        assert!(later.continues(&earlier));
        later.window.elapsed_ns = 4_000;
        assert!(!later.continues(&earlier));
        later.window.elapsed_ns = 6_000;
        later.window.start_unix_ns += 1;
        assert!(!later.continues(&earlier));
    }
}
