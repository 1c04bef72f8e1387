//! Recordings: one window per line whose counts add up exactly, bounded in
//! size, and still readable after being cut mid-line.

mod export_common;

use std::fs;
use std::path::Path;
use std::time::Duration;

use export_common::{acquisitions, scratch_dir, wait_until, FakeSource};
use lockmeter::export::{self, ExportConfig, OnFull, RecordConfig, SnapshotSource};

const PATIENCE: Duration = Duration::from_secs(30);

fn lines(path: &Path) -> usize {
    fs::read_to_string(path)
        .map(|t| t.lines().count())
        .unwrap_or(0)
}

#[test]
fn windows_add_up_and_a_recording_cut_mid_line_still_loads() {
    let dir = scratch_dir("rec");
    let path = dir.join("r.jsonl");
    let src = FakeSource::new(100); // before the recording: in no window
    let rec = RecordConfig::new(&path).interval(Duration::from_millis(10));
    let exp = export::start(src.clone(), ExportConfig::default().record(rec).quiet(true));
    for i in 0..5 {
        let want = i + 1;
        src.acquire(3);
        assert!(
            wait_until(PATIENCE, || lines(&path) >= want),
            "no line {want}"
        );
    }
    src.acquire(4);
    exp.shutdown(); // writes the window since the last line
    let text = fs::read_to_string(&path).unwrap();
    let whole = lockmeter_model::parse_recording(&text).unwrap();
    assert!(whole.warnings.is_empty(), "{:?}", whole.warnings);
    assert!(text.ends_with('\n') && text.lines().all(|l| l.starts_with('{') && l.ends_with('}')));
    let sum: u64 = whole.frames.iter().map(acquisitions).sum();
    assert_eq!(
        sum,
        3 * 5 + 4,
        "the windows do not add up to what happened during the recording"
    );

    // A crash in the middle of the last write: cut inside the last line.
    let last_start = text[..text.len() - 1].rfind('\n').unwrap() + 1;
    let cut = &text[..last_start + (text.len() - last_start) / 2];
    let partial = lockmeter_model::parse_recording(cut).unwrap();
    assert_eq!(partial.frames.len(), whole.frames.len() - 1);
    assert_eq!(partial.warnings.len(), 1, "{:?}", partial.warnings);
    fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_full_recording_rotates_to_dot_one() {
    let dir = scratch_dir("rot");
    let path = dir.join("r.jsonl");
    let rotated = dir.join("r.jsonl.1");
    let rec = RecordConfig::new(&path)
        .interval(Duration::from_millis(10))
        .max_bytes(Some(2048));
    let exp = export::start(
        FakeSource::new(0),
        ExportConfig::default().record(rec).quiet(true),
    );
    assert!(
        wait_until(PATIENCE, || rotated.exists() && lines(&path) >= 1),
        "never rotated"
    );
    exp.shutdown();
    for p in [&path, &rotated] {
        let text = fs::read_to_string(p).unwrap();
        assert!(
            text.len() <= 2048 || text.lines().count() == 1,
            "{} is over its limit",
            p.display()
        );
        assert!(lockmeter_model::parse_recording(&text)
            .unwrap()
            .warnings
            .is_empty());
    }
    fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_full_recording_told_to_stop_stops() {
    let dir = scratch_dir("stop");
    let path = dir.join("r.jsonl");
    let one_line = serde_json::to_string(&FakeSource::new(0).cumulative())
        .unwrap()
        .len() as u64
        + 1;
    let rec = RecordConfig::new(&path)
        .interval(Duration::from_millis(10))
        .max_bytes(Some(3 * one_line + one_line / 2))
        .on_full(OnFull::Stop);
    let exp = export::start(
        FakeSource::new(0),
        ExportConfig::default().record(rec).quiet(true),
    );
    assert!(wait_until(PATIENCE, || lines(&path) >= 3));
    // Give it every chance to write more; it must not.
    std::thread::sleep(Duration::from_millis(200));
    exp.shutdown();
    assert_eq!(lines(&path), 3);
    assert!(!dir.join("r.jsonl.1").exists());
    fs::remove_dir_all(&dir).unwrap();
}
