//! Sampled stacks of contended acquisitions: a v1 extension.
//!
//! A contended acquisition may have its stack captured on both sides of
//! the wait: the **waiter** (the thread that waited, at the acquisition)
//! and the **holder** (the thread that made it wait, when that hold was
//! released). Sampling is time-weighted like Go's block profile: a wait
//! of `d` ns is captured with probability `p = min(1, d / rate_ns)` and
//! counts `1/p` times, so contentions and wait time per stack are unbiased
//! estimates; the exact counts stay in the lock's [`crate::Stats`].
//!
//! Frames are interned once per snapshot in [`Stacks::frames`]; a sample
//! names them by index, leaf first. Frames inside wrappers (lockmeter's
//! own, `lock_api`, tokio's loom shim, whatever `skip_frames` names) are
//! kept but marked `skipped`: stack views fold them away, and the first
//! frame that is not skipped is the real caller.

use std::collections::HashMap;
use std::fmt;

use serde::{Deserialize, Serialize};

/// All stacks of one snapshot. Absent (empty) in dumps written without
/// stacks or before they existed.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Stacks {
    /// A wait of `d` ns was captured with probability `min(1, d / rate_ns)`.
    pub rate_ns: u64,
    /// Most frames captured per stack.
    pub depth: u32,
    /// Module-path prefixes of wrapper frames (marked `skipped`).
    pub skip_frames: Vec<String>,
    /// Every distinct frame of the snapshot, once.
    pub frames: Vec<Frame>,
    /// One per distinct (lock, site, mode, side, stack).
    pub samples: Vec<StackSample>,
    /// Captured stacks that found their bounded table full and were lost
    /// (their counts are still in the lock's stats).
    pub dropped: u64,
}

/// One logical frame: a function at a line. An address whose code was
/// inlined gives one frame per inlined function, innermost first.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(default)]
pub struct Frame {
    /// Demangled name without the hash, or `0x…` when unresolved.
    pub function: String,
    /// The source file, when debug info has it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    /// The line in `file`; 0 when unknown.
    pub line: u32,
    /// The code address the frame was resolved from.
    pub address: u64,
    /// Inside a wrapper named by [`Stacks::skip_frames`].
    pub skipped: bool,
}

/// Which side of a wait a stack was taken on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Side {
    /// The acquisition that waited, captured when it got the lock.
    Waiter,
    /// The hold that made others wait, captured when it was released;
    /// charged with the wait it caused ("blamed to the holder").
    Holder,
}

impl Side {
    /// `waiter` or `holder`, as in the format.
    pub fn as_str(self) -> &'static str {
        match self {
            Side::Waiter => "waiter",
            Side::Holder => "holder",
        }
    }
}

impl std::str::FromStr for Side {
    type Err = String;
    fn from_str(s: &str) -> Result<Side, String> {
        match s {
            "waiter" => Ok(Side::Waiter),
            "holder" => Ok(Side::Holder),
            other => Err(format!(
                "unknown side {other:?} (expected waiter or holder)"
            )),
        }
    }
}

/// The estimates of one distinct stack at one (lock, call site, mode).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StackSample {
    /// The lock class id ([`crate::LockStats::id`]).
    pub lock: String,
    /// The acquisition's call site ([`crate::SiteStats::site`]); for the
    /// holder side, the holder's own call site.
    pub site: String,
    /// `read` or `write` for rwlocks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<String>,
    /// Which side of the wait the stack was taken on.
    pub side: Side,
    /// Indices into [`Stacks::frames`], leaf first.
    pub frames: Vec<u32>,
    /// Stacks actually captured.
    #[serde(default)]
    pub captured: u64,
    /// Estimated contended acquisitions (waiter) or waits caused (holder).
    #[serde(default)]
    pub contentions: f64,
    /// Estimated time waited, in ns.
    #[serde(default)]
    pub wait_ns: f64,
    /// Waiter side: estimated time those acquisitions then held the lock.
    #[serde(default)]
    pub hold_ns: f64,
}

