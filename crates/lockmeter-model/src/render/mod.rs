//! Renderings of a snapshot: the classic Lockmeter text table, CSV and JSON.
//!
//! Every function here is pure and deterministic: the same snapshot and
//! options give the same bytes, so the output can be golden-tested and
//! pasted into a bug report. Nothing panics on odd input (huge counters,
//! empty windows, names with newlines); such values are shown, not trusted.
//!
//! - [`text_table`]: `UTIL CON HOLD MEAN(MAX) WAIT MEAN(MAX) TOTAL NOWAIT SPIN
//!   RJECT NAME`, one row per lock, call sites indented under it, nested
//!   locks under their parent, and a `*TOTAL*` row.
//! - [`csv_table`]: one row per lock and per call site with every field.
//! - [`json`]: the v1 object itself.
//! - [`diff_text`] / [`diff_csv`]: reports of a [`crate::diff::SnapshotDiff`].
//! - [`sorted_locks`] / [`sorted_lock_rows`]: the row order all of these
//!   use, for the viewer to share.

mod csv;
mod diff_report;
mod now;
mod order;
mod sort;
mod text;

pub use self::csv::csv_table;
pub use self::diff_report::{diff_csv, diff_text};
pub use self::now::{holder_line, mode_suffix, now_text, waiter_line};
pub use self::order::{sorted_lock_rows, sorted_locks, sorted_sites, LockRow};
pub use self::sort::{ParseSortKeyError, SortKey, TableOptions};
pub use self::text::{text_table, text_table_with};

use crate::Snapshot;

/// The snapshot as pretty-printed v1 JSON, the same object a dump holds.
///
/// Serialising a [`Snapshot`] cannot fail in practice (every key is a
/// string); should it ever, the result is a JSON object with an `error`.
pub fn json(snap: &Snapshot) -> String {
    match serde_json::to_string_pretty(snap) {
        Ok(text) => text,
        Err(e) => serde_json::json!({ "error": e.to_string() }).to_string(),
    }
}

/// `name (pid N)  window 2.00s  clock tsc  4 lock classes`, then `shown`
/// (e.g. ` (3 shown)`) and how holds were sampled: the head of the text
/// table and of each side of a diff report.
fn heading(
    process: &crate::ProcessInfo,
    elapsed_ns: u64,
    clock: &str,
    locks: usize,
    shown: &str,
    sampling: &crate::Sampling,
) -> String {
    use crate::format::{format_ns, sanitize};
    use std::fmt::Write as _;
    let name = if process.name.is_empty() {
        "(unnamed)".to_string()
    } else {
        sanitize(&process.name)
    };
    let mut s = format!(
        "{name} (pid {})  window {}  clock {}  {locks} lock classes{shown}",
        process.pid,
        format_ns(elapsed_ns),
        sanitize(clock),
    );
    let every = sampling.uncontended_hold_every;
    if every > 1 {
        let _ = write!(s, "  hold sampled 1/{every} uncontended");
    }
    let every = sampling.contended_wait_every;
    if every > 1 {
        let _ = write!(s, ", 1/{every} contended after 64 per site");
    }
    s
}
