//! What came from the source: the frames, the link, who the peer is, the
//! deadlocks seen. Nothing here is a preference of the user; changing the
//! sort or opening a pane never touches it.

use std::time::Duration;

use lockmeter_model::now::Deadlock;
use lockmeter_model::Snapshot;

use super::history::{History, CAPACITY};
use super::playback::Playback;

/// One moment of a source in both views: the last interval and the whole
/// window so far.
#[derive(Debug, Clone, PartialEq)]
pub struct Frame {
    pub interval: Snapshot,
    pub cumulative: Snapshot,
}

impl Frame {
    /// A frame for a single snapshot (a dump): both views are the same.
    pub fn single(snap: Snapshot) -> Frame {
        Frame {
            interval: snap.clone(),
            cumulative: snap,
        }
    }
}

/// Where the data comes from, for the title bar and for what `r` can do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    Demo,
    Endpoint(String),
    Recording(String),
    Dump(String),
    /// Choosing among endpoints; nothing attached yet.
    Picker,
}

/// The state of the link to a live source.
#[derive(Debug, Clone, PartialEq)]
pub enum Link {
    /// A file: nothing to connect to.
    Static,
    Connecting,
    Live,
    /// The target went away; reconnection attempt `attempt` follows after
    /// `delay`.
    Lost {
        reason: String,
        attempt: u32,
        delay: Option<Duration>,
    },
}

/// What a source reports to the app.
#[derive(Debug, Clone, PartialEq)]
pub enum Feed {
    Data(Box<Frame>),
    Connected { pid: u32, name: String },
    Lost(String),
    Retrying { attempt: u32, delay: Duration },
    ResetDone,
}

/// Who is being viewed: the process of the frame on screen, or before any
/// frame the endpoint's greeting. Pid 0 is a merged view of several.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Peer {
    pub pid: u32,
    pub name: String,
}

/// See the module documentation.
#[derive(Debug)]
pub struct Data {
    pub origin: Origin,
    pub link: Link,
    /// The one identity of the peer; see [`Peer`].
    pub peer: Option<Peer>,
    frame: Option<Frame>,
    /// Frames that arrived while paused; the newest is shown on resume.
    pending: Vec<Frame>,
    pub history: History,
    /// A recording's frames and the position in them.
    pub playback: Option<Playback>,
    /// The live update interval, for the title bar.
    pub interval: Duration,
    pub updates: u64,
    /// Every distinct deadlock seen, first seen first. The banner shows
    /// them until the viewer quits: a deadlock seen once does not go away
    /// by itself, even if the target is restarted or later frames lack it.
    pub deadlocks: Vec<Deadlock>,
}

impl Data {
    pub fn new(origin: Origin, interval: Duration) -> Data {
        let link = match origin {
            Origin::Demo | Origin::Endpoint(_) => Link::Connecting,
            _ => Link::Static,
        };
        Data {
            origin,
            link,
            peer: None,
            frame: None,
            pending: Vec::new(),
            history: History::default(),
            playback: None,
            interval,
            updates: 0,
            deadlocks: Vec::new(),
        }
    }

    /// The frame on screen.
    pub fn frame(&self) -> Option<&Frame> {
        self.frame.as_ref()
    }

    /// Puts `frame` on screen.
    pub fn set_frame(&mut self, frame: Frame) {
        for d in &frame.interval.deadlocks {
            // The same cycle comes again in every later snapshot.
            if !self.deadlocks.iter().any(|k| k.threads == d.threads) {
                self.deadlocks.push(d.clone());
            }
        }
        let process = &frame.cumulative.process;
        self.peer = Some(Peer {
            pid: process.pid,
            name: process.name.clone(),
        });
        self.frame = Some(frame);
    }

    /// Keeps a frame that arrived while paused (the newest `CAPACITY`).
    pub fn hold(&mut self, frame: Frame) {
        self.pending.push(frame);
        if self.pending.len() > CAPACITY {
            self.pending.remove(0);
        }
    }

    /// The frames held while paused, oldest first; none are held after.
    pub fn take_held(&mut self) -> Vec<Frame> {
        std::mem::take(&mut self.pending)
    }

    /// Puts the recording's current frame on screen, with the history up
    /// to it. Whether there was one.
    pub fn show_playback_frame(&mut self) -> bool {
        let Some(p) = &self.playback else {
            return false;
        };
        let frame = p.current().cloned();
        self.history = p.history();
        match frame {
            Some(f) => {
                self.set_frame(f);
                true
            }
            None => false,
        }
    }

    /// Whether `r` has anything to reset.
    pub fn is_live(&self) -> bool {
        matches!(self.origin, Origin::Demo | Origin::Endpoint(_))
    }
}
