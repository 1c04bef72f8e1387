//! Uncontended lock+unlock on one thread: bare against instrumented.
//!
//! Every single-thread operation is written once, as a function generic
//! over a [`Runner`]: timed (interleaved batches, [`Config`]), under a
//! scoped dispatcher against the global one ([`Scoped`]), or one side of
//! it counted under callgrind (`callgrind::Child`). [`OPS`] lists them.

use std::hint::black_box;
use std::sync::mpsc;

use crate::bare::{BareSemaphore, BareSpinLock};
use crate::callgrind::Child;
use crate::contended::hot_or_cold;
use crate::measure::{calibrate, interleave, ns_pair, ns_per_op, Config, Pair};
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

/// Every unobserved row's goal, each primitive against its bare twin.
pub const UNOBSERVED_GOAL: Goal = Goal::RatioAtMost(1.05);

/// A loop of `n` operations (`f(n)`); it borrows its lock, so it can be
/// copied and sent to another thread.
pub trait Loop: FnMut(u64) + Send + Clone {}
impl<F: FnMut(u64) + Send + Clone> Loop for F {}

/// How a pair of operation loops is run.
pub trait Runner {
    fn pair(&self, bare: impl Loop, inst: impl Loop) -> Pair;
}

impl Runner for Config {
    fn pair(&self, bare: impl Loop, inst: impl Loop) -> Pair {
        ns_pair(self, bare, inst)
    }
}

/// The instrumented loop under the global dispatcher, on this thread
/// ("bare"), against the same loop under `dispatch` as a scoped default,
/// on a thread of its own ("instrumented"), batches interleaved.
///
/// Own threads, so that neither side finds the thread's state (its
/// recorder slot in front, `recorder::current`'s scoped-dispatcher mark)
/// as the other side left it: until session 31 a thread that had recorded
/// under a scoped dispatcher paid more under the global one ever after
/// (callgrind: 163 -> 221 instructions per observed SpinLock cycle in
/// session 26, +9 in session 31; the `after_scoped` callgrind rows), which
/// would charge the global side with the scoped one's cost. Both on one CPU (`PinnedHere`), the one the host
/// probe after each repetition reads: on two, a busy sibling vCPU slowed
/// the scoped side alone, unseen (session 26 read the Mutex row at 2.4
/// with the probe calm, 1.6 in the same build otherwise).
pub struct Scoped<'a> {
    pub cfg: &'a Config,
    pub dispatch: &'a tracing::Dispatch,
}

impl Runner for Scoped<'_> {
    fn pair(&self, _bare: impl Loop, inst: impl Loop) -> Pair {
        self.pair_against(inst.clone(), inst)
    }
}

impl Scoped<'_> {
    /// `global` under the global dispatcher ("bare") against `inst` under
    /// the scoped one, each where [`Scoped`] runs its side: for a floor
    /// whose cheapest global form is another loop than its scoped one.
    pub fn pair_against(&self, mut global: impl Loop, mut inst: impl Loop) -> Pair {
        let (jobs, batches) = mpsc::channel::<u64>();
        let (times, timed) = mpsc::channel::<f64>();
        let here = crate::measure::PinnedHere::new();
        let cpu = here.as_ref().map(crate::measure::PinnedHere::cpu);
        std::thread::scope(|s| {
            let (dispatch, timer) = (self.dispatch, self.cfg.timer);
            s.spawn(move || {
                if let Some(cpu) = cpu {
                    crate::measure::pin_to(cpu);
                }
                tracing::dispatcher::with_default(dispatch, || {
                    for n in batches {
                        if times.send(ns_per_op(timer, n, &mut inst)).is_err() {
                            break;
                        }
                    }
                })
            });
            let scoped = |n: u64| {
                let sent = jobs.send(n).is_ok();
                if sent {
                    timed.recv().unwrap_or(f64::NAN)
                } else {
                    f64::NAN
                }
            };
            let iters = calibrate(self.cfg.batch, &mut global);
            ns_per_op(timer, iters / 10 + 1, &mut global);
            scoped(iters / 10 + 1);
            let pair = interleave(
                self.cfg.reps,
                || ns_per_op(timer, iters, &mut global),
                || scoped(iters),
            );
            drop(jobs);
            pair
        })
    }
}

/// One single-thread operation, bare and instrumented.
pub struct Op {
    /// Row key suffix: `uncontended_{phase}_{what}`.
    pub what: &'static str,
    pub label: &'static str,
    /// What the bare side is.
    pub bare: &'static str,
    /// The goal of the observed row (unobserved rows: [`UNOBSERVED_GOAL`]).
    pub observed: Goal,
    pub timed: fn(&Config) -> Pair,
    pub child: fn(&Child) -> Pair,
}

