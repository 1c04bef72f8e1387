//! The viewer's model: what is shown, how it is sorted and filtered, what is
//! selected, and how keys and mouse clicks change that. Nothing here draws
//! or does I/O; side effects (reset, writing a dump, attaching) come back to
//! the event loop as an [`Action`].

pub mod history;
pub mod now;
pub mod picker;
pub mod playback;
pub mod rows;

use std::collections::BTreeSet;
use std::time::Duration;

use crossterm::event::{KeyCode, KeyEvent, MouseButton, MouseEvent, MouseEventKind};
use lockmeter_model::advice::{advise, Advisory, Thresholds};
use lockmeter_model::render::{SortKey, TableOptions};
use lockmeter_model::Snapshot;
use ratatui::layout::{Position, Rect};

use crate::input;
use history::{History, CAPACITY};
use picker::Picker;
use playback::Playback;
use rows::{Row, RowId};

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

/// Per-interval rates or cumulative totals.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Rates,
    Totals,
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

/// Screen areas recorded while drawing, so mouse clicks can be mapped back.
#[derive(Debug, Clone, Default)]
pub struct Hits {
    /// Header cells and the column each sorts by.
    pub header: Vec<(Rect, SortKey)>,
    /// The table rows on screen: their area and index among the rows.
    pub rows: Vec<(Rect, usize)>,
    /// The first row shown in the body.
    pub offset: usize,
    /// The recording position bar.
    pub timeline: Option<Rect>,
}

/// Everything the screens show.
#[derive(Debug)]
pub struct App {
    pub origin: Origin,
    pub link: Link,
    /// Process name and pid as the endpoint announced them.
    pub peer: Option<(u32, String)>,
    frame: Option<Frame>,
    /// Frames that arrived while paused; the newest is shown on resume.
    pending: Vec<Frame>,
    pub mode: Mode,
    pub opts: TableOptions,
    pub show_advice: bool,
    /// The limits advisories are judged by.
    pub thresholds: Thresholds,
    advice: Vec<Advisory>,
    pub expanded: BTreeSet<String>,
    pub selected: Option<RowId>,
    pub detail: bool,
    pub help: bool,
    pub paused: bool,
    /// The filter being typed, while `/` is active.
    pub filter_input: Option<String>,
    pub status: Option<String>,
    pub history: History,
    pub playback: Option<Playback>,
    pub picker: Option<Picker>,
    /// The live update interval, for the title bar.
    pub interval: Duration,
    pub updates: u64,
    pub hits: Hits,
    /// The "now" pane and the deadlocks seen.
    pub now: now::NowPane,
}

impl App {
    pub fn new(origin: Origin, opts: TableOptions, interval: Duration) -> App {
        let link = match origin {
            Origin::Demo | Origin::Endpoint(_) => Link::Connecting,
            _ => Link::Static,
        };
        let show_advice = opts.advice;
        App {
            origin,
            link,
            peer: None,
            frame: None,
            pending: Vec::new(),
            mode: Mode::Rates,
            opts,
            show_advice,
            thresholds: Thresholds::default(),
            advice: Vec::new(),
            expanded: BTreeSet::new(),
            selected: None,
            detail: false,
            help: false,
            paused: false,
            filter_input: None,
            status: None,
            history: History::default(),
            playback: None,
            picker: None,
            interval,
            updates: 0,
            hits: Hits::default(),
            now: now::NowPane::default(),
        }
    }

    /// An app showing one dump.
    pub fn for_dump(path: &str, snap: Snapshot, opts: TableOptions) -> App {
        let mut app = App::new(Origin::Dump(path.to_string()), opts, Duration::ZERO);
        app.mode = Mode::Totals;
        app.history.push(&snap);
        app.set_frame(Frame::single(snap));
        app
    }

    /// An app stepping through a recording, starting on its last frame.
    pub fn for_recording(
        path: &str,
        frames: Vec<Frame>,
        opts: TableOptions,
        interval: Duration,
    ) -> App {
        let mut app = App::new(Origin::Recording(path.to_string()), opts, interval);
        app.mode = Mode::Totals;
        app.playback = Some(Playback::new(frames));
        app.show_playback_frame();
        app
    }

