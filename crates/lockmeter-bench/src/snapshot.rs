//! Snapshot time with 10,000 recorded call sites.
//!
//! The call sites are real: `build.rs` generates a function with 10,000
//! distinct call expressions (see [`take_at`]), each reaching
//! `SpinLock::lock` through a `#[track_caller]` helper, so each is a
//! source location of its own. Two shapes are measured, each recorded by
//! a fresh layer (in effect on this thread only) so that its snapshot
//! holds exactly these rows:
//!
//! - 100 lock classes x 100 call sites each (the goal row), and
//! - 1 lock class x 10,000 call sites (the worst case for grouping sites
//!   under their class).

use std::time::Instant;

use lockmeter::SpinLock;
use tracing_subscriber::layer::SubscriberExt;

use crate::measure::{median, Config};
use crate::memory::rss_kib;
use crate::report::{Goal, Row, Unit};

include!(concat!(env!("OUT_DIR"), "/sites.rs"));

/// Takes `lock` at the caller's location.
#[track_caller]
#[inline(never)]
fn take(lock: &SpinLock<u64>) {
    *lock.lock() += 1;
}

/// What one shape measured.
struct Shape {
    snapshot_ms: f64,
    json_ms: f64,
    sites: usize,
    rss_growth_kib: Option<u64>,
}

/// Records 10,000 sites over `classes` lock classes in a fresh layer and
/// times its snapshots.
fn measure(cfg: &Config, classes: usize) -> Shape {
    let layer = lockmeter::Layer::new();
    let handle = layer.handle();
    let dispatch = tracing::Dispatch::new(tracing_subscriber::registry().with(layer));
    let before = rss_kib();
    let locks: Vec<SpinLock<u64>> = (0..classes)
        .map(|i| {
            let name: &'static str = Box::leak(format!("bench.snap.{i:04}").into_boxed_str());
            SpinLock::named(name, 0)
        })
        .collect();
    let per_class = GENERATED_SITES / classes.max(1);
    tracing::dispatcher::with_default(&dispatch, || {
        for i in 0..GENERATED_SITES {
            if let Some(lock) = locks.get(i / per_class.max(1)) {
                take_at(lock, i);
            }
        }
    });
    let after = rss_kib();
    let reps = if cfg.quick { 5 } else { 15 };
    let (mut took, mut json_took, mut sites) = (Vec::new(), Vec::new(), 0);
    for _ in 0..reps {
        let t = Instant::now();
        let snap = handle.snapshot();
        took.push(t.elapsed().as_secs_f64() * 1e3);
        let t = Instant::now();
        let text = serde_json::to_string(&snap).unwrap_or_default();
        json_took.push(t.elapsed().as_secs_f64() * 1e3);
        std::hint::black_box(text);
        sites = snap.locks.iter().map(|l| l.sites.len()).sum();
    }
    Shape {
        snapshot_ms: median(&took),
        json_ms: median(&json_took),
        sites,
        rss_growth_kib: before.zip(after).map(|(b, a)| a.saturating_sub(b)),
    }
}

/// The snapshot rows.
pub fn rows(cfg: &Config) -> Vec<Row> {
    let mut rows = Vec::new();
    for (classes, key, label, goal) in [
        (
            100,
            "snapshot_10000_sites_ms",
            "snapshot of 10,000 call sites (100 x 100)",
            Goal::Below(10.0),
        ),
        (
            1,
            "snapshot_10000_sites_one_class_ms",
            "snapshot of 10,000 call sites, 1 class",
            Goal::Info,
        ),
    ] {
        let shape = measure(cfg, classes);
        let mut row = Row::new(key, label, Unit::Millis, goal);
        if shape.sites == GENERATED_SITES {
            row.instrumented = Some(shape.snapshot_ms);
            row.note = format!(
                "{} site rows in {classes} class(es); Handle::snapshot(); then JSON {:.1} ms",
                shape.sites, shape.json_ms
            );
        } else {
            row.note = format!("recorded {} sites, expected {GENERATED_SITES}", shape.sites);
        }
        rows.push(row);
        if classes == 100 {
            let mut memory = Row::new(
                "memory_per_site_entry_kib",
                "resident memory per (thread, site) entry",
                Unit::KiB,
                Goal::Below(1.5),
            );
            if let Some(g) = shape.rss_growth_kib {
                memory.instrumented = Some(g as f64 / GENERATED_SITES as f64);
                memory.note = "RSS growth while the 10,000 sites were first taken, per site".into();
            }
            rows.push(memory);
        }
    }
    rows
}
