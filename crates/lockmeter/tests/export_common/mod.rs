//! Helpers shared by the `export_*` integration tests: a snapshot source
//! with known counts, scratch directories, and waiting without timing
//! assertions.
#![allow(dead_code, reason = "each test binary uses a different subset")]

use std::fs;
use std::os::unix::fs::DirBuilderExt;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use lockmeter::export::SnapshotSource;
use lockmeter_model::{LockKind, LockStats, ProcessInfo, SiteStats, Snapshot, Stats, Window};
use lockmeter_wire::discovery;

/// The lock class every fake snapshot and the demo program use.
pub const LOCK: &str = "demo.counter";

/// A source whose one lock has exactly the acquisitions it was told about.
pub struct FakeSource {
    total: AtomicU64,
    at_reset: AtomicU64,
    started: Instant,
}

impl FakeSource {
    pub fn new(initial: u64) -> Arc<FakeSource> {
        Arc::new(FakeSource {
            total: AtomicU64::new(initial),
            at_reset: AtomicU64::new(0),
            started: Instant::now(),
        })
    }

    pub fn acquire(&self, n: u64) {
        self.total.fetch_add(n, Ordering::SeqCst);
    }

    pub fn total(&self) -> u64 {
        self.total.load(Ordering::SeqCst)
    }

    fn make(&self, acquisitions: u64) -> Snapshot {
        let mut s = Snapshot::empty(
            ProcessInfo {
                pid: std::process::id(),
                name: "fake".into(),
            },
            "mock",
        );
        let elapsed = u64::try_from(self.started.elapsed().as_nanos()).unwrap_or(u64::MAX);
        s.window = Window {
            start_unix_ns: 1,
            end_unix_ns: 1 + elapsed,
            elapsed_ns: elapsed,
        };
        let stats = Stats {
            acquisitions,
            nowait: acquisitions,
            ..Stats::default()
        };
        s.locks.push(LockStats {
            id: LOCK.into(),
            display_name: None,
            kind: LockKind::Mutex,
            created_at: "tests/fake.rs:1:1".into(),
            instances: 1,
            parent: None,
            total: stats.clone(),
            sites: vec![SiteStats {
                site: "tests/fake.rs:2:5".into(),
                mode: None,
                pid: None,
                stats,
            }],
            holders: Vec::new(),
        });
        s
    }
}

impl SnapshotSource for FakeSource {
    fn snapshot(&self) -> Snapshot {
        let total = self.total();
        self.make(total - self.at_reset.load(Ordering::SeqCst).min(total))
    }

    fn cumulative(&self) -> Snapshot {
        self.make(self.total())
    }

    fn reset(&self) {
        self.at_reset.store(self.total(), Ordering::SeqCst);
    }
}

/// The acquisitions of [`LOCK`] in `snap` (0 if absent).
pub fn acquisitions(snap: &Snapshot) -> u64 {
    snap.lock(LOCK).map_or(0, |l| l.total.acquisitions)
}

/// A fresh, private (0700) directory for one test. Directories left by
/// earlier test processes that have exited are removed on the way.
pub fn scratch_dir(tag: &str) -> PathBuf {
    sweep_dead_scratch_dirs();
    // Short: Unix socket paths are limited to about 100 bytes.
    let dir = std::env::temp_dir().join(format!("lmx-{tag}-{}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    fs::DirBuilder::new()
        .mode(0o700)
        .recursive(true)
        .create(&dir)
        .unwrap();
    dir
}

/// Removes `lmx-<tag>-<pid>` directories whose process is gone.
fn sweep_dead_scratch_dirs() {
    let Ok(entries) = fs::read_dir(std::env::temp_dir()) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(rest) = name.to_str().and_then(|n| n.strip_prefix("lmx-")) else {
            continue;
        };
        let pid = rest.rsplit('-').next().and_then(|p| p.parse::<u32>().ok());
        if pid.is_some_and(|p| !discovery::process_alive(p)) {
            let _ = fs::remove_dir_all(entry.path());
        }
    }
}

/// Reads everything until the server closes; the lines it sent.
pub fn read_to_close(s: &mut impl std::io::Read) -> Vec<String> {
    let mut all = Vec::new();
    let _ = s.read_to_end(&mut all);
    String::from_utf8_lossy(&all)
        .lines()
        .map(str::to_string)
        .collect()
}

/// `lines` are the greeting and one error, after which the server closed.
pub fn assert_error_then_close(lines: &[String], what: &str) {
    assert_eq!(
        lines.len(),
        2,
        "expected hello + error for {what}, got {lines:?}"
    );
    match lockmeter_wire::decode_response(&lines[1]) {
        Ok(lockmeter_wire::Response::Error { message }) => assert!(!message.is_empty()),
        other => panic!("{what}: expected an error, got {other:?}"),
    }
}

/// Runs `client` on `n` threads at once and returns what each returned,
/// passing a panic on.
pub fn clients_at_once<T: Send>(n: usize, client: impl Fn() -> T + Sync) -> Vec<T> {
    thread::scope(|s| {
        let threads: Vec<_> = (0..n).map(|_| s.spawn(&client)).collect();
        threads.into_iter().map(|t| t.join().unwrap()).collect()
    })
}

/// Polls `cond` until it holds or `limit` passes; returns whether it held.
/// Generous limits: this waits for events, it does not measure time.
pub fn wait_until(limit: Duration, mut cond: impl FnMut() -> bool) -> bool {
    let end = Instant::now() + limit;
    loop {
        if cond() {
            return true;
        }
        if Instant::now() >= end {
            return false;
        }
        thread::sleep(Duration::from_millis(10));
    }
}
