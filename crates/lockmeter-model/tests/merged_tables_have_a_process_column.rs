//! A table merged over processes (`Snapshot::with_pids`, then
//! `Snapshot::merge`) keeps each process's call-site rows apart and shows
//! the process as a column of its own in text, CSV and JSON; one process's
//! table has no such column.

mod common;

use common::{acq, before};
use lockmeter_model::render::{csv_table, json, text_table, TableOptions};
use lockmeter_model::{parse_snapshot, Snapshot};

/// `before()` as process `pid`, every count of its first lock scaled by
/// `k` (so the processes' rows differ).
fn process(pid: u32, k: u64) -> Snapshot {
    let mut s = before();
    s.process.pid = pid;
    let lock = &mut s.locks[0];
    for site in &mut lock.sites {
        site.stats = acq(site.stats.acquisitions * k, 0, &[], &[]);
    }
    lock.total = acq(
        lock.sites.iter().map(|s| s.stats.acquisitions).sum(),
        0,
        &[],
        &[],
    );
    s
}

fn merged() -> Snapshot {
    Snapshot::merge(&[process(41, 1).with_pids(), process(42, 3).with_pids()]).unwrap()
}

#[test]
fn each_process_keeps_its_rows_and_lock_rows_sum() {
    let one = process(41, 1);
    let m = merged();
    assert!(m.has_pids() && !one.has_pids());
    let (a, b) = (&one.locks[0], m.lock(&one.locks[0].id).unwrap());
    assert_eq!(b.total.acquisitions, 4 * a.total.acquisitions);
    assert_eq!(b.sites.len(), 2 * a.sites.len());
    for site in &a.sites {
        for (pid, k) in [(41, 1), (42, 3)] {
            let row = b
                .sites
                .iter()
                .find(|s| s.site == site.site && s.mode == site.mode && s.pid == Some(pid))
                .unwrap();
            assert_eq!(row.stats.acquisitions, k * site.stats.acquisitions);
        }
    }
    // A window of the merged view subtracts each process's own rows.
    let later = Snapshot::merge(&[process(41, 2).with_pids(), process(42, 3).with_pids()]);
    let window = later.unwrap().since(&m);
    let lock = window.lock(&a.id).unwrap();
    for s in &lock.sites {
        let want = if s.pid == Some(41) {
            a.sites
                .iter()
                .find(|x| x.key().0 == s.site && x.mode == s.mode)
        } else {
            None
        };
        assert_eq!(
            s.stats.acquisitions,
            want.map_or(0, |w| w.stats.acquisitions)
        );
    }
}

#[test]
fn text_csv_and_json_show_the_process_only_when_merged() {
    let opts = TableOptions::default();
    let one = process(41, 1);
    assert!(!text_table(&one, &opts).contains("PID"));
    assert!(!csv_table(&one, &opts)
        .lines()
        .next()
        .unwrap()
        .contains("pid"));
    let json_pids = |s: &Snapshot| json(s).matches("\"pid\"").count();
    assert_eq!(json_pids(&one), 1, "only the process's own pid");

    let m = merged();
    let text = text_table(&m, &opts);
    let head = text.lines().nth(2).unwrap();
    assert!(head.ends_with("  PID  NAME"), "{head}");
    let site = &one.locks[0].sites[0].site;
    let pid_at = head.find("PID").unwrap();
    let rows: Vec<&str> = text
        .lines()
        .filter(|l| l.ends_with(site.as_str()))
        .collect();
    assert_eq!(rows.len(), 2, "{text}");
    let mut pids: Vec<&str> = rows.iter().map(|l| l[pid_at..pid_at + 3].trim()).collect();
    pids.sort();
    assert_eq!(pids, ["41", "42"], "{text}");

    let csv = csv_table(&m, &opts);
    let header: Vec<&str> = csv.lines().next().unwrap().split(',').collect();
    let col = header.iter().position(|h| *h == "pid").unwrap();
    assert_eq!(header[col - 1], "mode");
    let site_pids: Vec<&str> = csv
        .lines()
        .filter(|l| l.starts_with("site,"))
        .map(|l| l.split(',').nth(col).unwrap())
        .collect();
    assert!(site_pids.iter().all(|p| *p == "41" || *p == "42"), "{csv}");
    assert!(csv
        .lines()
        .filter(|l| l.starts_with("lock,"))
        .all(|l| l.split(',').nth(col) == Some("")));

    let sites: usize = m.locks.iter().map(|l| l.sites.len()).sum();
    assert_eq!(json_pids(&m), 1 + sites, "every site row says its process");
    let back = parse_snapshot(&json(&m)).unwrap();
    assert_eq!(back.locks[0].sites, m.locks[0].sites, "pid survives JSON");
}
