//! Where live endpoints put their Unix sockets, and how to find them.
//!
//! A process started with `LOCKMETER_LISTEN=1` listens on
//! `<socket_dir>/<pid>.sock`, where [`socket_dir`] is
//! `$XDG_RUNTIME_DIR/lockmeter/` or, without a runtime dir, a `0700`
//! directory `lockmeter-<uid>` under the temp dir. The directory must be a
//! real directory (not a symlink) owned by the current user with no group
//! or other permissions; anything else is refused, so another user cannot
//! plant sockets or redirect a viewer.
//!
//! [`scan_endpoints`] only reads: it returns the sockets of running
//! processes and, separately, those left behind by dead ones.
//! [`Scan::remove_stale`] deletes the latter, and
//! [`list_endpoints_removing_stale`] does both, as `lockmeter list` does.
//!
//! Only `std` and `libc`; no lock code.

use std::env;
use std::fs;
use std::io;
#[cfg(unix)]
use std::os::unix::fs::{DirBuilderExt, FileTypeExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use crate::EndpointAddr;

/// A running process's endpoint found on disk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EndpointInfo {
    /// The process id, from the socket's name.
    pub pid: u32,
    /// The process's command name (`/proc/<pid>/comm`), empty if unknown.
    pub name: String,
    /// The socket path.
    pub path: PathBuf,
}

impl EndpointInfo {
    /// The address to connect to.
    pub fn addr(&self) -> EndpointAddr {
        EndpointAddr::Unix(self.path.clone())
    }
}

/// The directory default endpoints of this user listen in:
/// `$XDG_RUNTIME_DIR/lockmeter`, else `<temp dir>/lockmeter-<uid>`.
pub fn socket_dir() -> PathBuf {
    xdg_socket_dir().unwrap_or_else(temp_socket_dir)
}

/// The default socket path of process `pid`.
pub fn socket_path(pid: u32) -> PathBuf {
    socket_dir().join(format!("{pid}.sock"))
}

fn xdg_socket_dir() -> Option<PathBuf> {
    let dir = PathBuf::from(env::var_os("XDG_RUNTIME_DIR")?);
    dir.is_absolute().then(|| dir.join("lockmeter"))
}

fn temp_socket_dir() -> PathBuf {
    env::temp_dir().join(format!("lockmeter-{}", current_uid()))
}

/// Every directory a default endpoint of this user may be in: a process
/// started without `XDG_RUNTIME_DIR` (under `sudo -u`, cron, a container)
/// uses the temp dir while the viewer's shell has a runtime dir.
fn candidate_dirs() -> Vec<PathBuf> {
    let mut dirs = vec![socket_dir()];
    let tmp = temp_socket_dir();
    if !dirs.contains(&tmp) {
        dirs.push(tmp);
    }
    dirs
}

/// What a look at the socket directories found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Scan {
    /// Endpoints of running processes, by pid.
    pub live: Vec<EndpointInfo>,
    /// Sockets of processes that no longer exist: no one can be binding
    /// these paths, so [`Scan::remove_stale`] may delete them.
    pub stale: Vec<PathBuf>,
}

impl Scan {
    /// Deletes the stale sockets; returns how many were removed.
    pub fn remove_stale(&self) -> usize {
        self.stale
            .iter()
            .filter(|p| fs::remove_file(p).is_ok())
            .count()
    }
}

/// Reads every directory a default endpoint of this user may be in (see
/// [`socket_dir`]); changes nothing.
pub fn scan_endpoints() -> Scan {
    let mut all = Scan::default();
    for dir in candidate_dirs() {
        let scan = scan_endpoints_in(&dir);
        all.live.extend(scan.live);
        all.stale.extend(scan.stale);
    }
    all.live.sort_by_key(|e| e.pid);
    all.live.dedup_by_key(|e| e.pid);
    all
}

/// The endpoints of this user's running processes, by pid, after deleting
/// the sockets of dead processes: `lockmeter list`.
pub fn list_endpoints_removing_stale() -> Vec<EndpointInfo> {
    let scan = scan_endpoints();
    scan.remove_stale();
    scan.live
}

/// The endpoint of process `pid`, if it has a default one. Changes nothing.
pub fn find_endpoint(pid: u32) -> Option<EndpointInfo> {
    scan_endpoints().live.into_iter().find(|e| e.pid == pid)
}