macro_rules! op {
    ($what:literal, $label:literal, $bare:literal, $observed:expr, $f:ident) => {
        Op {
            what: $what,
            label: $label,
            bare: $bare,
            observed: $observed,
            timed: $f::<Config>,
            child: $f::<Child>,
        }
    };
}

/// The single-thread rows, in table order.
pub const OPS: &[Op] = &[
    op!(
        "spinlock",
        "SpinLock",
        "the same TTAS spinlock written plainly",
        Goal::RatioAtMost(2.00),
        spinlock
    ),
    op!(
        "mutex",
        "Mutex",
        "parking_lot::Mutex",
        Goal::RatioAtMost(1.20),
        mutex
    ),
    op!(
        "mutex_many_sites",
        "Mutex, many sites",
        "parking_lot::Mutex; one acquisition in 16 at the next of 50 other sites (the contended `many sites` mix on one thread)",
        Goal::Info,
        mutex_many_sites
    ),
    op!(
        "mutex_site_again",
        "Mutex, its site taken again after another",
        "parking_lot::Mutex; before the loop, its site taken 8 times, then another site 8 times (the thread's kept guess on the other site)",
        Goal::Info,
        mutex_site_again
    ),
    op!(
        "mutex_shared_site_run",
        "Mutex, a helper's site two classes share, a run of one",
        "parking_lot::Mutex; the lock taken in a helper (no #[track_caller]) where another class was taken before the loop",
        Goal::Info,
        mutex_shared_site_run
    ),
    op!(
        "mutex_shared_site_turns",
        "Mutex, a helper's site two classes share, in turn",
        "parking_lot::Mutex; two locks taken in turn in one helper (no #[track_caller])",
        Goal::Info,
        mutex_shared_site_turns
    ),
    op!(
        "mutex_nested",
        "Mutex, taken while the thread holds another",
        "parking_lot::Mutex; another lock of each kind held around the loop",
        Goal::Info,
        mutex_nested
    ),
    op!(
        "sync_mutex",
        "sync::Mutex (std API)",
        "std::sync::Mutex, .lock().unwrap() both",
        Goal::Info,
        sync_mutex
    ),
    op!(
        "rwlock_read",
        "RwLock read",
        "parking_lot::RwLock",
        Goal::Info,
        rwlock_read
    ),
    op!(
        "rwlock_write",
        "RwLock write",
        "parking_lot::RwLock",
        Goal::Info,
        rwlock_write
    ),
    op!(
        "sync_rwlock_read",
        "sync::RwLock read (std API)",
        "std::sync::RwLock, .read().unwrap() both",
        Goal::Info,
        sync_rwlock_read
    ),
    op!(
        "sync_rwlock_write",
        "sync::RwLock write (std API)",
        "std::sync::RwLock, .write().unwrap() both",
        Goal::Info,
        sync_rwlock_write
    ),
    op!(
        "semaphore",
        "Semaphore down+up",
        "parking_lot Mutex<usize> + Condvar",
        Goal::Info,
        semaphore
    ),
    op!(
        "fair_mutex",
        "FairMutex",
        "parking_lot::FairMutex",
        Goal::Info,
        fair_mutex
    ),
    op!(
        "reentrant_mutex",
        "ReentrantMutex",
        "parking_lot::ReentrantMutex",
        Goal::Info,
        reentrant_mutex
    ),
    op!(
        "rwlock_upgradable",
        "RwLock upgradable_read",
        "parking_lot::RwLock",
        Goal::Info,
        upgradable_read
    ),
    op!(
        "rwlock_upgrade",
        "RwLock upgradable_read + upgrade",
        "parking_lot::RwLock",
        Goal::Info,
        upgrade
    ),
    op!(
        "condvar_notify_empty",
        "Condvar notify_one, nobody waiting",
        "parking_lot::Condvar",
        Goal::Info,
        notify_empty
    ),
];

/// The key and label of `op`'s row in `phase`.
pub fn row_of(op: &Op, phase: Phase, unit: Unit, prefix: &str) -> Row {
    let goal = match phase {
        Phase::Unobserved => UNOBSERVED_GOAL,
        Phase::Observed => op.observed,
    };
    Row::new(
        &format!("{prefix}_{}_{}", phase.key(), op.what),
        &format!("{prefix} {}, {}", phase.key(), op.label),
        unit,
        goal,
    )
}

