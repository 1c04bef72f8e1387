//! The keys of the "now" pane (`n`): scrolling it and closing it. The
//! deadlocks it lists under its banner are data (`Data::deadlocks`); its
//! being open is the app's one overlay (`Overlay::Now`).

use crossterm::event::KeyEvent;

use crate::input;

/// What a key did to the open pane.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NowKey {
    Close,
    Scrolled,
    /// Not the pane's key: the table's handling applies.
    NotMine,
}

/// Handles a key while the pane is open, scrolled down `scroll` lines.
pub fn key(scroll: &mut u16, key: &KeyEvent) -> NowKey {
    if input::is_escape(key) || input::is_toggle_now(key) {
        return NowKey::Close;
    }
    *scroll = if input::is_up(key) {
        scroll.saturating_sub(1)
    } else if input::is_down(key) {
        scroll.saturating_add(1)
    } else if input::is_page_up(key) {
        scroll.saturating_sub(10)
    } else if input::is_page_down(key) {
        scroll.saturating_add(10)
    } else if input::is_top(key) {
        0
    } else {
        return NowKey::NotMine;
    };
    NowKey::Scrolled
}
