//! Two small chart kinds written as SVG by hand: lines over a (log or
//! linear) x axis, and grouped bars. No fonts, no system libraries; the
//! output is deterministic text that diffs well in review.

use std::fmt::Write as _;

/// The image's size in pixels.
const WIDTH: f64 = 760.0;
const HEIGHT: f64 = 420.0;
/// The plot area; the margins around it hold the title, the axis labels
/// and (on the right) the legend.
const PLOT: Area = Area {
    left: 78.0,
    right: WIDTH - 230.0,
    top: 44.0,
    bottom: HEIGHT - 56.0,
};
const PALETTE: [&str; 6] = [
    "#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b",
];

/// Edges of a rectangle in image pixels (y grows downwards).
struct Area {
    left: f64,
    right: f64,
    top: f64,
    bottom: f64,
}

impl Area {
    const fn width(&self) -> f64 {
        self.right - self.left
    }

    const fn height(&self) -> f64 {
        self.bottom - self.top
    }
}

/// One line of a [`LineChart`].
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    pub name: String,
    pub points: Vec<(f64, f64)>,
    /// Drawn dashed: reference data such as the seed's own numbers.
    pub dashed: bool,
}

/// Lines over a shared x axis.
#[derive(Debug, Clone, PartialEq)]
pub struct LineChart {
    pub title: String,
    pub x_label: String,
    pub y_label: String,
    pub log_x: bool,
    /// Log scale on y too, for curves that span decades.
    pub log_y: bool,
    pub series: Vec<Series>,
}

/// Bars per group, one bar per series.
#[derive(Debug, Clone, PartialEq)]
pub struct BarChart {
    pub title: String,
    pub y_label: String,
    pub groups: Vec<String>,
    /// Each series has a value per group; non-finite values draw no bar.
    pub series: Vec<(String, Vec<f64>)>,
}

impl LineChart {
    pub fn to_svg(&self) -> String {
        let finite =
            |&(x, y): &(f64, f64)| x.is_finite() && y.is_finite() && (!self.log_x || x > 0.0);
        let pts: Vec<(f64, f64)> = self
            .series
            .iter()
            .flat_map(|s| s.points.iter().copied())
            .filter(finite)
            .collect();
        let (xmin, xmax) = bounds(pts.iter().map(|p| p.0)).unwrap_or((1.0, 10.0));
        let (ymin, ymax) = bounds(pts.iter().map(|p| p.1)).unwrap_or((1.0, 10.0));
        let x_axis = if self.log_x {
            Axis::log(xmin, xmax)
        } else {
            Axis::linear(xmin.min(0.0), xmax)
        };
        let y_axis = if self.log_y {
            Axis::log(ymin, ymax)
        } else {
            Axis::linear(0.0, ymax)
        };
        let mut svg = header(&self.title);
        frame(&mut svg, &x_axis, &y_axis, &self.x_label, &self.y_label);
        for (i, s) in self.series.iter().enumerate() {
            let color = PALETTE[i % PALETTE.len()];
            let coords: Vec<String> = s
                .points
                .iter()
                .filter(|p| finite(p))
                .map(|&(x, y)| format!("{:.1},{:.1}", x_axis.px(x), y_axis.py(y)))
                .collect();
            let dash = if s.dashed {
                " stroke-dasharray=\"6 4\""
            } else {
                ""
            };
            let _ = writeln!(
                svg,
                "<polyline fill=\"none\" stroke=\"{color}\" stroke-width=\"2\"{dash} points=\"{}\"/>",
                coords.join(" ")
            );
            for c in &coords {
                if let Some((x, y)) = c.split_once(',') {
                    let _ = writeln!(
                        svg,
                        "<circle cx=\"{x}\" cy=\"{y}\" r=\"3\" fill=\"{color}\"/>"
                    );
                }
            }
            legend(&mut svg, i, color, &s.name, s.dashed);
        }
        svg.push_str("</svg>\n");
        svg
    }
}

