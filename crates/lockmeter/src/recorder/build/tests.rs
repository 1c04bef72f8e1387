//! The snapshot equals the plain way of building it: a record with
//! formatted strings per entry, merged by those strings.

use std::collections::{BTreeMap, HashMap};
use std::panic::Location;
use std::sync::Arc;

use lockmeter_model::{Holder, LockKind, LockStats, ProcessInfo, SiteStats, Stats};
use proptest::prelude::Rng as _;
use proptest::test_runner::{RngAlgorithm, TestRng};

use super::super::entry::Entry;
use super::super::shard::Shard;
use super::super::{Recorder, Settings};
use crate::class::{format_location, Class, Mode, Role, SiteKey};

/// The record of one entry, keyed by text.
#[derive(Clone)]
struct Plain {
    id: String,
    kind: LockKind,
    created_at: String,
    parent: Option<String>,
    site: String,
    mode: Option<&'static str>,
    instances: u64,
    stats: Stats,
    holders: Vec<Holder>,
}

type PlainKey = (String, &'static str, String, Option<&'static str>);

impl Plain {
    fn of(e: &Entry) -> Plain {
        let mut holders = Vec::new();
        e.holders(|site, contended, wait_ns_total| {
            holders.push(Holder {
                site: site.map_or_else(|| "(other)".to_string(), format_location),
                contended,
                wait_ns_total,
            })
        });
        let key = e.key();
        Plain {
            id: key.class.id(),
            kind: key.kind,
            created_at: format_location(key.class.created_at),
            parent: key.class.parent(),
            site: format_location(key.site),
            mode: key.mode.label(),
            instances: e.instances(),
            stats: e.stats(),
            holders,
        }
    }

    fn key(&self) -> PlainKey {
        let (id, site) = (self.id.clone(), self.site.clone());
        (id, self.kind.as_str(), site, self.mode)
    }

    fn merge(&mut self, other: &Plain) {
        self.instances += other.instances;
        self.stats.merge(&other.stats);
        merge_holders(&mut self.holders, &other.holders);
    }
}

fn merge_holders(into: &mut Vec<Holder>, from: &[Holder]) {
    for h in from {
        match into.iter_mut().find(|x| x.site == h.site) {
            Some(x) => {
                x.contended += h.contended;
                x.wait_ns_total += h.wait_ns_total;
            }
            None => into.push(h.clone()),
        }
    }
}

