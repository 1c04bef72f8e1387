//! Where observed time goes: the floor each component sets, alone.
//!
//! Component rows time one operation in an otherwise empty loop (bare =
//! the empty loop): the clock reads that timing an acquisition needs, and
//! tracing's dispatcher lookup.

use std::hint::black_box;

use crate::measure::{empty_loop, ns_pair, Config};
use crate::report::{Goal, Row, Unit};

/// Component rows: clock reads, dispatcher lookup, thread-local lookups.
/// Needs the lockmeter layer installed as the global default.
pub fn components(cfg: &Config) -> Vec<Row> {
    let clock = quanta::Clock::new();
    let mut rows = vec![
        component(cfg, "cost_clock_raw_pair", "quanta Clock::raw() x2", || {
            black_box(clock.raw()) ^ black_box(clock.raw())
        }),
        component(
            cfg,
            "cost_clock_raw_pair_delta",
            "Clock::raw() x2 + delta_as_nanos",
            || {
                let a = clock.raw();
                let b = clock.raw();
                clock.delta_as_nanos(a, b)
            },
        ),
        component(
            cfg,
            "cost_instant_now_pair",
            "std Instant::now() x2",
            || {
                let a = std::time::Instant::now();
                black_box(a).elapsed().subsec_nanos() as u64
            },
        ),
        component(
            cfg,
            "cost_dispatch_global",
            "get_default+downcast, global dispatch",
            find_layer,
        ),
    ];
    // The same lookup while a scoped dispatcher (`set_default`/`with_default`)
    // is in effect somewhere: tracing then goes through a thread-local.
    let global = tracing::dispatcher::get_default(|d| d.clone());
    rows.push(tracing::dispatcher::with_default(&global, || {
        component(
            cfg,
            "cost_dispatch_scoped",
            "get_default+downcast, scoped dispatch",
            find_layer,
        )
    }));
    rows.push(
        component(
            cfg,
            "cost_thread_local_address",
            "thread-local address (thread token)",
            || {
                thread_local!(static T: u8 = const { 0 });
                T.with(|t| t as *const u8 as u64)
            },
        )
        .note("bare of every cost_* row: the same loop with the operation removed"),
    );
    rows
}

/// What every instrumented acquisition asks tracing first: the layer of
/// the dispatcher in effect (its address, so the answer is used).
fn find_layer() -> u64 {
    tracing::dispatcher::get_default(|d| {
        d.downcast_ref::<lockmeter::Layer>()
            .map_or(0, |l| l as *const _ as u64)
    })
}

/// One component timed against the empty loop.
fn component(cfg: &Config, key: &str, label: &str, op: impl Fn() -> u64) -> Row {
    let pair = ns_pair(cfg, empty_loop, |n| {
        for _ in 0..n {
            black_box(op());
        }
    });
    Row::new(key, label, Unit::NsPerOp, Goal::Info).with_pair(pair)
}
