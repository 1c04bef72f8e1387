//! The load generator: `concurrency` closed-loop clients on loopback,
//! each fetching the page over a fresh HTTP/1.0 connection until the
//! time is up (like `ab -c 8 -t SECONDS`).

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use super::server::{PAGE_BYTES, PAGE_PATH};

/// What the clients got.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Load {
    pub ok: u64,
    pub errors: u64,
    pub seconds: f64,
}

impl Load {
    pub fn requests_per_sec(&self) -> f64 {
        self.ok as f64 / self.seconds.max(1e-9)
    }
}

/// Runs `concurrency` clients against `addr` for `duration`.
pub fn drive(addr: SocketAddr, concurrency: usize, duration: Duration) -> io::Result<Load> {
    let start = Instant::now();
    let deadline = start + duration;
    let mut clients = Vec::with_capacity(concurrency);
    for i in 0..concurrency.max(1) {
        let t = std::thread::Builder::new()
            .name(format!("client-{i}"))
            .spawn(move || {
                let mut load = Load::default();
                while Instant::now() < deadline {
                    match fetch(addr) {
                        Ok(()) => load.ok += 1,
                        Err(_) => load.errors += 1,
                    }
                }
                load
            })?;
        clients.push(t);
    }
    let mut total = Load::default();
    for c in clients {
        let l = c
            .join()
            .map_err(|_| io::Error::other("client thread panicked"))?;
        total.ok += l.ok;
        total.errors += l.errors;
    }
    total.seconds = start.elapsed().as_secs_f64();
    Ok(total)
}

/// One request on a fresh connection; checks the status and the length.
pub fn fetch(addr: SocketAddr) -> io::Result<()> {
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(2))?;
    s.set_read_timeout(Some(Duration::from_secs(5)))?;
    s.set_nodelay(true)?;
    write!(s, "GET {PAGE_PATH} HTTP/1.0\r\nHost: localhost\r\n\r\n")?;
    let mut resp = Vec::with_capacity(PAGE_BYTES + 128);
    s.read_to_end(&mut resp)?;
    reset_on_close(&s);
    let head_end = resp
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .map(|p| p + 4)
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidData, "no header end"))?;
    if !resp.starts_with(b"HTTP/1.0 200") || resp.len() - head_end != PAGE_BYTES {
        return Err(io::Error::new(io::ErrorKind::InvalidData, "bad response"));
    }
    Ok(())
}

/// Closes with a reset instead of a FIN, so that tens of thousands of
/// loopback connections leave no TIME_WAIT sockets behind to exhaust the
/// ephemeral ports. Only done after the whole response was read.
#[cfg(unix)]
fn reset_on_close(s: &TcpStream) {
    use std::os::fd::AsRawFd;
    let linger = libc::linger {
        l_onoff: 1,
        l_linger: 0,
    };
    // SAFETY: the fd is open for the lifetime of `s`; `linger` is a valid
    // struct of the size passed.
    unsafe {
        libc::setsockopt(
            s.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_LINGER,
            (&linger as *const libc::linger).cast(),
            std::mem::size_of::<libc::linger>() as libc::socklen_t,
        );
    }
}

#[cfg(not(unix))]
fn reset_on_close(_s: &TcpStream) {}
