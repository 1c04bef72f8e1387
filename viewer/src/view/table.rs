//! The lock table: one row per lock, expandable into call-site and holder
//! rows, advisories under the rows they concern.

use lockmeter_model::format::{format_ns, format_pct};
use lockmeter_model::metric::{Applies, Metric, Screen, Unit};
use lockmeter_model::render::SortKey;
use lockmeter_model::{LockKind, LockStats, Stats};
use ratatui::layout::{Alignment, Constraint, Flex, Layout, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span, Text};
use ratatui::widgets::{Cell, HighlightSpacing, Paragraph, Row as TRow, Table, TableState};
use ratatui::Frame;

use super::compact_count;
use crate::state::rows::Row;
use crate::state::{App, Link, Origin};

/// A numeric column: a metric with its screen placement from the metric
/// table ([`Metric::on_screen`]).
#[derive(Debug, Clone, Copy)]
struct Col {
    metric: Metric,
    screen: Screen,
}

/// Every numeric column is this wide.
const COL_WIDTH: u16 = 6;

impl Col {
    fn key(&self) -> SortKey {
        SortKey::By(self.metric)
    }
}

/// The name column never gets narrower than this.
const NAME_MIN: u16 = 16;
/// The kind column ("spin", "mutex", ...), dropped at this priority.
const KIND_WIDTH: u16 = 5;
const KIND_DROP: u8 = 4;
/// The process column of a table merged over processes: a pid, up to
/// Linux's largest (4194304). Never dropped: without it the call-site rows
/// of one lock could not be told apart.
const PID_WIDTH: u16 = 7;

/// The columns that fit in `width`.
fn columns(width: u16, waitqueues: bool) -> (bool, Vec<Col>) {
    let mut cols: Vec<Col> = Metric::on_screen()
        .into_iter()
        .map(|(metric, screen)| Col { metric, screen })
        .filter(|c| waitqueues || c.screen.applies != Applies::Waitqueue)
        .collect();
    let mut kind = true;
    let need = |cols: &[Col], kind: bool| -> u16 {
        let n = cols.len() as u16 + u16::from(kind);
        NAME_MIN + COL_WIDTH * cols.len() as u16 + if kind { KIND_WIDTH } else { 0 } + n
    };
    for level in (1..=6).rev() {
        if need(&cols, kind) <= width {
            break;
        }
        cols.retain(|c| c.screen.drop != level);
        if level == KIND_DROP {
            kind = false;
        }
    }
    (kind, cols)
}

/// The selection marker, in a column of its own so it shows without colour.
const MARKER: &str = "▶";
/// Lines an advisory may take before it is cut with `…`.
const ADVICE_LINES: usize = 3;

