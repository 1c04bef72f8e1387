//! One connected socket, Unix or TCP, behind one type: the endpoint's
//! server side accepts these and every client opens one.
//!
//! Writes never raise `SIGPIPE` (the endpoint runs inside someone else's
//! program, which may not ignore it): they go through `send(2)` with
//! `MSG_NOSIGNAL` where the platform has it.

use std::io::{self, Read, Write};
use std::net::{Shutdown, TcpStream};
use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::net::UnixStream;
use std::time::{Duration, Instant};

use crate::EndpointAddr;

/// A connected byte stream to or from an endpoint.
#[derive(Debug)]
pub enum Stream {
    /// A Unix socket connection.
    Unix(UnixStream),
    /// A TCP connection.
    Tcp(TcpStream),
}

#[cfg(any(target_os = "linux", target_os = "android"))]
const NO_SIGPIPE: libc::c_int = libc::MSG_NOSIGNAL;
#[cfg(not(any(target_os = "linux", target_os = "android")))]
const NO_SIGPIPE: libc::c_int = 0;

/// Runs the same method on whichever socket `$s` holds.
macro_rules! either {
    ($s:expr, $sock:ident => $e:expr) => {
        match $s {
            Stream::Unix($sock) => $e,
            Stream::Tcp($sock) => $e,
        }
    };
}

impl Stream {
    /// Connects to `addr`; `timeout` bounds a TCP connect (a Unix connect
    /// does not block on a listening socket).
    pub fn connect(addr: &EndpointAddr, timeout: Duration) -> io::Result<Stream> {
        match addr {
            EndpointAddr::Unix(path) => UnixStream::connect(path).map(Stream::Unix),
            EndpointAddr::Tcp(a) => TcpStream::connect_timeout(a, timeout).map(Stream::Tcp),
        }
    }

    /// Bounds each blocking read; `None` blocks forever.
    pub fn set_read_timeout(&self, t: Option<Duration>) -> io::Result<()> {
        either!(self, s => s.set_read_timeout(t))
    }

    /// Bounds each blocking `send`; [`Stream::send_all`] also bounds the total.
    pub fn set_write_timeout(&self, t: Option<Duration>) -> io::Result<()> {
        either!(self, s => s.set_write_timeout(t))
    }

    /// Switches non-blocking mode.
    pub fn set_nonblocking(&self, on: bool) -> io::Result<()> {
        either!(self, s => s.set_nonblocking(on))
    }

    /// A second handle to the same socket, so one thread can write while
    /// another reads.
    pub fn try_clone(&self) -> io::Result<Stream> {
        match self {
            Stream::Unix(s) => s.try_clone().map(Stream::Unix),
            Stream::Tcp(s) => s.try_clone().map(Stream::Tcp),
        }
    }

    /// Ends both directions, waking a thread blocked reading this socket.
    pub fn shutdown(&self) {
        let _ = either!(self, s => s.shutdown(Shutdown::Both));
    }

    /// Sends all of `buf` by `deadline`. A peer that reads too slowly gets
    /// `TimedOut` (with the write timeout set, each `send` gives up on its
    /// own too).
    pub fn send_all(&self, mut buf: &[u8], deadline: Instant) -> io::Result<()> {
        while !buf.is_empty() {
            if Instant::now() >= deadline {
                return Err(io::Error::new(io::ErrorKind::TimedOut, "peer too slow"));
            }
            match self.send_flags(buf, NO_SIGPIPE) {
                Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
                Ok(n) => buf = &buf[n..],
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                // SO_SNDTIMEO expired: the peer is not reading.
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    return Err(io::Error::new(io::ErrorKind::TimedOut, "peer too slow"))
                }
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    /// One non-blocking attempt to send `buf` (a farewell to a refused
    /// client); whatever does not fit is dropped.
    pub fn send_once(&self, buf: &[u8]) {
        let _ = self.send_flags(buf, NO_SIGPIPE | libc::MSG_DONTWAIT);
    }

    fn send_flags(&self, buf: &[u8], flags: libc::c_int) -> io::Result<usize> {
        // SAFETY: `buf` is a live slice readable for `buf.len()` bytes, and
        // the fd is an open socket owned by `self` for the whole call.
        let n = unsafe { libc::send(self.as_raw_fd(), buf.as_ptr().cast(), buf.len(), flags) };
        usize::try_from(n).map_err(|_| io::Error::last_os_error())
    }
}

impl AsRawFd for Stream {
    fn as_raw_fd(&self) -> RawFd {
        either!(self, s => s.as_raw_fd())
    }
}

impl Read for Stream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        either!(self, s => s.read(buf))
    }
}

impl Write for Stream {
    /// One `send` without `SIGPIPE`.
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.send_flags(buf, NO_SIGPIPE)
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::net::UnixStream;

    #[test]
    fn writing_to_a_closed_peer_is_an_error_not_a_signal() {
        let (a, b) = UnixStream::pair().unwrap();
        drop(b);
        let mut s = Stream::Unix(a);
        // Without MSG_NOSIGNAL this would kill the test process (the test
        // harness does not ignore SIGPIPE for raw sends).
        let e = s.write_all(b"x").unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::BrokenPipe);
        let deadline = Instant::now() + Duration::from_secs(1);
        assert!(s.send_all(b"y", deadline).is_err());
    }

    #[test]
    fn send_all_gives_up_on_a_peer_that_does_not_read() {
        let (a, _b) = UnixStream::pair().unwrap();
        let s = Stream::Unix(a);
        s.set_write_timeout(Some(Duration::from_millis(20)))
            .unwrap();
        let big = vec![0u8; 16 * 1024 * 1024];
        let e = s
            .send_all(&big, Instant::now() + Duration::from_secs(5))
            .unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::TimedOut);
    }

    #[test]
    fn a_clone_reads_what_the_peer_sends_and_shutdown_wakes_it() {
        let (a, b) = UnixStream::pair().unwrap();
        let s = Stream::Unix(a);
        let mut reader = s.try_clone().unwrap();
        let mut peer = Stream::Unix(b);
        peer.write_all(b"hi").unwrap();
        let mut buf = [0u8; 2];
        reader.read_exact(&mut buf).unwrap();
        assert_eq!(&buf, b"hi");
        let t = std::thread::spawn(move || reader.read(&mut [0u8; 1]).unwrap());
        s.shutdown();
        assert_eq!(t.join().unwrap(), 0);
    }
}
