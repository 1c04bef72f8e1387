//! std's mutex algorithm as a `lock_api` raw mutex: what [`super::Mutex`]
//! is metered over, so that the drop-in for `std::sync::Mutex` costs what
//! std's mutex costs and waits as it waits.
//!
//! Over parking_lot's raw mutex instead, the unobserved `sync::Mutex` read
//! 1.04–1.08 of std's in every session since 21: parking_lot's one-byte
//! state is released by a locked one-byte read-modify-write, which on the
//! AMD Zen 4 host of sessions 24–34 costs 0.8 ns more per lock-and-unlock
//! than std's four-byte swap (5.18 against 4.39 ns, the same two atomics
//! alone in a loop). Over std's own `Mutex<()>` the row read 1.00 but every
//! observed acquisition paid std's `try_lock` and guard, about 3 ns
//! (`docs/performance.md`, "Session 27"). std keeps its raw mutex private,
//! so its algorithm is here, with the same three states:
//!
//! - `lock`: one compare-exchange 0 → 1; if held, spin up to 100 rounds
//!   while the state stays 1, then swap in 2 ("held, maybe waited for")
//!   and sleep while it stays 2;
//! - `unlock`: one swap to 0; only if it was 2, wake one sleeper.
//!
//! Sleeping is parking_lot_core's parking lot, keyed by the state's
//! address (std uses a futex on it, which std does not expose either). A
//! wake-up is never lost: the sleeper is queued only while the state
//! still reads 2 (`park`'s `validate`, under the queue's lock), and an
//! unlock that swaps out a 2 then takes the same queue lock to wake it.
//! Under loom, which cannot see inside parking_lot_core, a sleeper yields
//! until the state leaves 2 instead (`tests/loom.rs` checks the states).

use std::time::{Duration, Instant};

use crate::primitive::{spin_loop, AtomicU32, Ordering::*};

/// Free.
const UNLOCKED: u32 = 0;
/// Held, and no thread has gone to sleep on it since it was taken.
const LOCKED: u32 = 1;
/// Held, and a thread may be asleep on it: the unlock wakes one.
const CONTENDED: u32 = 2;

/// Rounds a waiter spins while the mutex is held by a running holder
/// before it sleeps: std's figure (none under loom, where each round is a
/// yield point that multiplies the interleavings without adding a state).
const SPINS: u32 = if cfg!(lockmeter_loom) { 0 } else { 100 };

/// A mutex with std's algorithm (see the module's doc). Four bytes.
pub struct StdRawMutex {
    #[cfg(not(lockmeter_loom))]
    state: AtomicU32,
    /// Under loom, made on first use: lock_api wants a `const INIT`, and
    /// loom's atomics cannot be built in const context.
    #[cfg(lockmeter_loom)]
    state: std::sync::OnceLock<AtomicU32>,
}

impl StdRawMutex {
    /// The state word.
    #[cfg(not(lockmeter_loom))]
    #[inline(always)]
    fn word(&self) -> &AtomicU32 {
        &self.state
    }

    #[cfg(lockmeter_loom)]
    fn word(&self) -> &AtomicU32 {
        self.state.get_or_init(|| AtomicU32::new(UNLOCKED))
    }

    /// The mutex's key in the parking lot.
    #[cfg(not(lockmeter_loom))]
    fn key(&self) -> usize {
        self.word() as *const AtomicU32 as usize
    }

    /// Takes the mutex after a failed first attempt, sleeping while it is
    /// held; false if `deadline` passed first.
    #[cold]
    fn lock_contended(&self, deadline: Option<Instant>) -> bool {
        let mut state = self.spin();
        if state == UNLOCKED {
            match self
                .word()
                .compare_exchange(UNLOCKED, LOCKED, Acquire, Relaxed)
            {
                Ok(_) => return true,
                Err(s) => state = s,
            }
        }
        loop {
            // Taken as CONTENDED: whoever else sleeps on it is woken by
            // this thread's unlock in turn.
            if state != CONTENDED && self.word().swap(CONTENDED, Acquire) == UNLOCKED {
                return true;
            }
            if !self.sleep(deadline) {
                return false;
            }
            state = self.spin();
        }
    }

    /// Spins while the mutex is held with nobody asleep, up to [`SPINS`]
    /// rounds; the state it last read.
    fn spin(&self) -> u32 {
        let mut left = SPINS;
        loop {
            let state = self.word().load(Relaxed);
            if state != LOCKED || left == 0 {
                return state;
            }
            spin_loop();
            left -= 1;
        }
    }

