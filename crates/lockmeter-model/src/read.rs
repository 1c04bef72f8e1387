//! Reading snapshots and recordings with errors a person can act on.

use std::fmt;

use crate::{Snapshot, FORMAT_NAME, FORMAT_VERSION};

/// Why a snapshot or recording could not be read.
#[derive(Debug)]
pub enum ReadError {
    /// The bytes are not JSON, or not the shape of a snapshot.
    Json {
        /// The 1-based line of a recording; `None` for a single snapshot.
        line: Option<usize>,
        /// What serde_json said.
        source: serde_json::Error,
    },
    /// The object's `format` field is not `"lockmeter"`.
    WrongFormat {
        /// The `format` field found instead of `lockmeter`.
        found: String,
    },
    /// Written by a newer lockmeter than this reader understands.
    FutureVersion {
        /// The `version` field found, newer than this reader.
        found: u64,
    },
    /// A recording with no complete snapshot in it.
    EmptyRecording,
}

impl fmt::Display for ReadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ReadError::Json { line: Some(l), source } => {
                write!(f, "line {l}: not a lockmeter snapshot: {source}")
            }
            ReadError::Json { line: None, source } => {
                write!(f, "not a lockmeter snapshot: {source}")
            }
            ReadError::WrongFormat { found } => {
                write!(f, "not a lockmeter snapshot: format is {found:?}, expected {FORMAT_NAME:?}")
            }
            ReadError::FutureVersion { found } => write!(
                f,
                "snapshot format version {found} is newer than this reader (reads up to {FORMAT_VERSION}); upgrade lockmeter"
            ),
            ReadError::EmptyRecording => write!(f, "the recording holds no complete snapshot"),
        }
    }
}

impl std::error::Error for ReadError {}

/// Parses one snapshot, checking the format name and version before the
/// body so that a future or foreign file gets a precise error.
pub fn parse_snapshot(text: &str) -> Result<Snapshot, ReadError> {
    parse_line(text, None)
}

fn parse_line(text: &str, line: Option<usize>) -> Result<Snapshot, ReadError> {
    let value: serde_json::Value =
        serde_json::from_str(text).map_err(|source| ReadError::Json { line, source })?;
    let format = value.get("format").and_then(|f| f.as_str()).unwrap_or("");
    if format != FORMAT_NAME {
        return Err(ReadError::WrongFormat {
            found: format.to_string(),
        });
    }
    if let Some(version) = value.get("version").and_then(|v| v.as_u64()) {
        if version > u64::from(FORMAT_VERSION) {
            return Err(ReadError::FutureVersion { found: version });
        }
    }
    serde_json::from_value(value).map_err(|source| ReadError::Json { line, source })
}

/// A recording: snapshots in file order, and what was skipped.
#[derive(Debug, Clone, Default)]
pub struct Recording {
    /// The snapshots, in file order.
    pub frames: Vec<Snapshot>,
    /// Warnings for lines that were skipped (a cut last line, say).
    pub warnings: Vec<String>,
}

/// Parses a JSON Lines recording. A last line cut short by a crash is
/// skipped with a warning; any other bad line is an error.
pub fn parse_recording(text: &str) -> Result<Recording, ReadError> {
    let mut rec = Recording::default();
    let lines: Vec<&str> = text.lines().collect();
    let complete = text.ends_with('\n');
    for (i, line) in lines.iter().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let is_last = i + 1 == lines.len();
        match parse_line(line, Some(i + 1)) {
            Ok(s) => rec.frames.push(s),
            Err(ReadError::Json { .. }) if is_last && !complete => rec.warnings.push(format!(
                "line {}: incomplete last line skipped (the writer was cut off)",
                i + 1
            )),
            Err(e) => return Err(e),
        }
    }
    if rec.frames.is_empty() {
        return Err(ReadError::EmptyRecording);
    }
    Ok(rec)
}
