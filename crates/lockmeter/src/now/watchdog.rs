//! The watchdog: one thread per process, started with the first layer.
//!
//! Every [`TICK`] it advances the clock that holds are stamped with. Every
//! half deadlock interval (or half stall threshold, if shorter) it reads
//! every thread's table and
//! - finds the cycles of threads that cannot proceed ([`picture::cycles`]).
//!   A cycle is reported only when the next scan finds it again with every
//!   thread it rests on at the same generation: nobody acquired, released
//!   or stopped waiting in between, so the cycle was real, not a holder
//!   releasing while a waiter registered. Each is reported once, as an
//!   ERROR event and in the snapshots' `deadlocks`. The threads are left
//!   alone.
//! - reports holds and waits older than the stall threshold, once each, as
//!   WARN events (snapshots mark them `stalled`).
//!
//! Events go to the subscriber that holds the layer whose locks they are
//! about (or the global default), emitted from this thread. The watchdog
//! takes no lock an application thread holds while it waits: only the
//! thread registry, which threads take when they start and exit.

use std::collections::HashSet;
use std::sync::{Mutex, Once};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use lockmeter_model::now::Deadlock;
use tracing::dispatcher::WeakDispatch;
use tracing::Dispatch;

use super::picture::{self, Candidate, Picture};

/// How often the watchdog clock advances: the resolution of hold ages.
pub(crate) const TICK: Duration = Duration::from_millis(10);
/// The shortest scan period, whatever the settings.
const MIN_SCAN: Duration = Duration::from_millis(10);

static START: Once = Once::new();

/// Deadlocks found so far, with the recorders whose locks they involve.
static DEADLOCKS: Mutex<Vec<(Vec<usize>, Deadlock)>> = Mutex::new(Vec::new());
/// The subscriber of each layer, to emit events into.
static DISPATCHES: Mutex<Vec<(usize, WeakDispatch)>> = Mutex::new(Vec::new());

/// Starts the watchdog thread once per process.
pub(crate) fn start() {
    // Under Miri a thread ticking every 10 ms would only slow the
    // interpreter; hold ages stay 0 there.
    if cfg!(miri) {
        return;
    }
    START.call_once(|| {
        super::tick();
        let spawned = std::thread::Builder::new()
            .name("lockmeter-watchdog".into())
            .spawn(run);
        if let Err(e) = spawned {
            eprintln!("lockmeter: no watchdog thread ({e}): hold ages, deadlocks and stalls are not reported");
        }
    });
}

/// Remembers the subscriber a layer was registered with.
pub(crate) fn remember_dispatch(recorder: usize, d: &Dispatch) {
    let mut list = DISPATCHES.lock().unwrap_or_else(|e| e.into_inner());
    list.retain(|(r, w)| *r != recorder && w.upgrade().is_some());
    list.push((recorder, d.downgrade()));
}

/// Forgets what was kept for a recorder that is gone (its address may be
/// reused by the next one).
pub(crate) fn forget_recorder(recorder: usize) {
    DISPATCHES
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .retain(|(r, _)| *r != recorder);
    DEADLOCKS
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .retain(|(rs, _)| !rs.contains(&recorder));
    super::order::forget(recorder);
}

/// The deadlocks that involve `recorder`'s locks.
pub(crate) fn deadlocks_of(recorder: usize) -> Vec<Deadlock> {
    DEADLOCKS
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .iter()
        .filter(|(rs, _)| rs.contains(&recorder))
        .map(|(_, d)| d.clone())
        .collect()
}

