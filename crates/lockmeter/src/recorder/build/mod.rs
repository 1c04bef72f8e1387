//! Turning entries into the v1 model.
//!
//! A snapshot reads every (thread, class, site, mode) entry. Formatting a
//! class id and `file:line:column` for each of them, and merging rows by
//! those strings, used to dominate its cost, so the text is made once per
//! `&'static` address and interned in [`Names`], which lives as long as
//! the recorder. Rows are then merged by small integer symbols, and text
//! is copied out only for the rows of the snapshot itself.
//!
//! The whole sequence is here: [`Book`] is what the recorder keeps between
//! snapshots (retired records, names, keys); [`Book::locks`] runs the two
//! passes of [`Grouper`] over it and the live entries; [`Book::retire`]
//! folds an exiting thread's entries in.

use std::borrow::Cow;
use std::collections::hash_map::Entry as MapEntry;
use std::sync::Arc;

use lockmeter_model::{Holder, LockKind, LockStats, SiteStats, Stats};

mod names;
pub(crate) mod stacks;
mod sum;

use self::names::Sym;
use self::names::{FastMap, KeyCache, Names};
use self::sum::StatsSum;
use super::entry::Entry;
use super::shard::Shard;
use crate::class::Mode;

/// What a recorder keeps for its snapshots besides the live shards: the
/// folded counts of exited threads, and the text and keys made once.
#[derive(Default)]
pub(crate) struct Book {
    /// Counts of exited threads, one record per (class, site, mode).
    retired: FastMap<RecordKey, SiteRecord>,
    /// The text of every class and site seen, made once.
    names: Names,
    /// The keys of live entries, read once.
    keys: KeyCache,
}

impl Book {
    /// Folds an exiting thread's entries into the retired records.
    pub(crate) fn retire(&mut self, shard: &Shard, entries: &[Arc<Entry>]) {
        for entry in entries {
            let record = SiteRecord::from_entry(entry, &mut self.names);
            match self.retired.entry(record.key) {
                MapEntry::Occupied(mut o) => o.get_mut().merge(&record),
                MapEntry::Vacant(v) => {
                    v.insert(record);
                }
            }
        }
        self.keys.forget(shard);
    }

    /// The lock classes of a snapshot: the retired records and the
    /// entries of `live` (each shard with its entries, held by the caller
    /// for the whole call), in the two passes of [`Grouper`].
    pub(crate) fn locks(&mut self, live: &[(&Shard, &[Arc<Entry>])]) -> Vec<LockStats> {
        let mut grouper = Grouper::default();
        for record in self.retired.values() {
            grouper.key_record(record);
        }
        for (shard, entries) in live {
            grouper.key_shard(shard, entries, &mut self.keys, &mut self.names);
        }
        grouper.layout(&mut self.names);
        for record in self.retired.values() {
            grouper.fill_record(record);
        }
        for entry in live.iter().flat_map(|(_, entries)| entries.iter()) {
            grouper.fill_entry(entry, &mut self.names);
        }
        grouper.finish(&mut self.names)
    }
}

/// Records with equal keys describe the same row and add up: class id,
/// kind, call site and mode, compared as text.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
struct RecordKey {
    id: Sym,
    kind: LockKind,
    site: Sym,
    mode: Mode,
}

/// What a record says about its lock class besides its key.
#[derive(Clone, Copy)]
struct ClassInfo {
    created_at: Sym,
    parent: Option<Sym>,
}

/// The key and class of an entry.
fn entry_key(e: &Entry, names: &mut Names) -> (RecordKey, ClassInfo) {
    let key = e.key();
    let (id, parent) = names.class(&key.class);
    (
        RecordKey {
            id,
            kind: key.kind,
            site: names.location(key.site),
            mode: key.mode,
        },
        ClassInfo {
            created_at: names.location(key.class.created_at),
            parent,
        },
    )
}

/// Calls `f` with each holder site of an entry that saw contention.
fn entry_holders(e: &Entry, names: &mut Names, mut f: impl FnMut(HolderRecord)) {
    e.holders(|site, contended, wait_ns_total| {
        let site = match site {
            Some(site) => names.location(site),
            None => names.other(),
        };
        f(HolderRecord {
            site,
            contended,
            wait_ns_total,
        });
    });
}

/// Plain values of one entry, detached from the thread that wrote them.
#[derive(Clone)]
struct SiteRecord {
    key: RecordKey,
    class: ClassInfo,
    instances: u64,
    stats: Stats,
    holders: Vec<HolderRecord>,
}

