//! A real process deadlocked on purpose (`crates/lockmeter/examples/
//! deadlock_demo.rs`, run with `LOCKMETER_LISTEN`): `lockmeter now PID`
//! shows the deadlock with both threads, locks and sites, `lockmeter table
//! PID` still answers over the endpoint, and `SIGUSR1` still writes a dump
//! holding the deadlock. Nothing the endpoint or the dump does takes a lock
//! the deadlocked threads hold.

mod common;

use std::fs;
use std::io::{BufRead, BufReader};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::{scratch, stderr, stdout};

const PATIENCE: Duration = Duration::from_secs(30);

/// Builds the example with the profile of this test.
fn demo_exe() -> PathBuf {
    let test_exe = std::env::current_exe().unwrap();
    let profile_dir = test_exe
        .parent()
        .and_then(Path::parent)
        .unwrap()
        .to_path_buf();
    let mut cargo = Command::new(env!("CARGO"));
    cargo.args([
        "build",
        "--quiet",
        "-p",
        "lockmeter",
        "--example",
        "deadlock_demo",
    ]);
    if profile_dir.ends_with("release") {
        cargo.arg("--release");
    }
    if let Some(target_dir) = profile_dir.parent() {
        cargo.env("CARGO_TARGET_DIR", target_dir);
    }
    assert!(
        cargo.status().expect("run cargo").success(),
        "building deadlock_demo failed"
    );
    profile_dir.join("examples").join("deadlock_demo")
}

struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn lockmeter_in(runtime: &Path, args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_lockmeter"))
        .args(args)
        .env("XDG_RUNTIME_DIR", runtime)
        .env("NO_COLOR", "1")
        .output()
        .expect("run lockmeter")
}

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
    let dir = scratch("deadlocked");
    let runtime = dir.join("run");
    fs::create_dir(&runtime).unwrap();
    fs::set_permissions(&runtime, fs::Permissions::from_mode(0o700)).unwrap();
    let dump = dir.join("hung.json");
    let mut cmd = Command::new(demo_exe());
    for (k, _) in std::env::vars_os() {
        if k.to_string_lossy().starts_with("LOCKMETER_") {
            cmd.env_remove(k);
        }
    }
    let child = cmd
        .env("XDG_RUNTIME_DIR", &runtime)
        .env("LOCKMETER_LISTEN", "1")
        .env("LOCKMETER_DUMP", &dump)
        .env("LOCKMETER_DEADLOCK", "200ms")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start deadlock_demo");
    let mut child = Killed(child);
    let pid = child.0.id().to_string();
    let mut line = String::new();
    BufReader::new(child.0.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    assert_eq!(line.trim(), "deadlocked");

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
