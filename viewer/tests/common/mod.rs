//! Helpers shared by the tests that run the real `lockmeter` binary.

#![allow(dead_code)] // each test file uses a different part

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

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

/// A fresh scratch directory for one test.
pub fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("lmv-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("scratch dir");
    dir
}