/// Every [`OPS`] row, timed.
pub fn rows(cfg: &Config, phase: Phase) -> Vec<Row> {
    OPS.iter()
        .map(|op| {
            row_of(op, phase, Unit::NsPerOp, "uncontended")
                .with_pair((op.timed)(cfg))
                .note(format!("bare: {}", op.bare))
        })
        .collect()
}

/// What the other ways of observing cost, SpinLock and Mutex.
///
/// - Scoped against global: the same instrumented loop with the layer in
///   a scoped dispatcher (`with_default`: tracing's thread-local and a
///   downcast on every acquisition) against the global default, the
///   issue's "≤ 1.5×" row.
/// - Every hold timed (`sample_uncontended_holds(1)`: two clock reads per
///   acquisition), scoped, against the bare lock: the price of the choice.
pub fn mode_rows(cfg: &Config) -> Vec<Row> {
    use tracing_subscriber::prelude::*;

    let scoped = |every: u32| {
        let layer = lockmeter::Layer::builder()
            .sample_uncontended_holds(every)
            .build();
        tracing::Dispatch::new(tracing_subscriber::registry().with(layer))
    };
    let names = [("spinlock", "SpinLock"), ("mutex", "Mutex")];
    let mut rows = Vec::new();
    let dispatch = scoped(lockmeter::DEFAULT_HOLD_SAMPLING);
    let runner = Scoped {
        cfg,
        dispatch: &dispatch,
    };
    let vs_global = [spinlock(&runner), mutex(&runner)];
    let floors = crate::least::scoped_vs_global(&runner);
    for ((what, name), pair) in names.into_iter().zip(vs_global) {
        rows.push(
            Row::new(
                &format!("observed_scoped_vs_global_{what}"),
                &format!("observed {name}, scoped dispatcher vs global"),
                Unit::NsPerOp,
                Goal::RatioAtMost(1.5),
            )
            .with_pair(pair)
            .note("bare: the same lockmeter loop under the global dispatcher"),
        );
    }
    let dispatch = scoped(1);
    // On a thread of its own, for the reason given at [`Scoped`].
    let every_hold = std::thread::scope(|s| {
        s.spawn(|| tracing::dispatcher::with_default(&dispatch, || [spinlock(cfg), mutex(cfg)]))
            .join()
    });
    let every_hold = match every_hold {
        Ok(pairs) => pairs,
        Err(panic) => std::panic::resume_unwind(panic),
    };
    for ((what, name), pair) in names.into_iter().zip(every_hold) {
        rows.push(
            Row::new(
                &format!("uncontended_scoped_every_hold_timed_{what}"),
                &format!("uncontended observed, scoped dispatcher, every hold timed, {name}"),
                Unit::NsPerOp,
                Goal::Info,
            )
            .with_pair(pair),
        );
    }
    rows.extend(floors);
    rows
}

/// The same operation `l => op` on a bare lock and on its instrumented
/// twin (both hidden from the optimizer with `black_box`), each half a
/// loop of its own so that each is its own monomorphized, inlined loop.
/// The loops are `tight_loops!`'s, which own the lock's address.
macro_rules! same_op {
    ($runner:expr, $bare:expr, $inst:expr, $l:ident => $op:expr) => {{
        let (bare, inst) = $crate::measure::tight_loops!((&$bare, &$inst), $l => $op, $l => $op);
        $runner.pair(bare, inst)
    }};
}

fn spinlock<R: Runner>(r: &R) -> Pair {
    let bare = BareSpinLock::new(0u64);
    let inst = lockmeter::SpinLock::named("bench.spinlock", 0u64);
    same_op!(r, bare, inst, l => *l.lock() += 1)
}

fn mutex<R: Runner>(r: &R) -> Pair {
    let bare = parking_lot::Mutex::new(0u64);
    let inst = lockmeter::Mutex::named("bench.mutex", 0u64);
    same_op!(r, bare, inst, l => *l.lock() += 1)
}

/// The Mutex taken as the contended `many sites` rows take it, on one
/// thread: what a thread's site look-up costs when it has more sites to
/// find than its hot one (`recorder::shard`'s recent-site cache).
fn mutex_many_sites<R: Runner>(r: &R) -> Pair {
    let bare = parking_lot::Mutex::new(0u64);
    let inst = lockmeter::Mutex::named("bench.mutex_many_sites", 0u64);
    let (bare, inst) = (black_box(&bare), black_box(&inst));
    r.pair(
        move |n| (0..n).for_each(|i| hot_or_cold(bare, 0, i)),
        move |n| (0..n).for_each(|i| hot_or_cold(inst, 0, i)),
    )
}

