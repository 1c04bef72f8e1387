//! Resident memory after 10^7 observed acquisitions against after 10^4.
//!
//! Two threads (the main one and a helper) take a fixed set of locks in
//! turn: a SpinLock and a Mutex they share (so some acquisitions contend
//! and record holders) and an RwLock (read and write) and a Semaphore of
//! their own. VmRSS is read after the first 10^4 acquisitions and again
//! after 10^7, with both threads alive and idle at each reading.

use std::hint::black_box;
use std::sync::Barrier;

use crate::report::{Goal, Row, Unit};

/// Acquisitions made before the first reading, all threads together.
pub const EARLY: u64 = 10_000;
/// Acquisitions made before the second reading, all threads together.
pub const LATE: u64 = 10_000_000;

/// VmRSS of this process in KiB, from /proc/self/status.
pub fn rss_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    parse_vm_rss(&status)
}

/// The `VmRSS:` figure (KiB) of a `/proc/<pid>/status` text.
pub fn parse_vm_rss(status: &str) -> Option<u64> {
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|n| n.parse().ok())
}

/// Locks both threads take.
struct Shared {
    spin: lockmeter::SpinLock<u64>,
    mutex: lockmeter::Mutex<u64>,
}

/// Locks one thread takes alone.
struct Own {
    rw: lockmeter::RwLock<u64>,
    sem: lockmeter::Semaphore,
}

impl Own {
    fn new() -> Own {
        Own {
            rw: lockmeter::RwLock::named("bench.rss.rwlock", 0),
            sem: lockmeter::Semaphore::named("bench.rss.semaphore", 1),
        }
    }
}

/// `n` acquisitions, cycling through the five kinds of acquisition.
fn acquire(shared: &Shared, own: &Own, n: u64) {
    for i in 0..n {
        match i % 5 {
            0 => *shared.spin.lock() += 1,
            1 => *shared.mutex.lock() += 1,
            2 => {
                black_box(*own.rw.read());
            }
            3 => *own.rw.write() += 1,
            _ => drop(own.sem.acquire()),
        }
    }
}

/// The RSS row. Needs the lockmeter layer installed as the global default.
pub fn rows() -> Vec<Row> {
    let mut row = Row::new(
        "rss_1e7_vs_1e4",
        "resident memory, 10^7 vs 10^4 acquisitions",
        Unit::KiB,
        Goal::RatioAtMost(1.1),
    );
    let shared = Shared {
        spin: lockmeter::SpinLock::named("bench.rss.spinlock", 0),
        mutex: lockmeter::Mutex::named("bench.rss.mutex", 0),
    };
    // Phases: run EARLY, read; run the rest, read.
    let phase = Barrier::new(2);
    let (early, late) = std::thread::scope(|s| {
        s.spawn(|| {
            let own = Own::new();
            acquire(&shared, &own, EARLY / 2);
            phase.wait(); // done early
            phase.wait(); // main has read
            acquire(&shared, &own, (LATE - EARLY) / 2);
            phase.wait(); // done late
            phase.wait(); // main has read
        });
        let own = Own::new();
        acquire(&shared, &own, EARLY / 2);
        phase.wait();
        let early = rss_kib();
        phase.wait();
        acquire(&shared, &own, (LATE - EARLY) / 2);
        phase.wait();
        let late = rss_kib();
        phase.wait();
        (early, late)
    });
    match (early, late) {
        (Some(e), Some(l)) if e > 0 => {
            row.bare = Some(e as f64);
            row.instrumented = Some(l as f64);
            row.ratio = Some(l as f64 / e as f64);
            row.note = "bare = VmRSS after 10^4, instrumented = after 10^7 (2 threads)".into();
        }
        _ => row.note = "not measured: /proc/self/status has no VmRSS".into(),
    }
    vec![row]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_vm_rss() {
        for (status, want) in [
            (
                "Name:\tx\nVmPeak:\t  9000 kB\nVmRSS:\t    1234 kB\nThreads:\t1\n",
                Some(1234),
            ),
            ("Name:\tx\n", None),
            ("VmRSS:\tlots kB\n", None),
        ] {
            assert_eq!(parse_vm_rss(status), want, "{status:?}");
        }
    }

    #[test]
    fn reads_our_own_rss() {
        if std::path::Path::new("/proc/self/status").exists() {
            assert!(rss_kib().is_some_and(|k| k > 0));
        }
    }
}
