//! Busy-waiting of the experiments' drivers, kept out of the measured locks.
//!
//! A driver (the herd's client, the ping-pong peers) sometimes has to wait
//! until the threads it drives are asleep again, so every round starts
//! from the same state and the counts come out exact. It spins briefly,
//! then yields the CPU so that on a 2-core machine the threads it waits
//! for get to run.

use std::time::{Duration, Instant};

/// Spins, then yields, until `done()` holds.
pub fn spin_until(mut done: impl FnMut() -> bool) {
    let mut rounds = 0u32;
    while !done() {
        pause(rounds);
        rounds = rounds.saturating_add(1);
    }
}

/// Like [`spin_until`], but polls `done` less and less often (it may be
/// costly, e.g. take a lock), yielding up to 32 times between polls.
pub fn poll_until(mut done: impl FnMut() -> bool) {
    let mut gap = 1u32;
    while !done() {
        for _ in 0..gap {
            std::thread::yield_now();
        }
        gap = (gap * 2).min(32);
    }
}

/// Spins, then yields, until `done()` holds or `limit` passes; returns
/// whether it held.
pub fn spin_until_for(limit: Duration, mut done: impl FnMut() -> bool) -> bool {
    let end = Instant::now() + limit;
    let mut rounds = 0u32;
    loop {
        if done() {
            return true;
        }
        if Instant::now() >= end {
            return false;
        }
        pause(rounds);
        rounds = rounds.saturating_add(1);
    }
}

fn pause(rounds: u32) {
    if rounds < 64 {
        std::hint::spin_loop();
    } else {
        std::thread::yield_now();
    }
}