#[derive(Clone, Copy)]
struct HolderRecord {
    site: Sym,
    contended: u64,
    wait_ns_total: u64,
}

impl SiteRecord {
    fn from_entry(e: &Entry, names: &mut Names) -> SiteRecord {
        let (key, class) = entry_key(e, names);
        let mut holders = Vec::new();
        entry_holders(e, names, |h| holders.push(h));
        SiteRecord {
            key,
            class,
            instances: e.instances(),
            stats: e.stats(),
            holders,
        }
    }

    fn merge(&mut self, other: &SiteRecord) {
        self.instances += other.instances;
        self.stats.merge(&other.stats);
        for h in &other.holders {
            match self.holders.iter_mut().find(|x| x.site == h.site) {
                Some(x) => {
                    x.contended += h.contended;
                    x.wait_ns_total += h.wait_ns_total;
                }
                None => self.holders.push(*h),
            }
        }
    }
}

/// One lock class of the snapshot being built.
struct LockAcc {
    id: Sym,
    kind: LockKind,
    class: ClassInfo,
    instances: u64,
    /// Its rows (indices into `Grouper::rows`), in the order first seen.
    rows: Vec<u32>,
    /// Its sites in final order, once laid out.
    sites: Vec<SiteStats>,
    holders: Vec<HolderRecord>,
    holder_index: FastMap<Sym, usize>,
}

/// One site row of the snapshot being built.
struct Row {
    lock: u32,
    site: Sym,
    mode: Mode,
    /// Its position in the lock's sites, once laid out.
    pos: u32,
    /// Whether a record has given it stats yet.
    filled: bool,
}

/// Builds the lock classes of a snapshot in two passes over the same
/// records in the same order: the `key_*` methods find every row, so that
/// [`Grouper::layout`] can sort the rows and make each lock's sites at
/// their final size and place; the `fill_*` methods then move each
/// record's stats straight into its row (or merge them into it), without
/// sorting or growing vectors of large rows.
///
/// The first record of a class gives its `created_at` and `parent`;
/// counts add up whatever the order.
#[derive(Default)]
struct Grouper {
    locks: Vec<LockAcc>,
    lock_index: FastMap<(Sym, LockKind), u32>,
    rows: Vec<Row>,
    row_index: FastMap<RecordKey, u32>,
    /// The row of each record, in the order `key` saw them.
    record_rows: Vec<u32>,
    /// The next record `fill` expects.
    next: usize,
}

impl Grouper {
    /// Pass 1 for a retired record.
    fn key_record(&mut self, r: &SiteRecord) {
        self.key_parts(r.key, r.class);
    }

    /// Pass 1 for the entries of a live shard, whose keys are remembered
    /// in `keys` so that this pass need not read the entries again.
    fn key_shard(
        &mut self,
        shard: &Shard,
        entries: &[Arc<Entry>],
        keys: &mut KeyCache,
        names: &mut Names,
    ) {
        let cached = keys
            .shards
            .entry(shard as *const Shard as usize)
            .or_default();
        for (i, e) in entries.iter().enumerate() {
            let addr = Arc::as_ptr(e) as usize;
            let (key, class) = match cached.get(i) {
                Some(&(a, key, class)) if a == addr => (key, class),
                _ => {
                    let (key, class) = entry_key(e, names);
                    cached.truncate(i);
                    cached.push((addr, key, class));
                    (key, class)
                }
            };
            self.key_parts(key, class);
        }
    }

    fn key_parts(&mut self, key: RecordKey, class: ClassInfo) {
        let row = match self.row_index.entry(key) {
            MapEntry::Occupied(o) => *o.get(),
            MapEntry::Vacant(v) => {
                let locks = &mut self.locks;
                let lock = *self
                    .lock_index
                    .entry((key.id, key.kind))
                    .or_insert_with(|| {
                        locks.push(LockAcc {
                            id: key.id,
                            kind: key.kind,
                            class,
                            instances: 0,
                            rows: Vec::new(),
                            sites: Vec::new(),
                            holders: Vec::new(),
                            holder_index: FastMap::default(),
                        });
                        (locks.len() - 1) as u32
                    });
                let row = self.rows.len() as u32;
                locks[lock as usize].rows.push(row);
                self.rows.push(Row {
                    lock,
                    site: key.site,
                    mode: key.mode,
                    pos: 0,
                    filled: false,
                });
                *v.insert(row)
            }
        };
        self.record_rows.push(row);
    }