/// Draws the table into `area` and records header and row hit areas.
pub fn draw(frame: &mut Frame<'_>, area: Rect, app: &mut App) {
    let Some(snap) = app.shown() else {
        frame.render_widget(waiting(app), area);
        return;
    };
    let waitqueues = snap.locks.iter().any(|l| l.kind.waits_and_wakes());
    let pid = snap.has_pids();
    let marker = MARKER.chars().count() as u16;
    let pid_room = if pid { PID_WIDTH + 1 } else { 0 };
    let (kind, cols) = columns(
        area.width.saturating_sub(marker).saturating_sub(pid_room),
        waitqueues,
    );

    let mut widths = vec![Constraint::Fill(1)];
    if pid {
        widths.push(Constraint::Length(PID_WIDTH));
    }
    if kind {
        widths.push(Constraint::Length(KIND_WIDTH));
    }
    widths.extend(cols.iter().map(|_| Constraint::Length(COL_WIDTH)));
    // The same layout the table computes: the marker column, then the
    // columns with one space between them.
    let rects = Layout::horizontal(widths.clone())
        .flex(Flex::Start)
        .spacing(1)
        .split(Rect::new(
            area.x + marker,
            area.y,
            area.width.saturating_sub(marker),
            1,
        ));

    // Line 1: group labels over their columns; line 2 onwards: the table.
    let [groups_area, table_area] =
        Layout::vertical([Constraint::Length(1), Constraint::Fill(1)]).areas(area);
    let first_num = 1 + usize::from(pid) + usize::from(kind);
    draw_groups(frame, groups_area, &cols, &rects[first_num..]);

    let sort = app.view.opts.sort;
    let arrow = if app.view.opts.descending {
        "▼"
    } else {
        "▲"
    };
    let head_style = Style::new().add_modifier(Modifier::BOLD);
    let sorted_style = head_style
        .fg(Color::Cyan)
        .add_modifier(Modifier::UNDERLINED);
    let mut header = Vec::new();
    let (name_title, name_style) = if sort == SortKey::Name {
        (format!("NAME {arrow}"), sorted_style)
    } else {
        ("NAME".to_string(), head_style)
    };
    header.push(Cell::from(name_title).style(name_style));
    if pid {
        header.push(right("PID".to_string()).style(head_style));
    }
    if kind {
        header.push(Cell::from("KIND").style(head_style));
    }
    for c in &cols {
        let (text, style) = if c.key() == sort {
            (format!("{}{arrow}", c.screen.title), sorted_style)
        } else {
            (c.screen.title.to_string(), head_style)
        };
        header.push(Cell::from(Line::from(text).alignment(Alignment::Right)).style(style));
    }

    let rows = app.rows();
    let selected = app.selected_index(&rows);
    let layout = RowLayout {
        pid,
        kind,
        cols: &cols,
        name_width: usize::from(rects[0].width),
        line_width: usize::from(area.width.saturating_sub(marker)),
        elapsed_ns: snap.window.elapsed_ns,
    };
    let body: Vec<(TRow<'_>, u16)> = rows.iter().map(|r| layout.row(r)).collect();
    let heights: Vec<u16> = body.iter().map(|(_, h)| *h).collect();
    let empty = body.is_empty();
    let table = Table::new(body.into_iter().map(|(r, _)| r), widths)
        .header(TRow::new(header))
        .column_spacing(1)
        .flex(Flex::Start)
        .highlight_symbol(MARKER)
        .highlight_spacing(HighlightSpacing::Always)
        .row_highlight_style(Style::new().add_modifier(Modifier::REVERSED));
    let mut state = TableState::new()
        .with_offset(app.view.hits.offset)
        .with_selected(selected);
    frame.render_stateful_widget(table, table_area, &mut state);

    if empty {
        let msg = if app.view.opts.filter.is_some() {
            "no lock matches the filter (Esc clears it)"
        } else {
            "no instrumented lock has been used yet"
        };
        let below = Rect::new(table_area.x, table_area.y + 2, table_area.width, 1);
        if below.y < table_area.bottom() {
            frame.render_widget(
                Paragraph::new(msg)
                    .alignment(Alignment::Center)
                    .style(Style::new().fg(Color::DarkGray)),
                below,
            );
        }
    }

    // Hit areas for the mouse: header cells (both header lines) and rows.
    let header_rect = |r: &Rect| Rect::new(r.x, area.y, r.width, 2.min(area.height));
    let mut header_hits = vec![(header_rect(&rects[0]), SortKey::Name)];
    for (c, r) in cols.iter().zip(&rects[first_num..]) {
        header_hits.push((header_rect(r), c.key()));
    }
    let mut row_hits = Vec::new();
    let mut y = table_area.y.saturating_add(1);
    for (i, h) in heights.iter().enumerate().skip(state.offset()) {
        if y >= table_area.bottom() {
            break;
        }
        let h = (*h).min(table_area.bottom() - y);
        row_hits.push((Rect::new(table_area.x, y, table_area.width, h), i));
        y += h;
    }
    let id_selected = selected.and_then(|i| rows.get(i)).and_then(Row::id);
    drop(rows);
    app.view.hits.header = header_hits;
    app.view.hits.rows = row_hits;
    app.view.hits.offset = state.offset();
    if app.view.selected.is_none() {
        app.view.selected = id_selected;
    }
}

fn waiting(app: &App) -> Paragraph<'static> {
    let msg = match (&app.data.origin, &app.data.link) {
        (_, Link::Lost { reason, .. }) => format!("target gone before any data: {reason}"),
        (Origin::Endpoint(t), _) => format!("connecting to {t}…"),
        (Origin::Demo, _) => "starting the demo workloads…".to_string(),
        _ => "no data".to_string(),
    };
    Paragraph::new(format!("\n{msg}"))
        .alignment(Alignment::Center)
        .style(Style::new().fg(Color::DarkGray))
}

/// Draws `── HOLD ──` over the columns of each group.
fn draw_groups(frame: &mut Frame<'_>, area: Rect, cols: &[Col], rects: &[Rect]) {
    let mut i = 0;
    while i < cols.len() {
        let group = cols[i].screen.group;
        let mut j = i + 1;
        while j < cols.len() && cols[j].screen.group == group {
            j += 1;
        }
        if !group.is_empty() {
            let x = rects[i].x;
            let right = rects[j - 1].right();
            let width = right.saturating_sub(x);
            let label = format!(" {group} ");
            let fill = (width as usize).saturating_sub(label.chars().count());
            let left = fill / 2;
            let text = format!("{}{label}{}", "─".repeat(left), "─".repeat(fill - left));
            frame.render_widget(
                Paragraph::new(text).style(Style::new().add_modifier(Modifier::BOLD)),
                Rect::new(x, area.y, width, 1),
            );
        }
        i = j;
    }
}

