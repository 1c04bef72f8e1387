//! Helpers for the stress suite: sizes (CI or soak), a watchdog that turns a
//! hang into a failure naming what was waiting, a tiny RNG, and process
//! figures (RSS, open fds) read from /proc.
#![allow(dead_code)]

use std::sync::mpsc;
use std::time::{Duration, Instant};

/// Whether `LOCKMETER_STRESS=long` asks for soak sizes.
pub fn long() -> bool {
    std::env::var("LOCKMETER_STRESS").is_ok_and(|v| v == "long")
}

/// `ci` normally, `soak` under `LOCKMETER_STRESS=long`.
pub fn size(ci: u64, soak: u64) -> u64 {
    if long() {
        soak
    } else {
        ci
    }
}

/// How long a stress body may run before the watchdog fails it: generous,
/// because CI machines are shared; the point is to never hang forever.
pub fn deadline() -> Duration {
    if long() {
        Duration::from_secs(60 * 60)
    } else {
        Duration::from_secs(120)
    }
}

/// Runs `body` on its own thread and fails the test, with `status()` in the
/// message, if it has not finished by [`deadline`]. A panic in `body` is
/// passed on unchanged. A hung body is left behind; the harness exits anyway.
pub fn watchdog<R: Send + 'static>(
    test: &str,
    status: impl Fn() -> String,
    body: impl FnOnce() -> R + Send + 'static,
) -> R {
    let (tx, rx) = mpsc::channel();
    let started = Instant::now();
    let worker = std::thread::Builder::new()
        .name(format!("stress:{test}"))
        .spawn(move || {
            let out = body();
            let _ = tx.send(());
            out
        })
        .expect("spawn stress body");
    let limit = deadline();
    match rx.recv_timeout(limit) {
        Ok(()) | Err(mpsc::RecvTimeoutError::Disconnected) => match worker.join() {
            Ok(out) => {
                println!("[{test}] finished in {:.2?}", started.elapsed());
                out
            }
            Err(panic) => std::panic::resume_unwind(panic),
        },
        Err(mpsc::RecvTimeoutError::Timeout) => panic!(
            "watchdog: stress test {test} still running after {limit:?}; waiting: {}",
            status()
        ),
    }
}

/// xorshift64*: deterministic per thread, no dependency needed.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    pub fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        (self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 32) % n
    }
}

/// Resident set size in KiB (Linux), or 0 where /proc is missing.
pub fn rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|v| v.parse().ok())
        })
        .unwrap_or(0)
}

/// Open file descriptors of this process (Linux), or 0 where /proc is missing.
pub fn open_fds() -> usize {
    std::fs::read_dir("/proc/self/fd")
        .map(|d| d.count())
        .unwrap_or(0)
}

/// Runs `f` with a fresh layer in effect on this thread, giving `f` the
/// handle so it can take snapshots while it runs.
///
/// The layer scans for deadlocks every 50 ms and records lock order, and
/// the run must end with neither a deadlock nor an inversion reported:
/// the stress suite is the no-false-positives test of the watchdog.
pub fn observed<R>(f: impl FnOnce(&lockmeter::Handle) -> R) -> (lockmeter::Handle, R) {
    use tracing_subscriber::prelude::*;
    let layer = lockmeter::Layer::builder()
        .deadlock_detection(Some(Duration::from_millis(100)))
        .lock_order(true)
        .build();
    let handle = layer.handle();
    let dispatch = tracing::Dispatch::new(tracing_subscriber::registry().with(layer));
    let out = tracing::dispatcher::with_default(&dispatch, || f(&handle));
    assert_no_hang_reports(&handle.cumulative());
    (handle, out)
}

/// No deadlock and no lock-order inversion reported.
pub fn assert_no_hang_reports(snap: &lockmeter_model::Snapshot) {
    assert!(snap.lock_order.recorded, "lock order is recorded");
    assert!(
        snap.deadlocks.is_empty(),
        "false deadlock reports: {:#?}",
        snap.deadlocks
    );
    assert!(
        snap.lock_order.inversions.is_empty(),
        "false inversions: {:#?}",
        snap.lock_order.inversions
    );
}

/// Spawns a thread that records into the caller's current dispatcher.
pub fn spawn_observed<R: Send + 'static>(
    f: impl FnOnce() -> R + Send + 'static,
) -> std::thread::JoinHandle<R> {
    let dispatch = tracing::dispatcher::get_default(|d| d.clone());
    std::thread::Builder::new()
        .stack_size(256 * 1024)
        .spawn(move || tracing::dispatcher::with_default(&dispatch, f))
        .expect("spawn observed thread")
}

/// The snapshot's row `id`, or a panic listing the rows there are.
pub fn row<'a>(snap: &'a lockmeter_model::Snapshot, id: &str) -> &'a lockmeter_model::LockStats {
    snap.lock(id).unwrap_or_else(|| {
        let ids: Vec<&str> = snap.locks.iter().map(|l| l.id.as_str()).collect();
        panic!("no lock {id:?} in snapshot; have {ids:?}")
    })
}
