//! Drawing: one file per screen. [`draw`] picks the screens for the app's
//! state and lays them out; each screen draws only from the state it is
//! given (plus the hit areas it records for the mouse).

pub mod detail;
pub mod help;
pub mod now;
pub mod picker;
pub mod stacks;
pub mod table;
pub mod too_small;

use lockmeter_model::format::format_ns;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;
use ratatui::Frame;

use crate::state::{App, Link, Mode, Origin, Overlay, Peer};

/// Below this size the table cannot show its columns; a message is shown
/// instead of a broken layout.
pub const MIN_WIDTH: u16 = 60;
pub const MIN_HEIGHT: u16 = 10;

/// Rows the detail pane needs to be worth showing next to the table.
const DETAIL_MIN_ROWS: u16 = 14;

/// The stacks pane of the selected lock (and site, on a site row).
fn stacks_pane(frame: &mut Frame<'_>, area: Rect, app: &App) {
    match (app.shown(), app.selected_lock()) {
        (Some(snap), Some(lock)) => {
            stacks::draw(frame, area, snap, lock, app.selected_site().as_deref())
        }
        _ => frame.render_widget(
            Paragraph::new("no lock selected")
                .block(ratatui::widgets::Block::bordered().title(" stacks ")),
            area,
        ),
    }
}

/// Draws the whole screen for `app`.
pub fn draw(frame: &mut Frame<'_>, app: &mut App) {
    let area = frame.area();
    // The scroll position survives; the hit areas are drawn anew.
    app.view.hits = crate::state::Hits {
        offset: app.view.hits.offset,
        ..Default::default()
    };
    if area.width < MIN_WIDTH || area.height < MIN_HEIGHT {
        too_small::draw(frame, area);
        return;
    }
    if let Overlay::Picker(p) = &app.view.overlay {
        picker::draw(frame, area, p);
        return;
    }
    let has_timeline = app.data.playback.is_some();
    let has_filter = app.view.filter_input().is_some() || app.view.opts.filter.is_some();
    let banner = now::banner(&app.data.deadlocks);
    let [title, banner_row, body, timeline, filter, status] = Layout::vertical([
        Constraint::Length(1),
        Constraint::Length(u16::from(banner.is_some())),
        Constraint::Fill(1),
        Constraint::Length(u16::from(has_timeline)),
        Constraint::Length(u16::from(has_filter)),
        Constraint::Length(1),
    ])
    .areas(area);

    frame.render_widget(title_bar(app), title);
    if let Some(b) = banner {
        frame.render_widget(b, banner_row);
    }
    match app.view.overlay {
        Overlay::Now { scroll } => now::draw(frame, body, app.shown(), scroll),
        Overlay::Stacks => below_the_table(frame, body, app, stacks_pane),
        Overlay::Detail => below_the_table(frame, body, app, detail::draw),
        _ => table::draw(frame, body, app),
    }
    if has_timeline {
        draw_timeline(frame, timeline, app);
    }
    if has_filter {
        frame.render_widget(filter_line(app), filter);
    }
    frame.render_widget(status_line(app), status);
    if app.view.overlay == Overlay::Help {
        help::draw(frame, area, app);
    }
}

