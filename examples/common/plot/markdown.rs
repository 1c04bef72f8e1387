//! The measured numbers as Markdown tables, next to the seeds' numbers,
//! for pasting into `docs/results.md` after a new run.

use std::fmt::Write as _;

use crate::report::{fixed, Report};
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
    let mut sleepers: Vec<usize> = r.rows.iter().map(|row| row.sleepers).collect();
    sleepers.sort_unstable();
    sleepers.dedup();
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
    let rows: Vec<Vec<String>> = report
        .results
        .rows
        .iter()
        .map(|r| {
            vec![
                r.placement.to_string(),
                r.variant.to_string(),
                fixed(r.rtt_p50_us, 1),
                fixed(r.rtt_mean_us, 1),
                fixed(r.rtt_p99_us, 0),
                fixed(r.wakeups_per_round_trip, 2),
                fixed(r.spurious_per_round_trip, 2),
                if r.pinned { "yes" } else { "no" }.into(),
            ]
        })
        .collect();
    table(
        &[
            "placement",
            "wakeups",
            "RTT p50 µs",
            "mean µs",
            "p99 µs",
            "wakeups/RT",
            "spurious/RT",
            "pinned",
        ],
        rows,
    )
}

/// Pipe times next to the seed's.
pub fn pipe(report: &Report<pipe::Results>) -> String {
    let rows: Vec<Vec<String>> = report
        .results
        .rows
        .iter()
        .map(|r| {
            vec![
                r.variant.to_string(),
                match r.variant {
                    pipe::Variant::Semaphore => "5.7",
                    pipe::Variant::Spinlock => "1.9",
                }
                .into(),
                fixed(r.seconds, 3),
                pct(r.guard_con_pct, 2),
                r.guard_sleeps.to_string(),
                pct(r.sem_lock_con_pct, 2),
                r.in_order.to_string(),
                each_run(&r.runs_seconds, 3),
            ]
        })
        .collect();
    table(
        &[
            "guard",
            "original s",
            "ours s",
            "guard CON",
            "guard sleeps",
            "pipe.sem.lock CON",
            "in order",
            "every run s",
        ],
        rows,
    )
}

/// Throughput and acquisitions per event.
pub fn epoll(report: &Report<epoll::Results>) -> String {
    let rows: Vec<Vec<String>> = report
        .results
        .rows
        .iter()
        .map(|r| {
            vec![
                r.variant.to_string(),
                match r.variant {
                    epoll::Variant::NestedLocks => "14350",
                    epoll::Variant::LockedOps => "15300",
                }
                .into(),
                fixed(r.hits_per_sec, 0),
                fixed(r.best_hits_per_sec, 0),
                each_run(&r.runs_hits_per_sec, 0),
                r.lock_acquisitions.to_string(),
                fixed(r.acquisitions_per_event, 3),
                r.sleeps.to_string(),
            ]
        })
        .collect();
    table(
        &[
            "variant",
            "original hits/s",
            "ours median",
            "ours best",
            "every run",
            "lock acquisitions",
            "per event",
            "sleeps",
        ],
        rows,
    )
}

/// Requests/s per pool size.
pub fn bkl(report: &Report<bkl::Results>) -> String {
    let rows: Vec<Vec<String>> = report
        .results
        .rows
        .iter()
        .map(|r| {
            vec![
                r.workers.to_string(),
                r.variant.to_string(),
                fixed(r.requests_per_sec, 0),
                r.errors.to_string(),
                pct(r.bkl_util_pct, 1),
                pct(r.bkl_con_pct, 1),
                fixed(r.bkl_hold_mean_ns as f64 / 1e3, 2),
                pct(r.top_site_hold_share_pct, 1),
            ]
        })
        .collect();
    table(
        &[
            "workers",
            "variant",
            "req/s",
            "errors",
            "bkl UTIL",
            "bkl CON",
            "hold mean µs",
            "top site's share of hold",
        ],
        rows,
    )
}
