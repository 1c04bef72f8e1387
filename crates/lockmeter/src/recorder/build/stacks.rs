//! The stacks of a snapshot: every entry's captured return addresses,
//! resolved to frames when the snapshot is built (never on the hot path).
//!
//! Each distinct address is resolved once for the recorder's life and
//! cached in [`StackBook`]; frames are interned once per snapshot. The
//! stacks of threads that exit are folded into the book (still as raw
//! addresses), like their counts.

use std::collections::HashMap;
use std::ffi::c_void;

use lockmeter_model::stacks::{in_module, Frame, Side, StackSample, Stacks};

use crate::class::format_location;
use crate::recorder::entry::Entry;
use crate::stacks::StackSettings;

/// A resolved address: its frames, innermost (inlined) first.
type Resolved = Vec<Frame>;

/// What makes two captured stacks the same sample.
#[derive(Clone, PartialEq, Eq, Hash)]
struct RawKey {
    lock: String,
    site: String,
    mode: Option<&'static str>,
    side: Side,
    frames: Vec<usize>,
}

#[derive(Clone, Copy, Default)]
struct RawSum {
    captured: u64,
    contentions: f64,
    wait_ns: f64,
    hold_ns: f64,
}

impl RawSum {
    fn add(&mut self, o: &RawSum) {
        self.captured += o.captured;
        self.contentions += o.contentions;
        self.wait_ns += o.wait_ns;
        self.hold_ns += o.hold_ns;
    }
}

/// The recorder's memory of stacks: resolved addresses, and the stacks of
/// exited threads.
#[derive(Default)]
pub(crate) struct StackBook {
    resolved: HashMap<usize, Resolved>,
    retired: HashMap<RawKey, RawSum>,
    retired_dropped: u64,
}

/// The raw stacks of one entry.
fn entry_stacks(e: &Entry, mut f: impl FnMut(RawKey, RawSum)) -> u64 {
    let (stacks, dropped) = e.stacks.read();
    if stacks.is_empty() {
        return dropped;
    }
    let lock = e.key().class.id();
    let site = format_location(e.key().site);
    for s in stacks {
        f(
            RawKey {
                lock: lock.clone(),
                site: site.clone(),
                mode: e.key().mode.label(),
                side: s.side,
                frames: s.frames,
            },
            RawSum {
                captured: s.captured,
                contentions: s.contentions,
                wait_ns: s.wait_ns,
                hold_ns: s.hold_ns,
            },
        );
    }
    dropped
}

impl StackBook {
    /// Folds the stacks of an exiting thread's entry into the book.
    pub(crate) fn retire(&mut self, e: &Entry) {
        let retired = &mut self.retired;
        self.retired_dropped += entry_stacks(e, |k, v| retired.entry(k).or_default().add(&v));
    }

    /// The stacks of the given live entries plus the retired ones.
    pub(crate) fn build<'a>(
        &mut self,
        entries: impl Iterator<Item = &'a Entry>,
        settings: &StackSettings,
    ) -> Stacks {
        let mut all = self.retired.clone();
        let mut dropped = self.retired_dropped;
        for e in entries {
            dropped += entry_stacks(e, |k, v| all.entry(k).or_default().add(&v));
        }
        let mut out = Stacks {
            rate_ns: settings.rate_ns,
            depth: settings.depth as u32,
            skip_frames: settings.skip.to_vec(),
            dropped,
            ..Stacks::default()
        };
        if settings.rate_ns == 0 && all.is_empty() {
            return Stacks::default();
        }
        let mut interned: HashMap<Frame, u32> = HashMap::new();
        let mut samples: Vec<(RawKey, RawSum)> = all.into_iter().collect();
        // A stable order: by lock, site, side, then weight.
        samples.sort_by(|(a, x), (b, y)| {
            (&a.lock, &a.site, a.mode, a.side)
                .cmp(&(&b.lock, &b.site, b.mode, b.side))
                .then(y.wait_ns.total_cmp(&x.wait_ns))
        });
        for (key, sum) in samples {
            let mut frames: Vec<Frame> = Vec::new();
            for &a in &key.frames {
                frames.extend(self.resolve(a).iter().cloned());
            }
            mark_skipped(&mut frames, &settings.skip);
            let frames = frames
                .into_iter()
                .map(|f| {
                    let next = out.frames.len() as u32;
                    *interned.entry(f.clone()).or_insert_with(|| {
                        out.frames.push(f);
                        next
                    })
                })
                .collect();
            out.samples.push(StackSample {
                lock: key.lock,
                site: key.site,
                mode: key.mode.map(str::to_string),
                side: key.side,
                frames,
                captured: sum.captured,
                contentions: sum.contentions,
                wait_ns: sum.wait_ns,
                hold_ns: sum.hold_ns,
            });
        }
        out
    }

    /// The frames of one address, resolved the first time it is seen.
    fn resolve(&mut self, addr: usize) -> &Resolved {
        self.resolved.entry(addr).or_insert_with(|| resolve(addr))
    }
}

