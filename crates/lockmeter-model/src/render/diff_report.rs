//! The text and CSV reports of a [`SnapshotDiff`], re-exported from
//! [`crate::diff`].

use std::fmt::Write as _;

use super::csv::{csv_field, csv_float, NAME_COLUMNS};
use super::order::{needle, order_tree, TreeNode};
use super::TableOptions;
use crate::diff::{
    AdviceStatus, Change, LockDiff, Presence, SideInfo, SiteDiff, SnapshotDiff, StatsDiff,
};
use crate::format::{format_ns, format_pct, sanitize};
use crate::metric::{Metric, Unit};

/// Lock diffs in display order with their depth, like the table:
/// filtered, sorted by the larger of the two values of `opts.sort`,
/// nested locks under their parent, cut to `opts.top`.
fn ordered<'a>(d: &'a SnapshotDiff, opts: &TableOptions) -> Vec<(&'a LockDiff, usize)> {
    let needle = needle(opts);
    let metric = opts.sort.metric();
    let nodes: Vec<TreeNode<'_>> = d
        .locks
        .iter()
        .map(|l| {
            let key = metric.map_or(0.0, |m| larger(l.total.get(m)));
            let sites = l.sites.iter().map(|s| s.site.as_str());
            TreeNode::new(&l.id, l.parent.as_deref(), &l.name, key)
                .filtered(needle.as_deref(), sites)
        })
        .collect();
    let (order, _) = order_tree(&nodes, opts);
    order
        .into_iter()
        .filter_map(|(i, depth)| d.locks.get(i).map(|l| (l, depth)))
        .collect()
}

/// How many of `items` equal each of `values`.
fn tally<T: PartialEq, const N: usize>(
    items: impl Iterator<Item = T>,
    values: [T; N],
) -> [usize; N] {
    let mut counts = [0; N];
    for item in items {
        if let Some(i) = values.iter().position(|v| *v == item) {
            counts[i] += 1;
        }
    }
    counts
}

/// The larger side of a change, for sorting.
fn larger(c: &Change) -> f64 {
    match (c.before, c.after) {
        (Some(b), Some(a)) => b.max(a),
        (Some(v), None) | (None, Some(v)) => v,
        (None, None) => 0.0,
    }
}

/// Site diffs sorted like [`crate::render::sorted_sites`].
fn ordered_sites<'a>(l: &'a LockDiff, opts: &TableOptions) -> Vec<&'a SiteDiff> {
    let metric = opts.sort.metric();
    let mut sites: Vec<&SiteDiff> = l.sites.iter().collect();
    sites.sort_by(|a, b| {
        let by_name = a.site.cmp(&b.site).then_with(|| a.mode.cmp(&b.mode));
        let o = match metric {
            Some(m) => larger(a.stats.get(m)).total_cmp(&larger(b.stats.get(m))),
            None => by_name,
        };
        let o = if opts.descending { o.reverse() } else { o };
        o.then(by_name)
    });
    sites
}

/// One line of the text diff before the columns are measured.
enum Line {
    /// Free text (a lock or site heading, an advisory).
    Text(String),
    /// `label  before -> after  change`.
    Metric {
        label: String,
        before: String,
        after: String,
        change: String,
    },
}

