//! The stacks pane of the selected lock (or call site): its top stacks by
//! waiter-seconds, on the waiter side and on the holder side, with the
//! wrapper frames folded away (the first frame shown is the real caller).

use lockmeter_model::format::format_ns;
use lockmeter_model::stacks::{Side, StackSample, Stacks};
use lockmeter_model::{LockStats, Snapshot};
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Paragraph, Wrap};
use ratatui::Frame;

use super::dropped_warning;

/// Stacks shown per side.
const TOP: usize = 5;
/// Frames shown per stack, from the caller outwards.
const FRAMES: usize = 6;

/// The pane's text for `lock` (one `site` of it, if given).
pub fn lines(snap: &Snapshot, lock: &LockStats, site: Option<&str>) -> Vec<Line<'static>> {
    let stacks = &snap.stacks;
    let mut out = Vec::new();
    if stacks.samples.is_empty() {
        out.push(Line::raw(if stacks.rate_ns == 0 {
            "no stacks in this snapshot (stacks were off, or it predates them)".to_string()
        } else {
            "no contended acquisition was captured yet".to_string()
        }));
        return out;
    }
    for side in [Side::Waiter, Side::Holder] {
        let top = stacks.top(&lock.id, site, side);
        let total: f64 = top.iter().map(|s| s.wait_ns).sum();
        let title = match side {
            Side::Waiter => "waiters: where the lock was waited for",
            Side::Holder => "holders: where it was held while others waited",
        };
        out.push(Line::styled(
            format!(
                "{title} ({} stacks, {})",
                top.len(),
                format_ns(total as u64)
            ),
            Style::new().add_modifier(Modifier::BOLD),
        ));
        if top.is_empty() {
            out.push(Line::raw("  none captured"));
        }
        for s in top.iter().take(TOP) {
            out.extend(stack_lines(stacks, s, total));
        }
        out.push(Line::raw(""));
    }
    out.extend(dropped_warning(
        "",
        stacks.dropped,
        "stacks",
        "a per-site table",
    ));
    out.push(Line::styled(
        format!(
            "sampled: a wait of d captured with probability min(1, d/{}), weighted back",
            format_ns(stacks.rate_ns)
        ),
        Style::new().fg(Color::DarkGray),
    ));
    out
}

/// One stack: its weight, then its frames from the real caller outwards.
fn stack_lines(stacks: &Stacks, s: &StackSample, total: f64) -> Vec<Line<'static>> {
    let share = if total > 0.0 {
        100.0 * s.wait_ns / total
    } else {
        0.0
    };
    let mut out = vec![Line::from(vec![
        Span::styled(
            format!("  {:>8} {share:>5.1}%", format_ns(s.wait_ns as u64)),
            Style::new().fg(Color::Cyan),
        ),
        Span::raw(format!(
            "  {:.0} waits ({} captured) at {}",
            s.contentions, s.captured, s.site
        )),
    ])];
    let shown: Vec<_> = stacks.shown_frames(s).collect();
    let folded = stacks.frames_of(s).count() - shown.len();
    for f in shown.iter().take(FRAMES) {
        let place = match &f.file {
            Some(file) if f.line > 0 => format!("  {}:{}", short_file(file), f.line),
            _ => String::new(),
        };
        out.push(Line::from(vec![
            Span::raw(format!("      {}", f.function)),
            Span::styled(place, Style::new().fg(Color::DarkGray)),
        ]));
    }
    let more = shown.len().saturating_sub(FRAMES);
    let mut notes = Vec::new();
    if more > 0 {
        notes.push(format!("{more} more frames"));
    }
    if folded > 0 {
        notes.push(format!("{folded} wrapper frames folded"));
    }
    if !notes.is_empty() {
        out.push(Line::styled(
            format!("      … {}", notes.join(", ")),
            Style::new().fg(Color::DarkGray),
        ));
    }
    out
}

/// The last two components of a path: enough to recognise it.
fn short_file(file: &str) -> &str {
    let mut cut = file.len();
    for _ in 0..2 {
        match file[..cut].rfind('/') {
            Some(i) => cut = i,
            None => return file,
        }
    }
    &file[cut + 1..]
}

/// Draws the pane for `lock` (and `site`) into `area`.
pub fn draw(
    frame: &mut Frame<'_>,
    area: Rect,
    snap: &Snapshot,
    lock: &LockStats,
    site: Option<&str>,
) {
    let title = match site {
        Some(site) => format!(" stacks · {} · {site} ", lock.name()),
        None => format!(" stacks · {} ", lock.name()),
    };
    let block = Block::bordered()
        .title(Span::styled(
            title,
            Style::new().add_modifier(Modifier::BOLD),
        ))
        .title_bottom(" Esc closes ");
    frame.render_widget(
        Paragraph::new(lines(snap, lock, site))
            .block(block)
            .wrap(Wrap { trim: false }),
        area,
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::view::plain_text as text;
    use lockmeter_model::stacks::Frame as StackFrame;

    #[test]
    fn wrapper_frames_are_folded_and_callers_come_first() {
        let mut snap = Snapshot::empty(Default::default(), "mock");
        let lock: LockStats = serde_json::from_value(serde_json::json!({
            "id": "l", "name": "l", "kind": "mutex", "created_at": "x.rs:1:1",
            "total": {}, "sites": []
        }))
        .unwrap();
        let f = |name: &str, skipped| StackFrame {
            function: name.into(),
            file: Some("/src/app/src/lib.rs".into()),
            line: 7,
            skipped,
            ..StackFrame::default()
        };
        *snap.stacks = Stacks {
            rate_ns: 1000,
            frames: vec![
                f("lockmeter::meter::x", true),
                f("app::state", false),
                f("app::alpha", false),
            ],
            samples: vec![StackSample {
                lock: "l".into(),
                site: "src/lib.rs:7:5".into(),
                mode: None,
                side: Side::Waiter,
                frames: vec![0, 1, 2],
                captured: 3,
                contentions: 4.0,
                wait_ns: 4000.0,
                hold_ns: 0.0,
            }],
            ..Stacks::default()
        };
        let t = text(&lines(&snap, &lock, None));
        assert!(!t.contains("lockmeter::meter"), "{t}");
        let (state, alpha) = (t.find("app::state").unwrap(), t.find("app::alpha").unwrap());
        assert!(state < alpha, "{t}");
        assert!(t.contains("1 wrapper frames folded"), "{t}");
        assert!(t.contains("src/lib.rs:7"), "{t}");
        assert!(t.contains("holders: where it was held"), "{t}");
    }
}
