//! Dumps on demand and at shutdown: the format follows the extension, the
//! write is atomic, and a path that cannot be written is an error value,
//! never a panic.

mod export_common;

use std::fs;

use export_common::{acquisitions, scratch_dir, FakeSource, LOCK};
use lockmeter::export::{self, DumpFormat, ExportConfig};

/// Dumps to `path` only: no signal thread, no confirmation lines.
fn dump_only(path: &std::path::Path) -> ExportConfig {
    ExportConfig::default()
        .dump(path)
        .dump_signal(false)
        .quiet(true)
}

#[test]
fn dump_now_writes_json_csv_and_text() {
    let dir = scratch_dir("fmt");
    let src = FakeSource::new(4321);
    for (name, format) in [
        ("d.json", DumpFormat::Json),
        ("d.csv", DumpFormat::Csv),
        ("d.txt", DumpFormat::Text),
    ] {
        let path = dir.join(name);
        let exp = export::start(src.clone(), dump_only(&path));
        assert_eq!(exp.dump_now().unwrap(), path);
        let text = fs::read_to_string(&path).unwrap();
        match format {
            DumpFormat::Json => {
                let snap = lockmeter_model::parse_snapshot(&text).unwrap();
                assert_eq!(acquisitions(&snap), 4321);
            }
            DumpFormat::Csv => {
                let header: Vec<&str> = text.lines().next().unwrap().split(',').collect();
                let col = header
                    .iter()
                    .position(|&h| h == "acquisitions")
                    .expect("no acquisitions column");
                let row: Vec<&str> = text
                    .lines()
                    .map(|l| l.split(',').collect::<Vec<_>>())
                    .find(|r| r[0] == "lock" && r.contains(&LOCK))
                    .expect("no row for the lock");
                assert_eq!(row[col], "4321", "{row:?}");
            }
            DumpFormat::Text => {
                assert!(
                    lockmeter_model::parse_snapshot(&text).is_err(),
                    "the text dump is JSON"
                );
                let row = text
                    .lines()
                    .find(|l| l.contains(LOCK))
                    .expect("no row for the lock");
                assert!(row.contains("4321"), "{row}");
            }
        }
        drop(exp.dump_now()); // a second dump replaces the first
        exp.shutdown();
    }
    let mut names: Vec<_> = fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    assert_eq!(
        names,
        ["d.csv", "d.json", "d.txt"],
        "temporary files were left behind"
    );
    fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn shutdown_writes_the_final_dump_of_the_current_window() {
    let dir = scratch_dir("final");
    let path = dir.join("final-{pid}.json");
    let src = FakeSource::new(10);
    let exp = export::start(src.clone(), dump_only(&path));
    let expanded = exp.dump_path().unwrap().to_path_buf();
    assert_eq!(
        expanded,
        dir.join(format!("final-{}.json", std::process::id()))
    );
    src.acquire(5);
    exp.shutdown();
    let snap = lockmeter_model::parse_snapshot(&fs::read_to_string(&expanded).unwrap()).unwrap();
    assert_eq!(acquisitions(&snap), 15);
    fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn an_unwritable_dump_is_an_error_and_the_old_file_survives() {
    let dir = scratch_dir("unwritable");
    let src = FakeSource::new(1);
    let missing = dir.join("no/such/dir/d.json");
    let exp = export::start(
        src.clone(),
        ExportConfig::default()
            .dump(&missing)
            .dump_signal(false)
            .quiet(true),
    );
    let err = exp.dump_now().unwrap_err();
    assert!(err.to_string().contains("no/such/dir/d.json"), "{err}");

    let none = export::start(src.clone(), ExportConfig::default().quiet(true));
    assert!(
        none.dump_now().is_err(),
        "dump_now without a dump path succeeded"
    );

    // A directory in the way: the write fails and nothing is replaced.
    let blocked = dir.join("blocked.json");
    fs::create_dir(&blocked).unwrap();
    fs::write(blocked.join("inside"), "keep").unwrap();
    let exp = export::start(
        src,
        ExportConfig::default()
            .dump(&blocked)
            .dump_signal(false)
            .quiet(true),
    );
    assert!(exp.dump_now().is_err());
    assert_eq!(fs::read_to_string(blocked.join("inside")).unwrap(), "keep");
    fs::remove_dir_all(&dir).unwrap();
}
