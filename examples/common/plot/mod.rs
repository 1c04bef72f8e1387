//! The figures of `docs/results.md`, drawn from the examples' `--json`
//! outputs. Each function takes one example's report and returns the SVG
//! files it makes, as (file name, SVG text).
//!
//! The seeds' own numbers are drawn next to ours where the units allow;
//! where they don't (the seeds timed whole TCP connections on 1999
//! hardware), the chart says so in its title and uses relative values.

pub mod markdown;
pub mod svg;

use crate::report::{distinct, Report};
use crate::{bkl, epoll, herd, keyed, pipe};
use svg::{BarChart, LineChart, Series};

/// A file to write: name and content.
pub type Figure = (String, String);

/// Seed 000, SMP (2 x x86) run: servers, unpatched s, patched s.
pub const SEED_HERD_SMP: [(f64, f64, f64); 9] = [
    (1.0, 1.1, 1.1),
    (2.0, 1.2, 1.3),
    (3.0, 1.2, 1.3),
    (4.0, 1.2, 1.3),
    (100.0, 1.8, 1.3),
    (200.0, 2.3, 1.3),
    (400.0, 3.2, 1.3),
    (600.0, 4.1, 1.3),
    (1000.0, 6.0, 1.3),
];

/// Time per connection and spurious wakeups against sleepers.
pub fn herd(report: &Report<herd::Results>) -> Vec<Figure> {
    let series = |f: fn(&herd::Row) -> f64| -> Vec<Series> {
        herd::Variant::ALL
            .iter()
            .map(|&v| Series {
                name: v.to_string(),
                points: report
                    .results
                    .rows
                    .iter()
                    .filter(|r| r.variant == v)
                    .map(|r| (r.sleepers as f64, f(r)))
                    .collect(),
                dashed: false,
            })
            .collect()
    };
    let time = LineChart {
        title: "Thundering herd: time per connection".into(),
        x_label: "sleeping servers (log scale)".into(),
        y_label: "µs per connection (log scale)".into(),
        log_x: true,
        log_y: true,
        series: series(|r| r.us_per_connection),
    };
    let spurious = LineChart {
        title: "Thundering herd: spurious wakeups per connection".into(),
        x_label: "sleeping servers (log scale)".into(),
        y_label: "spurious wakeups per connection".into(),
        log_x: true,
        log_y: false,
        series: series(|r| r.spurious_per_connection),
    };
    // Both runs relative to their own 1-server time, so 1999 and today
    // share an axis.
    let mut relative = series(|r| r.us_per_connection);
    for s in &mut relative {
        let base = s.points.iter().find(|p| p.0 == 1.0).map(|p| p.1);
        s.points = match base {
            Some(b) if b > 0.0 => s.points.iter().map(|&(x, y)| (x, y / b)).collect(),
            _ => Vec::new(),
        };
        s.name = format!("ours: {}", s.name);
    }
    relative.push(Series {
        name: "seed: unpatched".into(),
        points: SEED_HERD_SMP
            .iter()
            .map(|&(n, u, _)| (n, u / 1.1))
            .collect(),
        dashed: true,
    });
    relative.push(Series {
        name: "seed: wake-one".into(),
        points: SEED_HERD_SMP
            .iter()
            .map(|&(n, _, p)| (n, p / 1.1))
            .collect(),
        dashed: true,
    });
    let rel = LineChart {
        title: "Thundering herd: time relative to 1 server".into(),
        x_label: "sleeping servers (log scale)".into(),
        y_label: "time / time with 1 server (log scale)".into(),
        log_x: true,
        log_y: true,
        series: relative,
    };
    vec![
        ("herd_time.svg".into(), time.to_svg()),
        ("herd_spurious.svg".into(), spurious.to_svg()),
        ("herd_relative.svg".into(), rel.to_svg()),
    ]
}

/// Round-trip latency per placement, plain vs keyed.
pub fn keyed(report: &Report<keyed::Results>) -> Vec<Figure> {
    let r = &report.results;
    let groups: Vec<keyed::Placement> = keyed::Placement::ALL
        .into_iter()
        .filter(|&p| r.rows.iter().any(|row| row.placement == p))
        .collect();
    let series = bar_series(
        &keyed::Variant::ALL,
        &groups,
        |v| format!("{v} wakeups"),
        |v, p| r.get(p, v).map(|row| row.rtt_p50_us),
    );
    let chart = BarChart {
        title: "UDP-like ping-pong: median round trip".into(),
        y_label: "µs per round trip (p50)".into(),
        groups: groups.iter().map(|p| p.to_string()).collect(),
        series,
    };
    vec![("keyed_rtt.svg".into(), chart.to_svg())]
}

