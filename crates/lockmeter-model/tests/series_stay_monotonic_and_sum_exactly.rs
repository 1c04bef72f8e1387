//! The bounded per-site series of `lockmeter_model::series` (what the
//! Prometheus endpoint exposes), over random growing cumulative snapshots
//! whose sites appear late, overtake each other and fall back:
//!
//! - once a series exists it is there at every later call;
//! - no counter, histogram count or bucket of any series ever decreases;
//! - at every call a class's series add up exactly to its sites;
//! - a class never has more than 2N site series plus one `(other)` per mode;
//! - a site that gets a series when first seen reports its exact count.

use std::collections::{BTreeMap, HashMap, HashSet};

use lockmeter_model::series::{Series, SiteBound, OTHER_SITE};
use lockmeter_model::{Dist, LockKind, LockStats, ProcessInfo, SiteStats, Snapshot, Stats};
use proptest::prelude::*;

/// Bucket upper bounds the generated waits fall into.
const UPPERS: [u64; 4] = [1_023, 65_535, 16_777_215, 33_554_431];

#[derive(Debug, Clone)]
struct SitePlan {
    appears_at: usize,
    mode: Option<&'static str>,
    /// Per step: (acquisitions, bucket of the wait, waits) added.
    growth: Vec<(u64, usize, u64)>,
}

fn plan(steps: usize) -> impl Strategy<Value = SitePlan> {
    (
        0..steps,
        prop_oneof![Just(None), Just(Some("read")), Just(Some("write"))],
        prop::collection::vec((0u64..50, 0usize..UPPERS.len(), 0u64..5), steps),
    )
        .prop_map(|(appears_at, mode, growth)| SitePlan {
            appears_at,
            mode,
            growth,
        })
}

/// Cumulative stats of one site after `step`.
fn stats_at(p: &SitePlan, step: usize) -> Stats {
    let mut counts = [0u64; UPPERS.len()];
    let mut s = Stats::default();
    for &(acq, bucket, waits) in &p.growth[p.appears_at..=step] {
        s.acquisitions += acq + waits;
        s.contended += waits;
        counts[bucket] += waits;
        s.wait_ns.total += waits * UPPERS[bucket];
    }
    s.wait_ns.count = counts.iter().sum();
    s.wait_ns.buckets = UPPERS
        .iter()
        .zip(counts)
        .filter(|(_, c)| *c > 0)
        .map(|(&u, c)| (u, c))
        .collect();
    s
}

fn snapshot(classes: &[Vec<SitePlan>], step: usize) -> Snapshot {
    let mut snap = Snapshot::empty(ProcessInfo::default(), "mock");
    for (ci, plans) in classes.iter().enumerate() {
        let sites: Vec<SiteStats> = plans
            .iter()
            .enumerate()
            .filter(|(_, p)| p.appears_at <= step)
            .map(|(si, p)| SiteStats {
                site: format!("src/s.rs:{si}:1"),
                mode: p.mode.map(str::to_string),
                pid: None,
                stats: stats_at(p, step),
            })
            .collect();
        if sites.is_empty() {
            continue;
        }
        let id = format!("class{ci}");
        let total = Stats::default();
        snap.locks
            .push(LockStats::new(&id, LockKind::Rwlock, total, sites));
    }
    snap
}

type Key = (String, String, String);

fn key(s: &Series) -> Key {
    (s.lock.clone(), s.site.clone(), s.mode.clone())
}

/// Counters and cumulative bucket counts, in a fixed order.
fn values(s: &Stats) -> Vec<u64> {
    let mut v = vec![
        s.acquisitions,
        s.contended,
        s.wait_ns.count,
        s.wait_ns.total,
    ];
    for &u in &UPPERS {
        v.push(
            s.wait_ns
                .buckets
                .iter()
                .filter(|&&(b, _)| b <= u)
                .map(|&(_, c)| c)
                .sum(),
        );
    }
    v
}