impl BarChart {
    pub fn to_svg(&self) -> String {
        let ymax = self
            .series
            .iter()
            .flat_map(|(_, v)| v.iter().copied())
            .filter(|v| v.is_finite())
            .fold(0.0f64, f64::max);
        let y_axis = Axis::linear(0.0, ymax);
        let groups = self.groups.len().max(1) as f64;
        let x_axis = Axis {
            lo: 0.0,
            hi: groups,
            log: false,
            ticks: Vec::new(),
        };
        let mut svg = header(&self.title);
        frame(&mut svg, &x_axis, &y_axis, "", &self.y_label);
        let slot = PLOT.width() / groups;
        let bars = self.series.len().max(1) as f64;
        let bar_w = slot * 0.8 / bars;
        for (g, name) in self.groups.iter().enumerate() {
            let x0 = PLOT.left + slot * g as f64 + slot * 0.1;
            text(
                &mut svg,
                (PLOT.left + slot * (g as f64 + 0.5), PLOT.bottom + 18.0),
                "middle",
                &esc(name),
            );
            for (i, (_, values)) in self.series.iter().enumerate() {
                let Some(&v) = values.get(g) else { continue };
                if !v.is_finite() {
                    continue;
                }
                let color = PALETTE[i % PALETTE.len()];
                let (x, y) = (x0 + bar_w * i as f64, y_axis.py(v));
                let h = (PLOT.bottom - y).max(0.0);
                let _ = writeln!(
                    svg,
                    "<rect x=\"{x:.1}\" y=\"{y:.1}\" width=\"{:.1}\" height=\"{h:.1}\" fill=\"{color}\"/>",
                    (bar_w - 2.0).max(1.0)
                );
                let _ = writeln!(
                    svg,
                    "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\" font-size=\"10\">{}</text>",
                    x + bar_w / 2.0 - 1.0,
                    y - 4.0,
                    short(v)
                );
            }
        }
        for (i, (name, _)) in self.series.iter().enumerate() {
            legend(&mut svg, i, PALETTE[i % PALETTE.len()], name, false);
        }
        svg.push_str("</svg>\n");
        svg
    }
}

/// An axis: its range and where its ticks go.
struct Axis {
    lo: f64,
    hi: f64,
    log: bool,
    ticks: Vec<f64>,
}

impl Axis {
    fn linear(lo: f64, hi: f64) -> Axis {
        let hi = if hi > lo { hi } else { lo + 1.0 };
        let step = nice_step((hi - lo) / 5.0);
        let top = (hi / step).ceil() * step;
        let mut ticks = Vec::new();
        let mut t = (lo / step).floor() * step;
        while t <= top + step * 1e-9 {
            ticks.push(t);
            t += step;
        }
        Axis {
            lo: ticks.first().copied().unwrap_or(lo),
            hi: top,
            log: false,
            ticks,
        }
    }

    fn log(lo: f64, hi: f64) -> Axis {
        let lo = 10f64.powf(lo.max(1e-12).log10().floor());
        let hi = 10f64.powf(hi.max(lo * 10.0).log10().ceil());
        let mut ticks = Vec::new();
        let mut decade = lo;
        while decade <= hi * (1.0 + 1e-9) {
            for m in [1.0, 2.0, 5.0] {
                let t = decade * m;
                if t <= hi * (1.0 + 1e-9) {
                    ticks.push(t);
                }
            }
            decade *= 10.0;
        }
        Axis {
            lo,
            hi,
            log: true,
            ticks,
        }
    }

    fn frac(&self, v: f64) -> f64 {
        if self.log {
            (v.log10() - self.lo.log10()) / (self.hi.log10() - self.lo.log10())
        } else {
            (v - self.lo) / (self.hi - self.lo)
        }
    }

    fn px(&self, v: f64) -> f64 {
        PLOT.left + self.frac(v) * PLOT.width()
    }

    fn py(&self, v: f64) -> f64 {
        PLOT.bottom - self.frac(v) * PLOT.height()
    }
}

/// 1, 2 or 5 times a power of ten, at least `raw`.
fn nice_step(raw: f64) -> f64 {
    if !(raw.is_finite() && raw > 0.0) {
        return 1.0;
    }
    let mag = 10f64.powf(raw.log10().floor());
    [1.0, 2.0, 5.0, 10.0]
        .into_iter()
        .map(|m| m * mag)
        .find(|&s| s >= raw)
        .unwrap_or(10.0 * mag)
}

fn bounds(values: impl Iterator<Item = f64>) -> Option<(f64, f64)> {
    values.fold(None, |acc, v| match acc {
        None => Some((v, v)),
        Some((lo, hi)) => Some((lo.min(v), hi.max(v))),
    })
}

fn header(title: &str) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{WIDTH}\" height=\"{HEIGHT}\" viewBox=\"0 0 {WIDTH} {HEIGHT}\" font-family=\"sans-serif\" font-size=\"12\">"
    );
    let _ = writeln!(s, "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>");
    let _ = writeln!(
        s,
        "<text x=\"{:.1}\" y=\"24\" text-anchor=\"middle\" font-size=\"15\" font-weight=\"bold\">{}</text>",
        (PLOT.right + PLOT.left) / 2.0,
        esc(title)
    );
    s
}