/// Pipe time relative to the semaphore guard, seed and ours.
pub fn pipe(report: &Report<pipe::Results>) -> Vec<Figure> {
    let r = &report.results;
    let ours = |v| r.get(v).map_or(f64::NAN, |row| row.seconds);
    let base = ours(pipe::Variant::Semaphore);
    let rel = |s: f64| if base > 0.0 { s / base } else { f64::NAN };
    let chart = BarChart {
        title: "Pipe: time relative to the semaphore guard".into(),
        y_label: "time / semaphore time".into(),
        groups: vec![
            "seed: dual PIII, 500,000 msgs".into(),
            format!(
                "this machine, {} msgs",
                r.rows.first().map_or(0, |row| row.messages)
            ),
        ],
        series: vec![
            ("semaphore".into(), vec![1.0, rel(base)]),
            (
                "spinlock".into(),
                vec![
                    pipe::Variant::Spinlock.seed_seconds()
                        / pipe::Variant::Semaphore.seed_seconds(),
                    rel(ours(pipe::Variant::Spinlock)),
                ],
            ),
        ],
    };
    vec![("pipe_time.svg".into(), chart.to_svg())]
}

/// Throughput relative to the nested-locks variant, and acquisitions per
/// event.
pub fn epoll(report: &Report<epoll::Results>) -> Vec<Figure> {
    let r = &report.results;
    let rel = |f: fn(&epoll::Row) -> f64| {
        let base = r.get(epoll::Variant::NestedLocks).map_or(f64::NAN, f);
        let after = r.get(epoll::Variant::LockedOps).map_or(f64::NAN, f);
        if base > 0.0 {
            (100.0, 100.0 * after / base)
        } else {
            (f64::NAN, f64::NAN)
        }
    };
    let (median_before, median_after) = rel(|row| row.hits_per_sec);
    let (best_before, best_after) = rel(|row| row.best_hits_per_sec);
    let throughput = BarChart {
        title: "epoll: throughput relative to nested locks".into(),
        y_label: "% of nested-locks hits/s".into(),
        groups: vec![
            "seed: dual Athlon".into(),
            "this machine: median".into(),
            "this machine: best".into(),
        ],
        series: vec![
            (
                "nested locks".into(),
                vec![100.0, median_before, best_before],
            ),
            (
                "locked ops".into(),
                vec![
                    100.0 * epoll::Variant::LockedOps.seed_hits_per_sec()
                        / epoll::Variant::NestedLocks.seed_hits_per_sec(),
                    median_after,
                    best_after,
                ],
            ),
        ],
    };
    let per_event = BarChart {
        title: "epoll: lock acquisitions per event".into(),
        y_label: "acquisitions / event".into(),
        groups: vec!["ep.lock + ep.wq.lock".into()],
        series: bar_series(
            &epoll::Variant::ALL,
            &[()],
            |v| v.to_string(),
            |v, ()| r.get(v).map(|row| row.acquisitions_per_event),
        ),
    };
    vec![
        ("epoll_throughput.svg".into(), throughput.to_svg()),
        ("epoll_acquisitions.svg".into(), per_event.to_svg()),
    ]
}

/// Requests/s per pool size, before and after; and the seed's.
pub fn bkl(report: &Report<bkl::Results>) -> Vec<Figure> {
    let r = &report.results;
    let pools = distinct(r.rows.iter().map(|row| row.workers));
    let series = bar_series(
        &bkl::Variant::ALL,
        &pools,
        |v| v.to_string(),
        |v, w| r.get(v, w).map(|row| row.requests_per_sec),
    );
    let ours = BarChart {
        title: "HTTP server: requests/s (this machine, 2 CPUs)".into(),
        y_label: "requests / s".into(),
        groups: pools
            .iter()
            .map(|w| format!("{w} worker{}", if *w == 1 { "" } else { "s" }))
            .collect(),
        series,
    };
    let seed = BarChart {
        title: "HTTP server: requests/s (seed, ab -c 8, 2.2.8)".into(),
        y_label: "requests / s".into(),
        groups: vec!["no SMP".into(), "4 CPUs".into()],
        series: vec![
            ("copy under big lock".into(), vec![1540.22, 350.95]),
            ("lock dropped around copy".into(), vec![f64::NAN, 1334.19]),
        ],
    };
    vec![
        ("bkl_rps.svg".into(), ours.to_svg()),
        ("bkl_seed.svg".into(), seed.to_svg()),
    ]
}

/// One bar series per variant, named by `name`, with a bar per group:
/// `value(variant, group)`, or no bar (NaN) where it was not measured.
fn bar_series<V: Copy, G: Copy>(
    variants: &[V],
    groups: &[G],
    name: impl Fn(V) -> String,
    value: impl Fn(V, G) -> Option<f64>,
) -> Vec<(String, Vec<f64>)> {
    variants
        .iter()
        .map(|&v| {
            let values = groups
                .iter()
                .map(|&g| value(v, g).unwrap_or(f64::NAN))
                .collect();
            (name(v), values)
        })
        .collect()
}
