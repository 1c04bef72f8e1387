//! Uncontended observed rows whose loops are a library crate's code
//! (`lib.rs`), beside the main rows, whose loops are the bench
//! executable's: what a lock taken in a library costs, which is where
//! most of a program's locks are. Information rows, no goal.

use lockmeter_bench as lib;

use crate::measure::{ns_pair, Config, Pair};
use crate::report::{Goal, Row, Unit};

fn row(what: &str, name: &str, pair: Pair) -> Row {
    Row::new(
        &format!("library_observed_{what}"),
        &format!("uncontended observed, {name}, loop in a library crate"),
        Unit::NsPerOp,
        Goal::Info,
    )
    .with_pair(pair)
}

/// The library-crate rows, a layer installed (the `observed` step).
pub fn rows(cfg: &Config) -> Vec<Row> {
    let (bare, inst) = (
        parking_lot::Mutex::new(0u64),
        lockmeter::Mutex::named("bench.library.mutex", 0u64),
    );
    let mutex = ns_pair(
        cfg,
        |n| lib::parking_lot_mutex(&bare, n),
        |n| lib::mutex(&inst, n),
    );
    let (bare, inst) = (
        parking_lot::FairMutex::new(0u64),
        lockmeter::FairMutex::named("bench.library.fair_mutex", 0u64),
    );
    let fair = ns_pair(
        cfg,
        |n| lib::parking_lot_fair_mutex(&bare, n),
        |n| lib::fair_mutex(&inst, n),
    );
    let (bare, inst) = (
        parking_lot::RwLock::new(1u64),
        lockmeter::RwLock::named("bench.library.rwlock", 1u64),
    );
    let read = ns_pair(
        cfg,
        |n| lib::parking_lot_rwlock_read(&bare, n),
        |n| lib::rwlock_read(&inst, n),
    );
    let mut rows = vec![
        row("mutex", "Mutex", mutex),
        row("fair_mutex", "FairMutex", fair),
        row("rwlock_read", "RwLock read", read),
    ];
    rows[0].note = "bare: parking_lot's, its loop in the same library crate (lockmeter-bench's \
                    lib.rs); the main rows' loops are the executable's"
        .to_string();
    rows
}
