//! Uncontended lock+unlock on one thread: bare against instrumented.

use std::hint::black_box;

use crate::bare::{BareSemaphore, BareSpinLock};
use crate::measure::{ns_pair, Config, Pair};
use crate::report::{Goal, Row, Unit};

/// Whether a lockmeter layer exists while the rows are measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// No layer exists in the process: one relaxed load per lock.
    Unobserved,
    /// A layer is installed as the global default: every acquisition recorded.
    Observed,
}

impl Phase {
    pub fn key(self) -> &'static str {
        match self {
            Phase::Unobserved => "unobserved",
            Phase::Observed => "observed",
        }
    }
}

/// SpinLock, Mutex, RwLock read/write and Semaphore down+up rows.
pub fn rows(cfg: &Config, phase: Phase) -> Vec<Row> {
    let goal = |observed: Goal| match phase {
        Phase::Unobserved => Goal::RatioAtMost(1.10),
        Phase::Observed => observed,
    };
    let row = |what: &str, label: &str, goal: Goal| {
        Row::new(
            &format!("uncontended_{}_{what}", phase.key()),
            &format!("uncontended {}, {label}", phase.key()),
            Unit::NsPerOp,
            goal,
        )
    };
    vec![
        row("spinlock", "SpinLock", goal(Goal::RatioAtMost(3.0)))
            .with_pair(spinlock(cfg))
            .note("bare: the same TTAS spinlock written plainly"),
        row("mutex", "Mutex", goal(Goal::RatioAtMost(2.5)))
            .with_pair(mutex(cfg))
            .note("bare: parking_lot::Mutex"),
        row("sync_mutex", "sync::Mutex (std API)", goal(Goal::Info))
            .with_pair(sync_mutex(cfg))
            .note("bare: std::sync::Mutex"),
        row("rwlock_read", "RwLock read", goal(Goal::Info))
            .with_pair(rwlock_read(cfg))
            .note("bare: parking_lot::RwLock"),
        row("rwlock_write", "RwLock write", goal(Goal::Info)).with_pair(rwlock_write(cfg)),
        row("semaphore", "Semaphore down+up", goal(Goal::Info))
            .with_pair(semaphore(cfg))
            .note("bare: parking_lot Mutex<usize> + Condvar"),
    ]
}

/// What the other ways of observing cost, SpinLock and Mutex: the layer in
/// a scoped dispatcher (`with_default`: tracing's downcast on every
/// acquisition), with the default sampling and with every hold timed
/// (`sample_uncontended_holds(1)`: two clock reads per acquisition).
/// Compared with the `observed` rows (global dispatcher, default sampling),
/// the differences are the price of each choice.
pub fn mode_rows(cfg: &Config) -> Vec<Row> {
    use tracing_subscriber::prelude::*;

    let mut rows = Vec::new();
    for (key, label, every) in [
        (
            "scoped",
            "observed, scoped dispatcher",
            lockmeter::DEFAULT_HOLD_SAMPLING,
        ),
        (
            "scoped_every_hold_timed",
            "observed, scoped dispatcher, every hold timed",
            1,
        ),
    ] {
        let layer = lockmeter::Layer::builder()
            .sample_uncontended_holds(every)
            .build();
        let dispatch = tracing::Dispatch::new(tracing_subscriber::registry().with(layer));
        tracing::dispatcher::with_default(&dispatch, || {
            for (what, name, pair) in [
                ("spinlock", "SpinLock", spinlock as fn(&Config) -> Pair),
                ("mutex", "Mutex", mutex),
            ] {
                rows.push(
                    Row::new(
                        &format!("uncontended_{key}_{what}"),
                        &format!("uncontended {label}, {name}"),
                        Unit::NsPerOp,
                        Goal::Info,
                    )
                    .with_pair(pair(cfg)),
                );
            }
        });
    }
    rows
}

/// One uncontended pair: `bare` and `inst` each run in a loop of their
/// own, so that each half is its own monomorphized, inlined loop.
fn op_pair(cfg: &Config, bare: impl Fn(), inst: impl Fn()) -> Pair {
    ns_pair(
        cfg,
        |n| {
            for _ in 0..n {
                bare();
            }
        },
        |n| {
            for _ in 0..n {
                inst();
            }
        },
    )
}

/// [`op_pair`] of the same operation `l => op` on a bare lock and on its
/// instrumented twin (both hidden from the optimizer with `black_box`).
macro_rules! same_op {
    ($cfg:expr, $bare:expr, $inst:expr, $l:ident => $op:expr) => {{
        let (bare, inst) = (black_box(&$bare), black_box(&$inst));
        op_pair(
            $cfg,
            || {
                let $l = bare;
                $op;
            },
            || {
                let $l = inst;
                $op;
            },
        )
    }};
}

fn spinlock(cfg: &Config) -> Pair {
    let bare = BareSpinLock::new(0u64);
    let inst = lockmeter::SpinLock::named("bench.spinlock", 0u64);
    same_op!(cfg, bare, inst, l => *l.lock() += 1)
}

fn mutex(cfg: &Config) -> Pair {
    let bare = parking_lot::Mutex::new(0u64);
    let inst = lockmeter::Mutex::named("bench.mutex", 0u64);
    same_op!(cfg, bare, inst, l => *l.lock() += 1)
}

/// `lockmeter::sync::Mutex` against std's, `.lock().unwrap()` both: the
/// poison check is in both, so the difference is the metering.
fn sync_mutex(cfg: &Config) -> Pair {
    let bare = std::sync::Mutex::new(0u64);
    let inst = lockmeter::sync::Mutex::named("bench.sync_mutex", 0u64);
    let (bare, inst) = (black_box(&bare), black_box(&inst));
    op_pair(
        cfg,
        || *bare.lock().unwrap() += 1,
        || *inst.lock().unwrap() += 1,
    )
}

fn rwlock_read(cfg: &Config) -> Pair {
    let bare = parking_lot::RwLock::new(1u64);
    let inst = lockmeter::RwLock::named("bench.rwlock", 1u64);
    same_op!(cfg, bare, inst, l => black_box(*l.read()))
}

fn rwlock_write(cfg: &Config) -> Pair {
    let bare = parking_lot::RwLock::new(0u64);
    let inst = lockmeter::RwLock::named("bench.rwlock", 0u64);
    same_op!(cfg, bare, inst, l => *l.write() += 1)
}

fn semaphore(cfg: &Config) -> Pair {
    let bare = BareSemaphore::new(1);
    let inst = lockmeter::Semaphore::named("bench.semaphore", 1);
    same_op!(cfg, bare, inst, l => {
        l.down();
        l.up();
    })
}
