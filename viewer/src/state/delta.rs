//! Snapshot arithmetic: the interval between two cumulative snapshots, and the
//! sum of consecutive interval snapshots.
//!
//! Sources deliver either growing windows (a demo handle, a recording of
//! cumulative dumps) or back-to-back intervals (a recording of windows); the
//! viewer needs both forms to toggle between rates and totals.

use std::collections::HashMap;

use lockmeter_model::{Dist, Holder, LockStats, SiteStats, Snapshot, Stats};

/// What happened between `before` and `after`, two snapshots of one growing
/// window. Locks and sites new in `after` count in full. Counters that went
/// down (the window was reset) are taken whole from `after`.
pub fn subtract(after: &Snapshot, before: &Snapshot) -> Snapshot {
    if after.window.start_unix_ns != before.window.start_unix_ns
        || after.window.elapsed_ns < before.window.elapsed_ns
    {
        return after.clone();
    }
    let elapsed = after.window.elapsed_ns - before.window.elapsed_ns;
    let old: HashMap<&str, &LockStats> = before.locks.iter().map(|l| (l.id.as_str(), l)).collect();
    let locks = after
        .locks
        .iter()
        .map(|lock| match old.get(lock.id.as_str()) {
            Some(prev) => subtract_lock(lock, prev, elapsed),
            None => refreshed(lock.clone(), elapsed),
        })
        .collect();
    let mut out = after.clone();
    out.window.start_unix_ns = before.window.end_unix_ns;
    out.window.elapsed_ns = elapsed;
    out.dropped_records = after.dropped_records.saturating_sub(before.dropped_records);
    out.locks = locks;
    out.stacks = Box::new(after.stacks.since(&before.stacks));
    out
}

/// Sums back-to-back interval snapshots into one window covering them all.
/// Returns `None` for an empty slice.
pub fn accumulate(frames: &[Snapshot]) -> Option<Snapshot> {
    let (first, rest) = frames.split_first()?;
    let mut out = first.clone();
    for frame in rest {
        merge_into(&mut out, frame);
    }
    let elapsed = out.window.elapsed_ns;
    for lock in &mut out.locks {
        refresh_lock(lock, elapsed);
    }
    Some(out)
}

/// Adds `next` (the window right after `acc`) into `acc`; derived fields are
/// left for the caller to refresh.
pub fn merge_into(acc: &mut Snapshot, next: &Snapshot) {
    acc.window.end_unix_ns = next.window.end_unix_ns;
    acc.window.elapsed_ns = acc.window.elapsed_ns.saturating_add(next.window.elapsed_ns);
    acc.dropped_records = acc.dropped_records.saturating_add(next.dropped_records);
    acc.process = next.process.clone();
    for lock in &next.locks {
        match acc.locks.iter_mut().find(|l| l.id == lock.id) {
            Some(mine) => {
                mine.total.merge(&lock.total);
                mine.instances = mine.instances.max(lock.instances);
                for site in &lock.sites {
                    match mine
                        .sites
                        .iter_mut()
                        .find(|s| s.site == site.site && s.mode == site.mode)
                    {
                        Some(s) => s.stats.merge(&site.stats),
                        None => mine.sites.push(site.clone()),
                    }
                }
                for holder in &lock.holders {
                    match mine.holders.iter_mut().find(|h| h.site == holder.site) {
                        Some(h) => {
                            h.contended += holder.contended;
                            h.wait_ns_total += holder.wait_ns_total;
                        }
                        None => mine.holders.push(holder.clone()),
                    }
                }
            }
            None => acc.locks.push(lock.clone()),
        }
    }
}

fn refreshed(mut lock: LockStats, elapsed: u64) -> LockStats {
    refresh_lock(&mut lock, elapsed);
    lock
}

fn refresh_lock(lock: &mut LockStats, elapsed: u64) {
    lock.total.refresh_derived(elapsed);
    for site in &mut lock.sites {
        site.stats.refresh_derived(elapsed);
    }
}

