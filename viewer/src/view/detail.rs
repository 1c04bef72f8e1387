//! The detail pane of the selected lock: wait and hold histograms from the
//! log buckets, CON % and UTIL % over the session, and the holder sites that
//! made it wait.

use lockmeter_model::dist::{bucket_index, bucket_upper_bound};
use lockmeter_model::format::{format_ns, format_pct};
use lockmeter_model::{Dist, LockStats};
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Bar, BarChart, Block, Borders, Paragraph, Sparkline, Wrap};
use ratatui::Frame;

use super::compact_count;
use super::table::kind_name;
use crate::state::history::Sample;
use crate::state::App;

/// Draws the pane for the selected lock into `area`.
pub fn draw(frame: &mut Frame<'_>, area: Rect, app: &App) {
    let Some(lock) = app.selected_lock() else {
        let block = Block::bordered().title(" detail ");
        frame.render_widget(Paragraph::new("no lock selected").block(block), area);
        return;
    };
    let instances = if lock.instances == 1 {
        "1 instance".to_string()
    } else {
        format!("{} instances", lock.instances)
    };
    let title = format!(
        " {} · {} · created at {} · {instances} ",
        lock.name(),
        kind_name(lock),
        lock.created_at
    );
    let block = Block::bordered()
        .title(Span::styled(
            title,
            Style::new().add_modifier(Modifier::BOLD),
        ))
        .title_bottom(" Tab/Esc closes ");
    let inner = block.inner(area);
    frame.render_widget(block, area);

    let elapsed_ns = app.shown().map_or(0, |s| s.window.elapsed_ns);
    let mut lines = summary_lines(lock, elapsed_ns);
    for a in app
        .advisories()
        .iter()
        .filter(|a| app.view.show_advice && a.lock_id == lock.id)
    {
        lines.push(Line::styled(
            format!("⚠ {}", a.message),
            Style::new().fg(Color::Yellow),
        ));
    }
    // The advisories wrap; give them what they need, up to a third.
    let wanted = lines
        .iter()
        .map(|l| (l.width() as u16).div_ceil(inner.width.max(1)).max(1))
        .sum::<u16>()
        .min(inner.height / 3)
        .max(2);
    let [summary, charts] =
        Layout::vertical([Constraint::Length(wanted), Constraint::Fill(1)]).areas(inner);
    frame.render_widget(Paragraph::new(lines).wrap(Wrap { trim: true }), summary);

    let [left, middle, right] = Layout::horizontal([
        Constraint::Percentage(30),
        Constraint::Percentage(30),
        Constraint::Percentage(40),
    ])
    .spacing(2)
    .areas(charts);
    let s = &lock.total;
    if lock.kind.waits_and_wakes() {
        histogram(frame, left, "asleep", &s.wait_ns);
        histogram(frame, middle, "wake lat", &s.wake_latency_ns);
    } else {
        histogram(frame, left, "wait", &s.wait_ns);
        histogram(frame, middle, "hold", &s.hold_ns);
    }

    let [con, util, holders] = Layout::vertical([
        Constraint::Length(4),
        Constraint::Length(4),
        Constraint::Fill(1),
    ])
    .areas(right);
    let samples = app.data.history.samples(&lock.id);
    sparkline(frame, con, "CON %", &samples, |s| s.con_pct);
    if lock.kind.waits_and_wakes() {
        sparkline(frame, util, "spurious %", &samples, |s| s.spurious_pct);
    } else {
        sparkline(frame, util, "UTIL %", &samples, |s| s.util_pct);
    }
    holder_list(frame, holders, lock);
}

