//! Flame graphs (SVG) drawn by the `inferno` crate from the folded lines.

use super::{folded, Metric};
use crate::stacks::Side;
use crate::Snapshot;

/// The flame graph of one side as SVG text. `Err` only when inferno
/// refuses the input.
pub fn svg(snap: &Snapshot, side: Side, metric: Metric) -> Result<String, String> {
    let lines = folded::lines(snap, side, metric);
    let mut opts = inferno::flamegraph::Options::default();
    opts.title = format!(
        "lockmeter: {} side, {}",
        side.as_str(),
        metric_title(metric)
    );
    opts.count_name = metric_unit(metric).to_string();
    // An empty profile still makes a (blank) picture rather than an error.
    let placeholder = ["[no contention recorded] 1".to_string()];
    let lines: Vec<&str> = if lines.is_empty() {
        placeholder.iter().map(String::as_str).collect()
    } else {
        lines.iter().map(String::as_str).collect()
    };
    let mut out = Vec::new();
    inferno::flamegraph::from_lines(&mut opts, lines, &mut out).map_err(|e| e.to_string())?;
    String::from_utf8(out).map_err(|e| e.to_string())
}

fn metric_title(m: Metric) -> &'static str {
    match m {
        Metric::Contentions => "contended acquisitions",
        Metric::Wait => "time waited",
        Metric::Hold => "time held",
        Metric::Acquisitions => "acquisitions",
    }
}

fn metric_unit(m: Metric) -> &'static str {
    match m {
        Metric::Wait | Metric::Hold => "ns",
        Metric::Contentions | Metric::Acquisitions => "acquisitions",
    }
}
