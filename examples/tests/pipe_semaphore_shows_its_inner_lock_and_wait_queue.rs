//! Seed 002: a pipe guarded by a semaphore shows the semaphore's own
//! spinlock and wait queue as rows nested under it, with call sites inside
//! the library; the spinlock-guarded pipe has neither and never sleeps for
//! its guard. Both deliver every message in order.

mod common;

use common::{lock, measured};
use lockmeter_model::LockKind;
use seed_harness::pipe::{self, Variant, SEM, SPIN, WAIT};

const MESSAGES: u64 = 20_000;

fn run(variant: Variant) -> (pipe::Row, lockmeter_model::Snapshot) {
    measured("pipe run", |h| pipe::run_one(variant, MESSAGES, None, h))
}

/// Runs are retried until one has a semaphore `down` that had to sleep:
/// the wait queue has a row only once it was waited on, and the writer and
/// the reader meet at the semaphore only a few times in 20,000 messages
/// (0–11 in runs on a loaded machine; a clean-clone CI run once had none).
const RUNS_FOR_A_CONTENDED_DOWN: usize = 10;

#[test]
fn semaphore_guard_shows_nested_rows_inside_the_library() {
    let (row, snap) = (0..RUNS_FOR_A_CONTENDED_DOWN)
        .map(|_| run(Variant::Semaphore))
        .find(|(_, snap)| lock(snap, SEM).total.contended > 0)
        .unwrap_or_else(|| {
            panic!("no contended down in {RUNS_FOR_A_CONTENDED_DOWN} runs of {MESSAGES} messages")
        });
    assert!(row.in_order);
    let sem = lock(&snap, SEM);
    assert_eq!(sem.kind, LockKind::Semaphore);
    // One acquisition per message each side, plus retries on full/empty.
    assert!(
        sem.total.acquisitions >= 2 * MESSAGES,
        "{}",
        sem.total.acquisitions
    );
    assert_eq!(sem.sites.len(), 2, "pipe_read and pipe_write sites");
    assert!(sem
        .sites
        .iter()
        .all(|s| s.site.contains("examples/common/pipe.rs")));

    let inner = lock(&snap, &format!("{SEM}.lock"));
    assert_eq!(inner.kind, LockKind::Spinlock);
    assert_eq!(inner.parent.as_deref(), Some(SEM));
    assert!(
        inner
            .sites
            .iter()
            .all(|s| s.site.contains("crates/lockmeter/src/")),
        "{:?}",
        inner.sites.iter().map(|s| &s.site).collect::<Vec<_>>()
    );
    // down and up each take the semaphore's lock at least once.
    assert!(inner.total.acquisitions >= 2 * sem.total.acquisitions);
    let wait = lock(&snap, &format!("{SEM}.wait"));
    assert_eq!(wait.kind, LockKind::Waitqueue);
    assert_eq!(wait.parent.as_deref(), Some(SEM));
    assert_eq!(
        wait.total.waits, sem.total.contended,
        "every contended down slept"
    );
}

#[test]
fn spinlock_guard_never_sleeps_and_leaves_the_semaphore_idle() {
    let (row, snap) = run(Variant::Spinlock);
    assert!(row.in_order);
    let spin = &lock(&snap, SPIN).total;
    assert!(spin.acquisitions >= 2 * MESSAGES);
    assert_eq!(spin.sleeps, 0);
    assert_eq!(row.guard_sleeps, 0);
    let sem_used = snap.lock(SEM).map_or(0, |l| l.total.acquisitions);
    assert_eq!(sem_used, 0);
    // Real waiting still happens on PIPE_WAIT only.
    assert_eq!(lock(&snap, WAIT).kind, LockKind::Waitqueue);
}
