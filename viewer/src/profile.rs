//! `lockmeter table --format pprof|folded|flamegraph`: the snapshot as a
//! profile for other tools, written to `-o FILE` (or stdout for the text
//! formats). The encoders are the model's (`lockmeter_model::profile`).

use std::path::Path;

use clap::ValueEnum;
use lockmeter_model::profile::file::ProfileFormat;
use lockmeter_model::profile::Metric;
use lockmeter_model::stacks::Side;
use lockmeter_model::Snapshot;

use crate::commands::Format;

/// What `lockmeter table` prints or writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, ValueEnum)]
pub enum TableFormat {
    /// The classic Lockmeter table.
    #[default]
    Text,
    /// The v1 snapshot object.
    Json,
    /// One row per lock and per call site, every field.
    Csv,
    /// pprof profile.proto, gzipped (needs -o): go tool pprof, speedscope, Pyroscope
    Pprof,
    /// Folded stacks: inferno, flamegraph.pl, speedscope
    Folded,
    /// A flame graph (SVG), drawn by inferno
    Flamegraph,
}

impl TableFormat {
    /// The table rendering, or the profile format.
    pub fn split(self) -> Result<Format, ProfileFormat> {
        match self {
            TableFormat::Text => Ok(Format::Text),
            TableFormat::Json => Ok(Format::Json),
            TableFormat::Csv => Ok(Format::Csv),
            TableFormat::Pprof => Err(ProfileFormat::Pprof),
            TableFormat::Folded => Err(ProfileFormat::Folded),
            TableFormat::Flamegraph => Err(ProfileFormat::Flamegraph),
        }
    }
}

/// Parses `--metric`.
pub fn parse_metric(s: &str) -> Result<Metric, String> {
    s.parse()
}

/// Parses `--side`.
pub fn parse_side(s: &str) -> Result<Side, String> {
    s.parse()
}

/// The profile's bytes, written to `out` or returned for stdout.
/// A binary profile is never sent to stdout.
pub fn export(
    snap: &Snapshot,
    format: ProfileFormat,
    side: Side,
    metric: Metric,
    out: Option<&Path>,
) -> Result<Option<Vec<u8>>, String> {
    let bytes = format.encode(snap, side, metric)?;
    match out {
        Some(path) => {
            write_file(path, &bytes)?;
            Ok(None)
        }
        None if format == ProfileFormat::Pprof => {
            Err("--format pprof writes a binary file: give it -o OUT.pb.gz".to_string())
        }
        None => Ok(Some(bytes)),
    }
}

/// Writes `bytes` to `path` atomically (the one atomic write, shared with
/// dumps), with an error that names the path.
fn write_file(path: &Path, bytes: &[u8]) -> Result<(), String> {
    lockmeter_wire::write_atomic(path, bytes).map_err(|e| e.to_string())
}
