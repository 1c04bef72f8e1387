//! Rows of results, their goals, and the table and JSON they print as.
//!
//! A row measured as interleaved pairs carries the spread of its pairwise
//! ratios, and is judged against its goal only when that spread allows:
//! when the goal lies inside the interquartile range of the pairwise
//! ratios (and that range is wider than [`JUDGEABLE_IQR`] of the median),
//! one half of the pairs says PASS and the other MISS, and the row is
//! NOISY instead. A row that would miss while the host probe says the core
//! was shared ([`crate::host`]) is SHARED instead: its ratio overstates
//! lockmeter's cost on a core of its own, so it is not judged either.
//! A contended row measured while the hypervisor moved the vCPUs
//! ([`crate::transfer`]) is judged at each placement apart, and is MOVED
//! when one placement meets the goal and the other misses it.

use std::fmt::Write as _;

use serde_json::{json, Map, Value};

use crate::host;
use crate::measure::{Placements, Spread};

/// An interquartile range narrower than this share of the median is
/// tight enough to judge by the median even when it contains the goal.
pub const JUDGEABLE_IQR: f64 = 0.02;

/// What a row's figures measure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    /// Nanoseconds per operation (lower is better).
    NsPerOp,
    /// Million operations per second, all threads together (higher is better).
    MopsPerSec,
    /// Milliseconds.
    Millis,
    /// Kibibytes of resident memory.
    KiB,
    /// Instructions executed per operation, counted by callgrind.
    InstrPerOp,
}

impl Unit {
    /// Whether a larger figure (and ratio to bare) is the better one:
    /// throughput; for every other unit, less is better.
    pub fn higher_is_better(self) -> bool {
        self == Unit::MopsPerSec
    }

    fn label(self) -> &'static str {
        match self {
            Unit::NsPerOp => "ns/op",
            Unit::MopsPerSec => "Mops/s",
            Unit::Millis => "ms",
            Unit::KiB => "KiB",
            Unit::InstrPerOp => "Ir/op",
        }
    }
}

/// The goal a row is held to.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Goal {
    /// `ratio <= x`.
    RatioAtMost(f64),
    /// `ratio >= x`.
    RatioAtLeast(f64),
    /// `lo <= ratio <= hi`: an estimate checked against a measurement
    /// (self-accounting), wrong either way.
    RatioWithin(f64, f64),
    /// The instrumented figure is below `x`.
    Below(f64),
    /// Reported for the analysis; no goal.
    Info,
}

impl Goal {
    fn label(self) -> String {
        match self {
            Goal::RatioAtMost(x) => format!("<= {x:.2}"),
            Goal::RatioAtLeast(x) => format!(">= {x:.2}"),
            Goal::RatioWithin(lo, hi) => format!("{lo:.2}-{hi:.2}"),
            Goal::Below(x) => format!("< {x}"),
            Goal::Info => "-".to_string(),
        }
    }

    /// The ratio a one-sided goal is drawn at.
    fn threshold(self) -> Option<f64> {
        match self {
            Goal::RatioAtMost(x) | Goal::RatioAtLeast(x) => Some(x),
            Goal::RatioWithin(..) | Goal::Below(_) | Goal::Info => None,
        }
    }

    /// Whether `ratio` meets a ratio goal (any ratio meets the others).
    fn met_by(self, ratio: f64) -> bool {
        match self {
            Goal::RatioAtMost(x) => ratio <= x,
            Goal::RatioAtLeast(x) => ratio >= x,
            Goal::RatioWithin(lo, hi) => lo <= ratio && ratio <= hi,
            Goal::Below(_) | Goal::Info => true,
        }
    }
}

