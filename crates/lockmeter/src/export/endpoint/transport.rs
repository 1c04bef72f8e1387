//! The endpoint's listening sockets, Unix or TCP behind one type, and
//! binding a Unix socket path safely. Accepted connections are
//! [`lockmeter_wire::Stream`]s, the same type every client uses.

use std::fs;
use std::io;
use std::net::TcpListener;
use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::fs::{FileTypeExt, MetadataExt, PermissionsExt};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};

use lockmeter_wire::Stream;

/// A listening socket.
pub(crate) enum Listener {
    Unix(UnixListener),
    Tcp(TcpListener),
}

impl Listener {
    pub(crate) fn accept(&self) -> io::Result<Stream> {
        match self {
            Listener::Unix(l) => l.accept().map(|(s, _)| Stream::Unix(s)),
            Listener::Tcp(l) => l.accept().map(|(s, _)| Stream::Tcp(s)),
        }
    }

    pub(crate) fn set_nonblocking(&self, on: bool) -> io::Result<()> {
        match self {
            Listener::Unix(l) => l.set_nonblocking(on),
            Listener::Tcp(l) => l.set_nonblocking(on),
        }
    }
}

impl AsRawFd for Listener {
    fn as_raw_fd(&self) -> RawFd {
        match self {
            Listener::Unix(l) => l.as_raw_fd(),
            Listener::Tcp(l) => l.as_raw_fd(),
        }
    }
}

/// The socket file we created, removed only if it is still ours.
#[derive(Debug)]
pub(crate) struct SocketFile {
    pub(crate) path: PathBuf,
    dev: u64,
    ino: u64,
}

impl SocketFile {
    /// Removes the file unless someone replaced it since we bound it (as
    /// far as the inode number tells: a file system may reuse it).
    pub(crate) fn remove(&self) {
        if let Ok(m) = fs::symlink_metadata(&self.path) {
            if m.dev() == self.dev && m.ino() == self.ino {
                let _ = fs::remove_file(&self.path);
            }
        }
    }
}

/// Binds a Unix socket at `path` with mode `0600`.
///
/// A symlink at `path` is refused (it could point anywhere); so is any
/// file that is not a socket. A socket nobody listens on (left by a
/// crashed process) is replaced; one with a listener is refused.
pub(crate) fn bind_unix(path: &Path) -> io::Result<(UnixListener, SocketFile)> {
    let refuse =
        |kind: io::ErrorKind, why: &str| io::Error::new(kind, format!("{}: {why}", path.display()));
    match fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_symlink() => {
            return Err(refuse(
                io::ErrorKind::PermissionDenied,
                "is a symlink; refusing to listen there",
            ));
        }
        Ok(m) if !m.file_type().is_socket() => {
            return Err(refuse(
                io::ErrorKind::AlreadyExists,
                "exists and is not a socket; not replacing it",
            ));
        }
        Ok(_) => match UnixStream::connect(path) {
            Ok(_) => {
                return Err(refuse(
                    io::ErrorKind::AddrInUse,
                    "an endpoint is already listening there",
                ))
            }
            Err(_) => {
                let _ = fs::remove_file(path);
            }
        },
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => return Err(refuse(e.kind(), &e.to_string())),
    }
    let listener = UnixListener::bind(path).map_err(|e| refuse(e.kind(), &e.to_string()))?;
    // The default directory is 0700, so the short window before chmod
    // exposes nothing there; for a path of the user's choosing, the
    // directory's permissions are the user's to set.
    let m = fs::set_permissions(path, fs::Permissions::from_mode(0o600))
        .and_then(|()| fs::symlink_metadata(path));
    match m {
        Ok(m) => Ok((
            listener,
            SocketFile {
                path: path.to_path_buf(),
                dev: m.dev(),
                ino: m.ino(),
            },
        )),
        Err(e) => {
            let _ = fs::remove_file(path);
            Err(refuse(
                e.kind(),
                &format!("cannot make the socket private: {e}"),
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn binds_0600_and_refuses_symlinks_files_and_live_sockets() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        let p = dir.join("a.sock");
        let (l, file) = bind_unix(&p).unwrap();
        assert_eq!(fs::metadata(&p).unwrap().mode() & 0o777, 0o600);
        assert_eq!(bind_unix(&p).unwrap_err().kind(), io::ErrorKind::AddrInUse);
        drop(l);
        // Stale: nobody listens any more, so it is replaced.
        drop(file);
        let (_l2, file2) = bind_unix(&p).unwrap();
        assert_eq!(fs::metadata(&p).unwrap().mode() & 0o777, 0o600);
        file2.remove();
        assert!(!p.exists());

        let link = dir.join("link.sock");
        std::os::unix::fs::symlink(dir.join("elsewhere"), &link).unwrap();
        assert_eq!(
            bind_unix(&link).unwrap_err().kind(),
            io::ErrorKind::PermissionDenied
        );
        let plain = dir.join("plain.sock");
        fs::write(&plain, "data").unwrap();
        assert!(bind_unix(&plain).is_err());
        assert_eq!(fs::read_to_string(&plain).unwrap(), "data");
    }
}