/// The diff as a side-by-side text report: a header naming both sides,
/// then per lock (and per site, if `opts.sites`) one line per metric that
/// is non-zero on either side: `before -> after  change (relative)`. A
/// removed row reads `58.0% -> gone`, an added one `new -> 12.0%`.
/// Advisories that were resolved, remain or are new follow each lock
/// when `opts.advice` is set.
pub fn diff_text(d: &SnapshotDiff, opts: &TableOptions) -> String {
    let mut out = String::new();
    for (tag, side) in [("before:", &d.before), ("after: ", &d.after)] {
        let _ = writeln!(out, "{tag} {}", side_summary(side));
    }
    let _ = writeln!(out, "{}", totals_line(d));
    let [both, removed, added] = tally(
        d.locks.iter().map(|l| l.presence),
        [Presence::Both, Presence::Removed, Presence::Added],
    );
    let _ = writeln!(
        out,
        "locks: {both} in both, {removed} removed, {added} added"
    );
    if d.before.clock != d.after.clock {
        let _ = writeln!(
            out,
            "note: the clocks differ; durations may not compare exactly"
        );
    }
    if opts.advice {
        let [resolved, remain, new] = tally(
            d.advice.iter().map(|a| a.status),
            [
                AdviceStatus::Resolved,
                AdviceStatus::Remains,
                AdviceStatus::New,
            ],
        );
        let _ = writeln!(
            out,
            "advisories: {resolved} resolved, {remain} remain, {new} new"
        );
    }

    let mut lines = Vec::new();
    for (lock, depth) in ordered(d, opts) {
        let indent = " ".repeat(depth.saturating_mul(4));
        let mut head = format!("{indent}{} ({})", sanitize(&lock.name), lock.kind.as_str());
        if lock.presence != Presence::Both {
            let _ = write!(head, "  [{}]", lock.presence.as_str());
        }
        lines.push(Line::Text(String::new()));
        lines.push(Line::Text(head));
        push_metrics(
            &mut lines,
            &format!("{indent}  "),
            &lock.total,
            lock.presence,
        );
        if opts.advice {
            for a in d.advice.iter().filter(|a| a.advisory.lock_id == lock.id) {
                let msg = sanitize(&a.advisory.message);
                lines.push(Line::Text(format!("  ! {}: {msg}", a.status.as_str())));
            }
        }
        if opts.sites {
            for site in ordered_sites(lock, opts) {
                let mut head = format!("{indent}  {}", sanitize(&site.site));
                if let Some(mode) = &site.mode {
                    let _ = write!(head, " ({})", sanitize(mode));
                }
                if site.presence != Presence::Both {
                    let _ = write!(head, "  [{}]", site.presence.as_str());
                }
                // A lone call site on both sides repeats the lock's numbers.
                if lock.sites.len() == 1 && site.presence == lock.presence {
                    head.push_str("  (the only call site)");
                    lines.push(Line::Text(head));
                    continue;
                }
                lines.push(Line::Text(head));
                push_metrics(
                    &mut lines,
                    &format!("{indent}    "),
                    &site.stats,
                    site.presence,
                );
            }
        }
    }
    out.push_str(&layout(&lines));
    out
}

/// `name (pid N)  window 2.00s  clock tsc  4 lock classes`.
fn side_summary(s: &SideInfo) -> String {
    let mut text = super::heading(
        &s.process,
        s.window.elapsed_ns,
        &s.clock,
        s.locks,
        "",
        &s.sampling,
    );
    if s.dropped_records > 0 {
        let _ = write!(text, "  dropped {} records", s.dropped_records);
    }
    text
}

/// All acquisitions, and per second, before and after.
fn totals_line(d: &SnapshotDiff) -> String {
    let count = Change::between(
        Some(d.before.acquisitions as f64),
        Some(d.after.acquisitions as f64),
    );
    let rate = Change::between(d.before.acquisitions_per_sec, d.after.acquisitions_per_sec);
    let (rb, ra) = (
        show(Unit::PerSec, rate.before),
        show(Unit::PerSec, rate.after),
    );
    format!(
        "all acquisitions: {} -> {} {}, per second {rb} -> {ra} {}",
        d.before.acquisitions,
        d.after.acquisitions,
        change_text(Unit::Count, &count),
        change_text(Unit::PerSec, &rate)
    )
}

fn push_metrics(lines: &mut Vec<Line>, indent: &str, s: &StatsDiff, presence: Presence) {
    for m in Metric::diffable() {
        let c = s.get(m);
        if !c.is_nonzero() {
            continue;
        }
        let unit = m.def().unit;
        let (before, after, change) = match presence {
            Presence::Removed => (show(unit, c.before), "gone".to_string(), String::new()),
            Presence::Added => ("new".to_string(), show(unit, c.after), String::new()),
            Presence::Both => (
                show(unit, c.before),
                show(unit, c.after),
                change_text(unit, c),
            ),
        };
        lines.push(Line::Metric {
            label: format!("{indent}{}", m.def().title),
            before,
            after,
            change,
        });
    }
}

/// A value in its unit, or `-` when undefined.
fn show(unit: Unit, v: Option<f64>) -> String {
    let Some(v) = v.filter(|v| v.is_finite()) else {
        return "-".to_string();
    };
    match unit {
        Unit::Pct => format_pct(v),
        Unit::Ns => format_ns(v.max(0.0) as u64),
        Unit::Count => format!("{v:.0}"),
        Unit::PerSec => format!("{v:.1}/s"),
        Unit::Ratio => format!("{v:.2}"),
    }
}

