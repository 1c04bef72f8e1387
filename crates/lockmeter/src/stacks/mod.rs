//! Stacks of contended acquisitions: capture, sampling, and the wrapper
//! frames to skip.
//!
//! Only the contended path comes here (the uncontended path captures
//! nothing). A wait of `d` ns is captured with probability
//! `p = min(1, d / rate)` and stands for `1/p` waits, like Go's block
//! profile rate: contentions and wait time per stack are then unbiased,
//! and the cost of capturing stays below `capture cost / rate` of the time
//! waited. Capturing stores return addresses only (`backtrace`'s
//! `trace_unsynchronized`, no symbols, no allocation); they are resolved
//! when a snapshot is built (`recorder::build::stacks`).
//!
//! | item | what it is |
//! |---|---|
//! | [`StackSettings`] | rate, depth, skip list of one recorder |
//! | [`weight_of`] | the time-weighted sampling decision |
//! | [`capture`] | the unwinder call |
//! | [`table`] | the per-entry bounded table captured stacks go into |

pub(crate) mod blame;
pub(crate) mod hooks;
pub(crate) mod options;
pub(crate) mod table;

use std::cell::Cell;
use std::sync::Arc;
use std::time::Duration;

/// Frames kept per stack unless [`crate::LayerBuilder::stack_depth`] says otherwise.
pub const DEFAULT_STACK_DEPTH: usize = 32;
/// The most frames a stack can keep (the table's slots are this deep).
pub const MAX_STACK_DEPTH: usize = 64;
/// Waits this long or longer are always captured; shorter ones with
/// probability `wait / rate` (see [`crate::LayerBuilder::stack_rate`]).
/// A waiter's stack is captured when it gets the lock, inside the critical
/// section (where a helper that took the lock is still on the stack), and
/// one capture costs several microseconds (`docs/performance.md`): the rate
/// keeps that added time below `capture / rate` of the time waited, under
/// 1 % at 1 ms.
pub const DEFAULT_STACK_RATE: Duration = Duration::from_millis(1);

/// Module-path prefixes skipped by default: lockmeter's own frames (and
/// the unwinder's), `lock_api`'s guards, the `parking_lot` drop-in that
/// wraps lockmeter, and tokio's loom shim (`tokio::loom::std::…`), which
/// wraps every lock of the tokio runtime in one file.
pub const DEFAULT_SKIP_FRAMES: &[&str] = &[
    "lockmeter::",
    "lockmeter_parking_lot::",
    "backtrace::",
    "lock_api::",
    "parking_lot::",
    "tokio::loom::",
];

/// The stack settings of one recorder.
#[derive(Clone, Debug)]
pub(crate) struct StackSettings {
    /// 0 turns stacks off.
    pub(crate) rate_ns: u64,
    pub(crate) depth: usize,
    pub(crate) skip: Arc<[String]>,
}

impl StackSettings {
    pub(crate) fn new(rate_ns: u64, depth: usize, skip: Vec<String>) -> StackSettings {
        StackSettings {
            rate_ns,
            depth: depth.clamp(1, MAX_STACK_DEPTH),
            skip: skip.into(),
        }
    }

    /// The default skip list, as owned strings.
    pub(crate) fn default_skip() -> Vec<String> {
        DEFAULT_SKIP_FRAMES.iter().map(|s| s.to_string()).collect()
    }
}

impl Default for StackSettings {
    fn default() -> StackSettings {
        StackSettings::new(
            DEFAULT_STACK_RATE.as_nanos() as u64,
            DEFAULT_STACK_DEPTH,
            StackSettings::default_skip(),
        )
    }
}

thread_local! {
    /// xorshift64* state; 0 until first used.
    static RNG: Cell<u64> = const { Cell::new(0) };
}

/// A per-thread pseudo-random number (xorshift64*): sampling needs no
/// more, and must take no lock.
fn random() -> u64 {
    RNG.with(|c| {
        let mut x = c.get();
        if x == 0 {
            // Seeded from the thread-local's address and the time, so that
            // threads do not sample in step.
            let t = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos() as u64);
            x = (c as *const Cell<u64> as u64) ^ t ^ 0x9E37_79B9_7F4A_7C15;
            x |= 1;
        }
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        c.set(x);
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    })
}

