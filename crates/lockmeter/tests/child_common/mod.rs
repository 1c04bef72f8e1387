//! One of lockmeter's examples run as a child process, as a user would run
//! it: built on first use into the test's own target dir, started with no
//! inherited `LOCKMETER_*` variable, its stderr collected in the
//! background (for the messages it announces and for failure reports),
//! and killed if a test leaves it running.
#![allow(dead_code, reason = "each test binary uses a different subset")]

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{ChildStdin, ChildStdout, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::thread;

/// The binary of `crates/lockmeter/examples/<name>.rs`, built if `cargo
/// test` did not build it already (once per test binary).
pub fn example_exe(name: &str) -> PathBuf {
    static BUILT: Mutex<BTreeMap<String, PathBuf>> = Mutex::new(BTreeMap::new());
    // Held across the build, so parallel tests build it once.
    let mut built = BUILT.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(exe) = built.get(name) {
        return exe.clone();
    }
    let test_exe = std::env::current_exe().unwrap();
    // target/<profile>/deps/<test> -> target/<profile>
    let profile_dir = test_exe
        .parent()
        .and_then(Path::parent)
        .unwrap()
        .to_path_buf();
    let exe = profile_dir.join("examples").join(name);
    let mut cargo = Command::new(env!("CARGO"));
    cargo.args(["build", "--quiet", "-p", "lockmeter", "--example", name]);
    if profile_dir.ends_with("release") {
        cargo.arg("--release");
    }
    if let Some(target_dir) = profile_dir.parent() {
        cargo.env("CARGO_TARGET_DIR", target_dir);
    }
    let status = cargo.status().expect("cannot run cargo to build the demo");
    assert!(status.success(), "building examples/{name} failed");
    assert!(exe.exists(), "{} is missing after the build", exe.display());
    built.insert(name.to_string(), exe.clone());
    exe
}

/// A running example with piped stdin, stdout and stderr.
pub struct Child {
    pub child: std::process::Child,
    /// Closing it tells the demos to exit.
    pub stdin: Option<ChildStdin>,
    stdout: Option<BufReader<ChildStdout>>,
    stderr: Arc<Mutex<String>>,
}

impl Child {
    /// Starts example `name` with `env` (and nothing else of lockmeter's
    /// from this process's environment) and `args`.
    pub fn start(name: &str, env: &[(&str, &str)], args: &[&str]) -> Child {
        let mut cmd = Command::new(example_exe(name));
        for (k, _) in std::env::vars_os() {
            if k.to_string_lossy().starts_with("LOCKMETER_") {
                cmd.env_remove(k);
            }
        }
        cmd.envs(env.iter().copied())
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = cmd.spawn().expect("cannot start the demo");
        let stderr = Arc::new(Mutex::new(String::new()));
        let mut err = child.stderr.take().unwrap();
        let sink = Arc::clone(&stderr);
        thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while let Ok(n) = err.read(&mut buf) {
                if n == 0 {
                    break;
                }
                sink.lock()
                    .unwrap()
                    .push_str(&String::from_utf8_lossy(&buf[..n]));
            }
        });
        Child {
            stdin: child.stdin.take(),
            stdout: child.stdout.take().map(BufReader::new),
            child,
            stderr,
        }
    }

    /// The numbers of the `ready N...` line the demos print first, or a
    /// panic (after killing the child) naming what came instead.
    pub fn ready(&mut self) -> Vec<u64> {
        let mut line = String::new();
        if let Some(out) = &mut self.stdout {
            out.read_line(&mut line).unwrap();
        }
        let nums: Option<Vec<u64>> = line
            .strip_prefix("ready ")
            .map(|r| r.split_whitespace().map(|n| n.parse().ok()).collect())
            .and_then(|n: Option<Vec<u64>>| n.filter(|n| !n.is_empty()));
        nums.unwrap_or_else(|| {
            let _ = self.child.kill();
            panic!(
                "the demo did not get ready: {line:?}; stderr: {}",
                self.stderr()
            )
        })
    }

    /// Reads and discards the rest of stdout in the background, so the
    /// child never blocks on a full pipe.
    pub fn drain_stdout(&mut self) {
        if let Some(mut out) = self.stdout.take() {
            thread::spawn(move || std::io::copy(&mut out, &mut std::io::sink()));
        }
    }

    /// Everything the child wrote to stderr so far.
    pub fn stderr(&self) -> String {
        self.stderr.lock().unwrap().clone()
    }

    pub fn running(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }
}

impl Drop for Child {
    fn drop(&mut self) {
        if self.running() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}
