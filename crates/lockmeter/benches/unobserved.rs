//! Bare against instrumented locks while no `lockmeter::Layer` exists.
//!
//! This is its own bench binary so that no layer has ever been created in
//! the process: every instrumented lock runs its plain path after one
//! relaxed load. `benches/observed.rs` measures the same pairs (in
//! `benches/common`) with a layer installed. Run with
//! `cargo bench -p lockmeter --bench unobserved`.

mod common;

use criterion::{criterion_group, criterion_main, Criterion};

fn pairs(c: &mut Criterion) {
    common::lock_pairs(c, "unobserved");
}

criterion_group!(benches, pairs);
criterion_main!(benches);