/// The Mutex's loop at a site its thread took before another one: the
/// site's entry is among the thread's recent ones, but the guess it keeps
/// in front of them (`recorder::shard::LastGuess`) is the other site's.
/// What a program pays when its hot loop returns to code it ran before.
fn mutex_site_again<R: Runner>(r: &R) -> Pair {
    let bare = parking_lot::Mutex::new(0u64);
    let inst = lockmeter::Mutex::named("bench.mutex_site_again", 0u64);
    let (bare, inst) = (black_box(&bare), black_box(&inst));
    // The loop's site, new and then guessed; then another, new (which
    // empties the kept guess) and then guessed, so kept.
    site_again_loop(inst, 8);
    site_again_other(inst, 8);
    r.pair(
        move |n| site_again_loop(bare, n),
        move |n| site_again_loop(inst, n),
    )
}

/// [`mutex_site_again`]'s loop, one copy of it for every caller: a call
/// site's `Location` is a constant that each inlined copy of its code may
/// have at an address of its own, which lockmeter would count as a site
/// of its own.
#[inline(never)]
fn site_again_loop<L: crate::contended::Take>(lock: &L, n: u64) {
    (0..n).for_each(|_| lock.take());
}

/// [`mutex_site_again`]'s other site.
#[inline(never)]
fn site_again_other(lock: &lockmeter::Mutex<u64>, n: u64) {
    (0..n).for_each(|_| *lock.lock() += 1);
}

/// The Mutex taken in a helper whose one site two classes share (code
/// that wraps its locks), in a run of one class: the pair of recent
/// entries holds both at that site, so it guesses neither
/// (`recorder::shard::Index::only_at`), and the site's kept guess comes
/// from its look-ups (`recorder::shard::looked_up`).
fn mutex_shared_site_run<R: Runner>(r: &R) -> Pair {
    let bare = parking_lot::Mutex::new(0u64);
    let inst = lockmeter::Mutex::named("bench.mutex_shared_site.a", 0u64);
    let other = lockmeter::Mutex::named("bench.mutex_shared_site.b", 0u64);
    // Each taken twice, so that both are found at the site in the pair.
    for _ in 0..2 {
        shared_site(&other);
        shared_site(&inst);
    }
    let (bare, inst) = (black_box(&bare), black_box(&inst));
    r.pair(
        move |n| (0..n).for_each(|_| shared_site_bare(bare)),
        move |n| (0..n).for_each(|_| shared_site(inst)),
    )
}

/// [`mutex_shared_site_run`]'s two classes taken in turn at the helper's
/// site: a guess would be wrong every other time, so none is kept, and
/// each acquisition looks its entry up by the lock's key.
fn mutex_shared_site_turns<R: Runner>(r: &R) -> Pair {
    let bare = [parking_lot::Mutex::new(0u64), parking_lot::Mutex::new(0u64)];
    let inst = [
        lockmeter::Mutex::named("bench.mutex_shared_site.a", 0u64),
        lockmeter::Mutex::named("bench.mutex_shared_site.b", 0u64),
    ];
    let (bare, inst) = (black_box(&bare), black_box(&inst));
    r.pair(
        move |n| (0..n).for_each(|i| shared_site_bare(&bare[(i & 1) as usize])),
        move |n| (0..n).for_each(|i| shared_site(&inst[(i & 1) as usize])),
    )
}

/// The Mutex taken while its thread holds another lock of its own kind
/// (lock nesting, the shape lock-order bugs come from): the observed hold
/// is recorded among the thread's others in its held-lock table
/// (`now::table`), where a lone hold takes the head's record 0 inline.
fn mutex_nested<R: Runner>(r: &R) -> Pair {
    let (bare_outer, bare) = (parking_lot::Mutex::new(0u64), parking_lot::Mutex::new(0u64));
    let inst_outer = lockmeter::Mutex::named("bench.mutex_nested.outer", 0u64);
    let inst = lockmeter::Mutex::named("bench.mutex_nested", 0u64);
    let (bare_outer, bare) = (black_box(&bare_outer), black_box(&bare));
    let (inst_outer, inst) = (black_box(&inst_outer), black_box(&inst));
    r.pair(
        move |n| {
            let _outer = bare_outer.lock();
            (0..n).for_each(|_| *bare.lock() += 1);
        },
        move |n| {
            let _outer = inst_outer.lock();
            (0..n).for_each(|_| *inst.lock() += 1);
        },
    )
}

