//! The message shown instead of the layout when the terminal is too small.

use ratatui::layout::{Alignment, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::Line;
use ratatui::widgets::{Paragraph, Wrap};
use ratatui::Frame;

use super::{MIN_HEIGHT, MIN_WIDTH};

/// Draws the message over `area`.
pub fn draw(frame: &mut Frame<'_>, area: Rect) {
    let lines = vec![
        Line::styled(
            "terminal too small",
            Style::new().fg(Color::Red).add_modifier(Modifier::BOLD),
        ),
        Line::raw(format!("{}×{}", area.width, area.height)),
        Line::raw(format!("lockmeter needs {MIN_WIDTH}×{MIN_HEIGHT}")),
        Line::raw("enlarge the window, or q quits"),
    ];
    let top = area.height.saturating_sub(lines.len() as u16) / 2;
    let body = Rect::new(area.x, area.y + top, area.width, area.height - top);
    frame.render_widget(
        Paragraph::new(lines)
            .alignment(Alignment::Center)
            .wrap(Wrap { trim: true }),
        body,
    );
}
