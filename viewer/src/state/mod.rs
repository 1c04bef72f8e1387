//! The viewer's model, in three parts: [`Data`] (what came from the
//! source), [`ViewState`] (how it is shown: the user's choices, the one
//! pause flag and the one [`Overlay`]), and [`App`], which joins them and
//! keeps the advisories of the shown snapshot. Nothing here draws or does
//! I/O; side effects (reset, writing a dump, attaching) come back to the
//! event loop as an [`Action`]. Keys and the mouse are in `keys.rs`.

pub mod data;
pub mod history;
mod keys;
pub mod now;
pub mod picker;
pub mod playback;
pub mod rows;
pub mod view_state;

use std::time::Duration;

use lockmeter_model::advice::{advise, Advisory, Thresholds};
use lockmeter_model::render::TableOptions;
use lockmeter_model::Snapshot;

pub use data::{Data, Feed, Frame, Link, Origin, Peer};
pub use view_state::{Hits, Mode, Overlay, ViewState};

use picker::Picker;
use playback::Playback;
use rows::{Row, RowId};

/// A side effect the event loop must carry out.
#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    None,
    Quit,
    /// Reset the source's measurement window.
    Reset,
    /// Write the shown snapshot to a file.
    Dump,
    /// Attach to the chosen endpoint.
    Attach(picker::Entry),
}

/// Everything the screens show.
#[derive(Debug)]
pub struct App {
    /// What came from the source.
    pub data: Data,
    /// How it is shown.
    pub view: ViewState,
    /// The advisories of the shown snapshot under `view.thresholds`;
    /// refreshed whenever the frame, the mode or the thresholds change.
    advice: Vec<Advisory>,
}

impl App {
    pub fn new(origin: Origin, opts: TableOptions, interval: Duration) -> App {
        App {
            data: Data::new(origin, interval),
            view: ViewState::new(opts),
            advice: Vec::new(),
        }
    }

    /// An app showing one dump.
    pub fn for_dump(path: &str, snap: Snapshot, opts: TableOptions) -> App {
        let mut app = App::new(Origin::Dump(path.to_string()), opts, Duration::ZERO);
        app.view.mode = Mode::Totals;
        app.data.history.push(&snap);
        app.set_frame(Frame::single(snap));
        app
    }

    /// An app stepping through a recording, starting stopped on its last
    /// frame.
    pub fn for_recording(
        path: &str,
        frames: Vec<Frame>,
        opts: TableOptions,
        interval: Duration,
    ) -> App {
        let mut app = App::new(Origin::Recording(path.to_string()), opts, interval);
        app.view.mode = Mode::Totals;
        app.view.paused = true;
        app.data.playback = Some(Playback::new(frames));
        app.show_playback_frame();
        app
    }

    /// An app listing endpoints to choose from.
    pub fn for_picker(entries: Vec<picker::Entry>, opts: TableOptions, interval: Duration) -> App {
        let mut app = App::new(Origin::Picker, opts, interval);
        app.view.overlay = Overlay::Picker(Picker::new(entries));
        app
    }

    /// Judges advisories by `t` from now on.
    pub fn set_thresholds(&mut self, t: Thresholds) {
        self.view.thresholds = t;
        self.refresh_advice();
    }

    /// The snapshot on screen: the interval or the totals.
    pub fn shown(&self) -> Option<&Snapshot> {
        self.data.frame().map(|f| match self.view.mode {
            Mode::Rates => &f.interval,
            Mode::Totals => &f.cumulative,
        })
    }

    /// The advisories for the shown snapshot.
    pub fn advisories(&self) -> &[Advisory] {
        &self.advice
    }

