//! `lockmeter table`, `lockmeter diff` and every `--help`, run through the
//! real binary and compared with committed files.
//!
//! Table and diff output is compared with `tests/golden/*`; rewrite those
//! with `LOCKMETER_BLESS=1 cargo test -p lockmeter-viewer --test
//! cli_output_is_golden` and review the diff. `--help` goes through insta
//! (`tests/snapshots/cli_output_is_golden__*.snap`).

mod common;

use std::path::Path;

use common::{fixture, lockmeter, stderr, stdout};

/// Compares `actual` with `tests/golden/NAME`; writes it when blessing. A
/// missing file fails under CI so that a forgotten golden cannot pass.
fn golden(name: &str, actual: &str) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden")
        .join(name);
    let bless = std::env::var_os("LOCKMETER_BLESS").is_some();
    let in_ci = std::env::var("CI").is_ok_and(|v| v == "true" || v == "1");
    if bless || (!path.exists() && !in_ci) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, actual).unwrap();
        return;
    }
    let expected = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e} (bless with LOCKMETER_BLESS=1)", path.display()));
    if expected != actual {
        let mut first = 0;
        for (i, (a, b)) in expected.lines().zip(actual.lines()).enumerate() {
            if a != b {
                first = i;
                break;
            }
        }
        panic!(
            "{} differs from the output (first at line {}):\n--- expected\n{}\n--- actual\n{}",
            path.display(),
            first + 1,
            expected
                .lines()
                .skip(first)
                .take(5)
                .collect::<Vec<_>>()
                .join("\n"),
            actual
                .lines()
                .skip(first)
                .take(5)
                .collect::<Vec<_>>()
                .join("\n"),
        );
    }
}

/// `lockmeter diff` of the bkl fixtures in `format`.
fn bkl_diff(format: &str) -> String {
    run_ok(&[
        "diff",
        &fixture("bkl_before.json"),
        &fixture("bkl_after.json"),
        "--format",
        format,
    ])
}

fn run_ok(args: &[&str]) -> String {
    let out = lockmeter(args);
    assert!(out.status.success(), "{args:?} failed: {}", stderr(&out));
    stdout(&out)
}

#[test]
fn table_text_of_a_dump() {
    golden(
        "table_mixed.txt",
        &run_ok(&["table", &fixture("mixed.json")]),
    );
}

#[test]
fn table_text_sorted_cut_and_without_sites() {
    let out = run_ok(&[
        "table",
        &fixture("mixed.json"),
        "--sort",
        "wait",
        "--top",
        "3",
        "--no-sites",
        "--no-holders",
    ]);
    golden("table_mixed_wait_top3.txt", &out);
}

#[test]
fn table_csv_of_a_dump() {
    golden(
        "table_mixed.csv",
        &run_ok(&["table", &fixture("mixed.json"), "--format", "csv"]),
    );
}

#[test]
fn table_json_is_the_v1_snapshot_again() {
    let out = run_ok(&["table", &fixture("pipe_sem.json"), "--format", "json"]);
    let back = lockmeter_model::parse_snapshot(&out).expect("json output parses as v1");
    let original = lockmeter_model::parse_snapshot(
        &std::fs::read_to_string(fixture("pipe_sem.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(back, original);
}

#[test]
fn table_of_a_recording_shows_its_totals() {
    golden(
        "table_recording.txt",
        &run_ok(&["table", &fixture("recording.jsonl")]),
    );
}

#[test]
fn diff_text_semaphore_to_spinlock() {
    golden(
        "diff_pipe.txt",
        &run_ok(&[
            "diff",
            &fixture("pipe_sem.json"),
            &fixture("pipe_spin.json"),
        ]),
    );
}

#[test]
fn diff_text_big_lock_before_and_after() {
    golden("diff_bkl.txt", &bkl_diff("text"));
}

#[test]
fn diff_csv_and_json() {
    golden("diff_bkl.csv", &bkl_diff("csv"));
    let json = bkl_diff("json");
    let v: serde_json::Value = serde_json::from_str(&json).expect("diff json parses");
    assert!(v.get("locks").is_some_and(|l| l.is_array()), "{json}");
    golden("diff_bkl.json", &json);
}

/// Why `diff_bkl.json` changed in its last digits when CON became a method:
/// the fixture's site has 660 of 700 acquisitions contended and stores
/// `"con_pct": 94.28571428571429`, which is `100 * 660 / 700` exactly. The
/// old golden said `94.28571428571428`: the stored text read back through
/// serde_json's fast (not correctly rounded) float parser, one ULP off.
/// Computing CON from the counts gives the fixture's own value.
#[test]
fn the_diffs_con_is_the_fixtures_own_value_not_a_misparse_of_it() {
    let stored = std::fs::read_to_string(fixture("bkl_before.json")).unwrap();
    assert!(stored.contains("\"con_pct\": 94.28571428571429"));
    let exact = 100.0 * 660.0 / 700.0_f64;
    assert_eq!(serde_json::to_string(&exact).unwrap(), "94.28571428571429");
    let misread: f64 = serde_json::from_str("94.28571428571429").unwrap();
    assert_eq!(
        serde_json::to_string(&misread).unwrap(),
        "94.28571428571428"
    );
    let json = bkl_diff("json");
    assert!(json.contains("\"before\": 94.28571428571429"), "{json}");
}

#[test]
fn advisory_thresholds_come_from_flags() {
    let quiet = run_ok(&[
        "table",
        &fixture("bkl_before.json"),
        "--advice-hot-util-pct",
        "99.5",
    ]);
    assert!(!quiet.contains("shrink the critical section"), "{quiet}");
    let loud = run_ok(&["table", &fixture("bkl_before.json")]);
    assert!(loud.contains("shrink the critical section"), "{loud}");
    let none = run_ok(&["table", &fixture("bkl_before.json"), "--no-advice"]);
    assert!(!none.contains("shrink"), "{none}");
}

#[test]
fn advisory_thresholds_come_from_a_config_file() {
    let dir = common::scratch("advice-config");
    let config = dir.join("advice.json");
    std::fs::write(&config, r#"{ "hot_util_pct": 99.5 }"#).unwrap();
    let out = run_ok(&[
        "table",
        &fixture("bkl_before.json"),
        "--advice-config",
        &config.display().to_string(),
    ]);
    assert!(!out.contains("shrink the critical section"), "{out}");
    // A flag wins over the file.
    let out = run_ok(&[
        "table",
        &fixture("bkl_before.json"),
        "--advice-config",
        &config.display().to_string(),
        "--advice-hot-util-pct",
        "50",
    ]);
    assert!(out.contains("shrink the critical section"), "{out}");
}

#[test]
fn an_unknown_sort_key_lists_the_valid_ones() {
    let out = lockmeter(&["table", &fixture("mixed.json"), "--sort", "bogus"]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(err.contains("hold_p99") && err.contains("bogus"), "{err}");
}

#[test]
fn help_of_every_subcommand() {
    insta::assert_snapshot!("help_main", run_ok(&["--help"]));
    for sub in ["demo", "top", "list", "view", "table", "diff", "now"] {
        insta::assert_snapshot!(format!("help_{sub}"), run_ok(&[sub, "--help"]));
    }
}
