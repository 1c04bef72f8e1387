//! Pure predicates over key events: one place that says which keys do what,
//! shared by the event handling and the help screen.

use crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers};

/// Whether `key` is a press (or repeat) of plain `c`, ignoring Shift, which
/// terminals report inconsistently for symbols like `<` and `?`.
fn is_char(key: &KeyEvent, c: char) -> bool {
    key.code == KeyCode::Char(c)
        && !key
            .modifiers
            .intersects(KeyModifiers::CONTROL | KeyModifiers::ALT)
}

/// Key releases are reported only by terminals with the kitty protocol; the
/// viewer acts on presses and repeats.
pub fn is_press(key: &KeyEvent) -> bool {
    key.kind != KeyEventKind::Release
}

pub fn is_ctrl_c(key: &KeyEvent) -> bool {
    key.code == KeyCode::Char('c') && key.modifiers.contains(KeyModifiers::CONTROL)
}

pub fn is_quit(key: &KeyEvent) -> bool {
    is_char(key, 'q') || is_ctrl_c(key)
}

pub fn is_escape(key: &KeyEvent) -> bool {
    key.code == KeyCode::Esc
}

pub fn is_up(key: &KeyEvent) -> bool {
    key.code == KeyCode::Up || is_char(key, 'k')
}

pub fn is_down(key: &KeyEvent) -> bool {
    key.code == KeyCode::Down || is_char(key, 'j')
}

pub fn is_page_up(key: &KeyEvent) -> bool {
    key.code == KeyCode::PageUp
}

pub fn is_page_down(key: &KeyEvent) -> bool {
    key.code == KeyCode::PageDown
}

pub fn is_top(key: &KeyEvent) -> bool {
    is_char(key, 'g')
}

pub fn is_bottom(key: &KeyEvent) -> bool {
    is_char(key, 'G')
}

/// Expands the selected lock into its site and holder rows.
pub fn is_expand(key: &KeyEvent) -> bool {
    key.code == KeyCode::Right || is_char(key, 'l')
}

pub fn is_collapse(key: &KeyEvent) -> bool {
    key.code == KeyCode::Left || is_char(key, 'h')
}

/// Enter expands a collapsed lock, and opens the detail pane on one that is
/// already expanded (or on a site row).
pub fn is_enter(key: &KeyEvent) -> bool {
    key.code == KeyCode::Enter
}

pub fn is_toggle_detail(key: &KeyEvent) -> bool {
    key.code == KeyCode::Tab
}

pub fn is_toggle_totals(key: &KeyEvent) -> bool {
    is_char(key, 't')
}

pub fn is_sort_next(key: &KeyEvent) -> bool {
    is_char(key, '>') || is_char(key, 's')
}

pub fn is_sort_prev(key: &KeyEvent) -> bool {
    is_char(key, '<') || is_char(key, 'S')
}

pub fn is_invert(key: &KeyEvent) -> bool {
    is_char(key, 'i')
}

pub fn is_filter(key: &KeyEvent) -> bool {
    is_char(key, '/')
}

pub fn is_help(key: &KeyEvent) -> bool {
    is_char(key, '?')
}

pub fn is_pause(key: &KeyEvent) -> bool {
    is_char(key, ' ')
}

pub fn is_reset(key: &KeyEvent) -> bool {
    is_char(key, 'r')
}

pub fn is_dump(key: &KeyEvent) -> bool {
    is_char(key, 'd')
}

/// Opens / closes the "now" pane.
pub fn is_toggle_now(key: &KeyEvent) -> bool {
    is_char(key, 'n')
}

pub fn is_toggle_advice(key: &KeyEvent) -> bool {
    is_char(key, 'a')
}

/// Recordings: one frame back.
pub fn is_step_back(key: &KeyEvent) -> bool {
    is_char(key, ',')
}

/// Recordings: one frame forward.
pub fn is_step_forward(key: &KeyEvent) -> bool {
    is_char(key, '.')
}

/// Recordings: ten frames back.
pub fn is_jump_back(key: &KeyEvent) -> bool {
    is_char(key, '[')
}

/// Recordings: ten frames forward.
pub fn is_jump_forward(key: &KeyEvent) -> bool {
    is_char(key, ']')
}

pub fn is_first_frame(key: &KeyEvent) -> bool {
    key.code == KeyCode::Home
}

pub fn is_last_frame(key: &KeyEvent) -> bool {
    key.code == KeyCode::End
}

/// The key bindings as the help screen lists them: (keys, what they do).
pub const BINDINGS: &[(&str, &str)] = &[
    ("↑ ↓  j k", "move the selection"),
    ("PgUp PgDn  g G", "page up / down, first / last row"),
    ("→ l", "expand a lock into call-site and holder rows"),
    ("← h", "collapse (or go to the lock row)"),
    ("Enter", "expand; on an expanded lock, open the detail pane"),
    ("Tab", "open / close the detail pane"),
    ("t", "toggle per-interval rates / cumulative totals"),
    ("s >  S <", "sort by the next / previous column"),
    ("i", "invert the sort order"),
    ("click header", "sort by that column (again: invert)"),
    ("/", "filter by lock name or call site (Esc clears)"),
    ("a", "show / hide advisories"),
    ("n", "now: held, waited on, deadlocks, lock order"),
    ("space", "pause / resume (recordings: play / stop)"),
    (", .", "recording: one frame back / forward"),
    ("[ ]", "recording: ten frames back / forward"),
    ("Home End", "recording: first / last frame"),
    ("r", "reset the measurement window (live targets)"),
    ("d", "write the shown snapshot to a JSON file"),
    ("?", "this help"),
    ("q  Ctrl-C", "quit"),
];

#[cfg(test)]
mod tests {
    use super::*;

    fn key(code: KeyCode) -> KeyEvent {
        KeyEvent::new(code, KeyModifiers::NONE)
    }

    #[test]
    fn ctrl_c_quits_but_plain_c_does_not() {
        assert!(is_quit(&KeyEvent::new(
            KeyCode::Char('c'),
            KeyModifiers::CONTROL
        )));
        assert!(!is_quit(&key(KeyCode::Char('c'))));
        assert!(is_quit(&key(KeyCode::Char('q'))));
    }

    #[test]
    fn shifted_symbols_still_match() {
        let lt = KeyEvent::new(KeyCode::Char('<'), KeyModifiers::SHIFT);
        assert!(is_sort_prev(&lt));
        let help = KeyEvent::new(KeyCode::Char('?'), KeyModifiers::SHIFT);
        assert!(is_help(&help));
    }

    #[test]
    fn vim_keys_and_arrows_agree() {
        assert!(is_down(&key(KeyCode::Char('j'))) && is_down(&key(KeyCode::Down)));
        assert!(is_up(&key(KeyCode::Char('k'))) && is_up(&key(KeyCode::Up)));
        assert!(is_expand(&key(KeyCode::Char('l'))) && is_expand(&key(KeyCode::Right)));
        assert!(is_collapse(&key(KeyCode::Char('h'))) && is_collapse(&key(KeyCode::Left)));
        assert!(!is_down(&KeyEvent::new(
            KeyCode::Char('j'),
            KeyModifiers::CONTROL
        )));
    }

    #[test]
    fn releases_are_ignored() {
        let mut k = key(KeyCode::Char('q'));
        k.kind = KeyEventKind::Release;
        assert!(!is_press(&k));
    }
}
