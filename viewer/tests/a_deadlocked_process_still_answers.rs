//! A real process deadlocked on purpose (`crates/lockmeter/examples/
//! deadlock_demo.rs`, run with `LOCKMETER_LISTEN`): `lockmeter now PID`
//! shows the deadlock with both threads, locks and sites, `lockmeter table
//! PID` still answers over the endpoint, and `SIGUSR1` still writes a dump
//! holding the deadlock. Nothing the endpoint or the dump does takes a lock
//! the deadlocked threads hold.

mod common;

use std::fs;
use std::process::Command;
use std::time::{Duration, Instant};

use common::{example_exe, lockmeter_in, private_runtime, start_listening, stderr, stdout};

const PATIENCE: Duration = Duration::from_secs(30);

fn until(mut f: impl FnMut() -> bool) -> bool {
    let t0 = Instant::now();
    while t0.elapsed() < PATIENCE {
        if f() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    false
}

#[test]
fn a_deadlocked_process_answers_now_and_table_and_dumps_on_sigusr1() {
    let runtime = private_runtime("deadlocked");
    let dump = runtime.join("hung.json");
    let env = [
        ("LOCKMETER_DUMP", dump.as_os_str()),
        ("LOCKMETER_DEADLOCK", "200ms".as_ref()),
    ];
    let (child, line) = start_listening(&example_exe("deadlock_demo"), &[], &runtime, &env);
    let pid = child.pid().to_string();
    assert_eq!(line, "deadlocked");

    // `now` over the endpoint: the deadlock, found by the watchdog.
    let mut text = String::new();
    let found = until(|| {
        let out = lockmeter_in(&runtime, &["now", &pid]);
        text = format!("{}{}", stdout(&out), stderr(&out));
        out.status.success() && text.contains("DEADLOCK 1")
    });
    assert!(found, "no deadlock shown: {text}");
    for want in [
        "transfer-ab",
        "transfer-ba",
        "waits on account.a at crates/lockmeter/examples/deadlock_demo.rs:",
        "waits on account.b at crates/lockmeter/examples/deadlock_demo.rs:",
    ] {
        assert!(text.contains(want), "{want:?} missing: {text}");
    }
    // `report` waits behind the cycle: a waiter of account.a, no member.
    assert!(text.contains("by report ("), "{text}");
    let dl = &text[text.find("DEADLOCK 1").unwrap()..text.find("\naccount.").unwrap()];
    assert!(
        !dl.contains("report"),
        "report is not part of the cycle: {dl}"
    );

    // The table still answers.
    let out = lockmeter_in(&runtime, &["table", &pid, "--no-advice"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("account.a"), "{}", stdout(&out));

    // JSON too, with the model's field names.
    let out = lockmeter_in(&runtime, &["now", &pid, "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(
        v["deadlocks"][0]["threads"].as_array().map(Vec::len),
        Some(2),
        "{v}"
    );

    // SIGUSR1 writes the dump, deadlock included.
    let kill = Command::new("kill").args(["-USR1", &pid]).status().unwrap();
    assert!(kill.success());
    let mut snap = None;
    let dumped = until(|| {
        snap = fs::read_to_string(&dump)
            .ok()
            .and_then(|t| lockmeter_model::parse_snapshot(&t).ok());
        snap.is_some()
    });
    assert!(dumped, "no dump at {}", dump.display());
    let snap = snap.unwrap();
    assert_eq!(snap.deadlocks.len(), 1, "{:?}", snap.deadlocks);
    let holders: Vec<&str> = snap
        .now
        .locks
        .iter()
        .flat_map(|l| l.holders.iter().map(|h| h.thread.name.as_str()))
        .collect();
    assert!(
        holders.contains(&"transfer-ab") && holders.contains(&"transfer-ba"),
        "{holders:?}"
    );
    // And the file reads back with `lockmeter now FILE`.
    let out = lockmeter_in(&runtime, &["now", dump.to_str().unwrap()]);
    assert!(stdout(&out).contains("DEADLOCK 1"), "{}", stdout(&out));
}
