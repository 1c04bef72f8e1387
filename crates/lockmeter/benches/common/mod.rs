//! The bare/instrumented pairs both criterion binaries measure, once with
//! no layer in the process (`unobserved.rs`) and once with a layer
//! installed globally (`observed.rs`).
//!
//! Bare locks: the same TTAS spinlock written plainly (`bare.rs`, shared
//! with the `lockmeter-bench` package), `parking_lot`'s Mutex and RwLock,
//! and a semaphore of a `parking_lot` Mutex<usize> + Condvar.

#[path = "../../../lockmeter-bench/src/bare.rs"]
mod bare;

use std::hint::black_box;

use criterion::Criterion;

use bare::{BareSemaphore, BareSpinLock};

/// The same operation `l => op` on a bare lock and on its instrumented
/// twin, as `{prefix}bare` and `{prefix}instrumented` in `group`.
macro_rules! same_op {
    ($c:expr, $group:expr, $prefix:expr, $bare:expr, $inst:expr, $l:ident => $op:expr) => {{
        let (bare, inst) = ($bare, $inst);
        pair(
            $c,
            $group,
            $prefix,
            || {
                let $l = black_box(bare);
                $op
            },
            || {
                let $l = black_box(inst);
                $op
            },
        );
    }};
}

/// Every pair, in groups named `{phase}/{lock}`.
pub fn lock_pairs(c: &mut Criterion, phase: &str) {
    let bare = BareSpinLock::new(0u64);
    let inst = lockmeter::SpinLock::named("bench.spinlock", 0u64);
    let group = format!("{phase}/spinlock");
    same_op!(c, &group, "", &bare, &inst, l => *l.lock() += 1);

    let bare = parking_lot::Mutex::new(0u64);
    let inst = lockmeter::Mutex::named("bench.mutex", 0u64);
    let group = format!("{phase}/mutex");
    same_op!(c, &group, "", &bare, &inst, l => *l.lock() += 1);

    let bare = parking_lot::RwLock::new(0u64);
    let inst = lockmeter::RwLock::named("bench.rwlock", 0u64);
    let group = format!("{phase}/rwlock");
    same_op!(c, &group, "read/", &bare, &inst, l => *l.read());
    same_op!(c, &group, "write/", &bare, &inst, l => *l.write() += 1);

    let bare = BareSemaphore::new(1);
    let inst = lockmeter::Semaphore::named("bench.semaphore", 1);
    let group = format!("{phase}/semaphore");
    same_op!(c, &group, "", &bare, &inst, l => {
        l.down();
        l.up();
    });
}

/// `{prefix}bare` and `{prefix}instrumented` side by side in `group`.
fn pair<O, P>(
    c: &mut Criterion,
    group: &str,
    prefix: &str,
    mut bare: impl FnMut() -> O,
    mut inst: impl FnMut() -> P,
) {
    let mut g = c.benchmark_group(group);
    g.bench_function(format!("{prefix}bare"), |b| b.iter(&mut bare));
    g.bench_function(format!("{prefix}instrumented"), |b| b.iter(&mut inst));
    g.finish();
}