/// Symbolizes one return address (`backtrace` looks at the call
/// instruction just before it). Inlined functions give one frame each.
fn resolve(addr: usize) -> Resolved {
    let mut frames = Vec::new();
    backtrace::resolve(addr as *mut c_void, |sym| {
        let function = sym
            .name()
            .map(|n| format!("{n:#}"))
            .unwrap_or_else(|| format!("{addr:#x}"));
        frames.push(Frame {
            function,
            file: sym.filename().map(|p| p.display().to_string()),
            line: sym.lineno().unwrap_or(0),
            address: addr as u64,
            skipped: false,
        });
    });
    if frames.is_empty() {
        frames.push(Frame {
            function: format!("{addr:#x}"),
            address: addr as u64,
            ..Frame::default()
        });
    }
    frames
}

/// Marks wrapper frames (leaf first): every frame inside a `skip` prefix;
/// and, in the run of frames from the leaf to the real caller, the
/// standard-library glue around them (`FnOnce::call_once`,
/// `drop_in_place<lockmeter::…>`, `mem::drop`), so that the first frame
/// left is the real caller.
fn mark_skipped(frames: &mut [Frame], skip: &[String]) {
    let glue = |f: &Frame| {
        let n = f.function.trim_start_matches('<');
        ["core::", "std::", "alloc::"]
            .iter()
            .any(|p| n.starts_with(p))
            || f.function.starts_with("0x")
    };
    // A glue frame about a wrapper type (`drop_in_place<lockmeter::…>`).
    let about_wrapper = |f: &Frame| skip.iter().any(|p| f.function.contains(&format!("<{p}")));
    let mut run = 0;
    let mut wrapped = false;
    for f in frames.iter_mut() {
        if in_module(&f.function, skip) || (glue(f) && about_wrapper(f)) {
            wrapped = true;
        } else if !glue(f) {
            break;
        }
        run += 1;
    }
    if wrapped {
        for f in &mut frames[..run] {
            f.skipped = true;
        }
    }
    for f in frames.iter_mut() {
        if in_module(&f.function, skip) {
            f.skipped = true;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frames(names: &[&str]) -> Vec<Frame> {
        names
            .iter()
            .map(|n| Frame {
                function: n.to_string(),
                ..Frame::default()
            })
            .collect()
    }

    /// The functions of `names` (leaf first) left after [`mark_skipped`]
    /// with the default skip list.
    fn shown(names: &[&str]) -> Vec<String> {
        let mut f = frames(names);
        mark_skipped(&mut f, &StackSettings::default_skip());
        f.into_iter()
            .filter(|f| !f.skipped)
            .map(|f| f.function)
            .collect()
    }

    #[test]
    fn glue_between_wrappers_is_skipped_but_not_past_the_caller() {
        let shown = shown(&[
            "backtrace::backtrace::trace_unsynchronized",
            "lockmeter::stacks::capture",
            "core::ops::function::FnOnce::call_once",
            "lockmeter::meter::acquire",
            "tokio::loom::std::parking_lot::Mutex<T>::lock",
            "app::helper",
            "core::ops::function::FnOnce::call_once",
            "lockmeter::not_really",
            "app::main",
        ]);
        assert_eq!(
            shown,
            [
                "app::helper",
                "core::ops::function::FnOnce::call_once",
                "app::main"
            ]
        );
    }

    #[test]
    fn a_guard_dropped_by_the_caller_names_the_caller() {
        let shown = shown(&[
            "lockmeter::stacks::capture",
            "<lockmeter::mutex::MeteredMutexGuard<R,T> as core::ops::drop::Drop>::drop",
            "core::ptr::drop_in_place<lockmeter::mutex::MeteredMutexGuard<R,u64>>",
            "core::mem::drop",
            "app::caller",
        ]);
        assert_eq!(shown, ["app::caller"]);
    }

    #[test]
    fn addresses_in_this_binary_resolve_to_function_names() {
        let here = addresses_in_this_binary_resolve_to_function_names as *const () as usize;
        let r = resolve(here + 1);
        assert!(
            r.iter()
                .any(|f| f.function.contains("addresses_in_this_binary_resolve")),
            "{r:?}"
        );
    }
}
