//! The parking_lot-compatible types against parking_lot's own, same run:
//! FairMutex, ReentrantMutex, an upgradable read, a Condvar notify with
//! nobody waiting, and a Condvar wait/notify round trip between two
//! threads.

use std::hint::black_box;
use std::sync::Arc;
use std::thread::JoinHandle;

use crate::measure::{ns_pair, Config, Pair};
use crate::report::{Goal, Row, Unit};
use crate::uncontended::Phase;

/// The rows of one phase; unobserved ones aim at 1.10 of parking_lot.
pub fn rows(cfg: &Config, phase: Phase) -> Vec<Row> {
    let goal = match phase {
        Phase::Unobserved => Goal::RatioAtMost(1.10),
        Phase::Observed => Goal::Info,
    };
    let row = |what: &str, label: &str| {
        Row::new(
            &format!("uncontended_{}_{what}", phase.key()),
            &format!("uncontended {}, {label}", phase.key()),
            Unit::NsPerOp,
            goal,
        )
    };
    vec![
        row("fair_mutex", "FairMutex")
            .with_pair(fair_mutex(cfg))
            .note("bare: parking_lot::FairMutex"),
        row("reentrant_mutex", "ReentrantMutex")
            .with_pair(reentrant_mutex(cfg))
            .note("bare: parking_lot::ReentrantMutex"),
        row("rwlock_upgradable", "RwLock upgradable_read")
            .with_pair(upgradable(cfg))
            .note("bare: parking_lot::RwLock"),
        row("condvar_notify_empty", "Condvar notify_one, nobody waiting")
            .with_pair(notify_empty(cfg))
            .note("bare: parking_lot::Condvar"),
        Row::new(
            &format!("condvar_{}_round_trip", phase.key()),
            &format!("condvar {}, wait/notify round trip, 2 threads", phase.key()),
            Unit::NsPerOp,
            goal,
        )
        .with_pair(round_trip(cfg))
        .note("bare: parking_lot Mutex + Condvar; one op = two wake-ups"),
    ]
}

fn fair_mutex(cfg: &Config) -> Pair {
    let bare = parking_lot::FairMutex::new(0u64);
    let inst = lockmeter::FairMutex::named("bench.fair_mutex", 0u64);
    let (bare, inst) = (black_box(&bare), black_box(&inst));
    ns_pair(
        cfg,
        |n| (0..n).for_each(|_| *bare.lock() += 1),
        |n| (0..n).for_each(|_| *inst.lock() += 1),
    )
}

fn reentrant_mutex(cfg: &Config) -> Pair {
    let bare = parking_lot::ReentrantMutex::new(1u64);
    let inst = lockmeter::ReentrantMutex::named("bench.reentrant_mutex", 1u64);
    let (bare, inst) = (black_box(&bare), black_box(&inst));
    ns_pair(
        cfg,
        |n| {
            (0..n).for_each(|_| {
                black_box(*bare.lock());
            })
        },
        |n| {
            (0..n).for_each(|_| {
                black_box(*inst.lock());
            })
        },
    )
}

fn upgradable(cfg: &Config) -> Pair {
    let bare = parking_lot::RwLock::new(1u64);
    let inst = lockmeter::RwLock::named("bench.rwlock_upgradable", 1u64);
    let (bare, inst) = (black_box(&bare), black_box(&inst));
    ns_pair(
        cfg,
        |n| {
            (0..n).for_each(|_| {
                black_box(*bare.upgradable_read());
            })
        },
        |n| {
            (0..n).for_each(|_| {
                black_box(*inst.upgradable_read());
            })
        },
    )
}

fn notify_empty(cfg: &Config) -> Pair {
    let bare = parking_lot::Condvar::new();
    let inst = lockmeter::Condvar::named("bench.condvar_empty");
    let (bare, inst) = (black_box(&bare), black_box(&inst));
    ns_pair(
        cfg,
        |n| {
            (0..n).for_each(|_| {
                black_box(bare.notify_one());
            })
        },
        |n| {
            (0..n).for_each(|_| {
                black_box(inst.notify_one());
            })
        },
    )
}

/// Whose turn it is in a round trip; `stop` ends the partner.
#[derive(Default)]
struct Turn {
    partner: bool,
    stop: bool,
}

/// A partner thread that answers every hand-over with one back.
struct PingPong<P: Pair2> {
    shared: Arc<P>,
    partner: Option<JoinHandle<()>>,
}

/// What a round trip needs from a mutex + condvar pair.
trait Pair2: Send + Sync + 'static {
    /// Hands the turn to the other side and waits for it to come back
    /// (`to_partner`), or waits for it and hands it back (partner side).
    fn hand_over(&self, to_partner: bool) -> bool;
    fn stop(&self);
}

impl Pair2 for (parking_lot::Mutex<Turn>, parking_lot::Condvar) {
    fn hand_over(&self, to_partner: bool) -> bool {
        let (m, cv) = self;
        let mut t = m.lock();
        if to_partner {
            t.partner = true;
            cv.notify_one();
            cv.wait_while(&mut t, |t| t.partner);
        } else {
            cv.wait_while(&mut t, |t| !t.partner && !t.stop);
            t.partner = false;
            cv.notify_one();
        }
        !t.stop
    }
    fn stop(&self) {
        self.0.lock().stop = true;
        self.1.notify_all();
    }
}

impl Pair2 for (lockmeter::Mutex<Turn>, lockmeter::Condvar) {
    fn hand_over(&self, to_partner: bool) -> bool {
        let (m, cv) = self;
        let mut t = m.lock();
        if to_partner {
            t.partner = true;
            cv.notify_one();
            cv.wait_while(&mut t, |t| t.partner);
        } else {
            cv.wait_while(&mut t, |t| !t.partner && !t.stop);
            t.partner = false;
            cv.notify_one();
        }
        !t.stop
    }
    fn stop(&self) {
        self.0.lock().stop = true;
        self.1.notify_all();
    }
}

impl<P: Pair2> PingPong<P> {
    fn start(shared: P) -> Self {
        let shared = Arc::new(shared);
        let s = shared.clone();
        // The partner runs under the caller's dispatcher, so observed
        // rows record both sides.
        let dispatch = tracing::dispatcher::get_default(|d| d.clone());
        let partner = std::thread::spawn(move || {
            tracing::dispatcher::with_default(&dispatch, || while s.hand_over(false) {})
        });
        PingPong {
            shared,
            partner: Some(partner),
        }
    }

    fn rounds(&self, n: u64) {
        for _ in 0..n {
            self.shared.hand_over(true);
        }
    }
}

impl<P: Pair2> Drop for PingPong<P> {
    fn drop(&mut self) {
        self.shared.stop();
        if let Some(t) = self.partner.take() {
            t.join().expect("the partner thread ends cleanly");
        }
    }
}

fn round_trip(cfg: &Config) -> Pair {
    let bare = PingPong::start((
        parking_lot::Mutex::new(Turn::default()),
        parking_lot::Condvar::new(),
    ));
    let inst = PingPong::start((
        lockmeter::Mutex::named("bench.condvar.mutex", Turn::default()),
        lockmeter::Condvar::named("bench.condvar"),
    ));
    let mut cfg = *cfg;
    // A round trip is microseconds: a shorter calibration floor than the
    // uncontended rows' would still be thousands of them per batch.
    cfg.batch = cfg.batch.max(std::time::Duration::from_millis(20));
    ns_pair(&cfg, |n| bare.rounds(n), |n| inst.rounds(n))
}
