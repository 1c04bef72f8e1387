//! The table's visible rows: locks in sort order, each optionally followed
//! by its call-site and holder rows, with advisory lines under the rows they
//! concern. Rows are identified by what they show, not by position, so the
//! selection stays on the same lock when the order changes.

use std::collections::BTreeSet;

use lockmeter_model::advice::Advisory;
use lockmeter_model::render::{sorted_lock_rows, sorted_sites, TableOptions};
use lockmeter_model::{Holder, LockStats, SiteStats, Snapshot};

/// What a selectable row shows.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum RowId {
    Lock(String),
    Site {
        lock: String,
        site: String,
        mode: Option<String>,
        /// The process, in a table merged over processes.
        pid: Option<u32>,
    },
    Holder {
        lock: String,
        site: String,
    },
}

impl RowId {
    /// The lock this row belongs to.
    pub fn lock_id(&self) -> &str {
        match self {
            RowId::Lock(id) | RowId::Site { lock: id, .. } | RowId::Holder { lock: id, .. } => id,
        }
    }
}

/// One line of the table.
#[derive(Debug, Clone)]
pub enum Row<'a> {
    Lock {
        lock: &'a LockStats,
        depth: usize,
        expanded: bool,
        /// Advisories about this lock or its sites.
        advice: usize,
    },
    Site {
        lock: &'a LockStats,
        site: &'a SiteStats,
        depth: usize,
    },
    Holder {
        lock: &'a LockStats,
        holder: &'a Holder,
        depth: usize,
    },
    /// An advisory's one-line explanation; not selectable.
    Advice {
        advisory: &'a Advisory,
        depth: usize,
    },
}

impl Row<'_> {
    /// The id of a selectable row; `None` for advisory lines.
    pub fn id(&self) -> Option<RowId> {
        match self {
            Row::Lock { lock, .. } => Some(RowId::Lock(lock.id.clone())),
            Row::Site { lock, site, .. } => Some(RowId::Site {
                lock: lock.id.clone(),
                site: site.site.clone(),
                mode: site.mode.clone(),
                pid: site.pid,
            }),
            Row::Holder { lock, holder, .. } => Some(RowId::Holder {
                lock: lock.id.clone(),
                site: holder.site.clone(),
            }),
            Row::Advice { .. } => None,
        }
    }
}

/// Builds the visible rows of `snap`.
pub fn build<'a>(
    snap: &'a Snapshot,
    opts: &TableOptions,
    expanded: &BTreeSet<String>,
    advisories: &'a [Advisory],
    show_advice: bool,
) -> Vec<Row<'a>> {
    let mut rows = Vec::new();
    for lr in sorted_lock_rows(snap, opts) {
        let lock = lr.lock;
        let depth = lr.depth;
        let mine: Vec<&Advisory> = if show_advice {
            advisories.iter().filter(|a| a.lock_id == lock.id).collect()
        } else {
            Vec::new()
        };
        let is_open = expanded.contains(&lock.id);
        rows.push(Row::Lock {
            lock,
            depth,
            expanded: is_open,
            advice: mine.len(),
        });
        // Advisories about the lock as a whole, and about sites that are not
        // shown, go under the lock row.
        for a in &mine {
            let site_shown = is_open
                && a.site
                    .as_deref()
                    .is_some_and(|s| lock.sites.iter().any(|x| x.site == s));
            if !site_shown {
                rows.push(Row::Advice {
                    advisory: a,
                    depth: depth + 1,
                });
            }
        }
        if !is_open {
            continue;
        }
        for site in sorted_sites(lock, snap.window.elapsed_ns, opts) {
            rows.push(Row::Site {
                lock,
                site,
                depth: depth + 1,
            });
            for a in mine
                .iter()
                .filter(|a| a.site.as_deref() == Some(&site.site))
            {
                rows.push(Row::Advice {
                    advisory: a,
                    depth: depth + 2,
                });
            }
        }
        let mut holders: Vec<&Holder> = lock.holders.iter().collect();
        holders.sort_by(|a, b| {
            b.wait_ns_total
                .cmp(&a.wait_ns_total)
                .then_with(|| b.contended.cmp(&a.contended))
                .then_with(|| a.site.cmp(&b.site))
        });
        for holder in holders {
            rows.push(Row::Holder {
                lock,
                holder,
                depth: depth + 1,
            });
        }
    }
    rows
}

/// Index of the row showing `id`; else the row of its lock; else `None`.
pub fn find(rows: &[Row<'_>], id: &RowId) -> Option<usize> {
    let exact = rows.iter().position(|r| r.id().as_ref() == Some(id));
    exact.or_else(|| {
        let lock = RowId::Lock(id.lock_id().to_string());
        rows.iter().position(|r| r.id().as_ref() == Some(&lock))
    })
}

/// The selectable row `delta` steps from `from` (clamped to the ends),
/// skipping advisory lines.
pub fn step(rows: &[Row<'_>], from: Option<usize>, delta: isize) -> Option<usize> {
    let selectable: Vec<usize> = rows
        .iter()
        .enumerate()
        .filter(|(_, r)| r.id().is_some())
        .map(|(i, _)| i)
        .collect();
    if selectable.is_empty() {
        return None;
    }
    let pos = match from {
        Some(f) => selectable
            .iter()
            .position(|&i| i >= f)
            .unwrap_or(selectable.len() - 1),
        None => return Some(selectable[0]),
    };
    let target = (pos as isize + delta).clamp(0, selectable.len() as isize - 1);
    Some(selectable[target as usize])
}
