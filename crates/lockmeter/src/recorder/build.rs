//! Turning entries into the v1 model.

use std::collections::BTreeMap;
use std::sync::atomic::Ordering::Relaxed;

use lockmeter_model::{Holder, LockKind, LockStats, SiteStats, Stats};

use super::entry::{Entry, HOLDER_SLOTS};
use crate::class::format_location;

/// Plain values of one entry, detached from the thread that wrote them.
#[derive(Clone)]
pub(crate) struct SiteRecord {
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

impl SiteRecord {
    pub(crate) fn from_entry(e: &Entry) -> SiteRecord {
        let key = &e.key;
        let holders = e
            .holders
            .iter()
            .enumerate()
            .filter(|(_, h)| h.contended.get() > 0)
            .map(|(i, h)| {
                let site = h.site.load(Relaxed);
                let site = if i == HOLDER_SLOTS || site.is_null() {
                    "(other)".to_string()
                } else {
                    // SAFETY: only `&'static Location` addresses are stored.
                    format_location(unsafe { &*site })
                };
                Holder {
                    site,
                    contended: h.contended.get(),
                    wait_ns_total: h.wait_ns.get(),
                }
            })
            .collect();
        let (hold_ns, hold_timed) = e.hold_estimate();
        let (nowait, contended) = (e.nowait.get(), e.contended.get());
        SiteRecord {
            id: key.class.id(),
            kind: key.kind,
            created_at: format_location(key.class.created_at),
            parent: key.class.parent(),
            site: format_location(key.site),
            mode: key.mode.label(),
            instances: e.instances.get(),
            stats: Stats {
                acquisitions: nowait + contended,
                nowait,
                contended,
                rejected: e.rejected.get(),
                spins: e.spins.get(),
                sleeps: e.sleeps.get(),
                bounces: e.bounces.get(),
                hold_ns,
                hold_timed,
                wait_ns: e.wait.read(),
                waits: e.waits.get(),
                wake_calls: e.wake_calls.get(),
                wakeups: e.wakeups.get(),
                spurious_wakeups: e.spurious_wakeups.get(),
                exclusive_wakeups: e.exclusive_wakeups.get(),
                max_waiters: e.max_waiters.get(),
                wake_latency_ns: e.wake_latency.read(),
                ..Stats::default()
            },
            holders,
        }
    }

    /// Records with equal keys describe the same row and add up.
    pub(crate) fn merge_key(&self) -> (String, &'static str, String, Option<&'static str>) {
        (
            self.id.clone(),
            self.kind.as_str(),
            self.site.clone(),
            self.mode,
        )
    }

    pub(crate) fn merge(&mut self, other: &SiteRecord) {
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

/// Groups records into lock classes, sorted by id, sites by site.
pub(crate) fn group(records: Vec<SiteRecord>, elapsed_ns: u64) -> Vec<LockStats> {
    let mut locks: BTreeMap<(String, &'static str), LockStats> = BTreeMap::new();
    for r in records {
        let lock = locks
            .entry((r.id.clone(), r.kind.as_str()))
            .or_insert_with(|| LockStats {
                id: r.id.clone(),
                name: r.id.clone(),
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
        match lock
            .sites
            .iter_mut()
            .find(|s| s.site == r.site && s.mode == mode)
        {
            Some(s) => s.stats.merge(&r.stats),
            None => lock.sites.push(SiteStats {
                site: r.site,
                mode,
                stats: r.stats,
            }),
        }
    }
    locks
        .into_values()
        .map(|mut lock| {
            lock.sites
                .sort_by(|a, b| (&a.site, &a.mode).cmp(&(&b.site, &b.mode)));
            lock.holders.sort_by(|a, b| {
                b.wait_ns_total
                    .cmp(&a.wait_ns_total)
                    .then(a.site.cmp(&b.site))
            });
            lock.refresh_derived(elapsed_ns);
            lock
        })
        .collect()
}
