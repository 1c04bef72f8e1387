//! How keys and the mouse change the app. The open overlay sees a key
//! first; what it does not take goes to the table.

use crossterm::event::{KeyCode, KeyEvent, MouseButton, MouseEvent, MouseEventKind};
use ratatui::layout::Position;

use super::now::{self, NowKey};
use super::rows::Row;
use super::{Action, App, Overlay};
use crate::input;

impl App {
    /// Handles one key press.
    pub fn on_key(&mut self, key: KeyEvent) -> Action {
        if !input::is_press(&key) {
            return Action::None;
        }
        if input::is_ctrl_c(&key) {
            return Action::Quit;
        }
        match self.view.overlay {
            Overlay::Picker(_) => return self.picker_key(&key),
            Overlay::Filter(_) => {
                self.filter_key(&key);
                return Action::None;
            }
            _ => {}
        }
        self.view.status = None;
        match &mut self.view.overlay {
            Overlay::Help => {
                if input::is_quit(&key) {
                    return Action::Quit;
                }
                // Any other key closes the overlay.
                self.view.overlay = Overlay::None;
                return Action::None;
            }
            Overlay::Now { scroll } => match now::key(scroll, &key) {
                NowKey::Close => {
                    self.view.overlay = Overlay::None;
                    return Action::None;
                }
                NowKey::Scrolled => return Action::None,
                NowKey::NotMine => {}
            },
            _ => {}
        }
        self.main_key(&key)
    }

    fn main_key(&mut self, key: &KeyEvent) -> Action {
        use input::*;
        if is_quit(key) {
            return Action::Quit;
        } else if is_help(key) {
            self.view.overlay = Overlay::Help;
        } else if is_escape(key) {
            if matches!(self.view.overlay, Overlay::Stacks | Overlay::Detail) {
                self.view.overlay = Overlay::None;
            } else if self.view.opts.filter.is_some() {
                self.set_filter(None);
            }
        } else if is_up(key) {
            self.move_selection(-1);
        } else if is_down(key) {
            self.move_selection(1);
        } else if is_page_up(key) {
            self.move_selection(-self.view.page());
        } else if is_page_down(key) {
            self.move_selection(self.view.page());
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
                self.view.overlay = Overlay::Detail;
            }
        } else if is_toggle_stacks(key) {
            self.view.toggle(Overlay::Stacks);
        } else if is_toggle_now(key) {
            self.view.overlay = Overlay::Now { scroll: 0 };
        } else if is_toggle_detail(key) {
            self.view.toggle(Overlay::Detail);
        } else if is_toggle_totals(key) {
            self.toggle_mode();
        } else if is_sort_next(key) {
            self.view.cycle_sort(1);
        } else if is_sort_prev(key) {
            self.view.cycle_sort(-1);
        } else if is_invert(key) {
            self.view.opts.descending = !self.view.opts.descending;
        } else if is_filter(key) {
            self.view.overlay = Overlay::Filter(self.view.opts.filter.clone().unwrap_or_default());
        } else if is_toggle_advice(key) {
            self.view.show_advice = !self.view.show_advice;
            self.set_status(if self.view.show_advice {
                "advisories shown"
            } else {
                "advisories hidden"
            });
        } else if is_pause(key) {
            self.toggle_pause();
        } else if is_reset(key) {
            if self.data.is_live() {
                return Action::Reset;
            }
            self.set_status("nothing to reset: this is a file");
        } else if is_dump(key) {
            return Action::Dump;
        } else if self.data.playback.is_some() {
            self.playback_key(key);
        }
        Action::None
    }

    fn playback_key(&mut self, key: &KeyEvent) {
        use input::*;
        let Some(p) = self.data.playback.as_mut() else {
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
            self.view.paused = true;
            self.show_playback_frame();
        }
    }

    fn picker_key(&mut self, key: &KeyEvent) -> Action {
        let Overlay::Picker(p) = &mut self.view.overlay else {
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

    fn filter_key(&mut self, key: &KeyEvent) {
        let Overlay::Filter(text) = &mut self.view.overlay else {
            return;
        };
        match key.code {
            KeyCode::Enter => self.view.overlay = Overlay::None,
            KeyCode::Esc => {
                self.view.overlay = Overlay::None;
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

    /// Handles a mouse event: click a header to sort by it (again to
    /// invert), click a row to select it, wheel to scroll, click the
    /// position bar to jump.
    pub fn on_mouse(&mut self, ev: MouseEvent) -> Action {
        let at = Position::new(ev.column, ev.row);
        match ev.kind {
            MouseEventKind::Down(MouseButton::Left) => {
                if self.view.overlay == Overlay::Help {
                    self.view.overlay = Overlay::None;
                    return Action::None;
                }
                let hits = &self.view.hits;
                if let Some(&(_, key)) = hits.header.iter().find(|(r, _)| r.contains(at)) {
                    self.sort_by(key);
                } else if let Some(&(_, idx)) = hits.rows.iter().find(|(r, _)| r.contains(at)) {
                    let rows = self.rows();
                    if let Some(id) = rows.get(idx).and_then(Row::id) {
                        self.view.selected = Some(id);
                    }
                } else if let Some(t) = hits.timeline.filter(|t| t.contains(at)) {
                    if let Some(p) = self.data.playback.as_mut() {
                        // The inverse of the bar's `pos * width / (len - 1)`.
                        let width = usize::from(t.width.saturating_sub(1)).max(1);
                        let x = usize::from(at.x - t.x);
                        let pos = (x * p.len().saturating_sub(1) + width / 2) / width;
                        self.view.paused = true;
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
}