/// The numbers of `lock`, UTIL over a window of `elapsed_ns`.
fn summary_lines(lock: &LockStats, elapsed_ns: u64) -> Vec<Line<'static>> {
    let s = &lock.total;
    let pair = |k: &str, v: String| {
        vec![
            Span::styled(format!("{k} "), Style::new().fg(Color::DarkGray)),
            Span::styled(v, Style::new().add_modifier(Modifier::BOLD)),
            Span::raw("  "),
        ]
    };
    let mut first = Vec::new();
    let mut second = Vec::new();
    if lock.kind.waits_and_wakes() {
        let per_call = if s.wake_calls == 0 {
            0.0
        } else {
            s.wakeups as f64 / s.wake_calls as f64
        };
        first.extend(pair("waits", compact_count(s.waits)));
        first.extend(pair("wake calls", compact_count(s.wake_calls)));
        first.extend(pair("woken", compact_count(s.wakeups)));
        first.extend(pair("per call", format!("{per_call:.1}")));
        first.extend(pair("spurious", compact_count(s.spurious_wakeups)));
        second.extend(pair("exclusive", compact_count(s.exclusive_wakeups)));
        second.extend(pair("max waiters", compact_count(s.max_waiters)));
        second.extend(pair("timed out", compact_count(s.rejected)));
    } else {
        first.extend(pair("TOTAL", compact_count(s.acquisitions)));
        first.extend(pair("CON", format_pct(s.con_pct())));
        first.extend(pair("UTIL", format_pct(s.util_pct(elapsed_ns))));
        first.extend(pair("NOWAIT", compact_count(s.nowait)));
        first.extend(pair("SPIN", compact_count(s.contended)));
        first.extend(pair("RJECT", compact_count(s.rejected)));
        second.extend(pair("spins", compact_count(s.spins)));
        second.extend(pair("sleeps", compact_count(s.sleeps)));
        second.extend(pair("bounces", compact_count(s.bounces)));
        second.extend(pair("sites", lock.sites.len().to_string()));
    }
    if let Some(p) = &lock.parent {
        second.extend(pair("inside", p.clone()));
    }
    vec![Line::from(first), Line::from(second)]
}

/// Histogram bars for `dist`, at most `max_bars` of them: the log buckets
/// from the first non-empty one to the last, adjacent buckets merged when
/// there are more than fit. Each bar is `(label, count)`, the label being
/// the largest duration the bar counts.
pub fn histogram_bars(dist: &Dist, max_bars: usize) -> Vec<(String, u64)> {
    let (Some(&(lo, _)), Some(&(hi, _))) = (dist.buckets.first(), dist.buckets.last()) else {
        return Vec::new();
    };
    let (first, last) = (bucket_index(lo), bucket_index(hi));
    if last < first {
        return Vec::new();
    }
    let mut dense = vec![0u64; last - first + 1];
    for &(upper, count) in &dist.buckets {
        let i = bucket_index(upper).clamp(first, last);
        dense[i - first] = dense[i - first].saturating_add(count);
    }
    let per_bar = dense.len().div_ceil(max_bars.max(1));
    dense
        .chunks(per_bar)
        .enumerate()
        .map(|(n, chunk)| {
            let top = first + n * per_bar + chunk.len() - 1;
            let label = format!("≤{}", format_ns(bucket_upper_bound(top)));
            (label, chunk.iter().copied().fold(0u64, u64::saturating_add))
        })
        .collect()
}

fn histogram(frame: &mut Frame<'_>, area: Rect, what: &str, dist: &Dist) {
    let title = if dist.count == 0 {
        format!(" {what} ")
    } else {
        format!(
            " {what} p99 {} max {} ",
            format_ns(dist.p99()),
            format_ns(dist.max)
        )
    };
    let block = Block::new().borders(Borders::TOP).title(title);
    let inner = block.inner(area);
    frame.render_widget(block, area);
    let bars = histogram_bars(dist, usize::from(inner.height));
    if bars.is_empty() {
        frame.render_widget(
            Paragraph::new("no samples").style(Style::new().fg(Color::DarkGray)),
            inner,
        );
        return;
    }
    let bars: Vec<Bar<'_>> = bars
        .into_iter()
        .map(|(label, count)| {
            let text = if count == 0 {
                String::new()
            } else {
                compact_count(count)
            };
            Bar::default()
                .label(Line::from(label))
                .value(count)
                .text_value(text)
        })
        .collect();
    let chart = BarChart::horizontal(bars)
        .bar_width(1)
        .bar_gap(0)
        .bar_style(Style::new().fg(Color::Cyan))
        .value_style(Style::new().fg(Color::Black).bg(Color::Cyan));
    frame.render_widget(chart, inner);
}