    /// An app listing endpoints to choose from.
    pub fn for_picker(entries: Vec<picker::Entry>, opts: TableOptions, interval: Duration) -> App {
        let mut app = App::new(Origin::Picker, opts, interval);
        app.picker = Some(Picker::new(entries));
        app
    }

    /// Judges advisories by `t` from now on.
    pub fn set_thresholds(&mut self, t: Thresholds) {
        self.thresholds = t;
        self.refresh_advice();
    }

    /// The frame on screen.
    pub fn frame(&self) -> Option<&Frame> {
        self.frame.as_ref()
    }

    /// The snapshot on screen: the interval or the totals.
    pub fn shown(&self) -> Option<&Snapshot> {
        self.frame.as_ref().map(|f| match self.mode {
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
                &self.opts,
                &self.expanded,
                &self.advice,
                self.show_advice,
            ),
            None => Vec::new(),
        }
    }

    /// The index of the selected row among `rows`.
    pub fn selected_index(&self, rows: &[Row<'_>]) -> Option<usize> {
        match &self.selected {
            Some(id) => rows::find(rows, id).or_else(|| rows::step(rows, None, 0)),
            None => rows::step(rows, None, 0),
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
        self.now.saw(&frame.interval);
        self.frame = Some(frame);
        self.refresh_advice();
    }

    fn refresh_advice(&mut self) {
        self.advice = match self.shown() {
            Some(s) => advise(s, &self.thresholds),
            None => Vec::new(),
        };
    }

    fn show_playback_frame(&mut self) {
        let Some(p) = &self.playback else { return };
        let frame = p.current().cloned();
        self.history = p.history();
        if let Some(f) = frame {
            self.set_frame(f);
        }
    }

    /// Takes in what a source reported.
    pub fn apply(&mut self, feed: Feed) {
        match feed {
            Feed::Data(frame) => {
                self.updates += 1;
                if self.link != Link::Live && matches!(self.origin, Origin::Demo) {
                    self.link = Link::Live;
                }
                if self.paused {
                    self.pending.push(*frame);
                    if self.pending.len() > CAPACITY {
                        self.pending.remove(0);
                    }
                } else {
                    self.history.push(&frame.interval);
                    self.set_frame(*frame);
                }
            }
            Feed::Connected { pid, name } => {
                if matches!(self.link, Link::Lost { .. }) {
                    self.status = Some(format!("reconnected to {name} (pid {pid})"));
                }
                self.peer = Some((pid, name));
                self.link = Link::Live;
            }
            Feed::Lost(reason) => {
                self.link = Link::Lost {
                    reason,
                    attempt: 0,
                    delay: None,
                };
            }
            Feed::Retrying {
                attempt: n,
                delay: d,
            } => {
                if let Link::Lost { attempt, delay, .. } = &mut self.link {
                    *attempt = n;
                    *delay = Some(d);
                }
            }
            Feed::ResetDone => self.status = Some("window reset".to_string()),
        }
    }

    /// A periodic tick: advances a playing recording. Whether anything changed.
    pub fn on_tick(&mut self) -> bool {
        let moved = self.playback.as_mut().is_some_and(|p| p.tick());
        if moved {
            self.show_playback_frame();
        }
        moved
    }

    /// Says `msg` in the status line until the next key.
    pub fn set_status(&mut self, msg: impl Into<String>) {
        self.status = Some(msg.into());
    }

    /// Handles one key press.
    pub fn on_key(&mut self, key: KeyEvent) -> Action {
        if !input::is_press(&key) {
            return Action::None;
        }
        if input::is_ctrl_c(&key) {
            return Action::Quit;
        }
        if self.picker.is_some() {
            return self.picker_key(&key);
        }
        if self.filter_input.is_some() {
            self.filter_key(&key);
            return Action::None;
        }
        self.status = None;
        if self.help {
            if input::is_quit(&key) {
                return Action::Quit;
            }
            // Any other key closes the overlay.
            self.help = false;
            return Action::None;
        }
        self.main_key(&key)
    }

    fn main_key(&mut self, key: &KeyEvent) -> Action {
        use input::*;
        if self.now.key(key) {
            return Action::None;
        }
        if is_quit(key) {
            return Action::Quit;
        } else if is_help(key) {
            self.help = true;
        } else if is_escape(key) {
            if self.detail {
                self.detail = false;
            } else if self.opts.filter.is_some() {
                self.set_filter(None);
            }
        } else if is_up(key) {
            self.move_selection(-1);
        } else if is_down(key) {
            self.move_selection(1);
        } else if is_page_up(key) {
            self.move_selection(-self.page());
        } else if is_page_down(key) {
            self.move_selection(self.page());
        } else if is_top(key) {
            self.move_selection(isize::MIN / 2);
        } else if is_bottom(key) {
            self.move_selection(isize::MAX / 2);
        } else if is_expand(key) {
            self.expand_selected();
        } else if is_collapse(key) {
            self.collapse_selected();
        } else if is_enter(key) {
            if !self.expand_selected() {
                self.detail = true;
            }
        } else if is_toggle_now(key) {
            self.now.open = true;
        } else if is_toggle_detail(key) {
            self.detail = !self.detail;
        } else if is_toggle_totals(key) {
            self.toggle_mode();
        } else if is_sort_next(key) {
            self.cycle_sort(1);
        } else if is_sort_prev(key) {
            self.cycle_sort(-1);
        } else if is_invert(key) {
            self.opts.descending = !self.opts.descending;
        } else if is_filter(key) {
            self.filter_input = Some(self.opts.filter.clone().unwrap_or_default());
        } else if is_toggle_advice(key) {
            self.show_advice = !self.show_advice;
            self.set_status(if self.show_advice {
                "advisories shown"
            } else {
                "advisories hidden"
            });
        } else if is_pause(key) {
            self.toggle_pause();
        } else if is_reset(key) {
            return match self.origin {
                Origin::Demo | Origin::Endpoint(_) => Action::Reset,
                _ => {
                    self.set_status("nothing to reset: this is a file");
                    Action::None
                }
            };
        } else if is_dump(key) {
            return Action::Dump;
        } else if self.playback.is_some() {
            self.playback_key(key);
        }
        Action::None
    }

    fn playback_key(&mut self, key: &KeyEvent) {
        use input::*;
        let Some(p) = self.playback.as_mut() else {
            return;
        };
        let moved = if is_step_back(key) {
            p.step(-1)
        } else if is_step_forward(key) {
            p.step(1)
        } else if is_jump_back(key) {
            p.step(-10)
        } else if is_jump_forward(key) {
            p.step(10)
        } else if is_first_frame(key) {
            p.seek(0)
        } else if is_last_frame(key) {
            p.seek(usize::MAX)
        } else {
            false
        };
        if moved {
            p.playing = false;
            self.show_playback_frame();
        }
    }

    fn picker_key(&mut self, key: &KeyEvent) -> Action {
        let Some(p) = self.picker.as_mut() else {
            return Action::None;
        };
        if input::is_quit(key) || input::is_escape(key) {
            Action::Quit
        } else if input::is_up(key) {
            p.step(-1);
            Action::None
        } else if input::is_down(key) {
            p.step(1);
            Action::None
        } else if input::is_enter(key) || input::is_expand(key) {
            match p.chosen().cloned() {
                Some(e) => Action::Attach(e),
                None => Action::None,
            }
        } else {
            Action::None
        }
    }

    /// Attached to the picked endpoint: leave the picker.
    pub fn attached(&mut self, target: String) {
        self.picker = None;
        self.origin = Origin::Endpoint(target);
        self.link = Link::Connecting;
    }

    fn filter_key(&mut self, key: &KeyEvent) {
        let Some(text) = self.filter_input.as_mut() else {
            return;
        };
        match key.code {
            KeyCode::Enter => {
                self.filter_input = None;
            }
            KeyCode::Esc => {
                self.filter_input = None;
                self.set_filter(None);
            }
            KeyCode::Backspace => {
                text.pop();
                let t = text.clone();
                self.set_filter(Some(t));
            }
            KeyCode::Char(c) if !c.is_control() => {
                text.push(c);
                let t = text.clone();
                self.set_filter(Some(t));
            }
            _ => {}
        }
    }

    /// Sets the filter; an empty text clears it.
    pub fn set_filter(&mut self, filter: Option<String>) {
        self.opts.filter = filter.filter(|f| !f.is_empty());
    }

    /// Handles a mouse event: click a header to sort by it (again to
    /// invert), click a row to select it, wheel to scroll, click the
    /// position bar to jump.
    pub fn on_mouse(&mut self, ev: MouseEvent) -> Action {
        let at = Position::new(ev.column, ev.row);
        match ev.kind {
            MouseEventKind::Down(MouseButton::Left) => {
                if self.help {
                    self.help = false;
                    return Action::None;
                }
                if let Some(&(_, key)) = self.hits.header.iter().find(|(r, _)| r.contains(at)) {
                    self.sort_by(key);
                } else if let Some(&(_, idx)) = self.hits.rows.iter().find(|(r, _)| r.contains(at))
                {
                    let rows = self.rows();
                    if let Some(id) = rows.get(idx).and_then(Row::id) {
                        self.selected = Some(id);
                    }
                } else if let Some(t) = self.hits.timeline.filter(|t| t.contains(at)) {
                    if let Some(p) = self.playback.as_mut() {
                        // The inverse of the bar's `pos * width / (len - 1)`.
                        let width = usize::from(t.width.saturating_sub(1)).max(1);
                        let x = usize::from(at.x - t.x);
                        let pos = (x * p.len().saturating_sub(1) + width / 2) / width;
                        p.playing = false;
                        if p.seek(pos) {
                            self.show_playback_frame();
                        }
                    }
                }
            }
            MouseEventKind::ScrollDown => self.move_selection(3),
            MouseEventKind::ScrollUp => self.move_selection(-3),
            _ => {}
        }
        Action::None
    }

    /// Sorts by `key`; the same key again inverts the order.
    pub fn sort_by(&mut self, key: SortKey) {
        if self.opts.sort == key {
            self.opts.descending = !self.opts.descending;
        } else {
            self.opts.sort = key;
            // Names read best A to Z; numbers biggest first.
            self.opts.descending = key != SortKey::Name;
        }
    }

    fn cycle_sort(&mut self, delta: isize) {
        let all = SortKey::all();
        let i = all.iter().position(|&k| k == self.opts.sort).unwrap_or(0) as isize;
        let next = (i + delta).rem_euclid(all.len() as isize) as usize;
        self.opts.sort = all[next];
        self.opts.descending = all[next] != SortKey::Name;
    }

    fn toggle_mode(&mut self) {
        self.mode = match self.mode {
            Mode::Rates => Mode::Totals,
            Mode::Totals => Mode::Rates,
        };
        if matches!(self.origin, Origin::Dump(_)) {
            self.set_status("a dump holds one window: rates and totals are the same");
        }
        self.refresh_advice();
    }

    fn toggle_pause(&mut self) {
        if let Some(p) = self.playback.as_mut() {
            p.toggle_play();
            self.show_playback_frame();
            return;
        }
        if matches!(self.origin, Origin::Dump(_)) {
            return;
        }
        self.paused = !self.paused;
        if !self.paused {
            let pending = std::mem::take(&mut self.pending);
            for f in &pending {
                self.history.push(&f.interval);
            }
            if let Some(last) = pending.into_iter().last() {
                self.set_frame(last);
            }
        }
    }

    fn page(&self) -> isize {
        (self.hits.rows.len().max(2) - 1) as isize
    }

    fn move_selection(&mut self, delta: isize) {
        let rows = self.rows();
        let from = self.selected_index(&rows);
        let to = rows::step(&rows, from, delta);
        self.selected = to.and_then(|i| rows.get(i)).and_then(Row::id);
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
        let changed = self.expanded.insert(id.clone());
        self.selected = Some(RowId::Lock(id));
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
            self.expanded.remove(&lock);
        }
        self.selected = Some(RowId::Lock(lock));
    }
}

#[cfg(test)]
mod tests;
