//! Whatever parses renders: text and CSV tables, advisories, and a diff
//! against itself and against an empty snapshot, in text and CSV.
#![no_main]

use libfuzzer_sys::fuzz_target;
use lockmeter_model::advice::{advise, Thresholds};
use lockmeter_model::diff::diff;
use lockmeter_model::render::{diff_csv, diff_text};
use lockmeter_model::parse_snapshot;
use lockmeter_model::render::{csv_table, text_table, TableOptions};

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let Ok(snap) = parse_snapshot(&text) else {
        return;
    };
    let opts = TableOptions::default();
    let _ = text_table(&snap, &opts);
    let _ = csv_table(&snap, &opts);
    let _ = advise(&snap, &Thresholds::default());
    let mut empty = snap.clone();
    empty.locks.clear();
    for d in [diff(&snap, &snap), diff(&empty, &snap), diff(&snap, &empty)] {
        let _ = diff_text(&d, &opts);
        let _ = diff_csv(&d, &opts);
    }
});