/// A stack table that does not hold together.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StacksError {
    /// A sample names a frame index past the end of `frames`.
    FrameOutOfRange {
        /// The sample's position in `samples`.
        sample: usize,
        /// The index it names.
        index: u32,
        /// How many frames there are.
        frames: usize,
    },
    /// A sample names no frame at all.
    NoFrames {
        /// The sample's position in `samples`.
        sample: usize,
    },
    /// A sample's estimate is negative or not a number.
    BadValue {
        /// The sample's position in `samples`.
        sample: usize,
    },
}

impl fmt::Display for StacksError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StacksError::FrameOutOfRange {
                sample,
                index,
                frames,
            } => write!(
                f,
                "stacks: sample {sample} names frame {index}, but the snapshot has {frames} frames"
            ),
            StacksError::NoFrames { sample } => write!(f, "stacks: sample {sample} has no frames"),
            StacksError::BadValue { sample } => {
                write!(
                    f,
                    "stacks: sample {sample} has a negative or non-finite estimate"
                )
            }
        }
    }
}

impl std::error::Error for StacksError {}

impl Stacks {
    /// Whether there is nothing to write (no sampling, no samples).
    pub fn is_empty(&self) -> bool {
        self.samples.is_empty() && self.frames.is_empty() && self.rate_ns == 0 && self.dropped == 0
    }

    /// Checks that every sample's frames exist; readers call it on load.
    pub fn validate(&self) -> Result<(), StacksError> {
        for (i, s) in self.samples.iter().enumerate() {
            if s.frames.is_empty() {
                return Err(StacksError::NoFrames { sample: i });
            }
            if let Some(&index) = s.frames.iter().find(|&&f| f as usize >= self.frames.len()) {
                return Err(StacksError::FrameOutOfRange {
                    sample: i,
                    index,
                    frames: self.frames.len(),
                });
            }
            let ok = |v: f64| v.is_finite() && v >= 0.0;
            if !(ok(s.contentions) && ok(s.wait_ns) && ok(s.hold_ns)) {
                return Err(StacksError::BadValue { sample: i });
            }
        }
        Ok(())
    }

    /// The frames of a sample, leaf first. Out-of-range indices (a table
    /// that was not validated) are left out rather than panicking.
    pub fn frames_of<'a>(&'a self, s: &'a StackSample) -> impl Iterator<Item = &'a Frame> + 'a {
        s.frames.iter().filter_map(|&i| self.frames.get(i as usize))
    }

    /// The frames of a sample with wrapper frames folded away, leaf first.
    pub fn shown_frames<'a>(&'a self, s: &'a StackSample) -> impl Iterator<Item = &'a Frame> + 'a {
        self.frames_of(s).filter(|f| !f.skipped)
    }

    /// The real caller: the first frame (from the leaf) outside wrappers.
    pub fn caller<'a>(&'a self, s: &'a StackSample) -> Option<&'a Frame> {
        self.shown_frames(s).next()
    }

    /// The samples of one lock (and optionally one site) on one side,
    /// heaviest (by wait) first.
    pub fn top(&self, lock: &str, site: Option<&str>, side: Side) -> Vec<&StackSample> {
        let mut v: Vec<&StackSample> = self
            .samples
            .iter()
            .filter(|s| s.side == side && s.lock == lock && site.is_none_or(|x| s.site == x))
            .collect();
        v.sort_by(|a, b| b.wait_ns.total_cmp(&a.wait_ns));
        v
    }

    /// The window between two cumulative tables: `self` minus `earlier`,
    /// sample by sample (matched by lock, site, mode, side and frames, as
    /// text, since frame indices differ between snapshots). Samples that
    /// did not change are left out.
    pub fn since(&self, earlier: &Stacks) -> Stacks {
        let before: HashMap<SampleKey, &StackSample> = earlier
            .samples
            .iter()
            .map(|s| (SampleKey::of(earlier, s), s))
            .collect();
        let mut out = Stacks {
            frames: self.frames.clone(),
            dropped: self.dropped.saturating_sub(earlier.dropped),
            ..self.clone()
        };
        out.samples = self
            .samples
            .iter()
            .filter_map(|orig| {
                let mut s = orig.clone();
                if let Some(b) = before.get(&SampleKey::of(self, orig)) {
                    s.captured = s.captured.saturating_sub(b.captured);
                    s.contentions = (s.contentions - b.contentions).max(0.0);
                    s.wait_ns = (s.wait_ns - b.wait_ns).max(0.0);
                    s.hold_ns = (s.hold_ns - b.hold_ns).max(0.0);
                }
                (s.captured > 0).then_some(s)
            })
            .collect();
        out
    }
}

