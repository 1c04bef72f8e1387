//! The one-shot commands: print a table, a diff, or the attachable
//! processes. Each returns its output as a string (printed by `main`), or an
//! error message for stderr and a non-zero exit.

use std::fmt::Write as _;
use std::os::unix::fs::FileTypeExt;
use std::path::{Path, PathBuf};

use clap::ValueEnum;
use lockmeter_model::advice::Thresholds;
use lockmeter_model::diff::diff_with_thresholds;
use lockmeter_model::render::{csv_table, json, text_table_with, TableOptions};
use lockmeter_model::render::{diff_csv, diff_text};
use lockmeter_model::Snapshot;
use lockmeter_wire::discovery::{list_endpoints_removing_stale, socket_dir, EndpointInfo};
use lockmeter_wire::{fetch_snapshot, parse_target, EndpointAddr};

use crate::conn::REQUEST_TIMEOUT;
use crate::fleet;
use crate::source::{load_file, Loaded};

/// How a one-shot command prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, ValueEnum)]
pub enum Format {
    /// The classic Lockmeter table.
    #[default]
    Text,
    /// The v1 snapshot object (a diff: the diff object).
    Json,
    /// One row per lock and per call site, every field.
    Csv,
}

/// What a `FILE|TARGET` argument names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Input {
    File(PathBuf),
    Endpoint(EndpointAddr),
}

/// Decides whether `arg` is a file or a live target: `tcp://` and `unix:`
/// addresses, existing sockets, `*.sock` paths and pids (that are not files)
/// are targets; anything else is a file.
pub fn classify(arg: &str) -> Result<Input, String> {
    let path = Path::new(arg);
    let is_address =
        arg.starts_with("tcp://") || arg.starts_with("tcp:") || arg.starts_with("unix:");
    match std::fs::metadata(path) {
        Ok(meta) if meta.file_type().is_socket() => {
            Ok(Input::Endpoint(EndpointAddr::Unix(path.into())))
        }
        Ok(_) if !is_address => Ok(Input::File(path.into())),
        _ => {
            let is_pid = !arg.is_empty() && arg.bytes().all(|b| b.is_ascii_digit());
            if is_address || is_pid || arg.ends_with(".sock") {
                parse_target(arg)
                    .map(Input::Endpoint)
                    .map_err(|e| e.to_string())
            } else {
                Ok(Input::File(path.into()))
            }
        }
    }
}

/// Reads the snapshot `arg` names: a dump, a recording's totals, or one
/// snapshot from a live target. Warnings (a recording cut short) are
/// returned for stderr.
pub fn read_input(arg: &str) -> Result<(Snapshot, Vec<String>), String> {
    match classify(arg)? {
        Input::File(path) => read_file(&path),
        Input::Endpoint(addr) => fetch_snapshot(&addr, REQUEST_TIMEOUT)
            .map(|(_, snap)| (snap, Vec::new()))
            .map_err(|e| e.to_string()),
    }
}

/// The snapshots of several sources (or of every attachable process with
/// `all`) merged into one (see [`crate::fleet`]). A live target that does
/// not answer is left out with a warning; a file that cannot be read is an
/// error, as are no answers at all.
pub fn read_merged(sources: &[String], all: bool) -> Result<(Snapshot, Vec<String>), String> {
    let mut members = Vec::new();
    let mut warnings = Vec::new();
    let mut targets = Vec::new();
    if all {
        targets = fleet::all_targets();
        if targets.is_empty() {
            return Err(format!(
                "no attachable lockmeter process found in {} (start them with LOCKMETER_LISTEN=1)",
                socket_dir().display()
            ));
        }
    }
    for arg in sources {
        match classify(arg)? {
            Input::File(path) => {
                let (snap, w) = read_file(&path)?;
                warnings.extend(w);
                members.push(fleet::Member {
                    target: path.display().to_string(),
                    pid: Some(snap.process.pid),
                    name: snap.process.name.clone(),
                    latest: Some(snap),
                    status: fleet::Status::Live,
                });
            }
            Input::Endpoint(addr) => targets.push(addr),
        }
    }
    members.extend(fleet::fetch_all(&targets));
    for m in &members {
        if let fleet::Status::Gone(why) = &m.status {
            warnings.push(format!(
                "{}: no answer ({why}); left out of the table",
                m.target
            ));
        }
    }
    match fleet::merge(&members) {
        Some(snap) => Ok((snap, warnings)),
        None => Err(format!(
            "none of the {} processes answered: {}",
            members.len(),
            warnings.join("; ")
        )),
    }
}

