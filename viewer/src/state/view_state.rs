//! How the data is shown: the user's choices (mode, sort, filter,
//! selection, what is expanded), the one pause flag, the one overlay that
//! may be open, and the screen areas the last draw left for the mouse.

use std::collections::BTreeSet;

use lockmeter_model::advice::Thresholds;
use lockmeter_model::render::{SortKey, TableOptions};
use ratatui::layout::Rect;

use super::picker::Picker;
use super::rows::RowId;

/// Per-interval rates or cumulative totals.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Rates,
    Totals,
}

/// What is open over (or instead of) the plain table. One at a time: a
/// key that opens one closes the other.
#[derive(Debug, Clone, Default, PartialEq)]
pub enum Overlay {
    /// The table alone.
    #[default]
    None,
    /// The key bindings, over everything; any key closes it.
    Help,
    /// The selected lock's detail pane, below the table.
    Detail,
    /// The stacks pane of the selected lock (or site), below the table.
    Stacks,
    /// What is held and waited on now, instead of the table, scrolled
    /// down `scroll` lines.
    Now { scroll: u16 },
    /// The filter being typed (`/`); the table filters as it is typed.
    Filter(String),
    /// Choosing the endpoint to attach to; nothing else is shown.
    Picker(Picker),
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

/// See the module documentation.
#[derive(Debug)]
pub struct ViewState {
    pub mode: Mode,
    /// Sort, filter and what the table shows.
    pub opts: TableOptions,
    pub show_advice: bool,
    /// The limits advisories are judged by.
    pub thresholds: Thresholds,
    pub expanded: BTreeSet<String>,
    pub selected: Option<RowId>,
    /// The one pause flag: a live source's frames are held back, a
    /// recording does not play.
    pub paused: bool,
    pub overlay: Overlay,
    /// A message for the status line until the next key.
    pub status: Option<String>,
    pub hits: Hits,
}

impl ViewState {
    pub fn new(opts: TableOptions) -> ViewState {
        ViewState {
            mode: Mode::Rates,
            show_advice: opts.advice,
            opts,
            thresholds: Thresholds::default(),
            expanded: BTreeSet::new(),
            selected: None,
            paused: false,
            overlay: Overlay::None,
            status: None,
            hits: Hits::default(),
        }
    }

    /// Opens `overlay`, or closes it if it is the one open.
    pub fn toggle(&mut self, overlay: Overlay) {
        self.overlay = if self.overlay == overlay {
            Overlay::None
        } else {
            overlay
        };
    }

    /// The filter text being typed, if `/` is active.
    pub fn filter_input(&self) -> Option<&str> {
        match &self.overlay {
            Overlay::Filter(text) => Some(text),
            _ => None,
        }
    }

    /// Sets the filter; an empty text clears it.
    pub fn set_filter(&mut self, filter: Option<String>) {
        self.opts.filter = filter.filter(|f| !f.is_empty());
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

    /// The next (or previous) column of the metric table.
    pub fn cycle_sort(&mut self, delta: isize) {
        let all = SortKey::all();
        let i = all.iter().position(|&k| k == self.opts.sort).unwrap_or(0) as isize;
        let next = (i + delta).rem_euclid(all.len() as isize) as usize;
        self.opts.sort = all[next];
        self.opts.descending = all[next] != SortKey::Name;
    }

    /// Lines to move for Page Up/Down: one screen of rows.
    pub fn page(&self) -> isize {
        (self.hits.rows.len().max(2) - 1) as isize
    }
}
