//! A measurement of costs taken again at later snapshots, the calmest
//! kept.
//!
//! Self-accounting's costs are timed once and multiplied by exact counts
//! for the rest of the process; one timed during a burst of a shared host
//! read twice the calm figure ever after (`docs/performance.md`,
//! "Session 30"), and the host probe around it, 1.09 times its best, did
//! not show it. So each is taken at the first snapshot and again at later
//! ones, and the one whose timed operations ran fastest is kept: noise on
//! a shared machine only ever adds time. The gaps double from a second (a
//! burst lasts up to seconds; some last minutes): up to eight measurements
//! over about two minutes, where three over two seconds still kept one
//! taken in a burst (the bench's `selfcost` rows, `docs/performance.md`,
//! "Session 33"). Each takes 30-150 ms of one thread, at a snapshot.

use std::time::{Duration, Instant};

/// How many times a measurement is taken, at most.
const MEASUREMENTS: u32 = 8;

/// The least time between the first two measurements of one thing; each
/// later gap is twice the one before.
const REMEASURE_AFTER: Duration = Duration::from_secs(1);

/// What a measurement says about how busy the host kept it.
pub(super) trait Measurement: Clone {
    /// Its timed operations' times together: lower is calmer.
    fn busy_ns(&self) -> f64;
    /// The wall time it took.
    fn took_ns(&self) -> u64;
}

/// The measurements of one thing so far.
pub(super) struct Measured<T> {
    /// The calmest so far, and its number (from 1).
    kept: Option<(T, u32)>,
    /// How many were taken (or tried), when the last one was, and the
    /// wall time they took together.
    taken: u32,
    last: Option<Instant>,
    took_ns: u64,
}

/// How many measurements were taken, which one (from 1) is kept, and the
/// wall time they took together.
#[derive(Clone, Copy)]
pub(super) struct Taken {
    pub(super) count: u32,
    pub(super) kept: u32,
    pub(super) took_ns: u64,
}

impl<T: Measurement> Measured<T> {
    pub(super) const fn new() -> Measured<T> {
        Measured {
            kept: None,
            taken: 0,
            last: None,
            took_ns: 0,
        }
    }

    /// The calmest measurement and the counts, measuring first with
    /// `measure` (`None`: it could not run) if one is due.
    pub(super) fn get(&mut self, measure: impl FnOnce() -> Option<T>) -> Option<(T, Taken)> {
        let now = Instant::now();
        if self.due(now) {
            self.offer(now, measure());
        }
        let (kept, number) = self.kept.clone()?;
        Some((
            kept,
            Taken {
                count: self.taken,
                kept: number,
                took_ns: self.took_ns,
            },
        ))
    }

    /// Whether another measurement is due at `now`.
    fn due(&self, now: Instant) -> bool {
        self.taken < MEASUREMENTS
            && self
                .last
                .is_none_or(|last| now.duration_since(last) >= self.gap())
    }

    /// The least time after the last measurement before the next:
    /// [`REMEASURE_AFTER`], doubled for each measurement after the second.
    fn gap(&self) -> Duration {
        REMEASURE_AFTER * (1 << self.taken.saturating_sub(1).min(MEASUREMENTS))
    }

    /// Counts a measurement taken at `at` and keeps it if it ran calmer
    /// than the one kept.
    fn offer(&mut self, at: Instant, measured: Option<T>) {
        self.taken += 1;
        self.last = Some(at);
        let Some(measured) = measured else { return };
        self.took_ns += measured.took_ns();
        let calmer = match &self.kept {
            Some((kept, _)) => measured.busy_ns() < kept.busy_ns(),
            None => true,
        };
        if calmer {
            self.kept = Some((measured, self.taken));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Clone, Debug, PartialEq)]
    struct Busy(f64);

    impl Measurement for Busy {
        fn busy_ns(&self) -> f64 {
            self.0
        }

        fn took_ns(&self) -> u64 {
            1
        }
    }

    fn kept(m: &Measured<Busy>) -> Option<(f64, u32)> {
        m.kept.as_ref().map(|(b, n)| (b.0, *n))
    }

    /// Measured again after gaps that double from a second, at most
    /// eight times, the calmest kept; one that could not run counts.
    #[test]
    fn the_calmest_of_eight_measurements_at_doubling_gaps_is_kept() {
        let t0 = Instant::now();
        let mut m = Measured::new();
        assert!(m.due(t0));
        m.offer(t0, Some(Busy(10.0)));
        assert_eq!(kept(&m), Some((10.0, 1)));
        assert!(!m.due(t0 + REMEASURE_AFTER / 2));
        let t1 = t0 + REMEASURE_AFTER;
        assert!(m.due(t1));
        m.offer(t1, Some(Busy(12.0)));
        assert_eq!(kept(&m), Some((10.0, 1)));
        // The next gap is two seconds, then four.
        assert!(!m.due(t1 + REMEASURE_AFTER));
        let t2 = t1 + 2 * REMEASURE_AFTER;
        assert!(m.due(t2));
        m.offer(t2, Some(Busy(8.0)));
        assert_eq!((kept(&m), m.taken, m.took_ns), (Some((8.0, 3)), 3, 3));
        assert!(!m.due(t2 + 3 * REMEASURE_AFTER));
        let mut t = t2;
        for (i, busy) in [9.0, 7.5, 11.0, 8.5, 9.5].into_iter().enumerate() {
            t += REMEASURE_AFTER * (4 << i);
            assert!(m.due(t), "measurement {}", i + 4);
            m.offer(t, Some(Busy(busy)));
        }
        assert_eq!((kept(&m), m.taken), (Some((7.5, 5)), 8));
        assert!(!m.due(t + 1000 * REMEASURE_AFTER));

        let mut failed = Measured::<Busy>::new();
        failed.offer(t0, None);
        assert!(failed.kept.is_none() && !failed.due(t0) && failed.due(t1));
    }

    /// `get` measures only when due, and answers with the kept one.
    #[test]
    fn get_measures_when_due_and_answers_the_kept_one() {
        let mut m = Measured::new();
        let mut runs = 0;
        let (first, taken) = m
            .get(|| {
                runs += 1;
                Some(Busy(5.0))
            })
            .unwrap();
        assert_eq!((first, taken.count, taken.kept, runs), (Busy(5.0), 1, 1, 1));
        // Within the second: no measurement.
        let (again, taken) = m.get(|| unreachable!("not due")).unwrap();
        assert_eq!((again, taken.count), (Busy(5.0), 1));
    }
}
