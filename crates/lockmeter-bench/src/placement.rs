//! Where a lock sits in its cache line, and what that costs unobserved.
//!
//! The uncontended rows keep their locks wherever the stack puts them, so
//! one build's rows can land every lockmeter lock at one line offset and
//! the next build's at another. Whether the lock word and the guarded data
//! share a line depends on that offset, and on an Intel Xeon host a lock
//! whose unlock is a locked instruction paid 14-18 % when they did not
//! (`docs/performance.md`, "Session 16"). These rows put the bare lock and
//! lockmeter's at each of the eight 8-byte offsets of a line in turn, and
//! judge the mean over them: the expected cost of a lock placed anywhere.
//! Observed, the same rows show what the per-instance notes' place costs
//! (they precede the lock word, and may sit on the line before it).

use std::mem::MaybeUninit;

use crate::bare::BareSpinLock;
use crate::measure::{shape_pair, Config, Pair, Shape};
use crate::report::{Goal, Row, Unit};
use crate::uncontended::{Phase, UNOBSERVED_GOAL};

/// Line-aligned room for a value at any offset within its first line.
#[repr(C, align(64))]
struct Lines([MaybeUninit<u8>; 256]);

/// A `T` placed `offset` bytes into a line-aligned buffer of its own.
pub(crate) struct Placed<T> {
    buf: Box<Lines>,
    offset: usize,
    _owns: std::marker::PhantomData<T>,
}

impl<T> Placed<T> {
    pub(crate) fn new(offset: usize, value: T) -> Placed<T> {
        assert!(offset.is_multiple_of(std::mem::align_of::<T>()));
        assert!(offset + std::mem::size_of::<T>() <= std::mem::size_of::<Lines>());
        let mut buf = Box::new(Lines([MaybeUninit::uninit(); 256]));
        // SAFETY: in bounds and aligned (asserted above; the buffer is
        // 64-byte aligned and `offset` a multiple of `T`'s alignment).
        unsafe { buf.0.as_mut_ptr().add(offset).cast::<T>().write(value) };
        Placed {
            buf,
            offset,
            _owns: std::marker::PhantomData,
        }
    }

    pub(crate) fn get(&self) -> &T {
        // SAFETY: written in `new`, dropped only in `drop`.
        unsafe { &*self.buf.0.as_ptr().add(self.offset).cast::<T>() }
    }
}

impl<T> Drop for Placed<T> {
    fn drop(&mut self) {
        // SAFETY: written in `new`; dropped once, here.
        unsafe {
            self.buf
                .0
                .as_mut_ptr()
                .add(self.offset)
                .cast::<T>()
                .drop_in_place()
        };
    }
}

// SAFETY: a `Placed<T>` owns its `T` as a `Box<T>` would.
unsafe impl<T: Sync> Sync for Placed<T> {}
// SAFETY: as above.
unsafe impl<T: Send> Send for Placed<T> {}

impl<T: crate::contended::Take> crate::contended::Take for Placed<T> {
    #[inline]
    #[track_caller]
    fn take(&self) {
        self.get().take()
    }
}

/// The line offsets tried.
const OFFSETS: [usize; 8] = [0, 8, 16, 24, 32, 40, 48, 56];

