//! The classic Lockmeter text table.
//!
//! ```text
//!  UTIL    CON  HOLD MEAN(MAX)  WAIT MEAN(MAX)  TOTAL  NOWAIT   SPIN  RJECT  NAME
//! 52.1%  58.0%   812ns(45.0us)   12.3us(2.1ms)  22508    9657  12851      0  pipe.sem (semaphore)
//! ```
//!
//! One row per lock, its call sites indented under it, "held by" rows for
//! the sites that made others wait, nested locks indented under their
//! parent, advisories as `  ! ...` lines, and a `*TOTAL*` row. Wait queues
//! have no acquisitions; their rows show the time asleep in WAIT, timed-out
//! waits in RJECT, and a second line with wakeups, spurious wakeups, wake
//! latency, waits and the most waiters queued at once.
//!
//! With self-accounting (`self_cost`), a class whose own lockmeter share of
//! held time passes [`FLAG_SHARE_PCT`] gets `[self N%]` after its name and
//! one footnote line under the table; a budget that lowered a sampling rate
//! adds a footer line saying which. Snapshots without them print as before.

use std::collections::HashMap;
use std::fmt::Write as _;

use super::order::{lock_order, sorted_sites};
use super::TableOptions;
use crate::advice::{advise_lock, Advisory, Thresholds};
use crate::format::{format_count, format_ns, format_pct, sanitize};
use crate::metric::Metric;
use crate::selfcost::{Budget, LockSelfCost, FLAG_SHARE_PCT};
use crate::{percent, Dist, LockKind, LockStats, Snapshot, Stats};

/// The eight numeric columns: one metric each, or a `mean(max)` pair of
/// two. Titles come from the metric table, right-aligned over their cells;
/// NAME follows, left-aligned.
const COLUMNS: [Column; 8] = [
    Column::One(Metric::Util),
    Column::One(Metric::Con),
    Column::Pair(Metric::HoldMean, Metric::HoldMax),
    Column::Pair(Metric::WaitMean, Metric::WaitMax),
    Column::One(Metric::Acquisitions),
    Column::One(Metric::Nowait),
    Column::One(Metric::Contended),
    Column::One(Metric::Rejected),
];
/// Columns holding a `mean(max)` pair.
const PAIR_COLUMNS: [usize; 2] = [2, 3];

/// A column of the text table.
#[derive(Clone, Copy)]
enum Column {
    One(Metric),
    /// A distribution's mean, and its max in parentheses.
    Pair(Metric, Metric),
}

impl Column {
    /// `UTIL`, `HOLD MEAN(MAX)`.
    fn title(self) -> String {
        match self {
            Column::One(m) => m.def().title.to_string(),
            Column::Pair(mean, max) => {
                let max = max.def().title.rsplit(' ').next().unwrap_or("MAX");
                format!("{}({max})", mean.def().title)
            }
        }
    }
}

/// The title of the process column of a merged table.
const PID_TITLE: &str = "PID";

impl Line {
    /// A row's cells, process and NAME text; `None` for other lines.
    fn row(&self) -> Option<(&[Cell; 8], Option<u32>, &str)> {
        match self {
            Line::Row(cells, name) => Some((cells, None, name)),
            Line::Site(cells, pid, name) => Some((cells, *pid, name)),
            _ => None,
        }
    }
}

/// Spaces between columns.
const GAP: &str = "  ";
/// Extra indentation of the NAME cell per nesting level.
const NEST_INDENT: usize = 4;

/// The snapshot as a Lockmeter table; see the module doc for the layout.
///
/// The `*TOTAL*` row sums every lock that passed the filter (not only the
/// `top` shown), wait queues apart: their wakeups are summed on a line of
/// their own. Output is deterministic for a given snapshot and options.
pub fn text_table(snap: &Snapshot, opts: &TableOptions) -> String {
    text_table_with(snap, opts, &Thresholds::default())
}

/// [`text_table`] with advisories judged under `thresholds`.
pub fn text_table_with(snap: &Snapshot, opts: &TableOptions, thresholds: &Thresholds) -> String {
    let (order, visible) = lock_order(snap, opts);
    let flags = SelfFlags::of(snap);
    let mut lines = Vec::new();
    let mut flagged = false;
    for &(i, depth) in &order {
        if let Some(lock) = snap.locks.get(i) {
            let own = flags.flag(lock);
            flagged |= own.is_some();
            push_lock(
                &mut lines,
                lock,
                depth,
                snap.window.elapsed_ns,
                opts,
                thresholds,
                own,
            );
        }
    }
    let shown: Vec<&LockStats> = snap
        .locks
        .iter()
        .zip(&visible)
        .filter(|(_, v)| **v)
        .map(|(l, _)| l)
        .collect();
    push_total(&mut lines, &shown, snap.window.elapsed_ns);

    let mut out = summary(snap, order.len());
    out.push('\n');
    out.push_str(&layout(&lines));
    if snap.locks.is_empty() {
        out.push_str("(no instrumented lock was used in this window)\n");
    }
    if flagged {
        let _ = writeln!(
            out,
            "[self N%]: lockmeter's own work inside the critical section is N% of the lock's \
             held time (over {FLAG_SHARE_PCT}%): part of its UTIL and CON is lockmeter's \
             (docs/performance.md, Self-accounting)"
        );
    }
    if let Some(line) = snap
        .self_cost
        .as_ref()
        .and_then(|sc| sc.budget.as_ref())
        .and_then(budget_line)
    {
        out.push_str(&line);
    }
    out
}