/// One measured row.
#[derive(Debug, Clone)]
pub struct Row {
    /// The JSON key: stable, snake_case.
    pub key: String,
    /// What the row measures, for the table.
    pub label: String,
    pub unit: Unit,
    /// The baseline figure (bare primitive, or the stated baseline).
    pub bare: Option<f64>,
    /// The figure under test.
    pub instrumented: Option<f64>,
    /// instrumented / bare (median of per-repetition ratios where paired).
    pub ratio: Option<f64>,
    /// The spread of the per-repetition ratios, where paired.
    pub spread: Option<Spread>,
    /// Where set, the 90 % confidence interval of the median ratio, and
    /// the row is NOISY only when the goal lies inside it (instead of
    /// inside the IQR): for rows measured over many rounds, whose IQR
    /// stays wide however many there are (`--prometheus --rounds`).
    pub median_ci: Option<(f64, f64)>,
    pub goal: Goal,
    /// What `bare` and `instrumented` are, when not obvious.
    pub note: String,
    /// The row's median host probe, ns per round (see [`crate::host`]).
    pub host_probe: Option<f64>,
    /// For contended rows, the line round trips it was measured at.
    pub placements: Option<Placements>,
    /// For contended rows, CON % as the instrumented side counted it
    /// (lockmeter's layer, or the least-features floor's own count) and as
    /// the bare lock's counted twin found it in the same mix (`own_con`;
    /// NaN where no twin ran).
    pub con: Option<Con>,
    /// Set when the row's figure rests on one taken under other host
    /// conditions than the row's own (self-accounting's calibration, on a
    /// differently shared core): a miss is then SHARED, as one measured on
    /// a shared core is.
    pub incomparable: bool,
}

/// A contended row's contention, lockmeter's and the bare lock's own.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Con {
    pub observed_pct: f64,
    pub bare_pct: f64,
}

/// Pairs a placement needs for its ratio to count in [`Verdict::Moved`].
const PAIRS_PER_PLACEMENT: usize = 3;

/// Whether a row met its goal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    Pass,
    Miss,
    /// The pairwise ratios fall on both sides of the goal: not judged.
    Noisy,
    /// A miss measured while the host probe ran at least
    /// [`host::SHARED_CORE`] times slower than its best: not judged.
    Shared,
    /// Measured at two placements of the vCPUs ([`crate::transfer`]), one
    /// meeting the goal and the other not: not judged as one figure.
    Moved,
    /// No goal.
    None,
}

impl Verdict {
    fn label(self) -> &'static str {
        match self {
            Verdict::Pass => "PASS",
            Verdict::Miss => "MISS",
            Verdict::Noisy => "NOISY",
            Verdict::Shared => "SHARED",
            Verdict::Moved => "MOVED",
            Verdict::None => "",
        }
    }
}

impl Row {
    /// A row with no figures yet.
    pub fn new(key: &str, label: &str, unit: Unit, goal: Goal) -> Row {
        Row {
            key: key.to_string(),
            label: label.to_string(),
            unit,
            bare: None,
            instrumented: None,
            ratio: None,
            spread: None,
            median_ci: None,
            goal,
            note: String::new(),
            con: None,
            host_probe: None,
            placements: None,
            incomparable: false,
        }
    }

    /// Sets the figures of an interleaved pair.
    pub fn with_pair(mut self, p: crate::measure::Pair) -> Row {
        self.bare = finite(p.bare);
        self.instrumented = finite(p.instrumented);
        self.ratio = finite(p.ratio);
        self.spread = (p.spread.pairs > 0).then_some(p.spread);
        self.host_probe = finite(p.host_probe);
        self.placements = p.placements;
        self
    }

    /// Sets the contention figures of a contended row.
    pub fn with_con(mut self, con: Con) -> Row {
        self.con = Some(con);
        self
    }

    /// Sets the note.
    pub fn note(mut self, note: impl Into<String>) -> Row {
        self.note = note.into();
        self
    }

    /// Whether the row has a goal to be judged by.
    pub fn judged(&self) -> bool {
        self.goal != Goal::Info
    }

    /// Pass, miss, noisy or shared; a row that could not be measured
    /// misses its goal.
    pub fn verdict(&self) -> Verdict {
        if self.moved() {
            return Verdict::Moved;
        }
        if self.noisy() {
            return Verdict::Noisy;
        }
        match (self.goal, self.ratio, self.instrumented) {
            (Goal::Info, _, _) => Verdict::None,
            (Goal::RatioAtMost(_) | Goal::RatioAtLeast(_) | Goal::RatioWithin(..), Some(r), _)
                if self.goal.met_by(r) =>
            {
                Verdict::Pass
            }
            (Goal::Below(x), _, Some(v)) if v < x => Verdict::Pass,
            (Goal::RatioAtMost(_) | Goal::RatioAtLeast(_) | Goal::RatioWithin(..), Some(_), _)
                if self.shared_core() || self.incomparable =>
            {
                Verdict::Shared
            }
            _ => Verdict::Miss,
        }
    }

    /// Whether the row's pairs at the two placements, each enough to
    /// judge, fall on either side of the goal.
    fn moved(&self) -> bool {
        let Some(split) = self.placements.and_then(|p| p.split) else {
            return false;
        };
        let (near, far) = (split.near, split.far);
        near.1 >= PAIRS_PER_PLACEMENT
            && far.1 >= PAIRS_PER_PLACEMENT
            && self.goal.met_by(near.0) != self.goal.met_by(far.0)
    }