impl Stacks {
    /// Adds `other`'s samples into `self` (back-to-back windows, or several
    /// processes): frames are interned again by text, equal samples add up.
    /// The rate is the coarsest of the two.
    pub fn add(&mut self, other: &Stacks) {
        if other.is_empty() {
            return;
        }
        if self.is_empty() {
            *self = other.clone();
            return;
        }
        self.rate_ns = self.rate_ns.max(other.rate_ns);
        self.depth = self.depth.max(other.depth);
        self.dropped = self.dropped.saturating_add(other.dropped);
        for p in &other.skip_frames {
            if !self.skip_frames.contains(p) {
                self.skip_frames.push(p.clone());
            }
        }
        let mut index: HashMap<Frame, u32> = self
            .frames
            .iter()
            .enumerate()
            .map(|(i, f)| (f.clone(), i as u32))
            .collect();
        let mut mine: HashMap<OwnedKey, usize> = self
            .samples
            .iter()
            .enumerate()
            .map(|(i, s)| {
                (
                    (
                        s.lock.clone(),
                        s.site.clone(),
                        s.mode.clone(),
                        s.side,
                        s.frames.clone(),
                    ),
                    i,
                )
            })
            .collect();
        for s in &other.samples {
            let frames: Vec<u32> = other
                .frames_of(s)
                .map(|f| {
                    let next = self.frames.len() as u32;
                    *index.entry(f.clone()).or_insert_with(|| {
                        self.frames.push(f.clone());
                        next
                    })
                })
                .collect();
            let key = (
                s.lock.clone(),
                s.site.clone(),
                s.mode.clone(),
                s.side,
                frames.clone(),
            );
            match mine.get(&key) {
                Some(&i) => {
                    let m = &mut self.samples[i];
                    m.captured = m.captured.saturating_add(s.captured);
                    m.contentions += s.contentions;
                    m.wait_ns += s.wait_ns;
                    m.hold_ns += s.hold_ns;
                }
                None => {
                    mine.insert(key, self.samples.len());
                    self.samples.push(StackSample {
                        frames,
                        ..s.clone()
                    });
                }
            }
        }
    }
}

/// A sample's identity within one table: lock, site, mode, side, frames.
type OwnedKey = (String, String, Option<String>, Side, Vec<u32>);

/// What makes two samples of different snapshots the same stack.
#[derive(PartialEq, Eq, Hash)]
struct SampleKey<'a> {
    lock: &'a str,
    site: &'a str,
    mode: Option<&'a str>,
    side: Side,
    frames: Vec<&'a Frame>,
}

impl<'a> SampleKey<'a> {
    fn of(stacks: &'a Stacks, s: &'a StackSample) -> SampleKey<'a> {
        SampleKey {
            lock: &s.lock,
            site: &s.site,
            mode: s.mode.as_deref(),
            side: s.side,
            frames: stacks.frames_of(s).collect(),
        }
    }
}