/// The endpoints in `dir` (see [`scan_endpoints`]). A directory that fails
/// [`check_private_dir`] yields nothing: its sockets are not to be trusted.
pub fn scan_endpoints_in(dir: &Path) -> Scan {
    let mut scan = Scan::default();
    if check_private_dir(dir).is_err() {
        return scan;
    }
    let Ok(entries) = fs::read_dir(dir) else {
        return scan;
    };
    let bound = bound_unix_paths();
    for entry in entries.flatten() {
        let path = entry.path();
        let Some(pid) = pid_of_socket_name(&entry.file_name().to_string_lossy()) else {
            continue;
        };
        if !is_own_socket(&path) {
            continue;
        }
        if !process_alive(pid) {
            scan.stale.push(path);
            continue;
        }
        if let Some(bound) = &bound {
            // Alive but not bound: the pid was reused by a process that is
            // not (or not yet) listening; leave the file alone.
            if !bound.iter().any(|b| b == &path) {
                continue;
            }
        }
        scan.live.push(EndpointInfo {
            pid,
            name: process_name(pid),
            path,
        });
    }
    scan.live.sort_by_key(|e| e.pid);
    scan.stale.sort();
    scan
}

/// `1234.sock` -> 1234.
fn pid_of_socket_name(name: &str) -> Option<u32> {
    let digits = name.strip_suffix(".sock")?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok().filter(|&p| p > 0)
}

#[cfg(unix)]
fn is_own_socket(path: &Path) -> bool {
    fs::symlink_metadata(path)
        .map(|m| m.file_type().is_socket() && m.uid() == current_uid())
        .unwrap_or(false)
}

#[cfg(not(unix))]
fn is_own_socket(_: &Path) -> bool {
    false
}

/// Checks that `dir` is a directory (not a symlink to one) owned by the
/// current user with no group or other permission bits.
#[cfg(unix)]
pub fn check_private_dir(dir: &Path) -> io::Result<()> {
    let meta = fs::symlink_metadata(dir)?;
    let refuse = |why: String| {
        Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            format!("{}: {why}", dir.display()),
        ))
    };
    if meta.file_type().is_symlink() {
        return refuse("is a symlink; refusing to use it as the socket directory".into());
    }
    if !meta.is_dir() {
        return refuse("is not a directory".into());
    }
    if meta.uid() != current_uid() {
        return refuse(format!(
            "is owned by uid {}, not by this user (uid {})",
            meta.uid(),
            current_uid()
        ));
    }
    if meta.mode() & 0o077 != 0 {
        return refuse(format!(
            "has mode {:o}; it must be private (700)",
            meta.mode() & 0o777
        ));
    }
    Ok(())
}

#[cfg(not(unix))]
pub fn check_private_dir(dir: &Path) -> io::Result<()> {
    Err(io::Error::new(
        io::ErrorKind::Unsupported,
        format!("{}: Unix sockets are not supported here", dir.display()),
    ))
}

/// Creates `dir` with mode `0700` if it does not exist (its parent must),
/// tightens the mode of an existing directory of ours, then applies
/// [`check_private_dir`]. A directory of another user or a symlink is
/// refused, never changed.
#[cfg(unix)]
pub fn create_private_dir(dir: &Path) -> io::Result<()> {
    match fs::DirBuilder::new().mode(0o700).create(dir) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
            let meta = fs::symlink_metadata(dir)?;
            if meta.is_dir() && meta.uid() == current_uid() && meta.mode() & 0o077 != 0 {
                fs::set_permissions(dir, fs::Permissions::from_mode(0o700))?;
            }
        }
        Err(e) => {
            return Err(io::Error::new(
                e.kind(),
                format!("cannot create {}: {e}", dir.display()),
            ))
        }
    }
    check_private_dir(dir)
}

#[cfg(not(unix))]
pub fn create_private_dir(dir: &Path) -> io::Result<()> {
    check_private_dir(dir)
}

/// The effective user id (the owner of files this process creates).
#[cfg(unix)]
pub fn current_uid() -> u32 {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() }
}

#[cfg(not(unix))]
pub fn current_uid() -> u32 {
    0
}

/// Whether a process `pid` exists (possibly of another user).
#[cfg(unix)]
pub fn process_alive(pid: u32) -> bool {
    let Ok(pid) = libc::pid_t::try_from(pid) else {
        return false;
    };
    if pid <= 0 {
        return false;
    }
    // SAFETY: signal 0 only checks that the process exists and may be
    // signalled; nothing is delivered.
    let rc = unsafe { libc::kill(pid, 0) };
    rc == 0 || io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}

#[cfg(not(unix))]
pub fn process_alive(_: u32) -> bool {
    false
}

/// The paths of all bound Unix sockets (Linux `/proc/net/unix`), or `None`
/// where that is not available.
fn bound_unix_paths() -> Option<Vec<PathBuf>> {
    let text = fs::read_to_string("/proc/net/unix").ok()?;
    Some(
        text.lines()
            .skip(1)
            .filter_map(|l| l.split_whitespace().nth(7))
            .filter(|p| p.starts_with('/'))
            .map(PathBuf::from)
            .collect(),
    )
}

