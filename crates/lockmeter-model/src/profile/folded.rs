//! Folded stacks: one line per stack, `root;…;leaf WEIGHT`, the input of
//! inferno, flamegraph.pl and speedscope.
//!
//! The root frame is the lock (`[lock NAME]`), so a flame graph groups by
//! lock; then the stack from the outermost caller to the frame that took
//! the lock, wrapper frames folded away. Weights are integers of one
//! [`Metric`] (wait nanoseconds by default); lines of weight 0 are left out.

use super::{samples, Metric};
use crate::stacks::Side;
use crate::Snapshot;

/// The folded lines of one side, weighted by `metric`, sorted (inferno
/// wants equal stacks adjacent; equal stacks are merged).
pub fn lines(snap: &Snapshot, side: Side, metric: Metric) -> Vec<String> {
    let mut merged: std::collections::BTreeMap<String, f64> = Default::default();
    for s in samples(snap, side) {
        let weight = s.value(metric);
        if weight <= 0.0 {
            continue;
        }
        let mut stack = format!("[lock {}]", clean(s.lock.name()));
        for f in s.frames.iter().rev() {
            stack.push(';');
            stack.push_str(&clean(f.name()));
        }
        *merged.entry(stack).or_default() += weight;
    }
    merged
        .into_iter()
        .filter_map(|(stack, w)| {
            let w = w.round() as u64;
            (w > 0).then(|| format!("{stack} {w}"))
        })
        .collect()
}

/// The folded text of one side: [`lines`], one per line.
pub fn text(snap: &Snapshot, side: Side, metric: Metric) -> String {
    let mut out = String::new();
    for l in lines(snap, side, metric) {
        out.push_str(&l);
        out.push('\n');
    }
    out
}

/// A frame name that cannot break the format: `;` separates frames and a
/// newline ends the line (a `[u8; 4]` in a generic name, say).
fn clean(name: &str) -> String {
    name.replace(';', ",").replace(['\n', '\r'], " ")
}