/// One contended wait in this many is counted in the lock's blame word
/// (`blame`), and each counted one stands for this many. Counting costs two
/// read-modify-writes on the lock's line; under a lock that changes hands
/// every few nanoseconds (the bench's `hammer` rows), doing it for every
/// wait halved throughput (when every release it covered was charged too).
pub(crate) const BLAME_EVERY: u64 = 8;

/// Whether this wait is one of the [`BLAME_EVERY`] counted for blame.
#[inline]
pub(crate) fn counts_for_blame() -> bool {
    random().is_multiple_of(BLAME_EVERY)
}

/// Whether a wait of `wait_ns` is captured, and if so the weight `1/p` it
/// carries: `p = min(1, wait_ns / rate_ns)`. `None` when stacks are off.
#[inline]
pub(crate) fn weight_of(rate_ns: u64, wait_ns: u64) -> Option<f64> {
    if rate_ns == 0 {
        return None;
    }
    if wait_ns >= rate_ns {
        return Some(1.0);
    }
    let wait_ns = wait_ns.max(1);
    // A uniform draw below `rate`, by a multiply instead of a division
    // (this runs inside the critical section of every contended
    // acquisition): P(draw < wait) = wait / rate.
    let draw = ((u128::from(random()) * u128::from(rate_ns)) >> 64) as u64;
    (draw < wait_ns).then(|| rate_ns as f64 / wait_ns as f64)
}

/// The return addresses of the calling thread, leaf first, at most
/// `buf.len()`. No symbols and no allocation: that is left to the
/// snapshot. `inline(never)` so that this frame is one known frame.
#[inline(never)]
pub(crate) fn capture(buf: &mut [usize]) -> usize {
    let mut n = 0;
    // SAFETY: `trace_unsynchronized` is unsafe only because it does not
    // take backtrace's global lock; the unwinder it calls
    // (`_Unwind_Backtrace`) is thread-safe on the platforms we build for,
    // and the closure neither panics nor unwinds.
    unsafe {
        backtrace::trace_unsynchronized(|frame| {
            let ip = frame.ip() as usize;
            // The outermost frame's return address is 0: nothing to name.
            if n == buf.len() || ip == 0 {
                return false;
            }
            buf[n] = ip;
            n += 1;
            true
        });
    }
    n
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_waits_are_always_taken_with_weight_one() {
        for _ in 0..100 {
            assert_eq!(weight_of(1000, 1000), Some(1.0));
            assert_eq!(weight_of(1000, 5000), Some(1.0));
        }
        assert_eq!(weight_of(0, 5000), None);
    }

    /// The estimate Σ 1/p over the captured waits stands for the count
    /// of all waits (and Σ d/p for their total): unbiased within a few %.
    #[test]
    fn short_waits_are_taken_in_proportion_and_scale_back_to_the_whole() {
        let (rate, wait, n) = (10_000u64, 100u64, 200_000u64);
        let (mut count, mut time, mut taken) = (0.0, 0.0, 0u64);
        for _ in 0..n {
            if let Some(w) = weight_of(rate, wait) {
                taken += 1;
                count += w;
                time += w * wait as f64;
            }
        }
        assert!(
            (1_200..2_800).contains(&taken),
            "taken {taken} of {n}, expected ~2000"
        );
        assert!(
            (count / n as f64 - 1.0).abs() < 0.15,
            "count estimate {count}"
        );
        assert!((time / (n * wait) as f64 - 1.0).abs() < 0.15);
    }

    #[test]
    fn capture_sees_this_test_function() {
        let mut buf = [0usize; MAX_STACK_DEPTH];
        let n = capture(&mut buf);
        assert!(n > 2, "captured {n} frames");
        let mut names = Vec::new();
        for &ip in &buf[..n] {
            backtrace::resolve(ip as *mut std::ffi::c_void, |s| {
                if let Some(name) = s.name() {
                    names.push(format!("{name:#}"));
                }
            });
        }
        assert!(
            names
                .iter()
                .any(|n| n.contains("capture_sees_this_test_function")),
            "{names:?}"
        );
    }
}
