//! `lockmeter table --all` and `lockmeter table PID PID ...` over four real
//! processes of one program (`crates/lockmeter/examples/endpoint_demo.rs`
//! with `LOCKMETER_LISTEN=1`, each taking `demo.counter` a known number of
//! times): one table in every format whose lock row is the exact sum and
//! whose call-site rows are one per process, the process in a column of its
//! own, still printed when one process has been killed or a target never
//! answers.

mod common;

use std::ffi::OsStr;
use std::path::Path;
use std::process::Output;

use common::{
    example_exe, lockmeter_in as lockmeter, per_process, private_runtime, start_listening,
    KillOnDrop,
};
use lockmeter_model::Snapshot;

const LOCK: &str = "demo.counter";

/// Demo processes listening in `runtime`, ready (counted); their counts.
struct Fleet {
    children: Vec<KillOnDrop>,
    counts: Vec<u64>,
}

impl Fleet {
    fn start(runtime: &Path, counts: &[u64]) -> Fleet {
        let exe = example_exe("endpoint_demo");
        let quiet = [("LOCKMETER_QUIET", OsStr::new("1"))];
        let children = counts
            .iter()
            .map(|n| {
                let n = n.to_string();
                let (child, line) = start_listening(&exe, &[&n, "2"], runtime, &quiet);
                // Ready means counted; the socket is bound before the work starts.
                assert_eq!(line, format!("ready {n}"));
                child
            })
            .collect();
        Fleet {
            children,
            counts: counts.to_vec(),
        }
    }

    fn pid(&self, i: usize) -> u32 {
        self.children[i].pid()
    }

    fn kill(&mut self, i: usize) {
        self.children[i].kill();
    }
}

fn json(out: &Output) -> Snapshot {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    lockmeter_model::parse_snapshot(&String::from_utf8_lossy(&out.stdout)).unwrap()
}

#[test]
fn all_four_processes_sum_exactly_in_every_format() {
    let runtime = private_runtime("fleet-all");
    let fleet = Fleet::start(&runtime, &[1000, 2000, 3000, 4000]);
    let snap = json(&lockmeter(
        &runtime,
        &["table", "--all", "--format", "json"],
    ));
    let lock = snap.lock(LOCK).unwrap();
    assert_eq!(lock.total.acquisitions, 10_000);
    assert_eq!(lock.instances, 4);
    let rows = per_process(&snap, LOCK);
    assert_eq!(rows.len(), 4, "{rows:?}");
    for (i, n) in fleet.counts.iter().enumerate() {
        let pid = fleet.pid(i);
        let row = rows.iter().find(|(p, _)| *p == Some(pid)).unwrap();
        assert_eq!(row.1, *n, "pid {pid}");
    }
    assert!(
        snap.process.name.starts_with("4 processes (endpoint_demo)"),
        "{}",
        snap.process.name
    );

    let text = lockmeter(&runtime, &["table", "--all"]);
    assert!(text.status.success());
    let text = String::from_utf8_lossy(&text.stdout);
    let lock_line = text
        .lines()
        .find(|l| l.contains("demo.counter (mutex"))
        .unwrap();
    assert!(lock_line.contains(" 10000 "), "{text}");
    // The PID column: its title before NAME, a pid on each call-site row
    // (the same site, four processes), blank on the lock row.
    let head = text.lines().find(|l| l.ends_with("  NAME")).unwrap();
    assert!(head.ends_with("  PID  NAME"), "{text}");
    let (start, end) = (
        head.find("RJECT").unwrap() + "RJECT  ".len(),
        head.len() - "  NAME".len(),
    );
    let cell = |l: &str| l.get(start..end).unwrap_or("?").trim().to_string();
    assert_eq!(cell(lock_line), "", "{text}");
    let mut pids: Vec<String> = text
        .lines()
        // Call-site rows only: not a holder line, nor an advisory (`!`),
        // which names the site too when a busy process holds the lock long
        // enough to trip one (seen once in a loaded CI run).
        .filter(|l| {
            l.contains("endpoint_demo.rs:")
                && !l.contains("held by")
                && !l.trim_start().starts_with('!')
        })
        .map(cell)
        .collect();
    pids.sort();
    let mut want: Vec<String> = (0..4).map(|i| fleet.pid(i).to_string()).collect();
    want.sort();
    assert_eq!(pids, want, "{text}");

    let csv = lockmeter(&runtime, &["table", "--all", "--format", "csv"]);
    let csv = String::from_utf8_lossy(&csv.stdout);
    let header: Vec<&str> = csv.lines().next().unwrap().split(',').collect();
    let col = header.iter().position(|h| *h == "acquisitions").unwrap();
    let lock_row: Vec<&str> = csv
        .lines()
        .find(|l| l.starts_with("lock,"))
        .unwrap()
        .split(',')
        .collect();
    assert_eq!(lock_row[col], "10000");
    let pid = header.iter().position(|h| *h == "pid").unwrap();
    let mut pids: Vec<String> = csv
        .lines()
        .filter(|l| l.starts_with("site,"))
        .map(|l| l.split(',').nth(pid).unwrap().to_string())
        .collect();
    pids.sort();
    assert_eq!(pids, want, "{csv}");

    // Several pids as targets: the same sum over the ones given.
    let (a, b) = (fleet.pid(1).to_string(), fleet.pid(3).to_string());
    let two = json(&lockmeter(&runtime, &["table", &a, &b, "--format", "json"]));
    assert_eq!(two.lock(LOCK).unwrap().total.acquisitions, 6000);
}

#[test]
fn a_killed_process_and_a_silent_target_are_marked_not_fatal() {
    let runtime = private_runtime("fleet-kill");
    let mut fleet = Fleet::start(&runtime, &[100, 200, 300, 400]);
    let pids: Vec<String> = (0..4).map(|i| fleet.pid(i).to_string()).collect();
    fleet.kill(2);
    let mut args = vec!["table"];
    args.extend(pids.iter().map(String::as_str));
    args.extend(["tcp://127.0.0.1:1", "--format", "json"]);
    let out = lockmeter(&runtime, &args);
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    let snap = json(&out);
    assert_eq!(snap.lock(LOCK).unwrap().total.acquisitions, 700);
    assert_eq!(per_process(&snap, LOCK).len(), 3);
    assert!(snap.process.name.contains("gone:"), "{}", snap.process.name);
    assert!(
        snap.process.name.contains("tcp://127.0.0.1:1"),
        "{}",
        snap.process.name
    );
    assert_eq!(stderr.matches("no answer").count(), 2, "{stderr}");
    assert!(stderr.contains(&format!("{}.sock", pids[2])), "{stderr}");

    // --all skips the dead one's socket (removed as stale) and sums the rest.
    let all = json(&lockmeter(
        &runtime,
        &["table", "--all", "--format", "json"],
    ));
    assert_eq!(all.lock(LOCK).unwrap().total.acquisitions, 700);

    // Nobody answering is an error, said once.
    let out = lockmeter(
        &runtime,
        &["table", "tcp://127.0.0.1:1", "tcp://127.0.0.1:2"],
    );
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("none of the 2 processes answered"), "{err}");
}