fn subtract_lock(after: &LockStats, before: &LockStats, elapsed: u64) -> LockStats {
    let sites = after
        .sites
        .iter()
        .map(|site| {
            let prev = before
                .sites
                .iter()
                .find(|s| s.site == site.site && s.mode == site.mode);
            let stats = match prev {
                Some(p) => subtract_stats(&site.stats, &p.stats, elapsed),
                None => refreshed_stats(site.stats.clone(), elapsed),
            };
            SiteStats {
                site: site.site.clone(),
                mode: site.mode.clone(),
                stats,
            }
        })
        .collect();
    let holders = after
        .holders
        .iter()
        .filter_map(|h| {
            let prev = before.holders.iter().find(|p| p.site == h.site);
            let (c, w) = match prev {
                Some(p) if p.contended <= h.contended => (
                    h.contended - p.contended,
                    h.wait_ns_total.saturating_sub(p.wait_ns_total),
                ),
                _ => (h.contended, h.wait_ns_total),
            };
            (c > 0).then(|| Holder {
                site: h.site.clone(),
                contended: c,
                wait_ns_total: w,
            })
        })
        .collect();
    LockStats {
        total: subtract_stats(&after.total, &before.total, elapsed),
        sites,
        holders,
        ..after.clone()
    }
}

fn refreshed_stats(mut stats: Stats, elapsed: u64) -> Stats {
    stats.refresh_derived(elapsed);
    stats
}

fn subtract_stats(a: &Stats, b: &Stats, elapsed: u64) -> Stats {
    if a.acquisitions < b.acquisitions || a.waits < b.waits || a.wake_calls < b.wake_calls {
        return refreshed_stats(a.clone(), elapsed);
    }
    let mut out = Stats {
        acquisitions: a.acquisitions - b.acquisitions,
        nowait: a.nowait.saturating_sub(b.nowait),
        contended: a.contended.saturating_sub(b.contended),
        rejected: a.rejected.saturating_sub(b.rejected),
        spins: a.spins.saturating_sub(b.spins),
        sleeps: a.sleeps.saturating_sub(b.sleeps),
        bounces: a.bounces.saturating_sub(b.bounces),
        hold_ns: subtract_dist(&a.hold_ns, &b.hold_ns),
        wait_ns: subtract_dist(&a.wait_ns, &b.wait_ns),
        waits: a.waits - b.waits,
        wake_calls: a.wake_calls - b.wake_calls,
        wakeups: a.wakeups.saturating_sub(b.wakeups),
        spurious_wakeups: a.spurious_wakeups.saturating_sub(b.spurious_wakeups),
        exclusive_wakeups: a.exclusive_wakeups.saturating_sub(b.exclusive_wakeups),
        // A high-water mark cannot be split; the window's value stands.
        max_waiters: a.max_waiters,
        wake_latency_ns: subtract_dist(&a.wake_latency_ns, &b.wake_latency_ns),
        ..Stats::default()
    };
    out.refresh_derived(elapsed);
    out
}

/// The distribution of the samples in `a` but not in `b`. Counts, totals and
/// buckets subtract exactly; min and max are bounded by the buckets left.
pub fn subtract_dist(a: &Dist, b: &Dist) -> Dist {
    if a.count < b.count {
        return a.clone();
    }
    let old: HashMap<u64, u64> = b.buckets.iter().copied().collect();
    let buckets: Vec<(u64, u64)> = a
        .buckets
        .iter()
        .filter_map(|&(upper, c)| {
            let left = c.saturating_sub(old.get(&upper).copied().unwrap_or(0));
            (left > 0).then_some((upper, left))
        })
        .collect();
    let count = a.count - b.count;
    if count == 0 {
        return Dist::default();
    }
    let top = buckets.last().map(|&(u, _)| u).unwrap_or(a.max);
    let max = a.max.min(top);
    let bottom = buckets.first().map(|&(u, _)| u / 2).unwrap_or(a.min);
    let min = a.min.max(bottom).min(max);
    let mut d = Dist {
        count,
        total: a.total.saturating_sub(b.total),
        min,
        max,
        buckets,
        ..Dist::default()
    };
    d.refresh_derived();
    d
}