fn frame(svg: &mut String, x: &Axis, y: &Axis, x_label: &str, y_label: &str) {
    let (x0, x1, y0, y1) = (PLOT.left, PLOT.right, PLOT.bottom, PLOT.top);
    for &t in &y.ticks {
        let py = y.py(t);
        let _ = writeln!(
            svg,
            "<line x1=\"{x0}\" y1=\"{py:.1}\" x2=\"{x1}\" y2=\"{py:.1}\" stroke=\"#ddd\"/>"
        );
        text(svg, (x0 - 6.0, py + 4.0), "end", &short(t));
    }
    for &t in &x.ticks {
        let px = x.px(t);
        let _ = writeln!(
            svg,
            "<line x1=\"{px:.1}\" y1=\"{y0}\" x2=\"{px:.1}\" y2=\"{y1}\" stroke=\"#eee\"/>"
        );
        text(svg, (px, y0 + 16.0), "middle", &short(t));
    }
    let _ = writeln!(
        svg,
        "<polyline fill=\"none\" stroke=\"#333\" points=\"{x0},{y1} {x0},{y0} {x1},{y0}\"/>"
    );
    if !x_label.is_empty() {
        text(
            svg,
            ((x0 + x1) / 2.0, HEIGHT - 14.0),
            "middle",
            &esc(x_label),
        );
    }
    let _ = writeln!(
        svg,
        "<text transform=\"translate(18,{:.1}) rotate(-90)\" text-anchor=\"middle\">{}</text>",
        (y0 + y1) / 2.0,
        esc(y_label)
    );
}

/// A label at `(x, y)`, anchored `anchor` (`start`, `middle`, `end`);
/// `content` is already escaped.
fn text(svg: &mut String, (x, y): (f64, f64), anchor: &str, content: &str) {
    let _ = writeln!(
        svg,
        "<text x=\"{x:.1}\" y=\"{y:.1}\" text-anchor=\"{anchor}\">{content}</text>"
    );
}

fn legend(svg: &mut String, i: usize, color: &str, name: &str, dashed: bool) {
    let x = PLOT.right + 16.0;
    let y = PLOT.top + 10.0 + 20.0 * i as f64;
    let dash = if dashed {
        " stroke-dasharray=\"6 4\""
    } else {
        ""
    };
    let _ = writeln!(
        svg,
        "<line x1=\"{x:.1}\" y1=\"{y:.1}\" x2=\"{:.1}\" y2=\"{y:.1}\" stroke=\"{color}\" stroke-width=\"3\"{dash}/>",
        x + 22.0
    );
    let _ = writeln!(
        svg,
        "<text x=\"{:.1}\" y=\"{:.1}\">{}</text>",
        x + 28.0,
        y + 4.0,
        esc(name)
    );
}

/// A compact number: 1200 -> "1.2k", 0.25 -> "0.25".
fn short(v: f64) -> String {
    let a = v.abs();
    let s = if a >= 1e6 {
        format!("{:.1}M", v / 1e6)
    } else if a >= 1e4 {
        format!("{:.0}k", v / 1e3)
    } else if a >= 1e3 {
        format!("{:.1}k", v / 1e3)
    } else if a >= 10.0 || v.fract() == 0.0 {
        format!("{v:.0}")
    } else if a >= 1.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}").trim_end_matches('0').to_string()
    };
    s.replace(".0k", "k").replace(".0M", "M")
}

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_are_one_two_or_five() {
        assert_eq!(nice_step(0.7), 1.0);
        assert_eq!(nice_step(1.3), 2.0);
        assert_eq!(nice_step(31.0), 50.0);
        assert_eq!(nice_step(f64::NAN), 1.0);
    }

    #[test]
    fn numbers_are_short() {
        for (v, want) in [
            (1200.0, "1.2k"),
            (15000.0, "15k"),
            (0.25, "0.25"),
            (0.8, "0.8"),
            (2.0, "2"),
            (2_000_000.0, "2M"),
        ] {
            assert_eq!(short(v), want, "{v}");
        }
    }

    #[test]
    fn titles_are_escaped() {
        let c = BarChart {
            title: "a < b & c".into(),
            y_label: "y".into(),
            groups: vec!["g".into()],
            series: vec![("s".into(), vec![1.0])],
        };
        assert!(c.to_svg().contains("a &lt; b &amp; c"));
    }
}
