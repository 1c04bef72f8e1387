//! The help overlay: key bindings and what the columns mean.

use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Clear, Paragraph};
use ratatui::Frame;

use super::centered;
use crate::input::BINDINGS;
use crate::state::App;

/// What each column means, in the words of the original lockmeter.
const COLUMNS: &[(&str, &str)] = &[
    ("CON%", "share of acquisitions that had to wait"),
    ("UTIL%", "share of the window the lock was held"),
    ("HOLD", "time held: mean, 99th percentile, max"),
    ("WAIT", "time waiting to acquire (wait queues: asleep)"),
    (
        "TOTAL NOWAIT SPIN",
        "acquisitions: all, at once, after waiting",
    ),
    ("RJECT", "failed try-locks and timed-out waits"),
    (
        "WAKE ups spur lat",
        "wait queues: woken, woken for nothing, wake-to-run",
    ),
    ("├ SITE", "a call site that acquired the lock"),
    ("⇠ SITE", "a site that held the lock while others waited"),
];

/// Draws the overlay over `area`.
pub fn draw(frame: &mut Frame<'_>, area: Rect, app: &App) {
    let key_style = Style::new().fg(Color::Cyan).add_modifier(Modifier::BOLD);
    let mut lines: Vec<Line<'_>> = Vec::new();
    for (keys, what) in BINDINGS {
        lines.push(Line::from(vec![
            Span::styled(format!("{keys:>16}  "), key_style),
            Span::raw(*what),
        ]));
    }
    lines.push(Line::raw(""));
    for (col, what) in COLUMNS {
        lines.push(Line::from(vec![
            Span::styled(
                format!("{col:>17} "),
                Style::new().add_modifier(Modifier::BOLD),
            ),
            Span::raw(*what),
        ]));
    }
    lines.push(Line::raw(""));
    let shown = if app.view.show_advice {
        "shown"
    } else {
        "hidden"
    };
    lines.push(Line::styled(
        format!("  ⚠ advisories ({shown}): thresholds from the --advice-* flags"),
        Style::new().fg(Color::Yellow),
    ));
    let height = lines.len() as u16 + 2;
    let popup = centered(area, 72, height);
    frame.render_widget(Clear, popup);
    frame.render_widget(
        Paragraph::new(lines).block(
            Block::bordered()
                .title(" help ")
                .title_bottom(" any key closes "),
        ),
        popup,
    );
}