    /// What the line round trips say of the row, for its note.
    fn placement_note(&self) -> Option<String> {
        let p = self.placements?;
        let range = format!(
            "line round trip {:.0}-{:.0} ns between the CPUs",
            p.min_ns, p.max_ns
        );
        Some(match p.split {
            None => range,
            Some(s) => format!(
                "{range}, moved: ratio {:.2} over {} pairs under {:.0} ns, {:.2} over {} above",
                s.near.0, s.near.1, s.at_ns, s.far.0, s.far.1
            ),
        })
    }

    /// The row's host factor: its median probe against the run's best.
    pub fn host_factor(&self) -> Option<f64> {
        self.host_probe.and_then(host::factor)
    }

    /// Whether the host probe says the core was shared during the row.
    pub fn shared_core(&self) -> bool {
        self.host_factor().is_some_and(|f| f >= host::SHARED_CORE)
    }

    /// Whether the goal lies inside the interquartile range of the pairwise
    /// ratios, and that range is too wide to let the median decide.
    fn noisy(&self) -> bool {
        if let (Some(x), Some((lo, hi))) = (self.goal.threshold(), self.median_ci) {
            return lo <= x && x <= hi;
        }
        match (self.goal.threshold(), self.spread, self.ratio) {
            (Some(x), Some(s), Some(r)) => {
                s.q1 <= x && x <= s.q3 && s.relative_iqr(r) > JUDGEABLE_IQR
            }
            _ => false,
        }
    }

    /// instrumented - bare, for time rows: the cost added per operation.
    fn delta(&self) -> Option<f64> {
        match (self.unit, self.bare, self.instrumented) {
            (Unit::NsPerOp, Some(b), Some(i)) => Some(i - b),
            _ => None,
        }
    }
}

fn finite(x: f64) -> Option<f64> {
    x.is_finite().then_some(x)
}

fn fmt_num(x: Option<f64>, unit: Unit) -> String {
    match x {
        None => "-".to_string(),
        Some(v) => match unit {
            Unit::KiB if v.abs() >= 100.0 => format!("{v:.0}"),
            _ if v.abs() >= 100.0 => format!("{v:.0}"),
            _ if v.abs() >= 10.0 => format!("{v:.1}"),
            _ => format!("{v:.2}"),
        },
    }
}

/// `q1-q3` of the pairwise ratios, or `-`.
fn fmt_spread(s: Option<Spread>) -> String {
    match s {
        Some(s) if s.q1.is_finite() => format!("{:.2}-{:.2}", s.q1, s.q3),
        _ => "-".to_string(),
    }
}

/// The human table, with PASS/MISS/NOISY per row that has a goal.
pub fn table(rows: &[Row]) -> String {
    let width = rows
        .iter()
        .map(|r| r.label.len())
        .max()
        .unwrap_or(10)
        .max(10);
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{:<width$}  {:>9}  {:>9}  {:>7}  {:>11}  {:>8}  {:>5}  {:>7}  {:<6}  verdict",
        "row", "bare", "instr", "ratio", "IQR", "+ns/op", "host", "goal", "unit"
    );
    for r in rows {
        let _ = writeln!(
            out,
            "{:<width$}  {:>9}  {:>9}  {:>7}  {:>11}  {:>8}  {:>5}  {:>7}  {:<6}  {}",
            r.label,
            fmt_num(r.bare, r.unit),
            fmt_num(r.instrumented, r.unit),
            r.ratio.map_or("-".to_string(), |x| format!("{x:.2}")),
            match r.median_ci {
                Some((lo, hi)) => format!("{lo:.2}-{hi:.2}ci"),
                None => fmt_spread(r.spread),
            },
            r.delta().map_or(String::new(), |d| format!("{d:+.2}")),
            r.host_factor()
                .map_or("-".to_string(), |f| format!("{f:.2}")),
            r.goal.label(),
            r.unit.label(),
            r.verdict().label(),
        );
    }
    let goals = rows.iter().filter(|r| r.goal != Goal::Info).count();
    let count = |v: Verdict| rows.iter().filter(|r| r.verdict() == v).count();
    let by_ci = match rows.iter().any(|r| r.median_ci.is_some()) {
        true => "; in rows whose spread ends in \"ci\", inside the 90 % confidence interval of the median",
        false => "",
    };
    let shared = match count(Verdict::Shared) {
        0 => String::new(),
        n => format!(
            ", {n} missed on a shared core (SHARED: the host probe ran {:.2}x or more \
             slower than its best during the row, which inflates an instruction-bound \
             path's cost against a latency-bound bare lock; rerun on a quiet host)",
            host::SHARED_CORE
        ),
    };
    let moved = match count(Verdict::Moved) {
        0 => String::new(),
        n => format!(
            ", {n} measured across a move of the vCPUs (MOVED: the pairs at one \
             placement meet the goal and those at the other do not; both are in the note)"
        ),
    };
    let _ = writeln!(
        out,
        "\n{}/{goals} goals met, {} missed, {} too noisy to judge \
         (NOISY: the goal lies inside the interquartile range of the pairwise ratios{by_ci}){shared}{moved}.",
        count(Verdict::Pass),
        count(Verdict::Miss),
        count(Verdict::Noisy),
    );
    if rows.iter().any(|r| r.host_probe.is_some()) {
        let _ = writeln!(
            out,
            "host: each row's median probe against the run's fastest ({:.3} ns/round), see `host.rs`.",
            host::best()
        );
    }
    let notes: Vec<&Row> = rows.iter().filter(|r| !r.note.is_empty()).collect();
    if !notes.is_empty() {
        let _ = writeln!(out, "\nNotes:");
        for r in notes {
            match r.placement_note() {
                Some(p) => writeln!(out, "  {}: {}; {p}", r.label, r.note),
                None => writeln!(out, "  {}: {}", r.label, r.note),
            }
            .ok();
        }
    }
    out
}