/// Lockmeter's share of each lock class's held time, where self-accounting
/// says it passes [`FLAG_SHARE_PCT`].
struct SelfFlags<'a> {
    shares: HashMap<&'a str, f64>,
}

impl<'a> SelfFlags<'a> {
    fn of(snap: &'a Snapshot) -> SelfFlags<'a> {
        let Some(sc) = snap.self_cost.as_deref() else {
            return SelfFlags {
                shares: HashMap::new(),
            };
        };
        let costs: HashMap<&str, &LockSelfCost> =
            sc.locks.iter().rev().map(|l| (l.id.as_str(), l)).collect();
        let shares = snap
            .locks
            .iter()
            .filter_map(|l| {
                let share = costs.get(l.id.as_str())?.held_pct(l.total.hold_ns.total)?;
                (share > FLAG_SHARE_PCT).then_some((l.id.as_str(), share))
            })
            .collect();
        SelfFlags { shares }
    }

    /// The share to mark `lock`'s row with, if it is flagged.
    fn flag(&self, lock: &LockStats) -> Option<f64> {
        self.shares.get(lock.id.as_str()).copied()
    }
}

/// The footer line of a budget that lowered a rate, or could not be met.
fn budget_line(b: &Budget) -> Option<String> {
    if b.lowered.is_empty() && b.met {
        return None;
    }
    let mut s = format!("budget {}:", format_pct(b.fraction * 100.0));
    for l in &b.lowered {
        let _ = match l.what.as_str() {
            "uncontended_hold_every" => {
                write!(s, " lowered hold sampling 1/{} -> 1/{};", l.from, l.to)
            }
            "stack_rate_ns" => write!(
                s,
                " lowered stack sampling (rate {} -> {});",
                format_ns(l.from),
                format_ns(l.to)
            ),
            other => write!(s, " lowered {} {} -> {};", sanitize(other), l.from, l.to),
        };
    }
    let _ = write!(
        s,
        " estimated cost {} of thread time",
        format_pct(b.estimated_fraction * 100.0)
    );
    if !b.met {
        let _ = write!(
            s,
            " (over budget: exact counts alone cost {})",
            format_pct(b.floor_fraction * 100.0)
        );
    }
    s.push('\n');
    Some(s)
}

/// The line above the table: which process, which window, how trustworthy.
fn summary(snap: &Snapshot, shown: usize) -> String {
    let shown = if shown == snap.locks.len() {
        String::new()
    } else {
        format!(" ({shown} shown)")
    };
    let mut s = super::heading(
        &snap.process,
        snap.window.elapsed_ns,
        &snap.clock,
        snap.locks.len(),
        &shown,
        &snap.sampling,
    );
    if snap.dropped_records > 0 {
        let _ = write!(
            s,
            "  dropped {} records (counts are low)",
            snap.dropped_records
        );
    }
    s.push('\n');
    s
}

/// One cell of a numeric column.
enum Cell {
    Text(String),
    /// `mean(max)`, aligned on the parenthesis across rows.
    Pair(String, String),
}

/// One output line before the columns are measured.
enum Line {
    /// Cells of the eight numeric columns, then the NAME text.
    Row(Box<[Cell; 8]>, String),
    /// A call site's row: like `Row`, with its process in a merged table
    /// (the PID column, shown only when some site has one).
    Site(Box<[Cell; 8]>, Option<u32>, String),
    /// Free text starting at the NAME column, indented by `usize`.
    Note(usize, String),
    /// An advisory, from the left margin.
    Advice(String),
}

/// The rows of one lock; UTIL is over a window of `elapsed_ns`.
fn push_lock(
    lines: &mut Vec<Line>,
    lock: &LockStats,
    depth: usize,
    elapsed_ns: u64,
    opts: &TableOptions,
    thresholds: &Thresholds,
    self_share: Option<f64>,
) {
    let indent = depth.saturating_mul(NEST_INDENT);
    let mut name = format!(
        "{}{} ({}",
        " ".repeat(indent),
        sanitize(lock.name()),
        lock.kind.as_str()
    );
    if lock.instances > 1 {
        let _ = write!(name, ", {} instances", lock.instances);
    }
    name.push(')');
    if let Some(share) = self_share {
        let _ = write!(name, "  [self {}]", format_pct(share));
    }
    lines.push(Line::Row(
        Box::new(cells(lock.kind, &lock.total, elapsed_ns)),
        name,
    ));
    push_waitqueue_note(lines, lock.kind, &lock.total, indent + 2);

    let advice = if opts.advice {
        advise_lock(lock, elapsed_ns, thresholds)
    } else {
        Vec::new()
    };
    let sites = if opts.sites {
        sorted_sites(lock, elapsed_ns, opts)
    } else {
        Vec::new()
    };
    let placed_at_site = |a: &Advisory| {
        a.site
            .as_ref()
            .is_some_and(|s| sites.iter().any(|x| &x.site == s))
    };
    for a in advice.iter().filter(|a| !placed_at_site(a)) {
        lines.push(Line::Advice(sanitize(&a.message)));
    }

    let mut advised_sites: Vec<&str> = Vec::new();
    for site in &sites {
        let mut text = format!("{}{}", " ".repeat(indent + 2), sanitize(&site.site));
        if let Some(mode) = &site.mode {
            let _ = write!(text, " ({})", sanitize(mode));
        }
        lines.push(Line::Site(
            Box::new(cells(lock.kind, &site.stats, elapsed_ns)),
            site.pid,
            text,
        ));
        // A lone site repeats the lock's numbers; its second line would too.
        if lock.sites.len() > 1 {
            push_waitqueue_note(lines, lock.kind, &site.stats, indent + 4);
        }
        // An advisory names a site, not a mode: show it once, under the
        // first row of that site.
        if !advised_sites.contains(&site.site.as_str()) {
            advised_sites.push(&site.site);
            for a in advice
                .iter()
                .filter(|a| a.site.as_deref() == Some(site.site.as_str()))
            {
                lines.push(Line::Advice(sanitize(&a.message)));
            }
        }
    }

    if opts.holders {
        let mut holders: Vec<_> = lock.holders.iter().collect();
        holders.sort_by(|a, b| {
            b.wait_ns_total
                .cmp(&a.wait_ns_total)
                .then(b.contended.cmp(&a.contended))
                .then(a.site.cmp(&b.site))
        });
        for h in holders {
            let text = format!(
                "held by {}: contended {}, waited {}",
                sanitize(&h.site),
                h.contended,
                format_ns(h.wait_ns_total)
            );
            lines.push(Line::Note(indent + 2, text));
        }
    }
}

/// The numeric cells of a lock or site row. Wait queues without
/// acquisitions show only WAIT (time asleep) and RJECT (timed-out waits).
fn cells(kind: LockKind, s: &Stats, elapsed_ns: u64) -> [Cell; 8] {
    let dash = || Cell::Text("-".to_string());
    let wait = pair(&s.wait_ns);
    let rject = Cell::Text(format_count(s.rejected));
    if kind.waits_and_wakes() && s.acquisitions == 0 {
        return [dash(), dash(), dash(), wait, dash(), dash(), dash(), rject];
    }
    [
        Cell::Text(format_pct(s.util_pct(elapsed_ns))),
        Cell::Text(format_pct(s.con_pct())),
        pair(&s.hold_ns),
        wait,
        Cell::Text(format_count(s.acquisitions)),
        Cell::Text(format_count(s.nowait)),
        Cell::Text(format_count(s.contended)),
        rject,
    ]
}

/// `mean(max)` of a distribution, or `-` when it saw nothing.
fn pair(d: &Dist) -> Cell {
    if d.count == 0 && d.max == 0 {
        Cell::Text("-".to_string())
    } else {
        Cell::Pair(format_ns(d.mean()), format_ns(d.max))
    }
}

/// Whether any wait-queue field is set.
fn has_waitqueue_stats(s: &Stats) -> bool {
    s.waits > 0 || s.wake_calls > 0 || s.wakeups > 0 || s.spurious_wakeups > 0 || s.max_waiters > 0
}

/// The second line of a wait-queue row.
fn push_waitqueue_note(lines: &mut Vec<Line>, kind: LockKind, s: &Stats, indent: usize) {
    if kind.waits_and_wakes() || has_waitqueue_stats(s) {
        lines.push(Line::Note(indent, waitqueue_summary(s)));
    }
}

/// `wakeups 1200 (12.0 per wake call)  spurious 1100 (91.7%)  wake lat
/// 3.2us(45.0us)  waits 100  max waiters 100`.
fn waitqueue_summary(s: &Stats) -> String {
    let per_call = if s.wake_calls == 0 {
        "no wake calls".to_string()
    } else {
        format!(
            "{:.1} per wake call",
            s.wakeups as f64 / s.wake_calls as f64
        )
    };
    let latency = match pair(&s.wake_latency_ns) {
        Cell::Pair(mean, max) => format!("{mean}({max})"),
        Cell::Text(t) => t,
    };
    // Wake-ups are counted where the wake call is made and spurious ones
    // where the waiter waits, so a waiter's own row has no share to show.
    let spurious_share = if s.wakeups == 0 {
        String::new()
    } else {
        format!(" ({})", format_pct(percent(s.spurious_wakeups, s.wakeups)))
    };
    format!(
        "wakeups {} ({per_call})  spurious {}{spurious_share}  wake lat {latency}  waits {}  max waiters {}",
        s.wakeups, s.spurious_wakeups, s.waits, s.max_waiters
    )
}

/// The `*TOTAL*` row over lock kinds, and a wait-queue line over wait
/// queues. Sums saturate rather than overflow.
fn push_total(lines: &mut Vec<Line>, locks: &[&LockStats], elapsed_ns: u64) {
    let mut acq = Stats::default();
    let mut wq = Stats::default();
    let mut any_wq = false;
    for lock in locks {
        if lock.kind.waits_and_wakes() {
            any_wq = true;
            wq.merge(&lock.total);
        } else {
            acq.merge(&lock.total);
        }
    }
    lines.push(Line::Row(
        Box::new(cells(LockKind::Mutex, &acq, elapsed_ns)),
        "*TOTAL*".to_string(),
    ));
    if any_wq {
        lines.push(Line::Note(
            2,
            format!("wait queues: {}", waitqueue_summary(&wq)),
        ));
    }
}

/// Measures the columns and writes every line.
fn layout(lines: &[Line]) -> String {
    let titles = COLUMNS.map(Column::title);
    let mut widths = titles.clone().map(|t| t.len());
    let mut pair_widths = [(0usize, 0usize); 2];
    for line in lines {
        let Some((cells, _, _)) = line.row() else {
            continue;
        };
        for (c, cell) in cells.iter().enumerate() {
            if let Cell::Pair(mean, max) = cell {
                let k = usize::from(c == PAIR_COLUMNS[1]);
                pair_widths[k].0 = pair_widths[k].0.max(mean.len());
                pair_widths[k].1 = pair_widths[k].1.max(max.len());
            }
        }
    }
    for (k, &c) in PAIR_COLUMNS.iter().enumerate() {
        let (mw, xw) = pair_widths[k];
        if mw > 0 {
            widths[c] = widths[c].max(mw + xw + 2);
        }
    }
    for line in lines {
        let Some((cells, _, _)) = line.row() else {
            continue;
        };
        for (c, cell) in cells.iter().enumerate() {
            if let Cell::Text(t) = cell {
                widths[c] = widths[c].max(t.chars().count());
            }
        }
    }
    // The PID column, between the numbers and NAME, only in a table
    // merged over processes: one process's table prints as it always did.
    let pid_width = lines
        .iter()
        .filter_map(|l| l.row().and_then(|(_, pid, _)| pid))
        .map(|pid| pid.to_string().len().max(PID_TITLE.len()))
        .max();
    let pid_col = pid_width.map_or(0, |w| w + GAP.len());
    let name_col: usize = widths.iter().map(|w| w + GAP.len()).sum::<usize>() + pid_col;

    let mut out = String::new();
    let titles: Vec<String> = titles
        .iter()
        .zip(&widths)
        .map(|(t, w)| format!("{t:>w$}"))
        .collect();
    let pid_title = pid_width.map_or(String::new(), |w| format!("{PID_TITLE:>w$}{GAP}"));
    let _ = writeln!(out, "{}{GAP}{pid_title}NAME", titles.join(GAP));
    for line in lines {
        match line {
            Line::Row(..) | Line::Site(..) => {
                let Some((cells, pid, name)) = line.row() else {
                    continue;
                };
                for (c, cell) in cells.iter().enumerate() {
                    let text = match cell {
                        Cell::Text(t) => t.clone(),
                        Cell::Pair(mean, max) => {
                            let (mw, xw) = pair_widths[usize::from(c == PAIR_COLUMNS[1])];
                            format!("{mean:>mw$}({max:>xw$})")
                        }
                    };
                    let _ = write!(out, "{text:>w$}{GAP}", w = widths[c]);
                }
                if let Some(w) = pid_width {
                    let pid = pid.map_or(String::new(), |p| p.to_string());
                    let _ = write!(out, "{pid:>w$}{GAP}");
                }
                out.push_str(name);
            }
            Line::Note(indent, text) => {
                let _ = write!(out, "{:pad$}{text}", "", pad = name_col + indent);
            }
            Line::Advice(text) => {
                let _ = write!(out, "  ! {text}");
            }
        }
        out.push('\n');
    }
    out
}
