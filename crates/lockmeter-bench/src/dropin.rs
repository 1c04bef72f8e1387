//! The Condvar wait/notify round trip between two threads, lockmeter's
//! against parking_lot's, same run. (The parking_lot-compatible types'
//! single-thread rows are in `uncontended::OPS`.)

use std::sync::Arc;
use std::thread::JoinHandle;

use crate::measure::{ns_pair, Config, Pair};
use crate::report::{Row, Unit};
use crate::uncontended::{Phase, UNOBSERVED_GOAL};

/// The round-trip row of one phase.
pub fn rows(cfg: &Config, phase: Phase) -> Vec<Row> {
    let goal = match phase {
        Phase::Unobserved => UNOBSERVED_GOAL,
        Phase::Observed => crate::report::Goal::Info,
    };
    vec![Row::new(
        &format!("condvar_{}_round_trip", phase.key()),
        &format!("condvar {}, wait/notify round trip, 2 threads", phase.key()),
        Unit::NsPerOp,
        goal,
    )
    .with_pair(round_trip(cfg))
    .note("bare: parking_lot Mutex + Condvar; one op = two wake-ups; both threads on CPU 0")]
}

/// Whose turn it is in a round trip; `stop` ends the partner.
#[derive(Default)]
struct Turn {
    partner: bool,
    stop: bool,
}

/// A partner thread that answers every hand-over with one back.
struct PingPong<P: HandOver> {
    shared: Arc<P>,
    partner: Option<JoinHandle<()>>,
}

/// What a round trip needs from a mutex + condvar pair.
trait HandOver: Send + Sync + 'static {
    /// Hands the turn to the other side and waits for it to come back
    /// (`to_partner`), or waits for it and hands it back (partner side).
    fn hand_over(&self, to_partner: bool) -> bool;
    fn stop(&self);
}

/// One [`HandOver`] impl per mutex + condvar pair: the same code, over
/// parking_lot's types and over lockmeter's (whose `Condvar` takes
/// lockmeter guards, so no generic impl covers both).
macro_rules! hand_over_with {
    ($mutex:ty, $condvar:ty) => {
        impl HandOver for ($mutex, $condvar) {
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
    };
}

hand_over_with!(parking_lot::Mutex<Turn>, parking_lot::Condvar);
hand_over_with!(lockmeter::Mutex<Turn>, lockmeter::Condvar);

impl<P: HandOver> PingPong<P> {
    fn start(shared: P) -> Self {
        let shared = Arc::new(shared);
        let s = shared.clone();
        // The partner runs under the caller's dispatcher, so observed
        // rows record both sides.
        let dispatch = tracing::dispatcher::get_default(|d| d.clone());
        let partner = std::thread::spawn(move || {
            crate::measure::pin_to(0);
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

impl<P: HandOver> Drop for PingPong<P> {
    fn drop(&mut self) {
        self.shared.stop();
        if let Some(t) = self.partner.take() {
            t.join().expect("the partner thread ends cleanly");
        }
    }
}

/// Both sides of both pairs run on CPU 0: a wake-up across CPUs here
/// took 3-90 µs by where the scheduler had put the sleeper (a woken idle
/// CPU is slow to run it), which decided the row on its own (ratios of
/// 0.03 to 35 between runs); on one CPU each hand-over is a switch.
fn round_trip(cfg: &Config) -> Pair {
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    crate::measure::pin_to(0);
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
    // The round trip sleeps: its cost is wall time.
    cfg.timer = crate::measure::Timer::Wall;
    let pair = ns_pair(&cfg, |n| bare.rounds(n), |n| inst.rounds(n));
    drop((bare, inst));
    crate::measure::unpin(cpus);
    pair
}