/// The rows of one lock in one loop shape: every offset, then the mean
/// over them, judged against the unobserved goal when unobserved and given
/// as information when observed (the observed goals are the uncontended
/// rows').
///
/// `pair_at(offset)` measures the pair with both locks placed at `offset`
/// (`placed_pair!`).
fn lock_rows(
    phase: Phase,
    shape: Shape,
    (what, name): (&str, &str),
    pair_at: impl Fn(usize) -> Pair,
) -> Vec<Row> {
    let pairs: Vec<(usize, Pair)> = OFFSETS.iter().map(|&o| (o, pair_at(o))).collect();
    let (shape_key, shape_label) = shape.names();
    let mut rows: Vec<Row> = pairs
        .iter()
        .map(|&(o, pair)| {
            Row::new(
                &format!("placement_{}_{what}{shape_key}_at_{o}", phase.key()),
                &format!(
                    "{} {name}{shape_label}, both locks at line offset {o}",
                    phase.key()
                ),
                Unit::NsPerOp,
                Goal::Info,
            )
            .with_pair(pair)
        })
        .collect();
    let mean = mean_pair(&pairs.iter().map(|&(_, p)| p).collect::<Vec<_>>());
    let mut summary = Row::new(
        &format!("placement_{}_{what}{shape_key}_mean", phase.key()),
        &format!(
            "{} {name}{shape_label}, mean over the {} line offsets",
            phase.key(),
            OFFSETS.len()
        ),
        Unit::NsPerOp,
        match phase {
            Phase::Unobserved => UNOBSERVED_GOAL,
            Phase::Observed => Goal::Info,
        },
    )
    .note(format!(
        "a lock placed anywhere: the mean ns of the offset rows, lockmeter's over the bare lock's; worst offset {:.2}",
        pairs.iter().map(|(_, p)| p.ratio).fold(0.0, f64::max)
    ));
    // The means alone: the offsets' spread is not one row's noise.
    summary.bare = Some(mean.bare);
    summary.instrumented = Some(mean.instrumented);
    summary.ratio = Some(mean.ratio);
    summary.host_probe = mean.host_probe.is_finite().then_some(mean.host_probe);
    rows.push(summary);
    rows
}

/// The pair of `$op` on a bare lock and on lockmeter's, both made by
/// `$new` and placed `$offset` bytes into a line, in the loop of `$shape`;
/// the operation is written out in each loop (`shape_pair!`).
macro_rules! placed_pair {
    ($cfg:expr, $shape:expr, $offset:expr, $new:expr, $l:ident => $op:expr) => {{
        let (bare, inst) = $new;
        let (bare, inst) = (Placed::new($offset, bare), Placed::new($offset, inst));
        shape_pair!($cfg, $shape, (bare.get(), inst.get()), $l => $op, $l => $op)
    }};
}

/// Copy `K` of the main rows' loop pair of a Mutex (`Shape::Tight`), both
/// locks `8 K` bytes into a line, lockmeter's of the class `class`.
///
/// Each `K` is code of its own, at an address of its own: what an
/// observed lock adds moves with where its loop's code lands as well as
/// with where its lock sits (on session 20's Intel host, eight such copies
/// of one loop read 14.2-18.0 ns observed against 10.8-12.3 bare). The
/// operation adds `K + 1`, so that no two copies are one function to the
/// compiler, which merges identical ones.
pub(crate) fn mutex_copy<const K: u64>(cfg: &Config, class: &'static str) -> Pair {
    let new = (
        parking_lot::Mutex::new(0u64),
        lockmeter::Mutex::named(class, 0u64),
    );
    placed_pair!(cfg, Shape::Tight, 8 * K as usize, new, l => *l.lock() += K + 1)
}

/// [`mutex_copy`] for a SpinLock.
pub(crate) fn spinlock_copy<const K: u64>(cfg: &Config, class: &'static str) -> Pair {
    let new = (
        BareSpinLock::new(0u64),
        lockmeter::SpinLock::named(class, 0u64),
    );
    placed_pair!(cfg, Shape::Tight, 8 * K as usize, new, l => *l.lock() += K + 1)
}

/// The pairs of the eight copies of `$copy`, copy `K` at line offset `8 K`.
macro_rules! code_copies {
    ($copy:ident, $cfg:expr, $class:expr) => {{
        let (cfg, class) = ($cfg, $class);
        [
            $copy::<0>(cfg, class),
            $copy::<1>(cfg, class),
            $copy::<2>(cfg, class),
            $copy::<3>(cfg, class),
            $copy::<4>(cfg, class),
            $copy::<5>(cfg, class),
            $copy::<6>(cfg, class),
            $copy::<7>(cfg, class),
        ]
    }};
}

/// The class of the placement rows' lockmeter Mutexes.
const MUTEX_CLASS: &str = "bench.placement.mutex";
/// The class of the placement rows' lockmeter SpinLocks.
const SPINLOCK_CLASS: &str = "bench.placement.spinlock";

/// A lock whose main-loop pair is measured in eight copies of its code.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Copied {
    Mutex,
    SpinLock,
}

impl Copied {
    pub(crate) const ALL: [Copied; 2] = [Copied::Mutex, Copied::SpinLock];

