//! What an example prints: its results in the shape of its seed, the
//! lockmeter tables that explain them, `--json` and `--dump` files.

use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use lockmeter_model::render::{self, TableOptions};
use lockmeter_model::{Snapshot, Stats};
use serde::{Deserialize, Serialize};

use crate::cli::CommonArgs;

/// One measured variant: its snapshot, and which rows explain it.
#[derive(Debug, Clone)]
pub struct VariantRun {
    /// File-name-safe name: `wake_all`, `semaphore`, ...
    pub variant: String,
    /// What the printed table is headed with.
    pub title: String,
    pub snapshot: Snapshot,
    /// Show only locks matching this text (see [`TableOptions::filter`]).
    pub filter: Option<String>,
}

/// What an experiment returns: its results and a snapshot per variant.
#[derive(Debug, Clone)]
pub struct Outcome<R> {
    pub results: R,
    pub runs: Vec<VariantRun>,
    /// Caveats to print under the results (e.g. "could not pin threads").
    pub notes: Vec<String>,
}

impl<R> Outcome<R> {
    /// An outcome with `results` so far and no runs or notes yet.
    pub fn new(results: R) -> Outcome<R> {
        Outcome {
            results,
            runs: Vec::new(),
            notes: Vec::new(),
        }
    }

    /// Keeps the snapshot of one run, printed under `title` with the locks
    /// that match `filter`, and dumped as `variant`.
    pub fn keep_run(
        &mut self,
        variant: impl Into<String>,
        title: String,
        snapshot: Snapshot,
        filter: &str,
    ) {
        self.runs.push(VariantRun {
            variant: variant.into(),
            title,
            snapshot,
            filter: Some(filter.to_string()),
        });
    }
}

/// The `--json` document: which example, how it was run, its results.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Report<R> {
    pub example: String,
    pub quick: bool,
    /// CPUs the process could use.
    pub cpus: usize,
    #[serde(default)]
    pub notes: Vec<String>,
    pub results: R,
}

/// Every example's `main` after its options: `run` the experiment under a
/// global lockmeter layer and [`conclude`].
pub fn measure<R: Serialize + Clone>(
    args: &CommonArgs,
    example: &str,
    run: impl FnOnce(&lockmeter::Handle) -> io::Result<Outcome<R>>,
    render_results: impl Fn(&R) -> String,
) -> ExitCode {
    let handle = crate::meter::install_global();
    conclude(args, example, run(&handle), render_results)
}