fn kind_label(kind: LockKind) -> &'static str {
    match kind {
        LockKind::Spinlock => "spin",
        LockKind::Mutex => "mutex",
        LockKind::Rwlock => "rw",
        LockKind::Semaphore => "sem",
        LockKind::Waitqueue => "wq",
        LockKind::Condvar => "cv",
    }
}

fn right(s: String) -> Cell<'static> {
    Cell::from(Line::from(s).alignment(Alignment::Right))
}

/// `text` cut to `width` characters from the left, so a call site keeps
/// its `file:line:column` end: `…/semaphore.rs:154:36`.
pub fn fit_left(text: &str, width: usize) -> String {
    let n = text.chars().count();
    if n <= width {
        return text.to_string();
    }
    if width == 0 {
        return String::new();
    }
    let tail: String = text.chars().skip(n - (width - 1)).collect();
    format!("…{tail}")
}

/// `text` broken at spaces into lines of at most `width` characters, at
/// most `max` of them (the last one cut with `…`).
pub fn wrap(text: &str, width: usize, max: usize) -> Vec<String> {
    let width = width.max(8);
    let mut lines: Vec<String> = Vec::new();
    let mut line = String::new();
    for word in text.split(' ') {
        let (have, add) = (line.chars().count(), word.chars().count());
        if have > 0 && have + 1 + add > width {
            lines.push(std::mem::take(&mut line));
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(word);
        while line.chars().count() > width {
            let head: String = line.chars().take(width).collect();
            let rest: String = line.chars().skip(width).collect();
            lines.push(head);
            line = rest;
        }
    }
    if !line.is_empty() {
        lines.push(line);
    }
    if lines.len() > max {
        lines.truncate(max);
        if let Some(last) = lines.last_mut() {
            let keep: String = last.chars().take(width.saturating_sub(1)).collect();
            *last = format!("{keep}…");
        }
    }
    lines
}

/// What turning a state row into a table row needs to know.
struct RowLayout<'c> {
    /// Whether there is a process column (a merged table).
    pid: bool,
    kind: bool,
    cols: &'c [Col],
    /// Characters in the name column.
    name_width: usize,
    /// Characters across the whole table, for advisory lines.
    line_width: usize,
    /// The shown window, for UTIL.
    elapsed_ns: u64,
}

impl RowLayout<'_> {
    /// The table row for `row` and its height in lines.
    fn row(&self, row: &Row<'_>) -> (TRow<'static>, u16) {
        let RowLayout { kind, cols, .. } = *self;
        // The cells between NAME and the numbers: PID, then KIND.
        let middle = |cells: &mut Vec<Cell<'static>>, pid: String, kind_text: &'static str| {
            if self.pid {
                cells.push(right(pid));
            }
            if kind {
                cells.push(Cell::from(kind_text));
            }
        };
        match row {
            Row::Lock {
                lock,
                depth,
                expanded,
                advice,
            } => {
                let has_children = !lock.sites.is_empty() || !lock.holders.is_empty();
                let marker = match (has_children, expanded) {
                    (false, _) => "  ",
                    (true, true) => "▾ ",
                    (true, false) => "▸ ",
                };
                let mut name = vec![Span::raw(format!("{}{marker}", "  ".repeat(*depth)))];
                let style = if *advice > 0 {
                    Style::new().fg(Color::Yellow)
                } else {
                    Style::new()
                };
                name.push(Span::styled(
                    lock.name().to_string(),
                    style.add_modifier(Modifier::BOLD),
                ));
                if *advice > 0 {
                    name.push(Span::styled(" ⚠", Style::new().fg(Color::Yellow)));
                }
                let mut cells = vec![Cell::from(Line::from(name))];
                middle(&mut cells, String::new(), kind_label(lock.kind));
                cells.extend(
                    cols.iter()
                        .map(|c| right(value(c.metric, &lock.total, lock.kind, self.elapsed_ns))),
                );
                (TRow::new(cells), 1)
            }
            Row::Site { lock, site, depth } => {
                let mode = site
                    .mode
                    .as_deref()
                    .map(|m| format!(" ({m})"))
                    .unwrap_or_default();
                let prefix = format!("{}├ ", "  ".repeat(*depth));
                let room = self.name_width.saturating_sub(prefix.chars().count());
                let name = format!(
                    "{prefix}{}",
                    fit_left(&format!("{}{mode}", site.site), room)
                );
                let mut cells = vec![Cell::from(name)];
                let pid = site.pid.map_or(String::new(), |p| p.to_string());
                middle(&mut cells, pid, "");
                cells.extend(
                    cols.iter()
                        .map(|c| right(value(c.metric, &site.stats, lock.kind, self.elapsed_ns))),
                );
                (TRow::new(cells).style(Style::new().fg(Color::Gray)), 1)
            }
            Row::Holder { holder, depth, .. } => {
                let prefix = format!("{}⇠ ", "  ".repeat(*depth));
                let room = self.name_width.saturating_sub(prefix.chars().count());
                let name = format!("{prefix}{}", fit_left(&holder.site, room));
                let mut cells = vec![Cell::from(name)];
                middle(&mut cells, String::new(), "");
                for c in cols {
                    let text = match c.metric {
                        Metric::Contended => compact_count(holder.contended),
                        Metric::WaitMean => format_ns(
                            holder
                                .wait_ns_total
                                .checked_div(holder.contended)
                                .unwrap_or(0),
                        ),
                        _ => String::new(),
                    };
                    cells.push(right(text));
                }
                (TRow::new(cells).style(Style::new().fg(Color::Magenta)), 1)
            }
            Row::Advice { advisory, depth } => {
                let indent = "  ".repeat(*depth);
                let room = self.line_width.saturating_sub(indent.chars().count() + 2);
                let lines: Vec<Line<'static>> = wrap(&advisory.message, room, ADVICE_LINES)
                    .into_iter()
                    .enumerate()
                    .map(|(i, l)| {
                        let lead = if i == 0 { "⚠ " } else { "  " };
                        Line::raw(format!("{indent}{lead}{l}"))
                    })
                    .collect();
                let height = lines.len().max(1) as u16;
                let span = 1 + u16::from(self.pid) + u16::from(kind) + cols.len() as u16;
                let row = TRow::new(vec![Cell::from(Text::from(lines)).column_span(span)])
                    .height(height)
                    .style(Style::new().fg(Color::Yellow));
                (row, height)
            }
        }
    }
}

