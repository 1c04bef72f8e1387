//! The metric table: every number a lock row can be sorted by, compared
//! on, or shown in a column, in one place.
//!
//! Sorting ([`crate::render::SortKey`]), the diff ([`crate::diff`], its
//! text, CSV and JSON), the text table's titles and the viewer's columns
//! all read [`Metric::def`]. Adding a metric is one row in the
//! `metric_table!` invocation below: its name, title, unit, how to compute
//! it, whether it sorts and diffs, and where the viewer shows it.
//!
//! The row order is the display order of the diff and of the sort keys.

use crate::Stats;

/// How a metric's values print.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Unit {
    /// A percentage, 0..=100 (UTIL of a class with several instances may
    /// exceed 100).
    Pct,
    /// Nanoseconds.
    Ns,
    /// A count of events.
    Count,
    /// Events per second of window.
    PerSec,
    /// A plain ratio of two counts.
    Ratio,
}

/// Which rows of the viewer's table a column has values for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Applies {
    /// Every row.
    All,
    /// Locks that are held: not wait queues (nothing holds a queue).
    Held,
    /// Wait queues only; the column is shown only when the snapshot has one.
    Waitqueue,
}

/// Where the viewer's table shows a metric.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Screen {
    /// Left-to-right position among the viewer's columns.
    pub pos: u8,
    /// The label over a group of columns (`HOLD`, `WAIT`, `WAKE`), or empty.
    pub group: &'static str,
    /// The column's own short title.
    pub title: &'static str,
    /// How early the column goes when the terminal is narrow: 0 never,
    /// higher earlier.
    pub drop: u8,
    /// Which rows have a value in this column.
    pub applies: Applies,
}

/// One row of the metric table.
#[derive(Debug, Clone, Copy)]
pub struct MetricDef {
    /// Which metric this is.
    pub metric: Metric,
    /// The field name in a diff's JSON and the diff CSV's column prefix,
    /// e.g. `hold_p99_ns`.
    pub name: &'static str,
    /// The sort key name (`--sort`), e.g. `hold_p99`; `None` if the metric
    /// does not sort.
    pub sort: Option<&'static str>,
    /// The title in sort hints and in the diff report, e.g. `HOLD P99`.
    pub title: &'static str,
    /// How values print.
    pub unit: Unit,
    /// The value in a row's stats over a window of `elapsed_ns`; `None`
    /// where undefined (a rate over an empty window).
    pub value: fn(&Stats, u64) -> Option<f64>,
    /// Whether a diff compares it.
    pub diffable: bool,
    /// Where the viewer's table shows it, if it does.
    pub screen: Option<Screen>,
}

impl MetricDef {
    /// Whether rows can be sorted by this metric.
    pub fn sortable(&self) -> bool {
        self.sort.is_some()
    }
}