    /// Sorts each lock's rows by (site, mode) and makes its sites.
    ///
    /// By a key of two integers computed once per row: read through the
    /// row and the site's rank, with the mode's label compared as text,
    /// at every comparison, it took 40 % of a 10,000-site snapshot's
    /// instructions (callgrind).
    fn layout(&mut self, names: &mut Names) {
        names.ranks();
        let rank = &names.rank[..];
        let rows = &mut self.rows;
        for lock in &mut self.locks {
            lock.rows.sort_by_cached_key(|&r| {
                let row = &rows[r as usize];
                (rank[row.site as usize], row.mode.label_order())
            });
            lock.sites = Vec::with_capacity(lock.rows.len());
            for (pos, &r) in lock.rows.iter().enumerate() {
                let row = &mut rows[r as usize];
                row.pos = pos as u32;
                lock.sites.push(SiteStats {
                    site: names.text(row.site).to_string(),
                    mode: row.mode.label().map(str::to_string),
                    pid: None,
                    stats: Stats::default(),
                });
            }
        }
    }

    /// Pass 2 for a retired record.
    fn fill_record(&mut self, r: &SiteRecord) {
        let lock = self.fill_parts(r.instances, Cow::Borrowed(&r.stats));
        for h in &r.holders {
            lock.add_holder(*h);
        }
    }

    /// Pass 2 for a live entry.
    fn fill_entry(&mut self, e: &Entry, names: &mut Names) {
        let lock = self.fill_parts(e.instances(), Cow::Owned(e.stats()));
        entry_holders(e, names, |h| lock.add_holder(h));
    }

    fn fill_parts(&mut self, instances: u64, stats: Cow<'_, Stats>) -> &mut LockAcc {
        let row = &mut self.rows[self.record_rows[self.next] as usize];
        self.next += 1;
        let lock = &mut self.locks[row.lock as usize];
        lock.instances += instances;
        let site = &mut lock.sites[row.pos as usize].stats;
        if row.filled {
            site.merge(&stats);
        } else {
            *site = stats.into_owned();
            row.filled = true;
        }
        lock
    }

    /// The lock classes, sorted by id, their sites by (site, mode) and
    /// their holders by wait, longest first, then site. A class's total
    /// is the sum of its sites.
    fn finish(self, names: &mut Names) -> Vec<LockStats> {
        debug_assert_eq!(self.next, self.record_rows.len(), "every record filled");
        names.ranks();
        let names = &*names;
        let rank = &names.rank[..];
        let mut locks = self.locks;
        locks.sort_unstable_by(|a, b| {
            (rank[a.id as usize], a.kind.as_str()).cmp(&(rank[b.id as usize], b.kind.as_str()))
        });
        locks
            .into_iter()
            .map(|mut acc| {
                let mut total = StatsSum::default();
                for site in &mut acc.sites {
                    total.add(&mut site.stats);
                }
                acc.holders.sort_unstable_by(|a, b| {
                    b.wait_ns_total
                        .cmp(&a.wait_ns_total)
                        .then(rank[a.site as usize].cmp(&rank[b.site as usize]))
                });
                let id = names.text(acc.id);
                LockStats {
                    id: id.to_string(),
                    display_name: None,
                    kind: acc.kind,
                    created_at: names.text(acc.class.created_at).to_string(),
                    instances: acc.instances,
                    parent: acc.class.parent.map(|p| names.text(p).to_string()),
                    total: total.finish(),
                    sites: acc.sites,
                    holders: acc
                        .holders
                        .into_iter()
                        .map(|h| Holder {
                            site: names.text(h.site).to_string(),
                            contended: h.contended,
                            wait_ns_total: h.wait_ns_total,
                        })
                        .collect(),
                }
            })
            .collect()
    }
}

impl LockAcc {
    fn add_holder(&mut self, h: HolderRecord) {
        match self.holder_index.entry(h.site) {
            MapEntry::Occupied(o) => {
                let x = &mut self.holders[*o.get()];
                x.contended += h.contended;
                x.wait_ns_total += h.wait_ns_total;
            }
            MapEntry::Vacant(v) => {
                v.insert(self.holders.len());
                self.holders.push(h);
            }
        }
    }
}

#[cfg(test)]
mod tests;
