//! CSV: one row per lock total and per call site, every field a column.

use super::order::{lock_order, sorted_sites};
use super::TableOptions;
use crate::{Dist, LockStats, Snapshot, Stats};

/// The columns that name a row, in both CSVs (the table's ends with
/// `instances`, the diff's with `presence`).
pub(crate) const NAME_COLUMNS: &[&str] = &[
    "row",
    "lock_id",
    "lock_name",
    "kind",
    "parent",
    "site",
    "mode",
];

/// Counter columns, in [`Stats`] field order.
const COUNT_COLUMNS: &[&str] = &[
    "acquisitions",
    "nowait",
    "contended",
    "rejected",
    "spins",
    "sleeps",
    "bounces",
    "con_pct",
    "util_pct",
];

const WAITQUEUE_COLUMNS: &[&str] = &[
    "waits",
    "wake_calls",
    "wakeups",
    "spurious_wakeups",
    "exclusive_wakeups",
    "max_waiters",
];

const DIST_PARTS: &[&str] = &[
    "count", "total_ns", "min_ns", "mean_ns", "p50_ns", "p90_ns", "p99_ns", "max_ns",
];

/// The snapshot as CSV (RFC 4180 quoting, `\n` line ends).
///
/// Rows come in the order of the text table: a `row=lock` line with the
/// lock's totals, then (if `opts.sites`) a `row=site` line per call site.
/// Columns: `row, lock_id, lock_name, kind, parent, site, mode, instances`
/// (a merged table: `pid` after `mode`),
/// the counters, `con_pct, util_pct`, then `hold_*`, `wait_*` (count,
/// total, min, mean, p50, p90, p99, max, in ns), the wait-queue counters
/// and `wake_latency_*`. Percentages have two decimals; a value that is
/// not a finite number is left empty.
pub fn csv_table(snap: &Snapshot, opts: &TableOptions) -> String {
    let mut out = String::new();
    // A table merged over processes has a `pid` column after `mode`; one
    // process's table has none, as it always had.
    let pids = snap.has_pids();
    let with_pid = |mut row: Vec<String>, pid: String| {
        if pids {
            row.insert(NAME_COLUMNS.len(), pid);
        }
        row
    };
    push_line(&mut out, with_pid(header(), "pid".to_string()));
    let (order, _) = lock_order(snap, opts);
    let elapsed_ns = snap.window.elapsed_ns;
    for (i, _) in order {
        let Some(lock) = snap.locks.get(i) else {
            continue;
        };
        push_line(
            &mut out,
            with_pid(
                lock_row(lock, None, None, &lock.total, elapsed_ns),
                String::new(),
            ),
        );
        if opts.sites {
            for site in sorted_sites(lock, elapsed_ns, opts) {
                let row = lock_row(
                    lock,
                    Some(&site.site),
                    site.mode.as_deref(),
                    &site.stats,
                    elapsed_ns,
                );
                let pid = site.pid.map_or(String::new(), |p| p.to_string());
                push_line(&mut out, with_pid(row, pid));
            }
        }
    }
    out
}

fn header() -> Vec<String> {
    let mut cols: Vec<String> = NAME_COLUMNS
        .iter()
        .chain(&["instances"])
        .chain(COUNT_COLUMNS)
        .map(|c| c.to_string())
        .collect();
    for dist in ["hold", "wait"] {
        cols.extend(DIST_PARTS.iter().map(|p| format!("{dist}_{p}")));
    }
    cols.extend(WAITQUEUE_COLUMNS.iter().map(|c| c.to_string()));
    cols.extend(DIST_PARTS.iter().map(|p| format!("wake_latency_{p}")));
    cols
}

/// One row; UTIL is over a window of `elapsed_ns`.
fn lock_row(
    lock: &LockStats,
    site: Option<&str>,
    mode: Option<&str>,
    s: &Stats,
    elapsed_ns: u64,
) -> Vec<String> {
    let mut row = vec![
        if site.is_some() { "site" } else { "lock" }.to_string(),
        lock.id.clone(),
        lock.name().to_string(),
        lock.kind.as_str().to_string(),
        lock.parent.clone().unwrap_or_default(),
        site.unwrap_or_default().to_string(),
        mode.unwrap_or_default().to_string(),
        lock.instances.to_string(),
    ];
    row.extend(
        [
            s.acquisitions,
            s.nowait,
            s.contended,
            s.rejected,
            s.spins,
            s.sleeps,
            s.bounces,
        ]
        .map(|n| n.to_string()),
    );
    row.push(csv_float(s.con_pct()));
    row.push(csv_float(s.util_pct(elapsed_ns)));
    push_dist(&mut row, &s.hold_ns);
    push_dist(&mut row, &s.wait_ns);
    row.extend(
        [
            s.waits,
            s.wake_calls,
            s.wakeups,
            s.spurious_wakeups,
            s.exclusive_wakeups,
            s.max_waiters,
        ]
        .map(|n| n.to_string()),
    );
    push_dist(&mut row, &s.wake_latency_ns);
    row
}

fn push_dist(row: &mut Vec<String>, d: &Dist) {
    row.extend(
        [
            d.count,
            d.total,
            d.min,
            d.mean(),
            d.p50(),
            d.p90(),
            d.p99(),
            d.max,
        ]
        .map(|n| n.to_string()),
    );
}

fn push_line(out: &mut String, fields: Vec<String>) {
    for (i, f) in fields.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str(&csv_field(f));
    }
    out.push('\n');
}

/// One CSV field, quoted when it holds a comma, quote, CR or LF.
pub(crate) fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// A float with two decimals, or empty when it is not finite.
pub(crate) fn csv_float(v: f64) -> String {
    if v.is_finite() {
        format!("{v:.2}")
    } else {
        String::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_are_quoted_only_when_needed() {
        assert_eq!(csv_field("plain"), "plain");
        assert_eq!(csv_field("a,b"), "\"a,b\"");
        assert_eq!(csv_field("say \"hi\""), "\"say \"\"hi\"\"\"");
        assert_eq!(csv_field("two\nlines"), "\"two\nlines\"");
    }

    #[test]
    fn header_has_one_name_per_value() {
        let lock = LockStats {
            id: "x".into(),
            display_name: None,
            kind: crate::LockKind::Mutex,
            created_at: String::new(),
            instances: 1,
            parent: None,
            total: Stats::default(),
            sites: Vec::new(),
            holders: Vec::new(),
        };
        assert_eq!(
            header().len(),
            lock_row(&lock, None, None, &lock.total, 0).len()
        );
    }
}