/// How often to scan; `None` when nothing is to be reported.
fn scan_period() -> Option<Duration> {
    let half = |ns: u64| (ns != 0).then(|| Duration::from_nanos(ns / 2).max(MIN_SCAN));
    match (half(super::detect_ns()), half(super::stall_ns())) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

fn run() {
    let mut scans = Scans::default();
    let mut last = Instant::now();
    loop {
        std::thread::sleep(TICK);
        super::tick();
        if !crate::recorder::observing() {
            continue;
        }
        match scan_period() {
            Some(period) if last.elapsed() >= period => {
                last = Instant::now();
                scans.scan();
            }
            _ => {}
        }
    }
}

/// What the watchdog remembers from one scan to the next.
#[derive(Default)]
pub(crate) struct Scans {
    /// The cycles of the last scan, by key.
    previous: Vec<Vec<(usize, u64)>>,
    /// Cycles reported and still there.
    reported: HashSet<Vec<(usize, u64)>>,
    /// Stalls reported and still going on: (thread, lock, since, wait?).
    stalls: HashSet<(usize, usize, u64, bool)>,
}

impl Scans {
    fn scan(&mut self) {
        let (p, _) = picture::gather(None);
        if super::detect_ns() != 0 {
            for c in self.confirm(&p) {
                report_deadlock(c);
            }
        }
        let stall = super::stall_ns();
        if stall != 0 {
            self.stalls(&p, super::precise_ns(), stall);
        }
    }

    /// The cycles of `p` that the previous scan found with the same key
    /// and that were not reported yet.
    pub(crate) fn confirm(&mut self, p: &Picture) -> Vec<Candidate> {
        let found = picture::cycles(&p.threads);
        let keys: Vec<_> = found.iter().map(|c| c.key.clone()).collect();
        let confirmed = found
            .into_iter()
            .filter(|c| self.previous.contains(&c.key) && !self.reported.contains(&c.key))
            .collect::<Vec<_>>();
        self.reported
            .extend(confirmed.iter().map(|c| c.key.clone()));
        self.reported.retain(|k| keys.contains(k));
        self.previous = keys;
        confirmed
    }

    fn stalls(&mut self, p: &Picture, now_ns: u64, stall_ns: u64) {
        let mut present = HashSet::new();
        for t in &p.threads {
            let waits = t.wait.iter().map(|a| (a, true));
            for (a, is_wait) in t.held.iter().map(|a| (a, false)).chain(waits) {
                let age = now_ns.saturating_sub(a.since);
                if age < stall_ns {
                    continue;
                }
                let key = (t.slot, a.lock, a.since, is_wait);
                present.insert(key);
                if self.stalls.insert(key) {
                    in_dispatch(&[a.recorder], || {
                        tracing::warn!(
                            target: "lockmeter",
                            lock = %a.id,
                            kind = a.kind.as_str(),
                            site = %a.site,
                            thread = %t.thread.label(),
                            age_ns = age,
                            waiting = is_wait,
                            "lock {} for {:?} and counting (stall threshold {:?})",
                            if is_wait { "waited on" } else { "held" },
                            Duration::from_nanos(age),
                            Duration::from_nanos(stall_ns),
                        )
                    });
                }
            }
        }
        self.stalls.retain(|k| present.contains(k));
    }
}

fn report_deadlock(c: Candidate) {
    let mut d = c.deadlock;
    d.detected_unix_ns = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    let join = |f: &dyn Fn(&lockmeter_model::now::DeadlockedThread) -> String| {
        d.threads.iter().map(f).collect::<Vec<_>>().join(", ")
    };
    let threads = join(&|t| t.thread.label());
    let locks = join(&|t| t.waits_on.id.clone());
    let sites = join(&|t| t.waits_on.site.clone());
    let summary = d.summary();
    in_dispatch(&c.recorders, || {
        tracing::error!(
            target: "lockmeter",
            threads = %threads,
            locks = %locks,
            sites = %sites,
            "deadlock: {summary}"
        )
    });
    DEADLOCKS
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .push((c.recorders, d));
}

/// Runs `emit` once in the subscriber of each of `recorders`, or in the
/// global default if none is known.
fn in_dispatch(recorders: &[usize], emit: impl Fn()) {
    let targets: Vec<Dispatch> = {
        let list = DISPATCHES.lock().unwrap_or_else(|e| e.into_inner());
        list.iter()
            .filter(|(r, _)| recorders.contains(r))
            .filter_map(|(_, w)| w.upgrade())
            .collect()
    };
    if targets.is_empty() {
        emit();
    }
    for d in &targets {
        tracing::dispatcher::with_default(d, &emit);
    }
}

#[cfg(test)]
mod tests {
    use super::super::picture::fake::{acq, thread};
    use super::*;
    use lockmeter_model::LockKind::Mutex;

    fn ab_ba(gen: u64) -> Picture {
        let mut ts = vec![
            thread(1, vec![acq(10, Mutex, None)], Some(acq(20, Mutex, None))),
            thread(2, vec![acq(20, Mutex, None)], Some(acq(10, Mutex, None))),
        ];
        ts[1].gen = gen;
        Picture {
            threads: ts,
            ..Picture::default()
        }
    }

    #[test]
    fn a_cycle_is_confirmed_on_the_second_scan_and_reported_once() {
        let mut s = Scans::default();
        assert!(
            s.confirm(&ab_ba(2)).is_empty(),
            "one sighting is not enough"
        );
        assert_eq!(s.confirm(&ab_ba(2)).len(), 1);
        assert!(s.confirm(&ab_ba(2)).is_empty(), "reported once");
    }

    #[test]
    fn a_thread_that_moved_between_scans_is_no_deadlock() {
        let mut s = Scans::default();
        for gen in [2, 4, 6, 8] {
            assert!(s.confirm(&ab_ba(gen)).is_empty(), "gen {gen}");
        }
    }

    #[test]
    fn dispatchers_get_events_and_forgotten_recorders_lose_theirs() {
        DEADLOCKS
            .lock()
            .unwrap()
            .push((vec![12345], Deadlock::default()));
        assert_eq!(deadlocks_of(12345).len(), 1);
        forget_recorder(12345);
        assert!(deadlocks_of(12345).is_empty());
    }
}
