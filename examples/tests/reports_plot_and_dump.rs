//! The `--json` reports round-trip through serde and draw the SVG figures
//! of docs/results.md; dumps are complete v1 snapshots written through a
//! temporary file, and a dump that cannot be written is an error, not a
//! panic.

use lockmeter_model::{parse_snapshot, ProcessInfo, Snapshot};
use seed_harness::report::{write_dump, TextTable};
use seed_harness::{bkl, epoll, herd, keyed, pipe, plot, Report};

fn report<R>(example: &str, results: R) -> Report<R> {
    Report {
        example: example.to_string(),
        quick: true,
        cpus: 2,
        notes: Vec::new(),
        results,
    }
}

fn herd_report() -> Report<herd::Results> {
    let mut results = herd::Results::default();
    for (i, &n) in [1usize, 4, 100].iter().enumerate() {
        for v in herd::Variant::ALL {
            let all = v == herd::Variant::WakeAll;
            results.rows.push(herd::Row {
                variant: v,
                sleepers: n,
                connections: 100,
                seconds: 0.1 * (i + 1) as f64,
                us_per_connection: if all { 10.0 * n as f64 } else { 10.0 },
                wake_calls: 100,
                wakeups: if all { 100 * n as u64 } else { 100 },
                spurious_wakeups: if all { 100 * (n as u64 - 1) } else { 0 },
                spurious_per_connection: if all { (n - 1) as f64 } else { 0.0 },
                wake_latency_mean_ns: 1000,
            });
        }
    }
    report("thundering_herd", results)
}

fn assert_svg(figs: &[(String, String)], names: &[&str]) {
    let got: Vec<&str> = figs.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(got, names);
    for (name, svg) in figs {
        assert!(svg.starts_with("<svg"), "{name}");
        assert!(svg.trim_end().ends_with("</svg>"), "{name}");
        assert!(!svg.contains("NaN"), "{name} has a NaN coordinate");
    }
}

#[test]
fn a_herd_report_round_trips_and_draws_three_figures() {
    let r = herd_report();
    let text = serde_json::to_string(&r).unwrap();
    let back: Report<herd::Results> = serde_json::from_str(&text).unwrap();
    assert_eq!(back, r);
    let figs = plot::herd(&back);
    assert_svg(
        &figs,
        &["herd_time.svg", "herd_spurious.svg", "herd_relative.svg"],
    );
    assert!(figs[0].1.contains("<polyline"));
    assert!(
        figs[2].1.contains("stroke-dasharray"),
        "seed curves are dashed"
    );
}

#[test]
fn every_example_draws_its_figures_even_with_missing_rows() {
    let keyed = report("keyed_wakeups", keyed::Results::default());
    assert_svg(&plot::keyed(&keyed), &["keyed_rtt.svg"]);
    let pipe = report("pipe_contention", pipe::Results::default());
    assert_svg(&plot::pipe(&pipe), &["pipe_time.svg"]);
    let epoll = report("epoll_wakeups", epoll::Results::default());
    assert_svg(
        &plot::epoll(&epoll),
        &["epoll_throughput.svg", "epoll_acquisitions.svg"],
    );
    let bkl = report("bkl_server", bkl::Results::default());
    assert_svg(&plot::bkl(&bkl), &["bkl_rps.svg", "bkl_seed.svg"]);
}

#[test]
fn a_dump_is_a_complete_v1_snapshot_and_leaves_no_temporary_file() {
    let dir = std::env::temp_dir().join(format!("seed-dump-{}", std::process::id()));
    let snap = Snapshot::empty(
        ProcessInfo {
            pid: 1,
            name: "t".into(),
        },
        "mock",
    );
    let path = write_dump(&dir, "thundering_herd", "wake_all", &snap).unwrap();
    assert_eq!(path, dir.join("thundering_herd-wake_all.json"));
    let text = std::fs::read_to_string(&path).unwrap();
    assert_eq!(parse_snapshot(&text).unwrap(), snap);
    let leftovers: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(Result::ok)
        .filter(|e| e.file_name().to_string_lossy().contains(".tmp"))
        .collect();
    assert!(leftovers.is_empty());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_dump_into_a_file_path_is_an_error() {
    let file = std::env::temp_dir().join(format!("seed-dump-file-{}", std::process::id()));
    std::fs::write(&file, b"not a directory").unwrap();
    let snap = Snapshot::empty(ProcessInfo::default(), "mock");
    assert!(write_dump(&file, "x", "y", &snap).is_err());
    let _ = std::fs::remove_file(&file);
}

#[test]
fn result_tables_align_their_columns() {
    let mut t = TextTable::new(&["Variant", "hits/s"], 1);
    t.row(vec!["nested locks".into(), "1404146".into()]);
    t.row(vec!["locked ops".into(), "99".into()]);
    let text = t.render();
    let widths: Vec<usize> = text.lines().map(str::len).collect();
    assert!(widths.iter().all(|&w| w == widths[0]), "{text}");
}
