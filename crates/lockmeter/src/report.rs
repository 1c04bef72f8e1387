//! One-line messages on stderr: the only way the exporter talks to a user
//! who did not ask for a result. Never panics (unlike `eprintln!`), and
//! writes each line with a single call so lines from threads do not mix.

use std::fmt::Display;
use std::io::Write;

/// A problem the user should know about: always printed.
pub(crate) fn warn(msg: impl Display) {
    let line = format!("lockmeter: {msg}\n");
    let _ = std::io::stderr().write_all(line.as_bytes());
}

/// Confirmation of something the user asked for, unless `quiet`.
pub(crate) fn info(quiet: bool, msg: impl Display) {
    if !quiet {
        warn(msg);
    }
}