/// One JSON object whose keys are the row keys.
pub fn json(rows: &[Row]) -> Value {
    let mut map = Map::new();
    for r in rows {
        map.insert(
            r.key.clone(),
            json!({
                "label": r.label,
                "unit": r.unit.label(),
                "bare": r.bare,
                "instrumented": r.instrumented,
                "ratio": r.ratio,
                "spread": r.spread.map(|s| json!({
                    "q1": finite(s.q1),
                    "q3": finite(s.q3),
                    "min": finite(s.min),
                    "max": finite(s.max),
                    "pairs": s.pairs,
                })),
                "median_ci": r.median_ci.map(|(lo, hi)| json!([finite(lo), finite(hi)])),
                "noisy": r.verdict() == Verdict::Noisy,
                "delta_ns_per_op": r.delta(),
                "host_factor": r.host_factor(),
                "host_probe_ns": r.host_probe,
                "round_trip_ns": r.placements.map(|p| json!({
                    "min": p.min_ns,
                    "max": p.max_ns,
                    "moved": p.split.map(|s| json!({
                        "at_ns": s.at_ns,
                        "near": {"ratio": finite(s.near.0), "pairs": s.near.1},
                        "far": {"ratio": finite(s.far.0), "pairs": s.far.1},
                    })),
                })),
                "con_percent": r.con.map(|c| json!({
                    "observed": finite(c.observed_pct),
                    "bare": finite(c.bare_pct),
                })),
                "goal": r.goal.label(),
                "verdict": match r.verdict() {
                    Verdict::None => Value::Null,
                    v => Value::from(v.label()),
                },
                "note": r.note,
            }),
        );
    }
    Value::Object(map)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(goal: Goal, ratio: Option<f64>, value: Option<f64>) -> Row {
        let mut r = Row::new("k", "label", Unit::NsPerOp, goal);
        r.ratio = ratio;
        r.instrumented = value;
        r
    }

    fn moved_row(near: f64, far: f64, pairs: usize) -> Row {
        let mut r = row(Goal::RatioAtLeast(0.90), Some(near.min(far)), Some(1.0));
        r.placements = Some(Placements {
            min_ns: 40.0,
            max_ns: 400.0,
            split: Some(crate::measure::Split {
                at_ns: 126.0,
                near: (near, pairs),
                far: (far, pairs),
            }),
        });
        r
    }

    #[test]
    fn a_contended_rows_contention_is_in_the_json_and_absent_elsewhere() {
        let con = Con {
            observed_pct: 14.5,
            bare_pct: 0.25,
        };
        let j = json(&[row(Goal::Info, Some(0.8), Some(1.0)).with_con(con)]);
        assert_eq!(j["k"]["con_percent"]["observed"], 14.5);
        assert_eq!(j["k"]["con_percent"]["bare"], 0.25);
        let j = json(&[row(Goal::Info, Some(0.8), Some(1.0))]);
        assert!(j["k"]["con_percent"].is_null());
    }

    #[test]
    fn a_row_whose_placements_disagree_on_the_goal_is_moved() {
        let r = moved_row(0.95, 0.70, 3);
        assert_eq!(r.verdict(), Verdict::Moved);
        let t = table(&[r.clone().note("n")]);
        assert!(
            t.contains("MOVED") && t.contains("1 measured across a move"),
            "{t}"
        );
        assert!(
            t.contains("ratio 0.95 over 3 pairs under 126 ns, 0.70 over 3 above"),
            "{t}"
        );
        assert_eq!(
            json(&[r])["k"]["round_trip_ns"]["moved"]["far"]["ratio"],
            0.70
        );
        // Both placements on one side of the goal: judged as usual.
        assert_eq!(moved_row(0.70, 0.75, 3).verdict(), Verdict::Miss);
        assert_eq!(moved_row(0.95, 0.99, 3).verdict(), Verdict::Pass);
        // Too few pairs at a placement to say it disagrees.
        assert_eq!(moved_row(0.95, 0.70, 2).verdict(), Verdict::Miss);
    }

    #[test]
    fn verdicts_follow_the_goal_direction() {
        let cases = [
            (Goal::RatioAtMost(1.1), Some(1.05), None, Verdict::Pass),
            (Goal::RatioAtMost(1.1), Some(1.2), None, Verdict::Miss),
            (Goal::RatioAtLeast(0.8), Some(0.9), None, Verdict::Pass),
            (Goal::RatioAtLeast(0.8), Some(0.7), None, Verdict::Miss),
            (Goal::Below(10.0), None, Some(3.0), Verdict::Pass),
            (Goal::Below(10.0), None, Some(12.0), Verdict::Miss),
            (Goal::Info, Some(9.0), None, Verdict::None),
        ];
        for (i, (goal, ratio, value, want)) in cases.into_iter().enumerate() {
            assert_eq!(row(goal, ratio, value).verdict(), want, "case {i}");
        }
    }

    #[test]
    fn an_unmeasured_row_misses() {
        assert_eq!(
            row(Goal::RatioAtMost(1.1), None, None).verdict(),
            Verdict::Miss
        );
        assert_eq!(row(Goal::Below(10.0), None, None).verdict(), Verdict::Miss);
    }

    #[test]
    fn json_has_one_key_per_row_with_the_three_figures() {
        let mut a = row(Goal::RatioAtMost(1.1), Some(1.05), Some(4.2));
        a.bare = Some(4.0);
        let mut b = a.clone();
        b.key = "other".into();
        let v = json(&[a, b]);
        let obj = v.as_object().unwrap();
        assert_eq!(obj.len(), 2);
        assert_eq!(obj["k"]["bare"], 4.0);
        assert_eq!(obj["k"]["instrumented"], 4.2);
        assert_eq!(obj["k"]["ratio"], 1.05);
        assert_eq!(obj["k"]["verdict"], "PASS");
    }

    #[test]
    fn table_marks_pass_and_miss() {
        let t = table(&[
            row(Goal::RatioAtMost(1.1), Some(1.0), None),
            row(Goal::RatioAtMost(1.1), Some(2.0), None),
        ]);
        assert!(t.contains("PASS"));
        assert!(t.contains("MISS"));
        assert!(t.contains("1/2 goals met, 1 missed, 0 too noisy"));
    }

    fn spread(q1: f64, q3: f64) -> Option<Spread> {
        Some(Spread {
            q1,
            q3,
            min: q1,
            max: q3,
            pairs: 5,
        })
    }

    #[test]
    fn the_spread_decides_whether_a_row_is_judged() {
        let cases = [
            // The goal inside a wide IQR: noisy, whichever side the median is.
            (Goal::RatioAtLeast(0.9), 0.95, (0.6, 1.1), Verdict::Noisy),
            (Goal::RatioAtMost(1.2), 1.1, (1.0, 1.4), Verdict::Noisy),
            // Wide, but all on one side of the goal: judged.
            (Goal::RatioAtLeast(0.6), 0.3, (0.2, 0.55), Verdict::Miss),
            (Goal::RatioAtMost(1.2), 1.0, (0.8, 1.19), Verdict::Pass),
            // The goal inside an IQR under 2 % of the median: the median decides.
            (
                Goal::RatioAtMost(1.05),
                1.051,
                (1.045, 1.055),
                Verdict::Miss,
            ),
            (Goal::RatioAtLeast(0.9), 0.905, (0.899, 0.91), Verdict::Pass),
        ];
        for (i, (goal, ratio, (q1, q3), want)) in cases.into_iter().enumerate() {
            let mut r = row(goal, Some(ratio), None);
            r.spread = spread(q1, q3);
            assert_eq!(r.verdict(), want, "case {i}");
        }
    }

    #[test]
    fn a_median_interval_judges_instead_of_the_iqr() {
        // A wide IQR around the goal, but the median's interval beside it.
        let mut r = row(Goal::RatioAtMost(1.03), Some(1.0), None);
        r.spread = spread(0.8, 1.2);
        assert_eq!(r.verdict(), Verdict::Noisy);
        r.median_ci = Some((0.98, 1.02));
        assert_eq!(r.verdict(), Verdict::Pass);
        r.median_ci = Some((0.99, 1.04));
        assert_eq!(r.verdict(), Verdict::Noisy);
        let mut worse = row(Goal::RatioAtMost(1.03), Some(1.06), None);
        worse.median_ci = Some((1.04, 1.08));
        assert_eq!(worse.verdict(), Verdict::Miss);
        assert_eq!(json(&[worse])["k"]["median_ci"][0], 1.04);
    }

    #[test]
    fn a_miss_on_a_shared_core_is_not_judged_but_a_pass_still_passes() {
        host::probe();
        // Probes far slower and far faster than any real best, so that
        // other tests' probes, run meanwhile, cannot change the factors.
        let (slow, fast) = (Some(1e12), Some(1e-12));
        let mut miss = row(Goal::RatioAtMost(1.2), Some(1.5), None);
        miss.host_probe = slow;
        assert_eq!(miss.verdict(), Verdict::Shared);
        let mut low = row(Goal::RatioAtLeast(0.6), Some(0.4), None);
        low.host_probe = slow;
        assert_eq!(low.verdict(), Verdict::Shared);
        miss.host_probe = fast;
        assert_eq!(miss.verdict(), Verdict::Miss);
        let mut pass = row(Goal::RatioAtMost(1.2), Some(1.1), None);
        pass.host_probe = slow;
        assert_eq!(pass.verdict(), Verdict::Pass);
        // Below goals are not ratios of a bare and an instrumented path.
        let mut mem = row(Goal::Below(1.5), None, Some(2.0));
        mem.host_probe = slow;
        assert_eq!(mem.verdict(), Verdict::Miss);
        miss.host_probe = slow;
        let t = table(&[miss.clone(), pass]);
        assert!(t.contains("SHARED"), "{t}");
        assert!(t.contains("1 missed on a shared core"), "{t}");
        assert_eq!(json(&[miss])["k"]["verdict"], "SHARED");
    }

    #[test]
    fn an_estimate_is_judged_within_its_band_and_shared_when_incomparable() {
        let within = Goal::RatioWithin(0.7, 1.3);
        for (ratio, want) in [
            (1.0, Verdict::Pass),
            (0.7, Verdict::Pass),
            (1.31, Verdict::Miss),
            (0.5, Verdict::Miss),
            (-2.0, Verdict::Miss),
        ] {
            assert_eq!(row(within, Some(ratio), None).verdict(), want, "{ratio}");
        }
        assert_eq!(row(within, None, None).verdict(), Verdict::Miss);
        // Calibrated on a differently shared core: a miss is not judged,
        // a pass still passes.
        let mut high = row(within, Some(1.6), None);
        high.incomparable = true;
        assert_eq!(high.verdict(), Verdict::Shared);
        let mut pass = row(within, Some(1.1), None);
        pass.incomparable = true;
        assert_eq!(pass.verdict(), Verdict::Pass);
        assert_eq!(json(&[pass])["k"]["goal"], "0.70-1.30");
    }

    #[test]
    fn json_carries_the_spread_and_the_noisy_verdict() {
        let mut r = row(Goal::RatioAtLeast(0.9), Some(0.95), Some(1.0));
        r.spread = spread(0.6, 1.1);
        let v = json(&[r]);
        assert_eq!(v["k"]["verdict"], "NOISY");
        assert_eq!(v["k"]["noisy"], true);
        assert_eq!(v["k"]["spread"]["q1"], 0.6);
        assert_eq!(v["k"]["spread"]["q3"], 1.1);
        assert_eq!(v["k"]["spread"]["pairs"], 5);
        let t = table(&[row(Goal::Info, None, None)]);
        assert!(t.contains("0 too noisy"));
    }
}
