//! The state of the "now" pane (`n`): whether it is open, how far it is
//! scrolled, and every deadlock seen so far. The banner shows those until
//! the viewer quits: a deadlock seen once does not go away by itself, even
//! if the target is restarted or later frames lack it.

use crossterm::event::KeyEvent;
use lockmeter_model::now::Deadlock;
use lockmeter_model::Snapshot;

use crate::input;

/// See the module documentation.
#[derive(Debug, Default)]
pub struct NowPane {
    /// Whether the pane replaces the table.
    pub open: bool,
    /// Lines scrolled down.
    pub scroll: u16,
    /// Every distinct deadlock seen, first seen first.
    pub deadlocks: Vec<Deadlock>,
}

impl NowPane {
    /// Remembers the deadlocks of a new frame.
    pub fn saw(&mut self, snap: &Snapshot) {
        for d in &snap.deadlocks {
            // The same cycle comes again in every later snapshot.
            if !self.deadlocks.iter().any(|k| k.threads == d.threads) {
                self.deadlocks.push(d.clone());
            }
        }
    }

    /// Handles a key while the pane is open; whether it was the pane's.
    pub fn key(&mut self, key: &KeyEvent) -> bool {
        if !self.open {
            return false;
        }
        if input::is_escape(key) || input::is_toggle_now(key) {
            self.open = false;
        } else if input::is_up(key) {
            self.scroll = self.scroll.saturating_sub(1);
        } else if input::is_down(key) {
            self.scroll = self.scroll.saturating_add(1);
        } else if input::is_page_up(key) {
            self.scroll = self.scroll.saturating_sub(10);
        } else if input::is_page_down(key) {
            self.scroll = self.scroll.saturating_add(10);
        } else if input::is_top(key) {
            self.scroll = 0;
        } else {
            return false;
        }
        true
    }
}
