//! Bare against instrumented locks while no `lockmeter::Layer` exists.
//!
//! This is its own bench binary so that no layer has ever been created in
//! the process: every instrumented lock runs its plain path after one
//! relaxed load. `benches/observed.rs` measures the same pairs with a layer
//! installed. Run with `cargo bench -p lockmeter --bench unobserved`.
//!
//! Bare locks: the same TTAS spinlock written plainly (`bare.rs`, shared
//! with the `lockmeter-bench` package), `parking_lot`'s Mutex and RwLock,
//! and a semaphore of a `parking_lot` Mutex<usize> + Condvar.

#[path = "../../lockmeter-bench/src/bare.rs"]
mod bare;

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion};

use bare::{BareSemaphore, BareSpinLock};

fn spinlock(c: &mut Criterion) {
    let mut g = c.benchmark_group("unobserved/spinlock");
    let bare = BareSpinLock::new(0u64);
    let inst = lockmeter::SpinLock::named("bench.spinlock", 0u64);
    g.bench_function("bare", |b| b.iter(|| *black_box(&bare).lock() += 1));
    g.bench_function("instrumented", |b| b.iter(|| *black_box(&inst).lock() += 1));
    g.finish();
}

fn mutex(c: &mut Criterion) {
    let mut g = c.benchmark_group("unobserved/mutex");
    let bare = parking_lot::Mutex::new(0u64);
    let inst = lockmeter::Mutex::named("bench.mutex", 0u64);
    g.bench_function("bare", |b| b.iter(|| *black_box(&bare).lock() += 1));
    g.bench_function("instrumented", |b| b.iter(|| *black_box(&inst).lock() += 1));
    g.finish();
}

fn rwlock(c: &mut Criterion) {
    let mut g = c.benchmark_group("unobserved/rwlock");
    let bare = parking_lot::RwLock::new(0u64);
    let inst = lockmeter::RwLock::named("bench.rwlock", 0u64);
    g.bench_function("read/bare", |b| b.iter(|| *black_box(&bare).read()));
    g.bench_function("read/instrumented", |b| b.iter(|| *black_box(&inst).read()));
    g.bench_function("write/bare", |b| b.iter(|| *black_box(&bare).write() += 1));
    g.bench_function("write/instrumented", |b| {
        b.iter(|| *black_box(&inst).write() += 1)
    });
    g.finish();
}

fn semaphore(c: &mut Criterion) {
    let mut g = c.benchmark_group("unobserved/semaphore");
    let bare = BareSemaphore::new(1);
    let inst = lockmeter::Semaphore::named("bench.semaphore", 1);
    g.bench_function("bare", |b| {
        b.iter(|| {
            let s = black_box(&bare);
            s.down();
            s.up();
        })
    });
    g.bench_function("instrumented", |b| {
        b.iter(|| {
            let s = black_box(&inst);
            s.down();
            s.up();
        })
    });
    g.finish();
}

criterion_group!(benches, spinlock, mutex, rwlock, semaphore);
criterion_main!(benches);
