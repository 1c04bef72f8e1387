//! What one captured stack costs: the unwinder lockmeter uses
//! (`backtrace::trace_unsynchronized`, return addresses only, no
//! allocation) from a realistic depth, and resolving one address to
//! symbols, which a snapshot does once per distinct address.

use std::ffi::c_void;
use std::hint::black_box;

use crate::measure::{empty_loop, ns_pair, Config};
use crate::report::{Goal, Row, Unit};

/// Frames kept per stack by default (`lockmeter::DEFAULT_STACK_DEPTH`).
const DEPTH: usize = lockmeter::DEFAULT_STACK_DEPTH;

/// Runs `f` `depth` calls deeper than the caller, so the stack has frames
/// to walk as a real program's would.
#[inline(never)]
fn nested(depth: u32, f: &mut dyn FnMut()) {
    if depth == 0 {
        f();
    } else {
        nested(black_box(depth - 1), f);
        black_box(depth);
    }
}

fn capture(buf: &mut [usize; DEPTH]) -> usize {
    let mut n = 0;
    // SAFETY: as in lockmeter's `stacks::capture`: the closure neither
    // panics nor unwinds, and the unwinder is thread-safe.
    unsafe {
        backtrace::trace_unsynchronized(|frame| {
            if n == buf.len() {
                return false;
            }
            buf[n] = frame.ip() as usize;
            n += 1;
            true
        });
    }
    n
}

pub fn rows(cfg: &Config) -> Vec<Row> {
    let mut rows = Vec::new();
    let mut pair = None;
    nested(40, &mut || {
        pair = Some(ns_pair(cfg, empty_loop, |n| {
            let mut buf = [0usize; DEPTH];
            for _ in 0..n {
                black_box(capture(&mut buf));
            }
        }));
    });
    if let Some(p) = pair {
        rows.push(
            Row::new(
                "cost_stack_capture",
                "capture one stack, 32 frames (backtrace)",
                Unit::NsPerOp,
                Goal::Info,
            )
            .with_pair(p)
            .note("bare: the empty loop; taken only for sampled contended waits"),
        );
    }
    let mut buf = [0usize; DEPTH];
    let n = capture(&mut buf);
    let addr = buf[n / 2];
    rows.push(
        Row::new(
            "cost_stack_resolve",
            "resolve one address to symbols",
            Unit::NsPerOp,
            Goal::Info,
        )
        .with_pair(ns_pair(cfg, empty_loop, |n| {
            for _ in 0..n {
                let mut lines = 0u32;
                backtrace::resolve(addr as *mut c_void, |s| lines += s.lineno().unwrap_or(1));
                black_box(lines);
            }
        }))
        .note("once per distinct address, when a snapshot is built (cached)"),
    );
    rows
}