fn sparkline(
    frame: &mut Frame<'_>,
    area: Rect,
    what: &str,
    samples: &[Sample],
    pick: impl Fn(&Sample) -> f64,
) {
    // Tenths of a percent, so the bars resolve 0.1 %.
    let data: Vec<u64> = samples
        .iter()
        .map(|s| (pick(s).max(0.0) * 10.0).round() as u64)
        .collect();
    let now = samples.last().map(&pick).unwrap_or(0.0);
    let peak = samples.iter().map(&pick).fold(0.0, f64::max);
    let title = format!(
        " {what} now {} (max {}) ",
        format_pct(now),
        format_pct(peak)
    );
    let block = Block::new().borders(Borders::TOP).title(title);
    let inner = block.inner(area);
    let tail = &data[data.len().saturating_sub(usize::from(inner.width))..];
    let max = tail.iter().copied().max().unwrap_or(0).max(1000);
    frame.render_widget(
        Sparkline::default()
            .block(block)
            .data(tail)
            .max(max)
            .style(Style::new().fg(Color::Green)),
        area,
    );
}

fn holder_list(frame: &mut Frame<'_>, area: Rect, lock: &LockStats) {
    let block = Block::new()
        .borders(Borders::TOP)
        .title(" held at, while others waited ");
    let mut holders: Vec<_> = lock.holders.iter().collect();
    holders.sort_by(|a, b| {
        b.wait_ns_total
            .cmp(&a.wait_ns_total)
            .then_with(|| a.site.cmp(&b.site))
    });
    let all: u64 = holders.iter().map(|h| h.wait_ns_total).sum();
    let lines: Vec<Line<'_>> = if holders.is_empty() {
        vec![Line::styled(
            "no contended acquisition recorded a holder",
            Style::new().fg(Color::DarkGray),
        )]
    } else {
        holders
            .iter()
            .map(|h| {
                let share = lockmeter_model::percent(h.wait_ns_total, all);
                Line::from(vec![
                    Span::styled(
                        format!(
                            "{:>6} {:>7}x {:>7} ",
                            format_pct(share),
                            compact_count(h.contended),
                            format_ns(h.wait_ns_total)
                        ),
                        Style::new().fg(Color::Magenta),
                    ),
                    Span::raw(h.site.clone()),
                ])
            })
            .collect()
    };
    frame.render_widget(Paragraph::new(lines).block(block), area);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bars_cover_every_sample_and_fit() {
        let values: Vec<u64> = (0..200).map(|i| 100 + i * i * 50).collect();
        let d = Dist::of_samples(&values);
        for rows in [1, 3, 8, 40] {
            let bars = histogram_bars(&d, rows);
            assert!(bars.len() <= rows, "{} bars for {rows} rows", bars.len());
            assert_eq!(bars.iter().map(|b| b.1).sum::<u64>(), 200);
        }
    }

    #[test]
    fn gaps_between_buckets_show_as_empty_bars() {
        let d = Dist::of_samples(&[10, 10, 1_000_000]);
        let bars = histogram_bars(&d, 200);
        assert!(bars.len() > 2);
        assert_eq!(bars.first().unwrap().1, 2);
        assert_eq!(bars.last().unwrap().1, 1);
        assert!(bars[1..bars.len() - 1].iter().all(|b| b.1 == 0));
    }

    #[test]
    fn empty_dist_has_no_bars() {
        assert!(histogram_bars(&Dist::default(), 10).is_empty());
    }
}