    /// The lock's part of a row's key and label, and the class its
    /// lockmeter locks count in: the placement rows' own, since a second
    /// class at the copies' one call site would cost every acquisition
    /// the entry's guess (`shard::guess_entry` makes none for a site
    /// shared by two classes).
    pub(crate) fn names(self) -> (&'static str, &'static str, &'static str) {
        match self {
            Copied::Mutex => ("mutex", "Mutex", MUTEX_CLASS),
            Copied::SpinLock => ("spinlock", "SpinLock", SPINLOCK_CLASS),
        }
    }

    /// The pairs of the eight copies ([`mutex_copy`], [`spinlock_copy`]),
    /// copy `K` at line offset `8 K`.
    pub(crate) fn copies(self, cfg: &Config) -> [Pair; 8] {
        match self {
            Copied::Mutex => code_copies!(mutex_copy, cfg, MUTEX_CLASS),
            Copied::SpinLock => code_copies!(spinlock_copy, cfg, SPINLOCK_CLASS),
        }
    }
}

/// The mean of `pairs`, as one pair: the cost of a lock placed anywhere,
/// in code placed anywhere. The spread is the copies' ratios'.
pub(crate) fn mean_pair(pairs: &[Pair]) -> Pair {
    let n = pairs.len() as f64;
    let mean = |f: fn(&Pair) -> f64| pairs.iter().map(f).sum::<f64>() / n;
    let (bare, instrumented) = (mean(|p| p.bare), mean(|p| p.instrumented));
    let ratios: Vec<f64> = pairs.iter().map(|p| p.ratio).collect();
    Pair {
        bare,
        instrumented,
        ratio: instrumented / bare,
        spread: crate::measure::Spread::of(&ratios),
        host_probe: pairs
            .iter()
            .map(|p| p.host_probe)
            .filter(|p| p.is_finite())
            .fold(f64::NAN, f64::max),
        placements: None,
    }
}

/// Mutex and RwLock write (a locked instruction to unlock) and SpinLock
/// (a plain store) at every line offset; observed, Mutex and SpinLock.
/// Unobserved, each in both loop shapes: the reload loop hides what an
/// extra dependent load costs (`Shape::Reload`), the tight one shows it.
/// Observed, also in the main rows' loop with a copy of the loop's code
/// per offset ([`mutex_copy`]): the spread of the observed rows' figures
/// over code placement.
pub fn rows(cfg: &Config, phase: Phase) -> Vec<Row> {
    let shapes: &[Shape] = match phase {
        Phase::Unobserved => &[Shape::Reload, Shape::Tight],
        Phase::Observed => &[Shape::Reload],
    };
    let mut rows = Vec::new();
    for &shape in shapes {
        rows.extend(lock_rows(phase, shape, ("mutex", "Mutex"), |o| {
            let new = (
                parking_lot::Mutex::new(0u64),
                lockmeter::Mutex::named(MUTEX_CLASS, 0u64),
            );
            placed_pair!(cfg, shape, o, new, l => *l.lock() += 1)
        }));
        if phase == Phase::Unobserved {
            rows.extend(lock_rows(
                phase,
                shape,
                ("rwlock_write", "RwLock write"),
                |o| {
                    let new = (
                        parking_lot::RwLock::new(0u64),
                        lockmeter::RwLock::named("bench.placement.rwlock", 0u64),
                    );
                    placed_pair!(cfg, shape, o, new, l => *l.write() += 1)
                },
            ));
        }
        rows.extend(lock_rows(phase, shape, ("spinlock", "SpinLock"), |o| {
            let new = (
                BareSpinLock::new(0u64),
                lockmeter::SpinLock::named(SPINLOCK_CLASS, 0u64),
            );
            placed_pair!(cfg, shape, o, new, l => *l.lock() += 1)
        }));
    }
    if phase == Phase::Observed {
        for lock in Copied::ALL {
            let (what, name, _) = lock.names();
            let copies = lock.copies(cfg);
            let names = (
                &format!("{what}_copies")[..],
                &format!("{name}, a copy of the code per offset")[..],
            );
            rows.extend(lock_rows(phase, Shape::Tight, names, |o| copies[o / 8]));
        }
    }
    rows
}
