//! Bare against instrumented locks with a `lockmeter::Layer` installed as
//! the global default, so every instrumented acquisition is recorded; plus
//! the cost of the parts of an observed acquisition.
//!
//! The unobserved pairs live in `benches/unobserved.rs`, a separate binary,
//! because once a layer exists in a process the locks look it up.
//! Run with `cargo bench -p lockmeter --bench observed`.

#[path = "../../lockmeter-bench/src/bare.rs"]
mod bare;

use std::hint::black_box;

use criterion::{criterion_group, Criterion};
use tracing_subscriber::layer::SubscriberExt;

use bare::{BareSemaphore, BareSpinLock};

fn spinlock(c: &mut Criterion) {
    let mut g = c.benchmark_group("observed/spinlock");
    let bare = BareSpinLock::new(0u64);
    let inst = lockmeter::SpinLock::named("bench.spinlock", 0u64);
    g.bench_function("bare", |b| b.iter(|| *black_box(&bare).lock() += 1));
    g.bench_function("instrumented", |b| b.iter(|| *black_box(&inst).lock() += 1));
    g.finish();
}

fn mutex(c: &mut Criterion) {
    let mut g = c.benchmark_group("observed/mutex");
    let bare = parking_lot::Mutex::new(0u64);
    let inst = lockmeter::Mutex::named("bench.mutex", 0u64);
    g.bench_function("bare", |b| b.iter(|| *black_box(&bare).lock() += 1));
    g.bench_function("instrumented", |b| b.iter(|| *black_box(&inst).lock() += 1));
    g.finish();
}

fn rwlock(c: &mut Criterion) {
    let mut g = c.benchmark_group("observed/rwlock");
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
    let mut g = c.benchmark_group("observed/semaphore");
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

/// The floor of a timed acquisition and the cost of finding the layer.
fn components(c: &mut Criterion) {
    let mut g = c.benchmark_group("observed/components");
    let clock = quanta::Clock::new();
    g.bench_function("clock_raw_pair", |b| {
        b.iter(|| black_box(clock.raw()) ^ black_box(clock.raw()))
    });
    g.bench_function("dispatch_get_default_downcast", |b| {
        b.iter(|| {
            tracing::dispatcher::get_default(|d| d.downcast_ref::<lockmeter::Layer>().is_some())
        })
    });
    g.finish();
}

criterion_group!(benches, spinlock, mutex, rwlock, semaphore, components);

fn main() {
    // Installed once, before any measurement, for the whole process.
    let layer = lockmeter::Layer::new();
    tracing::subscriber::set_global_default(tracing_subscriber::registry().with(layer))
        .expect("no other global subscriber in this bench binary");
    benches();
    Criterion::default().configure_from_args().final_summary();
}