/// `(-58.0 pts, -100.0%)`, `(+1.2us, +40.0%)`, `(no change)`.
fn change_text(unit: Unit, c: &Change) -> String {
    let Some(delta) = c.delta.filter(|d| d.is_finite()) else {
        return String::new();
    };
    if delta == 0.0 {
        return "(no change)".to_string();
    }
    let sign = if delta < 0.0 { "-" } else { "+" };
    let mag = delta.abs();
    let abs = match unit {
        Unit::Pct => format!("{sign}{mag:.1} pts"),
        Unit::Ns => format!("{sign}{}", format_ns(mag as u64)),
        Unit::Count => format!("{sign}{mag:.0}"),
        Unit::PerSec => format!("{sign}{mag:.1}/s"),
        Unit::Ratio => format!("{sign}{mag:.2}"),
    };
    match c.delta_pct {
        Some(p) => format!(
            "({abs}, {}{})",
            if p > 0.0 { "+" } else { "" },
            format_pct(p)
        ),
        None => format!("({abs})"),
    }
}

/// Aligns the metric lines: labels left, values right, `->` between.
fn layout(lines: &[Line]) -> String {
    let (mut lw, mut bw, mut aw) = (0, 0, 0);
    for line in lines {
        if let Line::Metric {
            label,
            before,
            after,
            ..
        } = line
        {
            lw = lw.max(label.chars().count());
            bw = bw.max(before.chars().count());
            aw = aw.max(after.chars().count());
        }
    }
    let mut out = String::new();
    for line in lines {
        match line {
            Line::Text(t) => out.push_str(t),
            Line::Metric {
                label,
                before,
                after,
                change,
            } => {
                let _ = write!(out, "{label:<lw$}  {before:>bw$} -> {after:>aw$}");
                if !change.is_empty() {
                    let _ = write!(out, "  {change}");
                }
            }
        }
        out.push('\n');
    }
    out
}

/// The diff as CSV: one row per lock and (if `opts.sites`) per site, in
/// [`diff_text`] order. Columns: `row, lock_id, lock_name, kind, parent,
/// site, mode, presence`, then for every [`Metric`] `<name>_before,
/// <name>_after, <name>_delta, <name>_delta_pct`. Missing values are empty.
pub fn diff_csv(d: &SnapshotDiff, opts: &TableOptions) -> String {
    let mut header: Vec<String> = NAME_COLUMNS
        .iter()
        .chain(&["presence"])
        .map(|c| c.to_string())
        .collect();
    for m in Metric::diffable() {
        for part in ["before", "after", "delta", "delta_pct"] {
            header.push(format!("{}_{part}", m.def().name));
        }
    }
    let mut out = String::new();
    push_csv(&mut out, &header);
    for (lock, _) in ordered(d, opts) {
        let id = |row: &str, site: Option<&SiteDiff>, presence: Presence| {
            vec![
                row.to_string(),
                lock.id.clone(),
                lock.name.clone(),
                lock.kind.as_str().to_string(),
                lock.parent.clone().unwrap_or_default(),
                site.map(|s| s.site.clone()).unwrap_or_default(),
                site.and_then(|s| s.mode.clone()).unwrap_or_default(),
                presence.as_str().to_string(),
            ]
        };
        let mut row = id("lock", None, lock.presence);
        push_changes(&mut row, &lock.total);
        push_csv(&mut out, &row);
        if opts.sites {
            for site in ordered_sites(lock, opts) {
                let mut row = id("site", Some(site), site.presence);
                push_changes(&mut row, &site.stats);
                push_csv(&mut out, &row);
            }
        }
    }
    out
}

fn push_changes(row: &mut Vec<String>, s: &StatsDiff) {
    let num = |v: Option<f64>| v.map(csv_float).unwrap_or_default();
    for m in Metric::diffable() {
        let c = s.get(m);
        row.extend([num(c.before), num(c.after), num(c.delta), num(c.delta_pct)]);
    }
}

fn push_csv(out: &mut String, fields: &[String]) {
    let line: Vec<String> = fields.iter().map(|f| csv_field(f)).collect();
    out.push_str(&line.join(","));
    out.push('\n');
}
