//! The "now" pane (`n`): deadlocks, every lock held or waited on with the
//! longest hold first, the chains of waiters, and the lock-order edges
//! heaviest first with their inversions. Also the deadlock banner, which
//! stays on screen once a deadlock was seen.

use lockmeter_model::format::format_ns;
use lockmeter_model::now::Deadlock;
use lockmeter_model::render::{holder_line, waiter_line};
use lockmeter_model::Snapshot;
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Paragraph, Wrap};
use ratatui::Frame;

use super::dropped_warning;

/// Edges listed before "... more" (the heaviest ones).
const EDGES_SHOWN: usize = 20;

fn bold() -> Style {
    Style::new().add_modifier(Modifier::BOLD)
}

fn red() -> Style {
    Style::new().fg(Color::Red).add_modifier(Modifier::BOLD)
}

fn dim() -> Style {
    Style::new().fg(Color::DarkGray)
}

use lockmeter_model::render::mode_suffix as mode;

/// The pane's text for `snap` (no snapshot yet: a line saying so).
pub fn lines(snap: Option<&Snapshot>) -> Vec<Line<'static>> {
    let Some(snap) = snap else {
        return vec![Line::raw("no snapshot yet")];
    };
    let mut out: Vec<Line<'static>> = Vec::new();
    for (i, d) in snap.deadlocks.iter().enumerate() {
        out.push(Line::styled(
            format!("DEADLOCK {}: {} threads", i + 1, d.threads.len()),
            red(),
        ));
        for t in &d.threads {
            let by: Vec<String> = t.held_by.iter().map(|h| h.label()).collect();
            out.push(Line::raw(format!(
                "  {} waits on {}{} at {}, held by {}",
                t.thread.label(),
                t.waits_on.id,
                mode(t.waits_on.mode.as_deref()),
                t.waits_on.site,
                by.join(", ")
            )));
            for h in &t.holds {
                out.push(Line::styled(
                    format!(
                        "      holds {}{} since {}",
                        h.id,
                        mode(h.mode.as_deref()),
                        h.site
                    ),
                    dim(),
                ));
            }
        }
        out.push(Line::raw(""));
    }
    out.push(Line::styled(
        "HELD AND WAITED ON NOW (longest hold first)",
        bold(),
    ));
    if snap.now.locks.is_empty() {
        out.push(Line::styled("  nothing", dim()));
    }
    for l in &snap.now.locks {
        out.push(Line::from(vec![
            Span::styled(format!("  {}", l.id), bold()),
            Span::styled(format!("  {} {}", l.kind.as_str(), l.instance), dim()),
        ]));
        for h in &l.holders {
            let style = if h.stalled { red() } else { Style::new() };
            out.push(Line::styled(format!("    {}", holder_line(h)), style));
        }
        for w in &l.waiters {
            let style = if w.stalled {
                red()
            } else {
                Style::new().fg(Color::Yellow)
            };
            out.push(Line::styled(format!("    {}", waiter_line(w)), style));
        }
    }
    if !snap.now.chains.is_empty() {
        out.push(Line::raw(""));
        out.push(Line::styled("CHAINS", bold()));
        for c in &snap.now.chains {
            let mut text: Vec<String> = c
                .links
                .iter()
                .map(|l| format!("{} waits on {}", l.thread.label(), l.waits_on))
                .collect();
            if c.cycle {
                text.push("(closes a cycle)".into());
            } else if let Some(t) = &c.ends_at {
                text.push(format!("held by {}", t.label()));
            }
            out.push(Line::raw(format!("  {}", text.join(" → "))));
        }
    }
    let order = &snap.lock_order;
    out.push(Line::raw(""));
    if !order.recorded && order.edges.is_empty() {
        out.push(Line::styled(
            "LOCK ORDER: not recorded (LOCKMETER_LOCK_ORDER=1 records it)",
            dim(),
        ));
        return out;
    }
    out.push(Line::styled(
        format!("LOCK ORDER: {} edges, heaviest first", order.edges.len()),
        bold(),
    ));
    for inv in &order.inversions {
        out.push(Line::styled(format!("  ⚠ {}", inv.message()), red()));
    }
    for e in order.edges.iter().take(EDGES_SHOWN) {
        out.push(Line::raw(format!(
            "  {:>8}×  {} ({}) → {} ({})  waited {}",
            e.count,
            e.held,
            e.held_site,
            e.acquired,
            e.acquired_site,
            format_ns(e.wait_ns_total)
        )));
    }
    if order.edges.len() > EDGES_SHOWN {
        out.push(Line::styled(
            format!("  ... {} more", order.edges.len() - EDGES_SHOWN),
            dim(),
        ));
    }
    out.extend(dropped_warning(
        "  ",
        order.dropped_edges,
        "edges",
        "a thread's table",
    ));
    out
}

/// Draws the pane over `area`, scrolled down by `scroll` lines.
pub fn draw(frame: &mut Frame<'_>, area: Rect, snap: Option<&Snapshot>, scroll: u16) {
    let block = Block::bordered().title(" now: held, waited on, deadlocks, lock order (n closes) ");
    frame.render_widget(
        Paragraph::new(lines(snap))
            .block(block)
            .wrap(Wrap { trim: false })
            .scroll((scroll, 0)),
        area,
    );
}

/// The banner line for the deadlocks seen so far, if any.
pub fn banner(deadlocks: &[Deadlock]) -> Option<Paragraph<'static>> {
    let first = deadlocks.first()?;
    let more = match deadlocks.len() {
        1 => String::new(),
        n => format!(" (+{} more)", n - 1),
    };
    Some(
        Paragraph::new(format!(
            " DEADLOCK: {}{more} — n for details ",
            first.summary()
        ))
        .style(
            Style::new()
                .bg(Color::Red)
                .fg(Color::White)
                .add_modifier(Modifier::BOLD),
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::view::plain_text as text;
    use lockmeter_model::now::{LockOrder, OrderEdge};
    use lockmeter_model::ProcessInfo;

    #[test]
    fn edges_are_listed_heaviest_first_with_inversions_on_top() {
        let mut s = Snapshot::empty(ProcessInfo::default(), "mock");
        let e = |a: &str, b: &str, n| OrderEdge {
            held: a.into(),
            held_site: "h.rs:1:1".into(),
            acquired: b.into(),
            acquired_site: "a.rs:2:2".into(),
            count: n,
            wait_ns_total: 0,
        };
        let edges = vec![e("a", "b", 9), e("b", "a", 2)];
        s.lock_order = LockOrder {
            recorded: true,
            inversions: lockmeter_model::now::inversions(&edges),
            edges,
            dropped_edges: 0,
        };
        let t = text(&lines(Some(&s)));
        let inv = t.find("lock order inversion").expect(&t);
        let heavy = t.find("9×").unwrap();
        let light = t.find("2×").unwrap();
        assert!(inv < heavy && heavy < light, "{t}");
        assert!(banner(&s.deadlocks).is_none());
    }
}