/// Whether a function lies inside one of the module-path prefixes, by the
/// path of its own type: `tokio::loom::` matches
/// `tokio::loom::std::parking_lot::Mutex<T>::lock` and
/// `<lock_api::MutexGuard<R, T> as Drop>::drop` matches `lock_api::`, but
/// an application's `impl lock_api::RawMutex for Mine` does not.
pub fn in_module(function: &str, prefixes: &[String]) -> bool {
    let name = function.trim_start_matches(['<', '&', '*']);
    let name = name.strip_prefix("mut ").unwrap_or(name);
    prefixes
        .iter()
        .any(|p| !p.is_empty() && name.starts_with(p.as_str()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(name: &str, skipped: bool) -> Frame {
        Frame {
            function: name.into(),
            skipped,
            ..Frame::default()
        }
    }

    fn sample(frames: Vec<u32>, captured: u64, wait: f64) -> StackSample {
        StackSample {
            lock: "l".into(),
            site: "s".into(),
            mode: None,
            side: Side::Waiter,
            frames,
            captured,
            contentions: captured as f64,
            wait_ns: wait,
            hold_ns: 0.0,
        }
    }

    #[test]
    fn out_of_range_frames_are_an_error_not_a_panic() {
        let st = Stacks {
            frames: vec![frame("a", false)],
            samples: vec![sample(vec![0, 3], 1, 1.0)],
            ..Stacks::default()
        };
        let err = st.validate().unwrap_err();
        assert_eq!(
            err.to_string(),
            "stacks: sample 0 names frame 3, but the snapshot has 1 frames"
        );
        assert_eq!(st.frames_of(&st.samples[0]).count(), 1);
    }

    #[test]
    fn the_caller_is_the_first_frame_outside_wrappers() {
        let st = Stacks {
            frames: vec![frame("lockmeter::x", true), frame("app::helper", false)],
            samples: vec![sample(vec![0, 1], 1, 1.0)],
            ..Stacks::default()
        };
        assert_eq!(st.caller(&st.samples[0]).unwrap().function, "app::helper");
    }

    #[test]
    fn windows_subtract_by_frame_text() {
        let a = Stacks {
            frames: vec![frame("x", false), frame("y", false)],
            samples: vec![sample(vec![1], 2, 10.0), sample(vec![0], 1, 5.0)],
            ..Stacks::default()
        };
        // The same stacks, interned in another order, one grown.
        let b = Stacks {
            frames: vec![frame("y", false), frame("x", false)],
            samples: vec![sample(vec![0], 5, 30.0), sample(vec![1], 1, 5.0)],
            ..Stacks::default()
        };
        let w = b.since(&a);
        assert_eq!(w.samples.len(), 1);
        assert_eq!(w.samples[0].captured, 3);
        assert_eq!(w.samples[0].wait_ns, 20.0);
    }

    #[test]
    fn adding_windows_reinterns_frames_and_sums_equal_stacks() {
        let mut a = Stacks {
            rate_ns: 10,
            frames: vec![frame("x", false)],
            samples: vec![sample(vec![0], 1, 5.0)],
            ..Stacks::default()
        };
        let b = Stacks {
            rate_ns: 10,
            frames: vec![frame("y", false), frame("x", false)],
            samples: vec![sample(vec![1], 2, 7.0), sample(vec![0], 1, 1.0)],
            ..Stacks::default()
        };
        a.add(&b);
        assert_eq!(a.frames.len(), 2);
        assert_eq!(a.samples.len(), 2);
        assert_eq!((a.samples[0].captured, a.samples[0].wait_ns), (3, 12.0));
        assert_eq!(a.frames[a.samples[1].frames[0] as usize].function, "y");
        a.validate().unwrap();
    }

    #[test]
    fn module_prefixes_match_paths_and_trait_impls() {
        let p = vec!["tokio::loom::".to_string(), "lock_api::".to_string()];
        assert!(in_module(
            "tokio::loom::std::parking_lot::Mutex<T>::lock",
            &p
        ));
        assert!(in_module(
            "<lock_api::mutex::MutexGuard<R,T> as core::ops::drop::Drop>::drop",
            &p
        ));
        assert!(!in_module("tokio::runtime::park::Inner::park", &p));
        assert!(!in_module("app::lock_api_user", &p));
    }
}