#[cfg(test)]
mod tests {
    use super::*;
    use lockmeter_model::dist::bucket_index;
    use lockmeter_model::{LockKind, ProcessInfo, Window};

    fn dist(values: &[u64]) -> Dist {
        let mut counts = vec![0u64; lockmeter_model::dist::BUCKETS];
        for &v in values {
            counts[bucket_index(v)] += 1;
        }
        let min = values.iter().copied().min().unwrap_or(0);
        let max = values.iter().copied().max().unwrap_or(0);
        Dist::from_buckets(&counts, values.len() as u64, values.iter().sum(), min, max)
    }

    fn snap(elapsed: u64, acq: u64, contended: u64, holds: &[u64]) -> Snapshot {
        let mut s = Snapshot::empty(
            ProcessInfo {
                pid: 1,
                name: "t".into(),
            },
            "mock",
        );
        s.window = Window {
            start_unix_ns: 100,
            end_unix_ns: 100 + elapsed,
            elapsed_ns: elapsed,
        };
        let mut stats = Stats {
            acquisitions: acq,
            nowait: acq - contended,
            contended,
            hold_ns: dist(holds),
            ..Stats::default()
        };
        stats.refresh_derived(elapsed);
        s.locks.push(LockStats {
            id: "a".into(),
            name: "a".into(),
            kind: LockKind::Mutex,
            created_at: "x.rs:1:1".into(),
            instances: 1,
            parent: None,
            total: stats.clone(),
            sites: vec![SiteStats {
                site: "x.rs:2:2".into(),
                mode: None,
                stats,
            }],
            holders: vec![Holder {
                site: "x.rs:3:3".into(),
                contended,
                wait_ns_total: contended * 10,
            }],
        });
        s
    }

    #[test]
    fn subtract_leaves_only_the_new_samples() {
        let before = snap(1000, 4, 2, &[10, 10, 10, 10]);
        let after = snap(3000, 10, 3, &[10, 10, 10, 10, 500, 500, 500, 500, 500, 500]);
        let d = subtract(&after, &before);
        let l = &d.locks[0];
        assert_eq!(d.window.elapsed_ns, 2000);
        assert_eq!(l.total.acquisitions, 6);
        assert_eq!(l.total.contended, 1);
        assert_eq!(l.total.hold_ns.count, 6);
        assert_eq!(l.total.hold_ns.total, 3000);
        assert!(l.total.hold_ns.min > 10, "min {}", l.total.hold_ns.min);
        assert_eq!(l.total.util_pct, 150.0);
        assert_eq!(l.sites[0].stats.acquisitions, 6);
        assert_eq!(l.holders[0].contended, 1);
    }

    #[test]
    fn subtract_after_a_reset_keeps_the_new_window() {
        let before = snap(3000, 10, 3, &[10; 10]);
        let mut after = snap(500, 2, 0, &[10, 10]);
        after.window.start_unix_ns = 5000;
        let d = subtract(&after, &before);
        assert_eq!(d, after);
    }

    #[test]
    fn accumulate_sums_intervals() {
        let a = snap(1000, 4, 2, &[10; 4]);
        let b = snap(1000, 6, 1, &[500; 6]);
        let t = accumulate(&[a, b]).unwrap();
        let l = &t.locks[0];
        assert_eq!(t.window.elapsed_ns, 2000);
        assert_eq!(l.total.acquisitions, 10);
        assert_eq!(l.total.contended, 3);
        assert_eq!(l.total.con_pct, 30.0);
        assert_eq!(l.holders[0].contended, 3);
        assert_eq!(l.total.hold_ns.max, 500);
        assert!(accumulate(&[]).is_none());
    }
}
