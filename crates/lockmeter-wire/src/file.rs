//! Replacing a file so that a reader, or a crash, only ever sees the old
//! contents or the new ones: write a temporary file in the same directory,
//! fsync it, rename it over the target, fsync the directory.
//!
//! The temporary name is unique per writer (process id and a counter), and
//! created with `create_new`, so concurrent writers never share or follow
//! one. Used by the library's dumps and the viewer's `d` alike.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// Distinguishes temporary files of concurrent writers in one process.
static NEXT_TMP: AtomicU64 = AtomicU64::new(0);

/// Atomically replaces `path` with `bytes`. Errors name the path.
///
/// # Examples
///
/// ```
/// let path = std::env::temp_dir().join(format!("lockmeter-doc-{}.txt", std::process::id()));
/// lockmeter_wire::write_atomic(&path, b"v1")?;
/// assert_eq!(std::fs::read(&path)?, b"v1");
/// # std::fs::remove_file(&path)?;
/// # Ok::<(), std::io::Error>(())
/// ```
pub fn write_atomic(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let context =
        |e: io::Error| io::Error::new(e.kind(), format!("cannot write {}: {e}", path.display()));
    let name = path.file_name().ok_or_else(|| {
        context(io::Error::new(
            io::ErrorKind::InvalidInput,
            "not a file path",
        ))
    })?;
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    if fs::metadata(path).is_ok_and(|m| m.is_dir()) {
        return Err(context(io::Error::new(
            io::ErrorKind::InvalidInput,
            "is a directory",
        )));
    }
    let tmp = dir.join(format!(
        ".{}.tmp.{}.{}",
        name.to_string_lossy(),
        std::process::id(),
        NEXT_TMP.fetch_add(1, Ordering::Relaxed)
    ));
    let result = write_then_rename(&tmp, path, bytes);
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result.map_err(context)?;
    sync_dir(&dir);
    Ok(())
}

fn write_then_rename(tmp: &Path, path: &Path, bytes: &[u8]) -> io::Result<()> {
    // create_new: never follow or reuse something already at the temporary name.
    let mut file = OpenOptions::new().write(true).create_new(true).open(tmp)?;
    file.write_all(bytes)?;
    file.sync_all()?;
    drop(file);
    fs::rename(tmp, path)
}

/// Makes the rename itself durable. Best effort: some file systems refuse
/// to open or sync a directory, and the data is already safe in the file.
fn sync_dir(dir: &Path) {
    if let Ok(d) = File::open(dir) {
        let _ = d.sync_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(tag: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("lockmeter-aw-{tag}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn replaces_the_file_and_leaves_no_temporary_behind() {
        let dir = scratch("ok");
        let p = dir.join("d.json");
        write_atomic(&p, b"one").unwrap();
        write_atomic(&p, b"two").unwrap();
        assert_eq!(fs::read(&p).unwrap(), b"two");
        let names: Vec<_> = fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, vec![std::ffi::OsString::from("d.json")]);
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_failed_write_keeps_the_old_file_and_says_which_path() {
        let dir = scratch("fail");
        let missing = dir.join("no/such/dir/d.txt");
        let e = write_atomic(&missing, b"x").unwrap_err();
        assert!(e.to_string().contains("no/such/dir/d.txt"), "{e}");
        let e = write_atomic(&dir, b"x").unwrap_err();
        assert!(e.to_string().contains("directory"), "{e}");

        // A stale temporary name from a crashed writer must not break writes.
        let p = dir.join("keep.txt");
        write_atomic(&p, b"old").unwrap();
        let next = NEXT_TMP.load(Ordering::Relaxed);
        fs::write(
            dir.join(format!(".keep.txt.tmp.{}.{next}", std::process::id())),
            "junk",
        )
        .unwrap();
        let _ = write_atomic(&p, b"new");
        let now = fs::read(&p).unwrap();
        assert!(now == b"old" || now == b"new");
        fs::remove_dir_all(&dir).unwrap();
    }
}
