//! Choosing an endpoint when several processes can be attached to.

use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Modifier, Style};
use ratatui::widgets::{Block, Cell, Paragraph, Row, Table, TableState};
use ratatui::Frame;

use crate::state::picker::Picker;

/// Draws the picker over the whole `area`.
pub fn draw(frame: &mut Frame<'_>, area: Rect, picker: &Picker) {
    let [head, list, foot] = Layout::vertical([
        Constraint::Length(2),
        Constraint::Fill(1),
        Constraint::Length(1),
    ])
    .areas(area);
    frame.render_widget(
        Paragraph::new(format!(
            " {} processes can be attached to; choose one:",
            picker.entries.len()
        ))
        .style(Style::new().add_modifier(Modifier::BOLD)),
        head,
    );
    let rows: Vec<Row<'_>> = picker
        .entries
        .iter()
        .map(|e| {
            Row::new(vec![
                Cell::from(e.pid.map(|p| p.to_string()).unwrap_or_else(|| "?".into())),
                Cell::from(e.name.clone().unwrap_or_default()),
                Cell::from(e.path.display().to_string()),
            ])
        })
        .collect();
    let table = Table::new(
        rows,
        [
            Constraint::Length(8),
            Constraint::Length(24),
            Constraint::Fill(1),
        ],
    )
    .header(
        Row::new(vec!["PID", "NAME", "ENDPOINT"]).style(Style::new().add_modifier(Modifier::BOLD)),
    )
    .row_highlight_style(Style::new().add_modifier(Modifier::REVERSED))
    .block(Block::bordered());
    let mut state = TableState::new().with_selected(Some(picker.selected));
    frame.render_stateful_widget(table, list, &mut state);
    frame.render_widget(Paragraph::new(" ↑↓ choose  Enter attach  q quit"), foot);
}