fn plain_group(records: Vec<Plain>) -> Vec<LockStats> {
    let mut locks: BTreeMap<(String, &'static str), LockStats> = BTreeMap::new();
    for r in records {
        let lock = (locks.entry((r.id.clone(), r.kind.as_str()))).or_insert_with(|| LockStats {
            id: r.id.clone(),
            display_name: None,
            kind: r.kind,
            created_at: r.created_at.clone(),
            instances: 0,
            parent: r.parent.clone(),
            total: Stats::default(),
            sites: Vec::new(),
            holders: Vec::new(),
        });
        lock.instances += r.instances;
        lock.total.merge(&r.stats);
        merge_holders(&mut lock.holders, &r.holders);
        let mode = r.mode.map(str::to_string);
        let same = |s: &&mut SiteStats| s.site == r.site && s.mode == mode;
        match lock.sites.iter_mut().find(same) {
            Some(s) => s.stats.merge(&r.stats),
            None => lock.sites.push(SiteStats {
                site: r.site,
                mode,
                pid: None,
                stats: r.stats,
            }),
        }
    }
    let mut locks: Vec<LockStats> = locks.into_values().collect();
    for lock in &mut locks {
        lock.sites
            .sort_by(|a, b| (&a.site, &a.mode).cmp(&(&b.site, &b.mode)));
        let by_wait = |a: &Holder, b: &Holder| {
            (b.wait_ns_total.cmp(&a.wait_ns_total)).then(a.site.cmp(&b.site))
        };
        lock.holders.sort_by(by_wait);
    }
    locks
}

#[track_caller]
fn here() -> &'static Location<'static> {
    Location::caller()
}

/// A deterministic generator (proptest's ChaCha), seeded per case.
struct Rng(TestRng);

impl Rng {
    fn seeded(seed: u64) -> Rng {
        let mut bytes = [0u8; 32];
        bytes[..8].copy_from_slice(&seed.to_le_bytes());
        Rng(TestRng::from_seed(RngAlgorithm::ChaCha, &bytes))
    }

    fn below(&mut self, n: u64) -> u64 {
        self.0.next_u64() % n.max(1)
    }

    /// A duration of up to `bits` bits, spread over the octaves.
    fn ns(&mut self, bits: u64) -> u64 {
        let bits = self.below(bits);
        self.below(1 << bits)
    }

    fn pick<T: Copy>(&mut self, items: &[T]) -> T {
        items[self.below(items.len() as u64) as usize]
    }
}

fn recorder() -> Recorder {
    let (clock, _mock) = quanta::Clock::mock();
    Recorder::new(Settings {
        clock,
        clock_name: crate::clock::MOCK_CLOCK,
        slow_ns: u64::MAX,
        sample_every: 4,
        stacks: Default::default(),
        process: ProcessInfo::default(),
    })
}

/// `entries` random entries for `shard`, drawn from shared pools.
fn fill(rec: &Recorder, shard: &Shard, rng: &mut Rng, entries: usize, unnamed: &[Class]) {
    // Distinct call sites, each `here()` its own.
    #[rustfmt::skip]
    let sites = [here(), here(), here(), here(), here(), here(), here(), here()];
    #[rustfmt::skip]
    let more = [here(), here(), here(), here(), here(), here(), here(), here()];
    // "dup" twice: equal text at two addresses merges by text.
    let dup: &'static str = Box::leak(String::from("dup").into_boxed_str());
    let at = here();
    let named = [Class::new(Some("alpha"), at), Class::new(Some("dup"), at)];
    let mut classes = vec![named[0], named[1], Class::new(Some(dup), at)];
    classes.push(named[0].inner(Role::InnerLock));
    classes.push(named[1].inner(Role::InnerWait));
    classes.extend_from_slice(unnamed);
    let kinds = [LockKind::Spinlock, LockKind::Mutex, LockKind::Rwlock];
    let modes = [Mode::Exclusive, Mode::Read, Mode::Write];
    let mut list = shard.entries.lock().unwrap();
    for _ in 0..entries {
        let site = if rng.below(2) == 0 {
            rng.pick(&sites)
        } else {
            rng.pick(&more)
        };
        let key = SiteKey {
            class: classes[rng.below(classes.len() as u64) as usize],
            kind: rng.pick(&kinds),
            site,
            mode: rng.pick(&modes),
        };
        let e = Entry::new(key, [0; 3], rec.serial, rec.clock.clone(), rec.slow_ns, 4);
        for _ in 0..rng.below(100) {
            e.count_nowait_after(e.nowait_so_far());
        }
        for _ in 0..rng.below(3) {
            e.count_instance();
        }
        for _ in 0..rng.below(4) {
            e.hold_started();
            e.end_sampled_hold(rng.ns(40));
        }
        if rng.below(3) == 0 {
            e.count_contended(rng.below(1000), 0);
            for _ in 0..rng.below(20) {
                e.count_contended(0, 0);
            }
            e.note_waiters(rng.below(8));
            for _ in 0..rng.below(12) {
                let holder = match rng.below(4) {
                    0 => std::ptr::null_mut(),
                    1 => rng.pick(&more) as *const Location<'static> as *mut _,
                    _ => rng.pick(&sites) as *const Location<'static> as *mut _,
                };
                e.hold_started();
                e.end_contended_hold(Some(rng.ns(30)), rng.ns(30), holder);
            }
        }
        if rng.below(4) == 0 {
            e.record_wake_latency(rng.below(100_000));
            e.count_wake_call(0, rng.below(5), 0);
        }
        list.push(Arc::new(e));
    }
}

fn plain_snapshot(rec: &Recorder, retired: &HashMap<PlainKey, Plain>) -> Vec<LockStats> {
    let state = rec.state();
    let mut records: Vec<Plain> = retired.values().cloned().collect();
    for shard in &state.live {
        records.extend(shard.entries.lock().unwrap().iter().map(|e| Plain::of(e)));
    }
    plain_group(records)
}

fn plain_retire(shard: &Shard, retired: &mut HashMap<PlainKey, Plain>) {
    for e in shard.entries.lock().unwrap().iter() {
        let r = Plain::of(e);
        match retired.get_mut(&r.key()) {
            Some(x) => x.merge(&r),
            None => drop(retired.insert(r.key(), r)),
        }
    }
}

fn snapshot(rec: &Recorder) -> Vec<LockStats> {
    rec.cumulative().locks
}

#[test]
fn snapshots_equal_merging_by_text() {
    let unnamed = [Class::new(None, here()), Class::new(None, here())];
    for seed in 0..40 {
        let mut rng = Rng::seeded(seed);
        let rec = recorder();
        let mut retired = HashMap::new();
        let shards: Vec<Arc<Shard>> = (0..1 + rng.below(4)).map(|_| Arc::default()).collect();
        for shard in &shards {
            rec.adopt(shard.clone());
            let n = 1 + rng.below(60) as usize;
            fill(&rec, shard, &mut rng, n, &unnamed);
        }
        assert!(
            snapshot(&rec) == plain_snapshot(&rec, &retired),
            "seed {seed}"
        );
        // Some threads exit; more entries appear in the others.
        for shard in &shards {
            if rng.below(2) == 0 {
                plain_retire(shard, &mut retired);
                rec.retire(shard);
            } else {
                let n = rng.below(20) as usize;
                fill(&rec, shard, &mut rng, n, &unnamed);
            }
        }
        let extra = Arc::default();
        rec.adopt(Arc::clone(&extra));
        let n = rng.below(30) as usize;
        fill(&rec, &extra, &mut rng, n, &unnamed);
        assert!(
            snapshot(&rec) == plain_snapshot(&rec, &retired),
            "seed {seed}, later"
        );
    }
}

#[test]
fn the_mode_order_is_the_order_of_the_labels() {
    let modes = [Mode::Exclusive, Mode::Read, Mode::Write, Mode::Upgradable];
    let mut by_order = modes;
    by_order.sort_by_key(|&m| m.label_order());
    let mut by_label = modes;
    by_label.sort_by_key(|m| m.label());
    assert_eq!(by_order.map(Mode::label), by_label.map(Mode::label));
}