    /// The visible table rows.
    pub fn rows(&self) -> Vec<Row<'_>> {
        match self.shown() {
            Some(snap) => rows::build(
                snap,
                &self.view.opts,
                &self.view.expanded,
                &self.advice,
                self.view.show_advice,
            ),
            None => Vec::new(),
        }
    }

    /// The index of the selected row among `rows`.
    pub fn selected_index(&self, rows: &[Row<'_>]) -> Option<usize> {
        match &self.view.selected {
            Some(id) => rows::find(rows, id).or_else(|| rows::step(rows, None, 0)),
            None => rows::step(rows, None, 0),
        }
    }

    /// The call site the selected row is, if it is a site row.
    pub fn selected_site(&self) -> Option<String> {
        match &self.view.selected {
            Some(RowId::Site { site, .. }) => Some(site.clone()),
            _ => None,
        }
    }

    /// The lock the detail pane is about: the selected row's lock.
    pub fn selected_lock(&self) -> Option<&lockmeter_model::LockStats> {
        let snap = self.shown()?;
        let rows = self.rows();
        let idx = self.selected_index(&rows)?;
        let id = rows.get(idx)?.id()?;
        snap.lock(id.lock_id())
    }

    fn set_frame(&mut self, frame: Frame) {
        self.data.set_frame(frame);
        self.refresh_advice();
    }

    fn refresh_advice(&mut self) {
        self.advice = match self.shown() {
            Some(s) => advise(s, &self.view.thresholds),
            None => Vec::new(),
        };
    }

    fn show_playback_frame(&mut self) {
        if self.data.show_playback_frame() {
            self.refresh_advice();
        }
    }

    /// Takes in what a source reported.
    pub fn apply(&mut self, feed: Feed) {
        match feed {
            Feed::Data(frame) => {
                self.data.updates += 1;
                if self.data.link != Link::Live && matches!(self.data.origin, Origin::Demo) {
                    self.data.link = Link::Live;
                }
                if self.view.paused {
                    self.data.hold(*frame);
                } else {
                    self.data.history.push(&frame.interval);
                    self.set_frame(*frame);
                }
            }
            Feed::Connected { pid, name } => {
                if matches!(self.data.link, Link::Lost { .. }) {
                    self.set_status(format!("reconnected to {name} (pid {pid})"));
                }
                self.data.peer = Some(Peer { pid, name });
                self.data.link = Link::Live;
            }
            Feed::Lost(reason) => {
                self.data.link = Link::Lost {
                    reason,
                    attempt: 0,
                    delay: None,
                };
            }
            Feed::Retrying {
                attempt: n,
                delay: d,
            } => {
                if let Link::Lost { attempt, delay, .. } = &mut self.data.link {
                    *attempt = n;
                    *delay = Some(d);
                }
            }
            Feed::ResetDone => self.set_status("window reset"),
        }
    }

    /// A periodic tick: advances a playing recording, which stops (pauses)
    /// on its last frame. Whether anything changed.
    pub fn on_tick(&mut self) -> bool {
        if self.view.paused {
            return false;
        }
        let Some(p) = self.data.playback.as_mut() else {
            return false;
        };
        if p.step(1) {
            self.show_playback_frame();
            true
        } else {
            self.view.paused = true;
            false
        }
    }

    /// Says `msg` in the status line until the next key.
    pub fn set_status(&mut self, msg: impl Into<String>) {
        self.view.status = Some(msg.into());
    }

    /// Attached to the picked endpoint: leave the picker.
    pub fn attached(&mut self, target: String) {
        self.view.overlay = Overlay::None;
        self.data.origin = Origin::Endpoint(target);
        self.data.link = Link::Connecting;
    }

    /// Sets the filter; an empty text clears it.
    pub fn set_filter(&mut self, filter: Option<String>) {
        self.view.set_filter(filter);
    }

    /// Sorts by `key`; the same key again inverts the order.
    pub fn sort_by(&mut self, key: lockmeter_model::render::SortKey) {
        self.view.sort_by(key);
    }

    fn toggle_mode(&mut self) {
        self.view.mode = match self.view.mode {
            Mode::Rates => Mode::Totals,
            Mode::Totals => Mode::Rates,
        };
        if matches!(self.data.origin, Origin::Dump(_)) {
            self.set_status("a dump holds one window: rates and totals are the same");
        }
        self.refresh_advice();
    }

    /// Space: plays or stops a recording (playing from the last frame
    /// starts over), pauses or resumes a live source. A dump has nothing
    /// to pause.
    fn toggle_pause(&mut self) {
        if let Some(p) = self.data.playback.as_mut() {
            self.view.paused = !self.view.paused;
            if !self.view.paused && p.at_end() {
                p.seek(0);
            }
            self.show_playback_frame();
            return;
        }
        if matches!(self.data.origin, Origin::Dump(_)) {
            return;
        }
        self.view.paused = !self.view.paused;
        if !self.view.paused {
            let held = self.data.take_held();
            for f in &held {
                self.data.history.push(&f.interval);
            }
            if let Some(last) = held.into_iter().last() {
                self.set_frame(last);
            }
        }
    }

    fn move_selection(&mut self, delta: isize) {
        let rows = self.rows();
        let from = self.selected_index(&rows);
        let to = rows::step(&rows, from, delta);
        self.view.selected = to.and_then(|i| rows.get(i)).and_then(Row::id);
    }

    /// Expands the selected lock; whether it was collapsed before.
    fn expand_selected(&mut self) -> bool {
        let rows = self.rows();
        let Some(idx) = self.selected_index(&rows) else {
            return false;
        };
        let Some(RowId::Lock(id)) = rows[idx].id() else {
            return false;
        };
        let changed = self.view.expanded.insert(id.clone());
        self.view.selected = Some(RowId::Lock(id));
        changed
    }

    fn collapse_selected(&mut self) {
        let rows = self.rows();
        let Some(idx) = self.selected_index(&rows) else {
            return;
        };
        let Some(id) = rows[idx].id() else { return };
        let lock = id.lock_id().to_string();
        if matches!(id, RowId::Lock(_)) {
            self.view.expanded.remove(&lock);
        }
        self.view.selected = Some(RowId::Lock(lock));
    }
}

#[cfg(test)]
mod tests;