/// The text of column `metric` for `stats` of a lock of `kind` over a
/// window of `elapsed_ns`; blank where the column does not apply (wait
/// queues are never held).
fn value(metric: Metric, s: &Stats, kind: LockKind, elapsed_ns: u64) -> String {
    let def = metric.def();
    let wq = kind.waits_and_wakes();
    let applies = match def.screen.map(|c| c.applies) {
        Some(Applies::All) => true,
        Some(Applies::Held) => !wq,
        Some(Applies::Waitqueue) => wq,
        None => false,
    };
    let Some(v) = metric.value(s, elapsed_ns).filter(|_| applies) else {
        return String::new();
    };
    match def.unit {
        Unit::Pct => format_pct(v),
        Unit::Ns => format_ns(v as u64),
        Unit::Count => compact_count(v as u64),
        Unit::PerSec => format!("{v:.1}/s"),
        Unit::Ratio => format!("{v:.2}"),
    }
}

/// The short kind label the table uses, for the detail pane.
pub fn kind_name(lock: &LockStats) -> &'static str {
    kind_label(lock.kind)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_sites_keep_their_line_numbers() {
        assert_eq!(
            fit_left("crates/lockmeter/src/semaphore.rs:154:36", 21),
            "…/semaphore.rs:154:36"
        );
        assert_eq!(fit_left("a.rs:1:1", 20), "a.rs:1:1");
        assert_eq!(fit_left("abc", 0), "");
    }

    #[test]
    fn advisories_wrap_at_spaces_and_are_cut_after_the_limit() {
        let text =
            "held 94.0% of the window, 100.0% of that at viewer/src/demo.rs:176:43; shrink it";
        let lines = wrap(text, 40, 3);
        assert!(lines.len() <= 3);
        assert!(lines.iter().all(|l| l.chars().count() <= 40), "{lines:?}");
        assert_eq!(lines.join(" "), text);
        let cut = wrap(text, 10, 2);
        assert_eq!(cut.len(), 2);
        assert!(cut[1].ends_with('…'));
    }

    #[test]
    fn narrow_terminals_drop_percentiles_first() {
        let (kind, wide) = columns(200, true);
        assert!(kind);
        assert_eq!(wide.len(), Metric::on_screen().len());
        let (_, mid) = columns(100, false);
        assert!(!mid.iter().any(|c| c.metric == Metric::HoldP99));
        assert!(mid.iter().any(|c| c.metric == Metric::HoldMax));
        let (kind, narrow) = columns(super::super::MIN_WIDTH, true);
        assert!(!kind);
        let keys: Vec<Metric> = narrow.iter().map(|c| c.metric).collect();
        for must in [
            Metric::Con,
            Metric::Util,
            Metric::HoldMean,
            Metric::WaitMean,
            Metric::Acquisitions,
            Metric::Contended,
        ] {
            assert!(keys.contains(&must), "{must:?} dropped at minimum width");
        }
    }
}