    /// Sleeps while the state is [`CONTENDED`]; false if `deadline` passed.
    #[cfg(not(lockmeter_loom))]
    fn sleep(&self, deadline: Option<Instant>) -> bool {
        let validate = || self.word().load(Relaxed) == CONTENDED;
        // SAFETY: the key is this mutex's address, which no other parking
        // lot user shares; the callbacks neither park nor panic.
        let result = unsafe {
            parking_lot_core::park(
                self.key(),
                validate,
                || {},
                |_, _| {},
                parking_lot_core::DEFAULT_PARK_TOKEN,
                deadline,
            )
        };
        !matches!(result, parking_lot_core::ParkResult::TimedOut)
    }

    /// The loom form (module doc): a deadline is taken to have passed at
    /// once.
    #[cfg(lockmeter_loom)]
    fn sleep(&self, deadline: Option<Instant>) -> bool {
        while self.word().load(Relaxed) == CONTENDED {
            if deadline.is_some() {
                return false;
            }
            crate::primitive::yield_now();
        }
        true
    }

    /// Wakes one thread asleep on the mutex, if any.
    #[cold]
    fn wake_one(&self) {
        #[cfg(not(lockmeter_loom))]
        // SAFETY: as in `sleep`; the callback only answers the token.
        unsafe {
            parking_lot_core::unpark_one(self.key(), |_| parking_lot_core::DEFAULT_UNPARK_TOKEN);
        }
    }
}

// SAFETY: one holder at a time: every way in either changes the state
// from UNLOCKED with an Acquire read-modify-write, and `unlock` gives it
// back with a Release one; the guard is a marker.
unsafe impl lock_api::RawMutex for StdRawMutex {
    #[allow(clippy::declare_interior_mutable_const)]
    #[cfg(not(lockmeter_loom))]
    const INIT: Self = StdRawMutex {
        state: AtomicU32::new(UNLOCKED),
    };
    #[allow(clippy::declare_interior_mutable_const)]
    #[cfg(lockmeter_loom)]
    const INIT: Self = StdRawMutex {
        state: std::sync::OnceLock::new(),
    };
    type Guard = ();

    #[inline]
    fn lock(&self) {
        if self
            .word()
            .compare_exchange(UNLOCKED, LOCKED, Acquire, Relaxed)
            .is_err()
        {
            self.lock_contended(None);
        }
    }

    #[inline]
    fn try_lock(&self) -> Option<()> {
        self.word()
            .compare_exchange(UNLOCKED, LOCKED, Acquire, Relaxed)
            .is_ok()
            .then_some(())
    }

    #[inline]
    unsafe fn unlock(&self, _guard: ()) {
        if self.word().swap(UNLOCKED, Release) == CONTENDED {
            self.wake_one();
        }
    }

    fn is_locked(&self) -> bool {
        self.word().load(Relaxed) != UNLOCKED
    }
}

// SAFETY: as for `RawMutex`; a timed attempt that gives up holds nothing.
unsafe impl lock_api::RawMutexTimed for StdRawMutex {
    type Duration = Duration;
    type Instant = Instant;

    fn try_lock_for(&self, timeout: Duration) -> Option<()> {
        match Instant::now().checked_add(timeout) {
            Some(deadline) => self.try_lock_until(deadline),
            None => {
                lock_api::RawMutex::lock(self);
                Some(())
            }
        }
    }

    fn try_lock_until(&self, deadline: Instant) -> Option<()> {
        lock_api::RawMutex::try_lock(self)
            .or_else(|| self.lock_contended(Some(deadline)).then_some(()))
    }
}

#[cfg(all(test, not(lockmeter_loom)))]
mod tests {
    use std::time::{Duration, Instant};

    use lock_api::{RawMutex, RawMutexTimed};

    use super::StdRawMutex;

    /// The timed attempts (what the raw condvar's timed wait needs of the
    /// mutex): one on a held mutex gives up at its deadline, having taken
    /// nothing, and one on a free mutex takes it.
    #[test]
    fn a_timed_attempt_gives_up_while_held_and_takes_a_free_mutex() {
        let m = StdRawMutex::INIT;
        m.lock();
        std::thread::scope(|s| {
            s.spawn(|| {
                let start = Instant::now();
                assert!(m.try_lock_for(Duration::from_millis(20)).is_none());
                assert!(
                    start.elapsed() >= Duration::from_millis(20),
                    "gave up early"
                );
            });
        });
        assert!(m.is_locked(), "still the first holder's");
        // SAFETY: this thread holds it.
        unsafe { m.unlock(()) };
        assert!(!m.is_locked());
        assert!(m
            .try_lock_until(Instant::now() + Duration::from_secs(5))
            .is_some());
        // SAFETY: taken just above.
        unsafe { m.unlock(()) };
        assert!(
            m.try_lock_for(Duration::MAX).is_some(),
            "an unrepresentable deadline waits"
        );
        // SAFETY: taken just above.
        unsafe { m.unlock(()) };
    }
}
