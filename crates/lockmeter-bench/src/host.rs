//! Whether the core was shared while a row ran: a throughput probe.
//!
//! This machine is a VM whose two vCPUs sit on hyperthreads of a host that
//! runs other guests. When another guest keeps a vCPU's sibling busy, code
//! bound by instruction throughput slows down (an ALU loop measured here
//! ran from 0.91 to 1.5 ns per round in phases of a few hundred ms), while
//! code bound by the latency of one atomic hardly moves. A bare lock loop
//! is the second kind and lockmeter's observed path (150-odd instructions)
//! the first, so in a shared phase a row's ratio overstates lockmeter's
//! cost on a core of its own; the pairwise ratios do not cancel it, and
//! when the whole row falls in one phase their spread is tight.
//!
//! Every interleaved repetition ([`crate::measure::interleave`]) ends with
//! one short probe, a few independent add chains: its time against the
//! fastest probe of the whole run is the row's host factor. The probe can
//! only compare phases within one run: a run spent entirely in a shared
//! phase sees no difference.

use std::hint::black_box;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::Instant;

/// Rounds of one probe: about 0.2 ms on a core of its own here.
const ROUNDS: u64 = 200_000;

/// A host factor above this marks the row as measured on a shared core.
pub const SHARED_CORE: f64 = 1.15;

/// The fastest probe so far in this process, ns per round as `f64` bits
/// (`u64::MAX`: none yet).
static BEST: AtomicU64 = AtomicU64::new(u64::MAX);

/// Four independent dependency chains, about four instructions per round
/// each, so the loop is bound by issue width, not by any one latency.
#[inline(never)]
fn chains(rounds: u64) -> u64 {
    let (mut a, mut b, mut c, mut d) = (1u64, 2u64, 3u64, 4u64);
    for i in 0..rounds {
        a = a.wrapping_add(i ^ b);
        b = b.wrapping_add(i ^ c);
        c = c.wrapping_add(i ^ d);
        d = d.wrapping_add(i ^ a);
        a = black_box(a);
    }
    a ^ b ^ c ^ d
}

/// Runs one probe: ns per round, remembered if it is the fastest yet.
pub fn probe() -> f64 {
    let t = Instant::now();
    black_box(chains(black_box(ROUNDS)));
    let ns = t.elapsed().as_nanos() as f64 / ROUNDS as f64;
    BEST.fetch_min(ns.to_bits(), Relaxed);
    ns
}

/// The fastest probe of the run so far (NaN before the first). Positive
/// `f64`s order as their bits do, so `fetch_min` on the bits is a min.
pub fn best() -> f64 {
    match BEST.load(Relaxed) {
        u64::MAX => f64::NAN,
        bits => f64::from_bits(bits),
    }
}

/// Runs `f` between two probes; returns its result and their mean: the
/// state of the core around a one-off measurement (self-accounting's
/// calibration) that later rows are compared with.
pub fn around<R>(f: impl FnOnce() -> R) -> (R, f64) {
    let before = probe();
    let r = f();
    (r, (before + probe()) / 2.0)
}

/// `probe_ns` (a row's median probe) against the run's fastest probe.
pub fn factor(probe_ns: f64) -> Option<f64> {
    let f = probe_ns / best();
    f.is_finite().then_some(f)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_best_is_the_minimum_and_factors_are_relative_to_it() {
        let first = probe();
        assert!(first > 0.0 && first.is_finite(), "{first}");
        let second = probe();
        // Other tests may probe at the same time: the best is at most ours.
        assert!(best() <= first.min(second));
        assert_eq!(factor(best()), Some(1.0));
        assert_eq!(factor(2.0 * best()), Some(2.0));
        assert_eq!(factor(f64::NAN), None);
    }
}
