//! The floor under the contended `hammer` rows: what the hardware charges
//! for the least bookkeeping a lock profiler with exact per-thread counts
//! can do, one thread-local increment per acquisition, with no profiler
//! at all.
//!
//! Each row runs the bare lock against the same bare lock with one
//! `thread_local!` counter incremented on every acquisition, either just
//! before the attempt (in the gap between a thread's unlock and its next
//! lock, where lockmeter finds its entry) or inside the critical section
//! (where the counts go). In `hammer` the releasing thread re-takes the
//! lock before another core's request for the line lands, and any work in
//! that gap lets the other threads in: the line then moves on most
//! acquisitions instead of a few. `docs/performance.md` ("What misses,
//! and what it would take", the hammer rows' floor) reads these rows.

use std::cell::Cell;

use crate::bare::BareSpinLock;
use crate::contended::{lock_pair, Take};
use crate::measure::Config;
use crate::report::{Goal, Row, Unit};

thread_local! {
    /// The one count: a const-initialised thread-local, so an increment is
    /// one `inc` of a `%fs`-relative word and nothing else.
    static COUNT: Cell<u64> = const { Cell::new(0) };
}

#[inline(always)]
fn count_one() {
    COUNT.with(|c| c.set(c.get().wrapping_add(1)));
}

/// A bare lock that counts each acquisition just before its attempt.
struct CountBefore<L>(L);

/// A bare lock that counts each acquisition while it holds the lock.
struct CountInside<L>(L);

macro_rules! counting_take {
    ($($lock:ty),*) => {$(
        impl Take for CountBefore<$lock> {
            #[inline]
            fn take(&self) {
                count_one();
                *self.0.lock() += 1;
            }
        }
        impl Take for CountInside<$lock> {
            #[inline]
            fn take(&self) {
                let mut g = self.0.lock();
                count_one();
                *g += 1;
            }
        }
    )*};
}

counting_take!(parking_lot::Mutex<u64>, BareSpinLock<u64>);

/// One row: the bare lock against itself with the count `place`d.
fn row(name: &str, threads: usize, place: &str, pair: crate::measure::Pair) -> Row {
    Row::new(
        &format!(
            "floor_{}_{threads}t_hammer_one_count_{place}",
            name.to_lowercase()
        ),
        &format!("floor: bare {name}, {threads} threads, hammer, one thread-local count {place}"),
        Unit::MopsPerSec,
        Goal::Info,
    )
    .with_pair(pair)
}

/// The count before the attempt at 2 and 8 threads, and inside the
/// critical section at 2, for the bare Mutex (parking_lot's) and SpinLock.
pub fn rows(cfg: &Config) -> Vec<Row> {
    let mut rows = Vec::new();
    for threads in [2, 8] {
        let p = lock_pair(
            cfg,
            threads,
            0,
            false,
            parking_lot::Mutex::new(0),
            CountBefore(parking_lot::Mutex::new(0)),
        );
        rows.push(row("Mutex", threads, "before", p));
        let p = lock_pair(
            cfg,
            threads,
            0,
            false,
            BareSpinLock::new(0),
            CountBefore(BareSpinLock::new(0)),
        );
        rows.push(row("SpinLock", threads, "before", p));
    }
    let p = lock_pair(
        cfg,
        2,
        0,
        false,
        parking_lot::Mutex::new(0),
        CountInside(parking_lot::Mutex::new(0)),
    );
    rows.push(row("Mutex", 2, "inside", p));
    let p = lock_pair(
        cfg,
        2,
        0,
        false,
        BareSpinLock::new(0),
        CountInside(BareSpinLock::new(0)),
    );
    rows.push(row("SpinLock", 2, "inside", p));
    if let Some(r) = rows.first_mut() {
        r.note = "no profiler in these rows: ratio = bare lock with one thread-local \
                  increment per acquisition / bare lock; the floor under the contended \
                  hammer rows (docs/performance.md)"
            .to_string();
    }
    rows
}