fn sum(d: &mut Dist, other: &Dist) {
    d.merge(other);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn series_are_sticky_monotonic_bounded_and_exact(
        top in 1usize..4,
        steps in 1usize..10,
        classes in prop::collection::vec(prop::collection::vec(plan(10), 1..9), 1..3),
    ) {
        let mut bound = SiteBound::new(top);
        let mut last: HashMap<Key, Vec<u64>> = HashMap::new();
        let mut first_seen_exposed: HashSet<Key> = HashSet::new();
        for step in 0..steps {
            let snap = snapshot(&classes, step);
            let series = bound.series(&snap);

            // Sticky and monotonic.
            let now: HashMap<Key, &Series> = series.iter().map(|s| (key(s), s)).collect();
            prop_assert_eq!(now.len(), series.len(), "a series appears twice");
            for (k, before) in &last {
                let Some(s) = now.get(k) else {
                    return Err(TestCaseError::fail(format!("{k:?} vanished at step {step}")));
                };
                let v = values(&s.stats);
                for (i, (a, b)) in before.iter().zip(&v).enumerate() {
                    prop_assert!(b >= a, "{:?} value {} went {} -> {} at step {}", k, i, a, b, step);
                }
            }

            for lock in &snap.locks {
                let mine: Vec<&Series> = series.iter().filter(|s| s.lock == lock.id).collect();
                // Exact sums, per mode.
                let mut want: BTreeMap<String, (u64, u64, Dist)> = BTreeMap::new();
                for site in &lock.sites {
                    let e = want.entry(site.mode.clone().unwrap_or_default()).or_default();
                    e.0 += site.stats.acquisitions;
                    e.1 += site.stats.contended;
                    sum(&mut e.2, &site.stats.wait_ns);
                }
                let mut got: BTreeMap<String, (u64, u64, Dist)> = BTreeMap::new();
                for s in &mine {
                    let e = got.entry(s.mode.clone()).or_default();
                    e.0 += s.stats.acquisitions;
                    e.1 += s.stats.contended;
                    sum(&mut e.2, &s.stats.wait_ns);
                }
                for (mode, (acq, con, dist)) in &want {
                    let g = got.get(mode).cloned().unwrap_or_default();
                    prop_assert_eq!((g.0, g.1), (*acq, *con), "class {} mode {:?}", lock.id, mode);
                    prop_assert_eq!(
                        (g.2.count, g.2.total, &g.2.buckets),
                        (dist.count, dist.total, &dist.buckets)
                    );
                }
                // Bounded.
                let sites = mine.iter().filter(|s| s.site != OTHER_SITE).count();
                let others = mine.iter().filter(|s| s.site == OTHER_SITE).count();
                prop_assert!(sites <= 2 * top, "{} site series for N = {}", sites, top);
                prop_assert!(others <= 3);
                // A site exposed the first time it is seen is exact.
                for site in &lock.sites {
                    let k = (lock.id.clone(), site.site.clone(), site.mode.clone().unwrap_or_default());
                    if let Some(s) = now.get(&k) {
                        if !last.contains_key(&k) && site_is_new(&classes, lock, site, step) {
                            first_seen_exposed.insert(k.clone());
                        }
                        if first_seen_exposed.contains(&k) {
                            prop_assert_eq!(values(&s.stats), values(&site.stats), "{:?}", k);
                        }
                    }
                }
            }
            last = series.iter().map(|s| (key(s), values(&s.stats))).collect();
        }
    }
}

/// Whether `site` of `lock` first appears at `step`.
fn site_is_new(classes: &[Vec<SitePlan>], lock: &LockStats, site: &SiteStats, step: usize) -> bool {
    let ci: usize = lock.id["class".len()..].parse().unwrap();
    let si: usize = site.site["src/s.rs:".len()..]
        .split(':')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    classes[ci][si].appears_at == step
}

#[test]
fn a_class_with_few_sites_is_exposed_whole() {
    let plans: Vec<SitePlan> = (0..3)
        .map(|i| SitePlan {
            appears_at: 0,
            mode: None,
            growth: vec![(i + 1, 0, 1); 2],
        })
        .collect();
    let mut bound = SiteBound::new(SiteBound::DEFAULT_TOP_SITES);
    let series = bound.series(&snapshot(std::slice::from_ref(&plans), 1));
    assert_eq!(series.len(), 3);
    assert!(series.iter().all(|s| s.site != OTHER_SITE));
    for (s, p) in series.iter().zip(&plans) {
        assert_eq!(s.stats.acquisitions, stats_at(p, 1).acquisitions);
    }
}
