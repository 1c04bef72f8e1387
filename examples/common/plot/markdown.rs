//! The measured numbers as Markdown tables, next to the seeds' numbers,
//! for pasting into `docs/results.md` after a new run.

use std::fmt::Write as _;

use crate::report::{distinct, fixed, Report};
use crate::{bkl, epoll, herd, keyed, pipe};

use super::SEED_HERD_SMP;

/// A Markdown table: a header line, its rule, a line per row.
fn table(headers: &[&str], rows: impl IntoIterator<Item = Vec<String>>) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "| {} |", headers.join(" | "));
    let _ = writeln!(out, "|{}", "---|".repeat(headers.len()));
    for r in rows {
        let _ = writeln!(out, "| {} |", r.join(" | "));
    }
    out
}

/// A column: its header, and the cell it makes of a row.
type Column<'a, R> = (&'a str, fn(&R) -> String);

/// A table with a line per row of `rows`, a cell per column.
fn columns<R>(rows: &[R], cols: &[Column<'_, R>]) -> String {
    let headers: Vec<&str> = cols.iter().map(|(h, _)| *h).collect();
    table(
        &headers,
        rows.iter()
            .map(|r| cols.iter().map(|(_, cell)| cell(r)).collect()),
    )
}

/// A percentage cell.
fn pct(x: f64, digits: usize) -> String {
    format!("{}%", fixed(x, digits))
}

/// Every run's figure, comma-separated.
fn each_run(xs: &[f64], digits: usize) -> String {
    xs.iter()
        .map(|x| fixed(*x, digits))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Seconds per 10,000 connections, with the seed's SMP numbers.
pub fn herd(report: &Report<herd::Results>) -> String {
    let r = &report.results;
    let sleepers = distinct(r.rows.iter().map(|row| row.sleepers));
    let mut rows = Vec::new();
    for n in sleepers {
        let seed = SEED_HERD_SMP.iter().find(|s| s.0 == n as f64);
        let mut cells = vec![n.to_string()];
        cells.push(seed.map_or("".into(), |s| format!("{} / {}", s.1, s.2)));
        for v in herd::Variant::ALL {
            cells.push(r.get(v, n).map_or("-".into(), |row| {
                fixed(row.us_per_connection * 10_000.0 / 1e6, 2)
            }));
        }
        for v in herd::Variant::ALL {
            cells.push(
                r.get(v, n)
                    .map_or("-".into(), |row| fixed(row.spurious_per_connection, 0)),
            );
        }
        cells.push(
            r.get(herd::Variant::WakeAll, n)
                .map_or("-".into(), |row| row.connections.to_string()),
        );
        rows.push(cells);
    }
    table(
        &[
            "servers",
            "original SMP s (unpatched / patched)",
            "ours wake-all s",
            "ours FIFO s",
            "ours LIFO s",
            "spurious/conn all",
            "FIFO",
            "LIFO",
            "wake-all conns run",
        ],
        rows,
    )
}

/// Round-trip latency per placement.
pub fn keyed(report: &Report<keyed::Results>) -> String {
    columns(
        &report.results.rows,
        &[
            ("placement", |r| r.placement.to_string()),
            ("wakeups", |r| r.variant.to_string()),
            ("RTT p50 µs", |r| fixed(r.rtt_p50_us, 1)),
            ("mean µs", |r| fixed(r.rtt_mean_us, 1)),
            ("p99 µs", |r| fixed(r.rtt_p99_us, 0)),
            ("wakeups/RT", |r| fixed(r.wakeups_per_round_trip, 2)),
            ("spurious/RT", |r| fixed(r.spurious_per_round_trip, 2)),
            ("pinned", |r| if r.pinned { "yes" } else { "no" }.into()),
        ],
    )
}

/// Pipe times next to the seed's.
pub fn pipe(report: &Report<pipe::Results>) -> String {
    columns(
        &report.results.rows,
        &[
            ("guard", |r| r.variant.to_string()),
            ("original s", |r| r.variant.seed_seconds().to_string()),
            ("ours s", |r| fixed(r.seconds, 3)),
            ("guard CON", |r| pct(r.guard_con_pct, 2)),
            ("guard sleeps", |r| r.guard_sleeps.to_string()),
            ("pipe.sem.lock CON", |r| pct(r.sem_lock_con_pct, 2)),
            ("in order", |r| r.in_order.to_string()),
            ("every run s", |r| each_run(&r.runs_seconds, 3)),
        ],
    )
}

/// Throughput and acquisitions per event.
pub fn epoll(report: &Report<epoll::Results>) -> String {
    columns(
        &report.results.rows,
        &[
            ("variant", |r| r.variant.to_string()),
            ("original hits/s", |r| {
                r.variant.seed_hits_per_sec().to_string()
            }),
            ("ours median", |r| fixed(r.hits_per_sec, 0)),
            ("ours best", |r| fixed(r.best_hits_per_sec, 0)),
            ("every run", |r| each_run(&r.runs_hits_per_sec, 0)),
            ("lock acquisitions", |r| r.lock_acquisitions.to_string()),
            ("per event", |r| fixed(r.acquisitions_per_event, 3)),
            ("sleeps", |r| r.sleeps.to_string()),
        ],
    )
}

/// Requests/s per pool size.
pub fn bkl(report: &Report<bkl::Results>) -> String {
    columns(
        &report.results.rows,
        &[
            ("workers", |r| r.workers.to_string()),
            ("variant", |r| r.variant.to_string()),
            ("req/s", |r| fixed(r.requests_per_sec, 0)),
            ("errors", |r| r.errors.to_string()),
            ("bkl UTIL", |r| pct(r.bkl_util_pct, 1)),
            ("bkl CON", |r| pct(r.bkl_con_pct, 1)),
            ("hold mean µs", |r| {
                fixed(r.bkl_hold_mean_ns as f64 / 1e3, 2)
            }),
            ("top site's share of hold", |r| {
                pct(r.top_site_hold_share_pct, 1)
            }),
        ],
    )
}