/// The end of every example's `main`: the outcome of its run reported by
/// [`finish`], or the error on stderr and a failure exit.
pub fn conclude<R: Serialize + Clone>(
    args: &CommonArgs,
    example: &str,
    outcome: io::Result<Outcome<R>>,
    render_results: impl Fn(&R) -> String,
) -> ExitCode {
    match outcome {
        Ok(outcome) => finish(args, example, &outcome, render_results),
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Prints the outcome as the options ask and writes the dumps (without
/// idle rows, so `lockmeter diff` shows a lock that a fix removed as
/// removed). Returns a failure exit code if a dump could not be written.
pub fn finish<R: Serialize + Clone>(
    args: &CommonArgs,
    example: &str,
    outcome: &Outcome<R>,
    render_results: impl Fn(&R) -> String,
) -> ExitCode {
    let mut ok = true;
    if let Some(dir) = &args.dump {
        for run in &outcome.runs {
            match write_dump(dir, example, &run.variant, &without_idle(&run.snapshot)) {
                Ok(path) => eprintln!("dumped {}", path.display()),
                Err(e) => {
                    eprintln!("error: cannot write dump for {}: {e}", run.variant);
                    ok = false;
                }
            }
        }
    }
    let text = if args.json {
        let report = Report {
            example: example.to_string(),
            quick: args.quick,
            cpus: crate::affinity::cpu_count(),
            notes: outcome.notes.clone(),
            results: outcome.results.clone(),
        };
        match serde_json::to_string_pretty(&report) {
            Ok(s) => s + "\n",
            Err(e) => {
                eprintln!("error: cannot serialise results: {e}");
                return ExitCode::FAILURE;
            }
        }
    } else {
        human(outcome, render_results)
    };
    let mut out = io::stdout().lock();
    if out
        .write_all(text.as_bytes())
        .and_then(|()| out.flush())
        .is_err()
    {
        return ExitCode::FAILURE;
    }
    if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

/// The human-readable report: results, notes, then a lockmeter table per
/// variant.
pub fn human<R>(outcome: &Outcome<R>, render_results: impl Fn(&R) -> String) -> String {
    let mut s = render_results(&outcome.results);
    for note in &outcome.notes {
        s.push_str(&format!("note: {note}\n"));
    }
    for run in &outcome.runs {
        let opts = TableOptions {
            filter: run.filter.clone(),
            ..TableOptions::default()
        };
        s.push_str(&format!("\n== lockmeter: {} ==\n", run.title));
        s.push_str(&render::text_table(&without_idle(&run.snapshot), &opts));
    }
    s
}

/// `snap` without the locks and call sites that did nothing in its window
/// (a window after a reset still lists everything seen before it, at zero).
pub fn without_idle(snap: &Snapshot) -> Snapshot {
    let mut out = snap.clone();
    for lock in &mut out.locks {
        lock.sites.retain(|s| busy(&s.stats));
    }
    out.locks.retain(|l| busy(&l.total));
    out
}

/// The totals of lock `id` in `snap`; zeros if it never appeared.
pub fn lock_totals(snap: &Snapshot, id: &str) -> Stats {
    snap.lock(id).map(|l| l.total.clone()).unwrap_or_default()
}

fn busy(s: &Stats) -> bool {
    s.acquisitions + s.rejected + s.wake_calls + s.waits + s.wakeups + s.spurious_wakeups > 0
}

/// Writes `snap` as v1 JSON to `dir/<example>-<variant>.json`, through a
/// temporary file in the same directory and a rename, so a reader never
/// sees half a file. Creates `dir` if needed.
pub fn write_dump(
    dir: &Path,
    example: &str,
    variant: &str,
    snap: &Snapshot,
) -> io::Result<PathBuf> {
    fs::create_dir_all(dir)?;
    let name = format!("{example}-{variant}.json");
    let path = dir.join(&name);
    let tmp = dir.join(format!(".{name}.tmp{}", std::process::id()));
    let write = || -> io::Result<()> {
        let mut f = fs::File::create(&tmp)?;
        f.write_all(render::json(snap).as_bytes())?;
        f.write_all(b"\n")?;
        f.sync_all()?;
        fs::rename(&tmp, &path)
    };
    write().inspect_err(|_| {
        let _ = fs::remove_file(&tmp);
    })?;
    Ok(path)
}

/// A plain text table: the first `left` columns left-aligned, the rest
/// right-aligned, two spaces apart.
#[derive(Debug, Clone, Default)]
pub struct TextTable {
    headers: Vec<String>,
    rows: Vec<Vec<String>>,
    left: usize,
}

impl TextTable {
    pub fn new(headers: &[&str], left: usize) -> TextTable {
        TextTable {
            headers: headers.iter().map(|h| h.to_string()).collect(),
            rows: Vec::new(),
            left,
        }
    }

    pub fn row(&mut self, cells: Vec<String>) -> &mut Self {
        self.rows.push(cells);
        self
    }

    pub fn render(&self) -> String {
        let cols = self
            .rows
            .iter()
            .map(Vec::len)
            .chain([self.headers.len()])
            .max()
            .unwrap_or(0);
        let mut width = vec![0; cols];
        for line in std::iter::once(&self.headers).chain(&self.rows) {
            for (i, cell) in line.iter().enumerate() {
                width[i] = width[i].max(cell.chars().count());
            }
        }
        let mut out = String::new();
        for line in std::iter::once(&self.headers).chain(&self.rows) {
            let cells: Vec<String> = (0..cols)
                .map(|i| {
                    let cell = line.get(i).map_or("", String::as_str);
                    if i < self.left {
                        format!("{cell:<w$}", w = width[i])
                    } else {
                        format!("{cell:>w$}", w = width[i])
                    }
                })
                .collect();
            out.push_str(cells.join("  ").trim_end());
            out.push('\n');
        }
        out
    }
}

/// The distinct values, in increasing order: the sizes (sleepers, pool
/// sizes) that a run measured, one table line or bar group each.
pub fn distinct<T: Ord>(values: impl IntoIterator<Item = T>) -> Vec<T> {
    let mut v: Vec<T> = values.into_iter().collect();
    v.sort_unstable();
    v.dedup();
    v
}

/// `v` with `decimals` decimals.
pub fn fixed(v: f64, decimals: usize) -> String {
    format!("{v:.decimals$}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_aligns_text_left_and_numbers_right() {
        let mut t = TextTable::new(&["name", "n"], 1);
        t.row(vec!["a".into(), "100".into()]);
        t.row(vec!["bbb".into(), "2".into()]);
        assert_eq!(t.render(), "name    n\na     100\nbbb     2\n");
    }
}