/// A pane below the table when there is room for both, else alone.
fn below_the_table(
    frame: &mut Frame<'_>,
    body: Rect,
    app: &mut App,
    pane: fn(&mut Frame<'_>, Rect, &App),
) {
    if body.height >= 2 * DETAIL_MIN_ROWS {
        let [top, bottom] =
            Layout::vertical([Constraint::Fill(2), Constraint::Fill(3)]).areas(body);
        table::draw(frame, top, app);
        pane(frame, bottom, app);
    } else {
        pane(frame, body, app);
    }
}

fn title_bar(app: &App) -> Paragraph<'static> {
    let bar = Style::new().bg(Color::Blue).fg(Color::White);
    let sep = Span::raw(" │ ");
    let mut spans = vec![Span::styled(
        " lockmeter ",
        Style::new().add_modifier(Modifier::BOLD),
    )];
    spans.push(sep.clone());
    spans.push(Span::raw(source_label(app)));
    spans.push(sep.clone());
    spans.push(link_span(app));
    if let Some(snap) = app.shown() {
        spans.push(sep.clone());
        let window = format_ns(snap.window.elapsed_ns);
        spans.push(Span::raw(match app.view.mode {
            Mode::Rates => format!("rates: last {window}"),
            Mode::Totals => format!("totals: {window}"),
        }));
        spans.push(sep.clone());
        let arrow = if app.view.opts.descending {
            "▼"
        } else {
            "▲"
        };
        spans.push(Span::raw(format!(
            "sort {} {arrow}",
            app.view.opts.sort.title()
        )));
        spans.push(sep.clone());
        spans.push(Span::raw(format!("{} locks", snap.locks.len())));
        let every = snap.sampling.uncontended_hold_every;
        if every > 1 {
            spans.push(sep.clone());
            spans.push(Span::raw(format!("hold 1/{every}")));
        }
        if snap.dropped_records > 0 {
            spans.push(sep);
            spans.push(Span::styled(
                format!("{} records dropped", snap.dropped_records),
                Style::new().fg(Color::Yellow).add_modifier(Modifier::BOLD),
            ));
        }
    }
    Paragraph::new(Line::from(spans)).style(bar)
}

/// What is being viewed, for the title bar.
fn source_label(app: &App) -> String {
    let who = match &app.data.peer {
        // A merged view of several processes has no pid of its own.
        Some(Peer { pid: 0, name }) => name.clone(),
        Some(Peer { pid, name }) if !name.is_empty() => format!("{name} (pid {pid})"),
        Some(Peer { pid, .. }) => format!("pid {pid}"),
        None => String::new(),
    };
    let what = match &app.data.origin {
        Origin::Demo => "demo".to_string(),
        Origin::Endpoint(t) => t.clone(),
        Origin::Recording(p) => format!("recording {p}"),
        Origin::Dump(p) => format!("dump {p}"),
        Origin::Picker => "choose a process".to_string(),
    };
    if who.is_empty() {
        what
    } else {
        format!("{what}: {who}")
    }
}

fn link_span(app: &App) -> Span<'static> {
    if app.data.playback.is_some() {
        return Span::raw(if app.view.paused {
            "‖ stopped"
        } else {
            "▶ playing"
        });
    }
    if app.view.paused {
        return Span::styled(
            "‖ paused",
            Style::new().fg(Color::Yellow).add_modifier(Modifier::BOLD),
        );
    }
    match &app.data.link {
        Link::Static => Span::raw("file"),
        Link::Connecting => Span::raw("◌ connecting"),
        Link::Live => Span::styled(
            "● live",
            Style::new().fg(Color::Green).add_modifier(Modifier::BOLD),
        ),
        Link::Lost { .. } => Span::styled(
            "✖ target gone",
            Style::new()
                .fg(Color::White)
                .bg(Color::Red)
                .add_modifier(Modifier::BOLD),
        ),
    }
}

fn draw_timeline(frame: &mut Frame<'_>, area: Rect, app: &mut App) {
    let Some(p) = &app.data.playback else { return };
    let n = p.len();
    let pos = p.pos();
    let label = format!(
        " frame {}/{} at +{} ",
        pos + 1,
        n,
        format_ns(p.offset_ns(pos))
    );
    let [text, bar] = Layout::horizontal([
        Constraint::Length(label.chars().count() as u16),
        Constraint::Fill(1),
    ])
    .areas(area);
    frame.render_widget(Paragraph::new(label), text);
    // `━` up to the position, `●` at it, `─` after: readable without colour.
    let width = usize::from(bar.width.saturating_sub(1));
    let at = if n <= 1 { width } else { pos * width / (n - 1) };
    let line = Line::from(vec![
        Span::styled("━".repeat(at), Style::new().fg(Color::Cyan)),
        Span::styled(
            "●",
            Style::new().fg(Color::Cyan).add_modifier(Modifier::BOLD),
        ),
        Span::styled("─".repeat(width - at), Style::new().fg(Color::DarkGray)),
    ]);
    frame.render_widget(Paragraph::new(line), bar);
    app.view.hits.timeline = Some(bar);
}