/// Like [`read_input`], but a recording gives its last frame: what was
/// held at the end, not a sum over frames.
pub fn read_latest(arg: &str) -> Result<(Snapshot, Vec<String>), String> {
    match classify(arg)? {
        Input::File(path) => match load_file(&path)? {
            Loaded::Dump(snap) => Ok((snap, Vec::new())),
            Loaded::Recording {
                mut snapshots,
                warnings,
            } => {
                let warnings = warnings
                    .iter()
                    .map(|w| format!("{}: {w}", path.display()))
                    .collect();
                let last = snapshots
                    .pop()
                    .ok_or_else(|| format!("{}: the recording is empty", path.display()))?;
                Ok((last, warnings))
            }
        },
        Input::Endpoint(_) => read_input(arg),
    }
}

/// `lockmeter now`: what is held and waited on, as text or JSON.
pub fn now(snap: &Snapshot, as_json: bool) -> String {
    let mut out = if as_json {
        let v = serde_json::json!({
            "process": snap.process,
            "now": snap.now,
            "deadlocks": snap.deadlocks,
            "lock_order": snap.lock_order,
        });
        serde_json::to_string_pretty(&v).unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"))
    } else {
        lockmeter_model::render::now_text(snap)
    };
    if !out.ends_with('\n') {
        out.push('\n');
    }
    out
}

/// Reads a dump, or a recording's totals.
pub fn read_file(path: &Path) -> Result<(Snapshot, Vec<String>), String> {
    let loaded = load_file(path)?;
    let warnings = match &loaded {
        Loaded::Recording { warnings, .. } => warnings
            .iter()
            .map(|w| format!("{}: {w}", path.display()))
            .collect(),
        Loaded::Dump(_) => Vec::new(),
    };
    Ok((loaded.totals(), warnings))
}

/// `lockmeter table`: the snapshot rendered once.
pub fn table(
    snap: &Snapshot,
    opts: &TableOptions,
    thresholds: &Thresholds,
    format: Format,
) -> String {
    let mut out = match format {
        Format::Text => text_table_with(snap, opts, thresholds),
        Format::Csv => csv_table(snap, opts),
        Format::Json => json(snap),
    };
    if !out.ends_with('\n') {
        out.push('\n');
    }
    out
}

/// `lockmeter diff`: two snapshots compared per lock and site.
pub fn diff(
    before: &Snapshot,
    after: &Snapshot,
    opts: &TableOptions,
    thresholds: &Thresholds,
    format: Format,
) -> String {
    let d = diff_with_thresholds(before, after, thresholds);
    let mut out = match format {
        Format::Text => diff_text(&d, opts),
        Format::Csv => diff_csv(&d, opts),
        Format::Json => serde_json::to_string_pretty(&d)
            .unwrap_or_else(|e| serde_json::json!({ "error": e.to_string() }).to_string()),
    };
    if !out.ends_with('\n') {
        out.push('\n');
    }
    out
}

/// `lockmeter list`: the attachable processes, one a line.
pub fn list() -> String {
    format_list(&list_endpoints_removing_stale(), &socket_dir())
}

/// The `list` output for `endpoints` found in `dir`.
pub fn format_list(endpoints: &[EndpointInfo], dir: &Path) -> String {
    if endpoints.is_empty() {
        return format!(
            "no attachable lockmeter process found in {}\n(start a program using lockmeter with LOCKMETER_LISTEN=1, or try `lockmeter demo`)\n",
            dir.display()
        );
    }
    let mut out = format!("{:>8}  {:<24}  ENDPOINT\n", "PID", "NAME");
    for e in endpoints {
        let _ = writeln!(
            out,
            "{:>8}  {:<24}  {}",
            e.pid,
            if e.name.is_empty() { "?" } else { &e.name },
            e.addr().as_target()
        );
    }
    out
}

/// Loads advisory thresholds from a JSON config file: an object with any of
/// the [`Thresholds`] fields; missing fields keep their defaults.
pub fn load_thresholds(path: &Path) -> Result<Thresholds, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read advice config {}: {e}", path.display()))?;
    serde_json::from_str(&text).map_err(|e| format!("advice config {}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_are_sorted_into_files_and_targets() {
        assert_eq!(
            classify("dump.json").unwrap(),
            Input::File("dump.json".into())
        );
        assert!(matches!(
            classify("tcp://127.0.0.1:9").unwrap(),
            Input::Endpoint(EndpointAddr::Tcp(_))
        ));
        assert!(matches!(
            classify("/nowhere/1.sock").unwrap(),
            Input::Endpoint(EndpointAddr::Unix(_))
        ));
        assert!(matches!(
            classify("4242").unwrap(),
            Input::Endpoint(EndpointAddr::Unix(_))
        ));
        assert!(classify("tcp://nohost").is_err());
    }

    #[test]
    fn an_empty_list_says_where_it_looked() {
        let out = format_list(&[], Path::new("/run/x"));
        assert!(out.contains("/run/x"), "{out}");
        let out = format_list(
            &[EndpointInfo {
                pid: 12,
                name: "srv".into(),
                path: "/run/x/12.sock".into(),
            }],
            Path::new("/run/x"),
        );
        assert!(
            out.contains("srv") && out.contains("/run/x/12.sock"),
            "{out}"
        );
    }
}