/// The command name of `pid` from `/proc`, or empty.
fn process_name(pid: u32) -> String {
    fs::read_to_string(format!("/proc/{pid}/comm"))
        .map(|s| s.trim_end().to_string())
        .unwrap_or_default()
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::os::unix::net::UnixListener;
    use std::process::Command;

    /// A fresh private directory under the temp dir.
    fn private_dir(tag: &str) -> PathBuf {
        let dir = env::temp_dir().join(format!("lockmeter-discovery-{tag}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        create_private_dir(&dir).unwrap();
        dir
    }

    /// The pid of a process that has exited.
    fn dead_pid() -> u32 {
        let mut child = Command::new("true").spawn().unwrap();
        let pid = child.id();
        child.wait().unwrap();
        pid
    }

    #[test]
    fn socket_names_map_to_pids() {
        assert_eq!(pid_of_socket_name("42.sock"), Some(42));
        for bad in [
            "0.sock",
            ".sock",
            "x42.sock",
            "42.sock.tmp",
            "42",
            "-1.sock",
            "99999999999.sock",
        ] {
            assert_eq!(pid_of_socket_name(bad), None, "{bad}");
        }
    }

    #[test]
    fn the_default_dir_is_per_user() {
        let dir = socket_dir();
        let s = dir.to_string_lossy();
        assert!(
            s.ends_with("/lockmeter") || s.ends_with(&format!("lockmeter-{}", current_uid())),
            "{s}"
        );
        assert_eq!(socket_path(12), dir.join("12.sock"));
    }

    #[test]
    fn a_scan_finds_live_endpoints_and_only_remove_stale_deletes_dead_ones() {
        let dir = private_dir("list");
        let me = std::process::id();
        let live = dir.join(format!("{me}.sock"));
        let _listener = UnixListener::bind(&live).unwrap();
        let dead = dir.join(format!("{}.sock", dead_pid()));
        drop(UnixListener::bind(&dead).unwrap());
        fs::write(dir.join("123.txt"), "not a socket").unwrap();
        fs::write(dir.join("1.sock"), "a regular file named like a socket").unwrap();

        let scan = scan_endpoints_in(&dir);
        assert_eq!(scan.stale, vec![dead.clone()], "{scan:?}");
        assert!(dead.exists(), "scanning deleted a file");
        assert_eq!(scan.remove_stale(), 1);
        let found = scan.live;
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].pid, me);
        assert_eq!(found[0].path, live);
        assert!(!found[0].name.is_empty());
        assert!(
            !dead.exists(),
            "the stale socket of a dead process was not removed"
        );
        assert!(dir.join("1.sock").exists(), "a non-socket file was touched");
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_socket_nobody_listens_on_is_not_listed_but_kept_while_the_pid_lives() {
        let dir = private_dir("unbound");
        let path = dir.join(format!("{}.sock", std::process::id()));
        drop(UnixListener::bind(&path).unwrap());
        // A child forked by a concurrent test (`dead_pid`) holds a copy of
        // the listener until it execs: wait for the kernel to let it go.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        while bound_unix_paths().is_some_and(|b| b.contains(&path))
            && std::time::Instant::now() < deadline
        {
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        assert_eq!(scan_endpoints_in(&dir), Scan::default());
        assert!(path.exists());
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn unsafe_dirs_are_refused() {
        let dir = private_dir("perm");
        fs::set_permissions(&dir, fs::Permissions::from_mode(0o755)).unwrap();
        assert!(check_private_dir(&dir).is_err());
        let _l = UnixListener::bind(dir.join(format!("{}.sock", std::process::id()))).unwrap();
        assert!(
            scan_endpoints_in(&dir).live.is_empty(),
            "sockets in a group/world-readable dir were trusted"
        );
        // Our own dir with loose permissions is tightened, not refused.
        create_private_dir(&dir).unwrap();
        assert_eq!(fs::metadata(&dir).unwrap().mode() & 0o777, 0o700);

        let link = dir.with_extension("link");
        let _ = fs::remove_file(&link);
        std::os::unix::fs::symlink(&dir, &link).unwrap();
        assert!(check_private_dir(&link).is_err());
        assert!(create_private_dir(&link).is_err());
        fs::remove_file(&link).unwrap();
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn liveness_checks_do_not_panic_on_odd_pids() {
        assert!(process_alive(std::process::id()));
        assert!(!process_alive(0));
        assert!(!process_alive(u32::MAX));
        assert!(!process_alive(dead_pid()));
    }
}
