//! A recording as a sequence of frames the user can step through.

use lockmeter_model::Snapshot;

use super::history::{History, CAPACITY};
use super::Frame;

/// Turns the snapshots of a recording into frames with both views.
///
/// A recording may hold growing windows (each line is everything since the
/// last reset) or back-to-back intervals (each line is one window). A frame
/// whose window starts where the previous one started continues a growing
/// window; any other frame starts a new window. Totals run from the first
/// frame, across resets.
pub fn frames_from(snaps: Vec<Snapshot>) -> Vec<Frame> {
    let mut frames: Vec<Frame> = Vec::with_capacity(snaps.len());
    // Totals before the current growing window began.
    let mut base: Option<Snapshot> = None;
    let mut prev: Option<Snapshot> = None;
    for snap in snaps {
        let continues = prev
            .as_ref()
            .is_some_and(|p| p.window.start_unix_ns == snap.window.start_unix_ns);
        let interval = match &prev {
            Some(p) if continues => interval(&snap, p),
            _ => snap.clone(),
        };
        if !continues {
            base = frames.last().map(|f| f.cumulative.clone());
        }
        let cumulative = match &base {
            Some(b) => Snapshot::concat(&[b.clone(), snap.clone()]).unwrap_or_else(|| snap.clone()),
            None => snap.clone(),
        };
        frames.push(Frame {
            interval,
            cumulative,
        });
        prev = Some(snap);
    }
    frames
}

/// The window between two cumulative snapshots of one process (the
/// model's [`Snapshot::since`]); a window that restarted (reset, or a new
/// process) stands whole.
pub fn interval(cumulative: &Snapshot, prev: &Snapshot) -> Snapshot {
    if cumulative.continues(prev) {
        cumulative.since(prev)
    } else {
        cumulative.clone()
    }
}

/// The frames of a recording and the position within them. Whether it
/// plays is the app's one pause flag (`ViewState::paused`).
#[derive(Debug, Clone)]
pub struct Playback {
    frames: Vec<Frame>,
    pos: usize,
}

impl Playback {
    /// Starts on the last frame: the whole recording at a glance.
    pub fn new(frames: Vec<Frame>) -> Playback {
        let pos = frames.len().saturating_sub(1);
        Playback { frames, pos }
    }

    pub fn len(&self) -> usize {
        self.frames.len()
    }

    pub fn is_empty(&self) -> bool {
        self.frames.is_empty()
    }

    pub fn pos(&self) -> usize {
        self.pos
    }

    pub fn current(&self) -> Option<&Frame> {
        self.frames.get(self.pos)
    }

    /// Moves to frame `pos` (clamped); whether the position changed.
    pub fn seek(&mut self, pos: usize) -> bool {
        let pos = pos.min(self.frames.len().saturating_sub(1));
        let changed = pos != self.pos;
        self.pos = pos;
        changed
    }

    /// Moves `delta` frames; whether the position changed.
    pub fn step(&mut self, delta: isize) -> bool {
        let target = (self.pos as isize).saturating_add(delta).max(0) as usize;
        self.seek(target)
    }

    /// Whether the position is the last frame: playing stops there.
    pub fn at_end(&self) -> bool {
        self.pos + 1 >= self.frames.len()
    }

    /// The sparkline history up to and including the current frame.
    pub fn history(&self) -> History {
        let mut h = History::default();
        let start = (self.pos + 1).saturating_sub(CAPACITY);
        for f in &self.frames[start..=self.pos.min(self.frames.len().saturating_sub(1))] {
            h.push(&f.interval);
        }
        h
    }

    /// Nanoseconds from the start of the recording to the end of frame `i`.
    pub fn offset_ns(&self, i: usize) -> u64 {
        let Some(first) = self.frames.first() else {
            return 0;
        };
        let start = first.interval.window.start_unix_ns;
        self.frames
            .get(i)
            .map(|f| f.interval.window.end_unix_ns.saturating_sub(start))
            .unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use lockmeter_model::{LockKind, LockStats, ProcessInfo, Stats, Window};

    fn snap(start: u64, end: u64, acq: u64) -> Snapshot {
        let mut s = Snapshot::empty(ProcessInfo::default(), "mock");
        s.window = Window {
            start_unix_ns: start,
            end_unix_ns: end,
            elapsed_ns: end - start,
        };
        let total = Stats {
            acquisitions: acq,
            nowait: acq,
            ..Stats::default()
        };
        s.locks
            .push(LockStats::new("a", LockKind::Mutex, total, vec![]));
        s
    }

    fn acq(s: &Snapshot) -> u64 {
        s.locks[0].total.acquisitions
    }

    /// The acquisitions of each frame: its interval's, then its running total's.
    fn intervals_and_totals(frames: &[Frame]) -> (Vec<u64>, Vec<u64>) {
        frames
            .iter()
            .map(|f| (acq(&f.interval), acq(&f.cumulative)))
            .unzip()
    }

    #[test]
    fn growing_windows_become_intervals() {
        let f = frames_from(vec![snap(0, 10, 5), snap(0, 20, 8), snap(0, 30, 20)]);
        assert_eq!(intervals_and_totals(&f), (vec![5, 3, 12], vec![5, 8, 20]));
    }

    #[test]
    fn back_to_back_windows_add_up() {
        let f = frames_from(vec![snap(0, 10, 5), snap(10, 20, 3), snap(20, 30, 12)]);
        assert_eq!(intervals_and_totals(&f), (vec![5, 3, 12], vec![5, 8, 20]));
        assert_eq!(f[2].cumulative.window.elapsed_ns, 30);
    }

    #[test]
    fn a_reset_inside_a_growing_recording_keeps_totals_running() {
        let f = frames_from(vec![
            snap(0, 10, 5),
            snap(0, 20, 8),
            snap(20, 30, 2),
            snap(20, 40, 6),
        ]);
        assert_eq!(
            intervals_and_totals(&f),
            (vec![5, 3, 2, 4], vec![5, 8, 10, 14])
        );
    }

    #[test]
    fn stepping_clamps_at_both_ends() {
        let mut p = Playback::new(frames_from(vec![
            snap(0, 10, 1),
            snap(10, 20, 1),
            snap(20, 30, 1),
        ]));
        assert_eq!(p.pos(), 2);
        assert!(!p.step(5));
        assert!(p.step(-10));
        assert_eq!(p.pos(), 0);
        assert!(!p.at_end());
        assert!(p.step(1) && p.step(1));
        assert!(p.at_end());
        assert!(!p.step(1));
        assert_eq!(p.offset_ns(2), 30);
        assert_eq!(p.history().len(), 3);
    }
}
