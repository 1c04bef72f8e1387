//! Dumps as profiles: `LOCKMETER_DUMP=out.pb.gz|out.folded|out.svg` writes
//! the waiter-side profile there and the holder-side one beside it
//! (`out.holder.pb.gz`), each atomically. The encoders are the model's.

use std::io;
use std::path::{Path, PathBuf};

use lockmeter_model::profile::file::{holder_path, ProfileFormat};
use lockmeter_model::profile::Metric;
use lockmeter_model::stacks::Side;
use lockmeter_model::Snapshot;
use lockmeter_wire::write_atomic;

/// Writes `snap` as the profile `path`'s extension names, or `None` when
/// it names no profile format.
pub(crate) fn write_profile(path: &Path, snap: &Snapshot) -> Option<io::Result<()>> {
    let format = ProfileFormat::from_path(&path.to_string_lossy())?;
    let holder = PathBuf::from(holder_path(&path.to_string_lossy()));
    Some((|| {
        for (side, to) in [(Side::Waiter, path), (Side::Holder, holder.as_path())] {
            let bytes = format
                .encode(snap, side, Metric::Wait)
                .map_err(|e| io::Error::other(format!("cannot draw {}: {e}", to.display())))?;
            write_atomic(to, &bytes)?;
        }
        Ok(())
    })())
}
