//! Which profile a file name asks for, and its bytes: shared by
//! `lockmeter table --format … -o FILE` and `LOCKMETER_DUMP=FILE`, which
//! pick the format by extension. Pure: the callers write the bytes.

use super::{flamegraph, folded, pprof, Metric};
use crate::stacks::Side;
use crate::Snapshot;

/// A profile format other tools read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProfileFormat {
    /// pprof `profile.proto`, gzip-compressed (`.pb.gz`).
    Pprof,
    /// Folded stacks (`.folded`).
    Folded,
    /// A flame graph (`.svg`).
    Flamegraph,
}

impl ProfileFormat {
    /// The format a path's extension names, if it names one.
    pub fn from_path(path: &str) -> Option<ProfileFormat> {
        let p = path.to_ascii_lowercase();
        if p.ends_with(".pb.gz") || p.ends_with(".pprof") {
            Some(ProfileFormat::Pprof)
        } else if p.ends_with(".folded") {
            Some(ProfileFormat::Folded)
        } else if p.ends_with(".svg") {
            Some(ProfileFormat::Flamegraph)
        } else {
            None
        }
    }

    /// The bytes of one side's profile; folded lines and flame graphs are
    /// weighted by `metric` (pprof carries every metric).
    pub fn encode(self, snap: &Snapshot, side: Side, metric: Metric) -> Result<Vec<u8>, String> {
        match self {
            ProfileFormat::Pprof => Ok(pprof::encode_gz(snap, side)),
            ProfileFormat::Folded => Ok(folded::text(snap, side, metric).into_bytes()),
            ProfileFormat::Flamegraph => {
                flamegraph::svg(snap, side, metric).map(String::into_bytes)
            }
        }
    }
}

/// Where the holder-side profile goes beside a waiter-side file:
/// `out.pb.gz` → `out.holder.pb.gz`, `x.svg` → `x.holder.svg`.
pub fn holder_path(path: &str) -> String {
    for ext in [".pb.gz", ".pprof", ".folded", ".svg"] {
        if path.len() >= ext.len() && path[path.len() - ext.len()..].eq_ignore_ascii_case(ext) {
            let stem = &path[..path.len() - ext.len()];
            return format!("{stem}.holder{}", &path[path.len() - ext.len()..]);
        }
    }
    format!("{path}.holder")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn extensions_pick_formats_and_holder_files_sit_beside() {
        assert_eq!(
            ProfileFormat::from_path("a/out.pb.gz"),
            Some(ProfileFormat::Pprof)
        );
        assert_eq!(
            ProfileFormat::from_path("x.FOLDED"),
            Some(ProfileFormat::Folded)
        );
        assert_eq!(
            ProfileFormat::from_path("x.svg"),
            Some(ProfileFormat::Flamegraph)
        );
        assert_eq!(ProfileFormat::from_path("x.json"), None);
        assert_eq!(holder_path("a/out.pb.gz"), "a/out.holder.pb.gz");
        assert_eq!(holder_path("x.svg"), "x.holder.svg");
    }
}