/// The helper of the shared-site rows: its one call site takes every lock
/// it is given. Its own lock call, not `Take::take`: one more caller of
/// lockmeter's `take` made the compiler stop inlining it into
/// [`site_again_loop`] (36 instructions an unobserved lock/unlock there
/// instead of 16, and that row 1.01 -> 1.06 of bare).
#[inline(never)]
fn shared_site(lock: &lockmeter::Mutex<u64>) {
    *lock.lock() += 1;
}

/// [`shared_site`] for the bare lock.
#[inline(never)]
fn shared_site_bare(lock: &parking_lot::Mutex<u64>) {
    *lock.lock() += 1;
}

/// `lockmeter::sync::Mutex` against std's, `.lock().unwrap()` both: the
/// poison check is in both, so the difference is the metering.
fn sync_mutex<R: Runner>(r: &R) -> Pair {
    let bare = std::sync::Mutex::new(0u64);
    let inst = lockmeter::sync::Mutex::named("bench.sync_mutex", 0u64);
    same_op!(r, bare, inst, l => *l.lock().unwrap() += 1)
}

fn rwlock_read<R: Runner>(r: &R) -> Pair {
    let bare = parking_lot::RwLock::new(1u64);
    let inst = lockmeter::RwLock::named("bench.rwlock", 1u64);
    same_op!(r, bare, inst, l => black_box(*l.read()))
}

fn rwlock_write<R: Runner>(r: &R) -> Pair {
    let bare = parking_lot::RwLock::new(0u64);
    let inst = lockmeter::RwLock::named("bench.rwlock", 0u64);
    same_op!(r, bare, inst, l => *l.write() += 1)
}

fn sync_rwlock_read<R: Runner>(r: &R) -> Pair {
    let bare = std::sync::RwLock::new(1u64);
    let inst = lockmeter::sync::RwLock::named("bench.sync_rwlock", 1u64);
    same_op!(r, bare, inst, l => black_box(*l.read().unwrap()))
}

fn sync_rwlock_write<R: Runner>(r: &R) -> Pair {
    let bare = std::sync::RwLock::new(0u64);
    let inst = lockmeter::sync::RwLock::named("bench.sync_rwlock", 0u64);
    same_op!(r, bare, inst, l => *l.write().unwrap() += 1)
}

fn semaphore<R: Runner>(r: &R) -> Pair {
    let bare = BareSemaphore::new(1);
    let inst = lockmeter::Semaphore::named("bench.semaphore", 1);
    same_op!(r, bare, inst, l => {
        l.down();
        l.up();
    })
}

fn fair_mutex<R: Runner>(r: &R) -> Pair {
    let bare = parking_lot::FairMutex::new(0u64);
    let inst = lockmeter::FairMutex::named("bench.fair_mutex", 0u64);
    same_op!(r, bare, inst, l => *l.lock() += 1)
}

fn reentrant_mutex<R: Runner>(r: &R) -> Pair {
    let bare = parking_lot::ReentrantMutex::new(1u64);
    let inst = lockmeter::ReentrantMutex::named("bench.reentrant_mutex", 1u64);
    same_op!(r, bare, inst, l => black_box(*l.lock()))
}

fn upgradable_read<R: Runner>(r: &R) -> Pair {
    let bare = parking_lot::RwLock::new(1u64);
    let inst = lockmeter::RwLock::named("bench.rwlock_upgradable", 1u64);
    same_op!(r, bare, inst, l => black_box(*l.upgradable_read()))
}

fn upgrade<R: Runner>(r: &R) -> Pair {
    use lockmeter::RwLockUpgradableReadGuard as Inst;
    use parking_lot::RwLockUpgradableReadGuard as Bare;
    let bare = parking_lot::RwLock::new(0u64);
    let inst = lockmeter::RwLock::named("bench.rwlock_upgrade", 0u64);
    let (bare, inst) = (black_box(&bare), black_box(&inst));
    r.pair(
        |n| (0..n).for_each(|_| *Bare::upgrade(bare.upgradable_read()) += 1),
        |n| (0..n).for_each(|_| *Inst::upgrade(inst.upgradable_read()) += 1),
    )
}

fn notify_empty<R: Runner>(r: &R) -> Pair {
    let bare = parking_lot::Condvar::new();
    let inst = lockmeter::Condvar::named("bench.condvar_empty");
    same_op!(r, bare, inst, l => black_box(l.notify_one()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_op_has_a_distinct_key() {
        let mut keys: Vec<&str> = OPS.iter().map(|o| o.what).collect();
        keys.sort_unstable();
        keys.dedup();
        assert_eq!(keys.len(), OPS.len());
    }
}