fn filter_line(app: &App) -> Paragraph<'static> {
    match app.view.filter_input() {
        Some(text) => Paragraph::new(Line::from(vec![
            Span::styled(" filter: ", Style::new().add_modifier(Modifier::BOLD)),
            Span::raw(text.to_string()),
            Span::styled("█", Style::new().add_modifier(Modifier::SLOW_BLINK)),
            Span::styled(
                "   Enter keeps it, Esc clears it",
                Style::new().fg(Color::DarkGray),
            ),
        ])),
        None => Paragraph::new(Line::from(vec![
            Span::styled(" filter: ", Style::new().add_modifier(Modifier::BOLD)),
            Span::raw(app.view.opts.filter.clone().unwrap_or_default()),
            Span::styled("   / edits, Esc clears", Style::new().fg(Color::DarkGray)),
        ])),
    }
}

fn status_line(app: &App) -> Paragraph<'static> {
    if let Some(msg) = &app.view.status {
        return Paragraph::new(format!(" {msg}")).style(Style::new().add_modifier(Modifier::BOLD));
    }
    if let Link::Lost {
        reason,
        attempt,
        delay,
    } = &app.data.link
    {
        let retry = match delay {
            Some(d) => format!("; retry {attempt} in {}", format_ns(d.as_nanos() as u64)),
            None => String::new(),
        };
        let what = if app.data.frame().is_some() {
            "showing the last data"
        } else {
            "no data yet"
        };
        return Paragraph::new(format!(" target gone: {reason}{retry}; {what}"))
            .style(Style::new().fg(Color::Red).add_modifier(Modifier::BOLD));
    }
    let hints: &str = if app.data.playback.is_some() {
        " ? help  q quit  , . step  [ ] ×10  space play  t rates/totals  s sort  / filter  Enter expand  Tab detail"
    } else {
        " ? help  q quit  t rates/totals  s sort  i invert  / filter  Enter expand  Tab detail  space pause  r reset  d dump"
    };
    Paragraph::new(hints).style(Style::new().fg(Color::DarkGray))
}

/// A count in at most six characters: exact below a million, then `1.23M`.
pub fn compact_count(n: u64) -> String {
    if n < 1_000_000 {
        return n.to_string();
    }
    let units = [
        (1e18, "E"),
        (1e15, "P"),
        (1e12, "T"),
        (1e9, "G"),
        (1e6, "M"),
    ];
    let v = n as f64;
    for (scale, unit) in units {
        if v >= scale {
            let x = v / scale;
            return if x < 10.0 {
                format!("{x:.2}{unit}")
            } else if x < 100.0 {
                format!("{x:.1}{unit}")
            } else {
                format!("{x:.0}{unit}")
            };
        }
    }
    n.to_string()
}

/// The yellow warning that `count` records (`what`: "stacks", "edges")
/// were dropped because `table` was full; none when nothing was dropped.
pub(crate) fn dropped_warning(
    indent: &str,
    count: u64,
    what: &str,
    table: &str,
) -> Option<Line<'static>> {
    (count > 0).then(|| {
        Line::styled(
            format!("{indent}{count} {what} dropped ({table} was full)"),
            Style::new().fg(Color::Yellow),
        )
    })
}

/// A rectangle of at most `w`×`h` centred in `area`.
pub fn centered(area: Rect, w: u16, h: u16) -> Rect {
    let w = w.min(area.width);
    let h = h.min(area.height);
    Rect::new(
        area.x + (area.width - w) / 2,
        area.y + (area.height - h) / 2,
        w,
        h,
    )
}

/// The characters of `lines`, one line each, for tests of a pane's text.
#[cfg(test)]
pub(crate) fn plain_text(lines: &[Line<'_>]) -> String {
    lines
        .iter()
        .map(|l| {
            l.spans
                .iter()
                .map(|s| s.content.as_ref())
                .collect::<String>()
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_stay_short() {
        for (n, want) in [
            (999_999, "999999"),
            (1_234_567, "1.23M"),
            (12_345_678_901, "12.3G"),
            (u64::MAX, "18.4E"),
        ] {
            assert_eq!(compact_count(n), want, "{n}");
        }
        assert!((0..64).all(|s| compact_count(1u64 << s).len() <= 6));
    }
}