/// Declares [`Metric`] and its table from one row per metric.
macro_rules! metric_table {
    ($( $(#[$doc:meta])* $variant:ident => { $($field:ident : $val:expr),* $(,)? } )*) => {
        /// A metric of a lock or call-site row; see [`Metric::def`].
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum Metric {
            $( $(#[$doc])* $variant, )*
        }

        /// The table, in [`Metric`] order.
        const ROWS: &[MetricDef] = &[
            $( MetricDef { metric: Metric::$variant, $($field: $val),* }, )*
        ];

        impl Metric {
            /// Every metric, in display order.
            pub const ALL: &'static [Metric] = &[ $( Metric::$variant ),* ];
        }
    };
}

const fn screen(pos: u8, group: &'static str, title: &'static str, drop: u8) -> Option<Screen> {
    Some(Screen {
        pos,
        group,
        title,
        drop,
        applies: Applies::All,
    })
}

const fn held(pos: u8, group: &'static str, title: &'static str, drop: u8) -> Option<Screen> {
    Some(Screen {
        pos,
        group,
        title,
        drop,
        applies: Applies::Held,
    })
}

const fn wake(pos: u8, title: &'static str, drop: u8) -> Option<Screen> {
    Some(Screen {
        pos,
        group: "WAKE",
        title,
        drop,
        applies: Applies::Waitqueue,
    })
}

/// `n` per second of a window of `elapsed_ns`; `None` for an empty window.
pub(crate) fn per_sec(n: u64, elapsed_ns: u64) -> Option<f64> {
    (elapsed_ns > 0).then(|| n as f64 * 1e9 / elapsed_ns as f64)
}

metric_table! {
    /// UTIL: share of the window the lock was held.
    Util => { name: "util_pct", sort: Some("util"), title: "UTIL", unit: Unit::Pct,
        value: |s, ns| Some(s.util_pct(ns)), diffable: true, screen: held(1, "", "UTIL%", 0) }
    /// CON: share of acquisitions that had to wait.
    Con => { name: "con_pct", sort: Some("con"), title: "CON", unit: Unit::Pct,
        value: |s, _| Some(s.con_pct()), diffable: true, screen: screen(0, "", "CON%", 0) }
    /// Mean hold time.
    HoldMean => { name: "hold_mean_ns", sort: Some("hold"), title: "HOLD MEAN", unit: Unit::Ns,
        value: |s, _| Some(s.hold_ns.mean() as f64), diffable: true, screen: held(2, "HOLD", "mean", 0) }
    /// 99th percentile hold time.
    HoldP99 => { name: "hold_p99_ns", sort: Some("hold_p99"), title: "HOLD P99", unit: Unit::Ns,
        value: |s, _| Some(s.hold_ns.p99() as f64), diffable: true, screen: held(3, "HOLD", "p99", 6) }
    /// Longest hold.
    HoldMax => { name: "hold_max_ns", sort: Some("hold_max"), title: "HOLD MAX", unit: Unit::Ns,
        value: |s, _| Some(s.hold_ns.max as f64), diffable: true, screen: held(4, "HOLD", "max", 3) }
    /// Mean wait (wait queues: mean time asleep).
    WaitMean => { name: "wait_mean_ns", sort: Some("wait"), title: "WAIT MEAN", unit: Unit::Ns,
        value: |s, _| Some(s.wait_ns.mean() as f64), diffable: true, screen: screen(5, "WAIT", "mean", 0) }
    /// 99th percentile wait.
    WaitP99 => { name: "wait_p99_ns", sort: Some("wait_p99"), title: "WAIT P99", unit: Unit::Ns,
        value: |s, _| Some(s.wait_ns.p99() as f64), diffable: true, screen: screen(6, "WAIT", "p99", 6) }
    /// Longest wait.
    WaitMax => { name: "wait_max_ns", sort: Some("wait_max"), title: "WAIT MAX", unit: Unit::Ns,
        value: |s, _| Some(s.wait_ns.max as f64), diffable: true, screen: screen(7, "WAIT", "max", 3) }
    /// TOTAL: acquisitions.
    Acquisitions => { name: "acquisitions", sort: Some("total"), title: "TOTAL", unit: Unit::Count,
        value: |s, _| Some(s.acquisitions as f64), diffable: true, screen: screen(8, "", "TOTAL", 0) }
    /// TOTAL per second of window (two windows rarely have one length).
    AcquisitionsPerSec => { name: "acquisitions_per_sec", sort: None, title: "TOTAL/s",
        unit: Unit::PerSec, value: |s, ns| per_sec(s.acquisitions, ns), diffable: true,
        screen: None }
    /// NOWAIT: acquisitions at the first attempt.
    Nowait => { name: "nowait", sort: Some("nowait"), title: "NOWAIT", unit: Unit::Count,
        value: |s, _| Some(s.nowait as f64), diffable: true, screen: screen(9, "", "NOWAIT", 5) }
    /// SPIN: contended acquisitions.
    Contended => { name: "contended", sort: Some("spin"), title: "SPIN", unit: Unit::Count,
        value: |s, _| Some(s.contended as f64), diffable: true, screen: screen(10, "", "SPIN", 0) }
    /// RJECT: failed try-locks and timed-out waits.
    Rejected => { name: "rejected", sort: Some("rject"), title: "RJECT", unit: Unit::Count,
        value: |s, _| Some(s.rejected as f64), diffable: true, screen: screen(11, "", "RJECT", 5) }
    /// Wait queues: waiters woken.
    Wakeups => { name: "wakeups", sort: Some("wakeups"), title: "WAKEUPS", unit: Unit::Count,
        value: |s, _| Some(s.wakeups as f64), diffable: true, screen: wake(12, "ups", 2) }
    /// Wait queues: waiters woken per wake call.
    WakeupsPerCall => { name: "wakeups_per_call", sort: None, title: "WAKEUPS/call",
        unit: Unit::Ratio, diffable: true, screen: None,
        value: |s, _| (s.wake_calls > 0).then(|| s.wakeups as f64 / s.wake_calls as f64) }
    /// Wait queues: woken waiters that slept again.
    Spurious => { name: "spurious_wakeups", sort: Some("spurious"), title: "SPURIOUS",
        unit: Unit::Count, value: |s, _| Some(s.spurious_wakeups as f64), diffable: true,
        screen: wake(13, "spur", 2) }
    /// Wait queues: mean time from wake call to the waiter running.
    WakeLatencyMean => { name: "wake_latency_mean_ns", sort: Some("wake_latency"),
        title: "WAKE LAT", unit: Unit::Ns, value: |s, _| Some(s.wake_latency_ns.mean() as f64),
        diffable: true, screen: wake(14, "lat", 2) }
}

impl Metric {
    /// This metric's row of the table.
    pub fn def(self) -> &'static MetricDef {
        &ROWS[self as usize]
    }

    /// The value in `s` over a window of `elapsed_ns`.
    pub fn value(self, s: &Stats, elapsed_ns: u64) -> Option<f64> {
        (self.def().value)(s, elapsed_ns)
    }

    /// The metrics a diff compares, in display order.
    pub fn diffable() -> impl Iterator<Item = Metric> {
        Metric::ALL.iter().copied().filter(|m| m.def().diffable)
    }

    /// The metrics the viewer's table shows, left to right.
    pub fn on_screen() -> Vec<(Metric, Screen)> {
        let mut cols: Vec<(Metric, Screen)> = Metric::ALL
            .iter()
            .filter_map(|&m| m.def().screen.map(|s| (m, s)))
            .collect();
        cols.sort_by_key(|(_, s)| s.pos);
        cols
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_are_in_variant_order_with_unique_names() {
        for (i, m) in Metric::ALL.iter().enumerate() {
            assert_eq!(ROWS[i].metric, *m);
        }
        let mut names: Vec<&str> = ROWS.iter().map(|r| r.name).collect();
        names.extend(ROWS.iter().filter_map(|r| r.sort));
        let n = names.len();
        names.sort_unstable();
        names.dedup();
        // A sort key may equal its own metric's name (`nowait`, `wakeups`).
        assert!(n - names.len() <= ROWS.len(), "{names:?}");
        let mut pos: Vec<u8> = ROWS
            .iter()
            .filter_map(|r| r.screen)
            .map(|s| s.pos)
            .collect();
        let shown = pos.len();
        pos.sort_unstable();
        pos.dedup();
        assert_eq!(pos.len(), shown, "two screen columns share a position");
    }

    #[test]
    fn rates_are_undefined_over_an_empty_window() {
        let s = Stats {
            acquisitions: 10,
            ..Stats::default()
        };
        assert_eq!(Metric::AcquisitionsPerSec.value(&s, 0), None);
        assert_eq!(
            Metric::AcquisitionsPerSec.value(&s, 2_000_000_000),
            Some(5.0)
        );
        assert_eq!(Metric::WakeupsPerCall.value(&s, 1), None);
    }
}
