//! Where observed time goes: each component alone, and the replica ladder.
//!
//! Component rows time one operation in an otherwise empty loop (bare =
//! the empty loop). Ladder rows time a whole lock+unlock of the replica
//! (see [`crate::replica`]) at each stage, round-robin with the bare
//! spinlock and the real `lockmeter::SpinLock`, so adjacent rows' figures
//! differ by one component's cost in context.

use std::hint::black_box;

use crate::bare::BareSpinLock;
use crate::measure::{calibrate, ns_pair, ns_per_op, round_robin, Config};
use crate::replica::{self, ReplicaSpin};
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
            || {
                tracing::dispatcher::get_default(|d| {
                    d.downcast_ref::<lockmeter::Layer>()
                        .map_or(0, |l| l as *const _ as u64)
                })
            },
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
            || {
                tracing::dispatcher::get_default(|d| {
                    d.downcast_ref::<lockmeter::Layer>()
                        .map_or(0, |l| l as *const _ as u64)
                })
            },
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

/// One component timed against the empty loop.
fn component(cfg: &Config, key: &str, label: &str, op: impl Fn() -> u64) -> Row {
    let pair = ns_pair(
        cfg,
        |n| {
            for i in 0..n {
                black_box(i);
            }
        },
        |n| {
            for _ in 0..n {
                black_box(op());
            }
        },
    );
    Row::new(key, label, Unit::NsPerOp, Goal::Info).with_pair(pair)
}

fn replica_loop<const S: u8>(lock: &ReplicaSpin<S>) -> impl FnMut(u64) + '_ {
    move |n| {
        for _ in 0..n {
            lock.cycle();
        }
    }
}

/// How many replica variants the ladder measures.
const N: usize = 12;

/// The replica variants of the ladder: (flags, key, label).
pub const VARIANTS: [(u8, &str, &str); N] = [
    (
        replica::DISPATCH,
        "ladder_1_dispatch",
        "replica: + get_default+downcast",
    ),
    (
        replica::DISPATCH | replica::LOOKUP,
        "ladder_2_lookup",
        "replica: + thread slot & site index",
    ),
    (
        replica::DISPATCH | replica::LOOKUP | replica::COUNT,
        "ladder_3_count",
        "replica: + counters (untimed)",
    ),
    (
        replica::FULL,
        "ladder_4_timed",
        "replica: + 2 clock reads (= full)",
    ),
    (
        replica::DISPATCH | replica::LOOKUP | replica::FAST_KEY,
        "proposal_lookup_fast_key",
        "proposal: ladder_2 with key in registers",
    ),
    (
        replica::FULL | replica::FAST_KEY,
        "proposal_fast_key",
        "proposal: full, key in registers",
    ),
    (
        replica::FULL | replica::SAMPLED,
        "proposal_sampled",
        "proposal: full, clock on 1/64 uncontended",
    ),
    (
        replica::FULL | replica::SAMPLED | replica::FAST_KEY,
        "proposal_sampled_fast_key",
        "proposal: sampled + fast key",
    ),
    (
        replica::FULL | replica::SAMPLED | replica::FAST_KEY | replica::CACHED,
        "proposal_sampled_fast_key_cached",
        "proposal: sampled + fast key + cached",
    ),
    (
        replica::FULL | replica::FAST_KEY | replica::CACHED,
        "proposal_fast_key_cached",
        "proposal: fast key + cached (every hold timed)",
    ),
    (
        replica::FULL | replica::OUTSIDE,
        "proposal_clock_outside",
        "proposal: full, clock reads outside the lock",
    ),
    (
        replica::FULL | replica::FAST_KEY | replica::SAMPLED | replica::OUTSIDE | replica::CACHED,
        "proposal_all",
        "proposal: all four",
    ),
];

