//! Bare against instrumented locks with a `lockmeter::Layer` installed as
//! the global default, so every instrumented acquisition is recorded; plus
//! the cost of the parts of an observed acquisition.
//!
//! The pairs are in `benches/common`; the unobserved run of them is
//! `benches/unobserved.rs`, a separate binary,
//! because once a layer exists in a process the locks look it up.
//! Run with `cargo bench -p lockmeter --bench observed`.

mod common;

use std::hint::black_box;

use criterion::{criterion_group, Criterion};
use tracing_subscriber::layer::SubscriberExt;

fn pairs(c: &mut Criterion) {
    common::lock_pairs(c, "observed");
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

criterion_group!(benches, pairs, components);

fn main() {
    // Installed once, before any measurement, for the whole process.
    let layer = lockmeter::Layer::new();
    tracing::subscriber::set_global_default(tracing_subscriber::registry().with(layer))
        .expect("no other global subscriber in this bench binary");
    benches();
    Criterion::default().configure_from_args().final_summary();
}
