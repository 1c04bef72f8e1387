//! Writing the shown snapshot to a file, atomically: a reader (or a crash)
//! never sees half a dump.

use std::io;
use std::path::{Path, PathBuf};

use lockmeter_model::render::json;
use lockmeter_model::Snapshot;
use lockmeter_wire::write_atomic;

/// Writes `snap` as pretty v1 JSON into a new file in `dir` and returns its
/// path. The name says which process and when; an existing file is never
/// overwritten.
pub fn write_snapshot(dir: &Path, snap: &Snapshot, what: &str) -> io::Result<PathBuf> {
    let stem = format!(
        "lockmeter-{}-{}-{}-{}",
        file_safe(&snap.process.name),
        snap.process.pid,
        snap.window.end_unix_ns / 1_000_000,
        what
    );
    let mut text = json(snap);
    text.push('\n');
    for n in 0..1000u32 {
        let name = if n == 0 {
            format!("{stem}.json")
        } else {
            format!("{stem}-{n}.json")
        };
        let path = dir.join(name);
        if path.exists() {
            continue;
        }
        write_atomic(&path, text.as_bytes())?;
        return Ok(path);
    }
    Err(io::Error::new(
        io::ErrorKind::AlreadyExists,
        format!("too many dumps named {stem}*.json in {}", dir.display()),
    ))
}

/// A process name reduced to characters safe in a file name.
fn file_safe(name: &str) -> String {
    let s: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .take(40)
        .collect();
    if s.is_empty() {
        "process".to_string()
    } else {
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use lockmeter_model::{parse_snapshot, ProcessInfo};
    use std::fs;

    #[test]
    fn dumps_round_trip_and_never_overwrite() {
        let dir = tempfile::tempdir().unwrap();
        let snap = Snapshot::empty(
            ProcessInfo {
                pid: 7,
                name: "a/b c".into(),
            },
            "mock",
        );
        let p1 = write_snapshot(dir.path(), &snap, "totals").unwrap();
        let p2 = write_snapshot(dir.path(), &snap, "totals").unwrap();
        assert_ne!(p1, p2);
        assert!(p1
            .file_name()
            .unwrap()
            .to_str()
            .unwrap()
            .starts_with("lockmeter-a_b_c-7-"));
        let back = parse_snapshot(&fs::read_to_string(&p1).unwrap()).unwrap();
        assert_eq!(back, snap);
        let leftovers: Vec<_> = fs::read_dir(dir.path())
            .unwrap()
            .filter_map(|e| e.ok())
            .filter(|e| e.file_name().to_string_lossy().contains(".tmp."))
            .collect();
        assert!(leftovers.is_empty());
    }

    #[test]
    fn a_missing_directory_is_an_error_not_a_panic() {
        let snap = Snapshot::empty(ProcessInfo::default(), "mock");
        let err = write_snapshot(Path::new("/nonexistent/lockmeter/dir"), &snap, "x");
        assert!(err.is_err());
    }
}