/// Runs `$body` with `$fs` bound to the operation loops of the variants in
/// [`VARIANTS`] order (const generics need one type per variant) and `$rec`
/// to a closure returning what each recorded: (acquisitions, timed holds).
macro_rules! with_variants {
    (|$fs:ident, $rec:ident| $body:expr) => {{
        const V: [u8; N] = {
            let mut v = [0u8; N];
            let mut i = 0;
            while i < N {
                v[i] = VARIANTS[i].0;
                i += 1;
            }
            v
        };
        let l0 = ReplicaSpin::<{ V[0] }>::new();
        let l1 = ReplicaSpin::<{ V[1] }>::new();
        let l2 = ReplicaSpin::<{ V[2] }>::new();
        let l3 = ReplicaSpin::<{ V[3] }>::new();
        let l4 = ReplicaSpin::<{ V[4] }>::new();
        let l5 = ReplicaSpin::<{ V[5] }>::new();
        let l6 = ReplicaSpin::<{ V[6] }>::new();
        let l7 = ReplicaSpin::<{ V[7] }>::new();
        let l8 = ReplicaSpin::<{ V[8] }>::new();
        let l9 = ReplicaSpin::<{ V[9] }>::new();
        let l10 = ReplicaSpin::<{ V[10] }>::new();
        let l11 = ReplicaSpin::<{ V[11] }>::new();
        let $rec = || {
            [
                l0.recorded_here(),
                l1.recorded_here(),
                l2.recorded_here(),
                l3.recorded_here(),
                l4.recorded_here(),
                l5.recorded_here(),
                l6.recorded_here(),
                l7.recorded_here(),
                l8.recorded_here(),
                l9.recorded_here(),
                l10.recorded_here(),
                l11.recorded_here(),
            ]
        };
        let mut r0 = replica_loop(black_box(&l0));
        let mut r1 = replica_loop(black_box(&l1));
        let mut r2 = replica_loop(black_box(&l2));
        let mut r3 = replica_loop(black_box(&l3));
        let mut r4 = replica_loop(black_box(&l4));
        let mut r5 = replica_loop(black_box(&l5));
        let mut r6 = replica_loop(black_box(&l6));
        let mut r7 = replica_loop(black_box(&l7));
        let mut r8 = replica_loop(black_box(&l8));
        let mut r9 = replica_loop(black_box(&l9));
        let mut r10 = replica_loop(black_box(&l10));
        let mut r11 = replica_loop(black_box(&l11));
        let $fs: [&mut dyn FnMut(u64); N] = [
            &mut r0, &mut r1, &mut r2, &mut r3, &mut r4, &mut r5, &mut r6, &mut r7, &mut r8,
            &mut r9, &mut r10, &mut r11,
        ];
        $body
    }};
}

/// The replica ladder and proposals, round-robin with the bare and the
/// real spinlock. Needs the lockmeter layer installed as the global default.
pub fn ladder(cfg: &Config) -> Vec<Row> {
    let bare = BareSpinLock::new(0u64);
    let real = lockmeter::SpinLock::named("bench.ladder", 0u64);
    let bare = black_box(&bare);
    let real = black_box(&real);
    let mut run_bare = |n: u64| {
        for _ in 0..n {
            *bare.lock() += 1;
        }
    };
    let mut run_real = |n: u64| {
        for _ in 0..n {
            *real.lock() += 1;
        }
    };
    // Sized by the real observed lock, among the slowest figures, so that
    // a round of all of them stays within a few batches.
    let iters = calibrate(cfg.batch, &mut run_real);
    let (pairs, recorded) = with_variants!(|variants, recorded| {
        let mut figures: Vec<&mut dyn FnMut(u64)> = vec![&mut run_bare, &mut run_real];
        figures.extend(variants);
        for f in figures.iter_mut() {
            ns_per_op(iters / 10 + 1, *f);
        }
        let mut timed: Vec<Box<dyn FnMut() -> f64 + '_>> = figures
            .into_iter()
            .map(|f| Box::new(move || ns_per_op(iters, f)) as Box<dyn FnMut() -> f64>)
            .collect();
        let mut refs: Vec<&mut dyn FnMut() -> f64> = timed
            .iter_mut()
            .map(|b| &mut **b as &mut dyn FnMut() -> f64)
            .collect();
        let pairs = round_robin(cfg.reps, &mut refs);
        (pairs, recorded())
    });
    let mut rows = vec![Row::new(
        "ladder_real_spinlock",
        "real lockmeter::SpinLock observed",
        Unit::NsPerOp,
        Goal::Info,
    )
    .with_pair(pairs[1])
    .note("bare of every ladder_*/proposal_* row: the plain TTAS spinlock, same rounds")];
    for (((flags, key, label), p), (acquired, timed)) in
        VARIANTS.iter().zip(&pairs[2..]).zip(recorded)
    {
        let mut row = Row::new(key, label, Unit::NsPerOp, Goal::Info).with_pair(*p);
        if flags & replica::COUNT != 0 {
            // A check that the variant really records what it claims.
            if acquired == 0 {
                row.note = "recorded nothing: is the layer installed?".into();
            } else if flags & replica::SAMPLED != 0 {
                row.note = format!(
                    "{acquired} acquisitions counted, {timed} timed (1 in {:.0})",
                    acquired as f64 / timed.max(1) as f64
                );
            }
        }
        rows.push(row);
    }
    rows
}
