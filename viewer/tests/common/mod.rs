//! Helpers shared by the tests that run the real `lockmeter` binary.

#![allow(dead_code)] // each test file uses a different part

use std::ffi::OsStr;
use std::io::{BufRead, BufReader};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};

/// The fixtures directory.
pub fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

pub fn fixture(name: &str) -> String {
    fixtures().join(name).display().to_string()
}

/// Runs `lockmeter ARGS` with no terminal and a fixed environment.
pub fn lockmeter(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_lockmeter"))
        .args(args)
        .env_remove("LOCKMETER_LISTEN")
        .env("NO_COLOR", "1")
        .env("COLUMNS", "100")
        .output()
        .expect("run lockmeter")
}

pub fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

pub fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Asserts a failed run with a clear message (and no panic) on stderr.
pub fn assert_clean_failure(out: &Output, expect_in_stderr: &str) {
    let err = stderr(out);
    assert!(
        !out.status.success(),
        "expected failure, got success\nstdout: {}\nstderr: {err}",
        stdout(out)
    );
    assert_eq!(out.status.code(), Some(1), "exit code; stderr: {err}");
    assert!(!err.contains("panicked"), "panicked: {err}");
    assert!(err.starts_with("lockmeter: error: "), "stderr: {err}");
    assert!(
        err.to_lowercase()
            .contains(&expect_in_stderr.to_lowercase()),
        "stderr should mention {expect_in_stderr:?}: {err}"
    );
}

/// A fresh scratch directory for one test, removed when dropped (also
/// when the test fails).
pub struct Scratch(PathBuf);

impl std::ops::Deref for Scratch {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.0
    }
}

impl AsRef<Path> for Scratch {
    fn as_ref(&self) -> &Path {
        &self.0
    }
}

impl AsRef<OsStr> for Scratch {
    fn as_ref(&self) -> &OsStr {
        self.0.as_os_str()
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

pub fn scratch(name: &str) -> Scratch {
    let dir = std::env::temp_dir().join(format!("lmv-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("scratch dir");
    Scratch(dir)
}

/// A fresh scratch directory only its owner may enter, as the endpoint
/// directory's checks require of an `XDG_RUNTIME_DIR`.
pub fn private_runtime(name: &str) -> Scratch {
    let dir = scratch(name);
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).unwrap();
    dir
}

/// Runs `lockmeter ARGS` with `runtime` as its runtime and temp directory.
pub fn lockmeter_in(runtime: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_lockmeter"))
        .args(args)
        .env_remove("LOCKMETER_LISTEN")
        .env("XDG_RUNTIME_DIR", runtime)
        .env("TMPDIR", runtime)
        .env("NO_COLOR", "1")
        .output()
        .expect("run lockmeter")
}

/// Builds example `name` of the `lockmeter` crate with this test's
/// profile, into this workspace's target directory; its path.
pub fn example_exe(name: &str) -> PathBuf {
    let test_exe = std::env::current_exe().unwrap();
    let profile_dir = test_exe
        .parent()
        .and_then(Path::parent)
        .unwrap()
        .to_path_buf();
    let mut cargo = Command::new(env!("CARGO"));
    cargo.args(["build", "--quiet", "-p", "lockmeter", "--example", name]);
    if profile_dir.ends_with("release") {
        cargo.arg("--release");
    }
    if let Some(target_dir) = profile_dir.parent() {
        cargo.env("CARGO_TARGET_DIR", target_dir);
    }
    assert!(
        cargo.status().expect("run cargo").success(),
        "building {name} failed"
    );
    profile_dir.join("examples").join(name)
}

/// A child process, killed and reaped when dropped.
pub struct KillOnDrop(pub Child);

impl KillOnDrop {
    pub fn pid(&self) -> u32 {
        self.0.id()
    }

    pub fn kill(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Starts `exe ARGS` listening (`LOCKMETER_LISTEN=1`) in `runtime`, with
/// `env` and none of this process's other `LOCKMETER_*` variables; waits
/// for its first line on stdout (the examples say `ready ...` once they
/// are) and returns it. Its stdin stays open until it is dropped.
pub fn start_listening(
    exe: &Path,
    args: &[&str],
    runtime: &Path,
    env: &[(&str, &OsStr)],
) -> (KillOnDrop, String) {
    let mut cmd = Command::new(exe);
    for (k, _) in std::env::vars_os() {
        if k.to_string_lossy().starts_with("LOCKMETER_") {
            cmd.env_remove(k);
        }
    }
    cmd.args(args)
        .env("XDG_RUNTIME_DIR", runtime)
        .env("LOCKMETER_LISTEN", "1")
        .envs(env.iter().copied())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    let mut child = KillOnDrop(cmd.spawn().expect("start the example"));
    let mut line = String::new();
    BufReader::new(child.0.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    (child, line.trim().to_string())
}

/// (pid, acquisitions) of the call-site rows of lock `id` in a merged
/// snapshot, sorted.
pub fn per_process(snap: &lockmeter_model::Snapshot, id: &str) -> Vec<(Option<u32>, u64)> {
    let mut v: Vec<(Option<u32>, u64)> = snap
        .lock(id)
        .unwrap()
        .sites
        .iter()
        .map(|s| (s.pid, s.stats.acquisitions))
        .collect();
    v.sort();
    v
}
