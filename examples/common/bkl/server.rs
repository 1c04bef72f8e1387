//! The HTTP/1.0 server: a pool of threads accepting on one listener and
//! serving one 4 KiB page, the page copied and checksummed on the way out
//! (`csum_and_copy_from_user` in `tcp_do_sendmsg`), with or without the
//! big lock held across the copy.

use std::io::{self, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use lockmeter::Mutex;

use super::{Variant, BKL};
use crate::meter;

/// Size of the page served.
pub const PAGE_BYTES: usize = 4096;
/// The path the page is served at (any path gets it).
pub const PAGE_PATH: &str = "/4k.html";
/// Longest request head read before giving up.
const MAX_REQUEST: usize = 8 * 1024;

/// What the big lock guards: the "kernel's" counters.
#[derive(Debug, Default)]
pub struct Kernel {
    pub requests: u64,
    pub bytes_sent: u64,
}

/// A running server.
pub struct Server {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    workers: Vec<JoinHandle<u64>>,
}

/// Settings of a server.
#[derive(Debug, Clone, Copy)]
pub struct ServerConfig {
    pub variant: Variant,
    pub workers: usize,
    /// Passes over the page per copy: the copy's cost (see `bkl` docs).
    pub copy_passes: u32,
    /// Port on 127.0.0.1; 0 picks a free one.
    pub port: u16,
}

impl Server {
    /// Binds 127.0.0.1 and starts the workers.
    pub fn start(cfg: ServerConfig) -> io::Result<Server> {
        let listener = TcpListener::bind(("127.0.0.1", cfg.port))?;
        let addr = listener.local_addr()?;
        let stop = Arc::new(AtomicBool::new(false));
        let kernel = Arc::new(Mutex::named(BKL, Kernel::default()));
        let page: Arc<[u8; PAGE_BYTES]> = Arc::new(page());
        let mut workers = Vec::with_capacity(cfg.workers);
        for i in 0..cfg.workers.max(1) {
            let listener = listener.try_clone()?;
            let (quit, kernel, page) = (stop.clone(), kernel.clone(), page.clone());
            let worker = move || {
                let mut served = 0u64;
                while let Ok((stream, _)) = listener.accept() {
                    if quit.load(Ordering::Acquire) {
                        break;
                    }
                    if handle(stream, cfg, &kernel, &page).is_ok() {
                        served += 1;
                    }
                }
                served
            };
            match meter::spawn(&format!("httpd-{i}"), None, worker) {
                Ok(t) => workers.push(t),
                Err(e) => {
                    let partial = Server {
                        addr,
                        stop,
                        workers,
                    };
                    let _ = partial.stop();
                    return Err(e);
                }
            }
        }
        Ok(Server {
            addr,
            stop,
            workers,
        })
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Stops the workers (each is woken from `accept` by a connection of
    /// its own) and returns how many requests they served.
    pub fn stop(self) -> io::Result<u64> {
        self.stop.store(true, Ordering::Release);
        for _ in 0..self.workers.len() {
            // A worker busy with a request takes one of these later.
            let _ = TcpStream::connect_timeout(&self.addr, Duration::from_secs(1));
        }
        Ok(meter::join_all(self.workers)?.into_iter().sum())
    }
}

/// The page: 4 KiB of HTML.
fn page() -> [u8; PAGE_BYTES] {
    let mut p = [b' '; PAGE_BYTES];
    let head = b"<html><head><title>4k</title></head><body><pre>";
    let tail = b"</pre></body></html>\n";
    p[..head.len()].copy_from_slice(head);
    let body = PAGE_BYTES - tail.len();
    for (i, b) in p[head.len()..body].iter_mut().enumerate() {
        *b = if i % 64 == 63 {
            b'\n'
        } else {
            b'a' + (i % 26) as u8
        };
    }
    p[body..].copy_from_slice(tail);
    p
}

/// Serves one connection: read the request head, send the page, close.
fn handle(
    mut stream: TcpStream,
    cfg: ServerConfig,
    kernel: &Mutex<Kernel>,
    page: &[u8; PAGE_BYTES],
) -> io::Result<()> {
    stream.set_read_timeout(Some(Duration::from_secs(5)))?;
    stream.set_nodelay(true)?;
    if !read_head(&mut stream)? {
        return Err(io::Error::new(io::ErrorKind::InvalidData, "no request"));
    }
    let header = format!(
        "HTTP/1.0 200 OK\r\nContent-Type: text/html\r\nContent-Length: {PAGE_BYTES}\r\n\r\n"
    );
    let mut out = vec![0u8; header.len() + PAGE_BYTES];
    out[..header.len()].copy_from_slice(header.as_bytes());
    let body = &mut out[header.len()..];
    let body: &mut [u8; PAGE_BYTES] = body
        .try_into()
        .map_err(|_| io::Error::other("page buffer size"))?;
    sendmsg(cfg, kernel, page, body);
    stream.write_all(&out)?;
    stream.shutdown(Shutdown::Write)?;
    Ok(())
}

/// Reads until the blank line ending the request head; false if the
/// peer closed or sent too much first.
fn read_head(stream: &mut TcpStream) -> io::Result<bool> {
    let mut buf = Vec::with_capacity(512);
    let mut chunk = [0u8; 512];
    while buf.len() < MAX_REQUEST {
        let n = stream.read(&mut chunk)?;
        if n == 0 {
            return Ok(false);
        }
        buf.extend_from_slice(&chunk[..n]);
        if buf.windows(4).any(|w| w == b"\r\n\r\n") || buf.windows(2).any(|w| w == b"\n\n") {
            return Ok(true);
        }
    }
    Ok(false)
}

/// `tcp_do_sendmsg`: account the send and copy the page into the
/// outgoing buffer. The big lock is held across the copy, or dropped
/// around it as in the seed's patch.
fn sendmsg(
    cfg: ServerConfig,
    kernel: &Mutex<Kernel>,
    page: &[u8; PAGE_BYTES],
    out: &mut [u8; PAGE_BYTES],
) {
    match cfg.variant {
        Variant::BigLock => {
            let mut k = kernel.lock();
            k.requests += 1;
            let csum = csum_and_copy(page, out, cfg.copy_passes);
            k.bytes_sent += PAGE_BYTES as u64;
            std::hint::black_box(csum);
        }
        Variant::Dropped => {
            let mut k = kernel.lock();
            k.requests += 1;
            drop(k); // unlock_kernel()
            let csum = csum_and_copy(page, out, cfg.copy_passes);
            let mut k = kernel.lock(); // lock_kernel()
            k.bytes_sent += PAGE_BYTES as u64;
            std::hint::black_box(csum);
        }
    }
}

/// Copies `src` into `dst` while summing it as 16-bit words, ones'
/// complement (the Internet checksum), `passes` times over.
pub fn csum_and_copy(src: &[u8; PAGE_BYTES], dst: &mut [u8; PAGE_BYTES], passes: u32) -> u16 {
    let mut sum: u32 = 0;
    for _ in 0..passes.max(1) {
        let src = std::hint::black_box(src);
        sum = 0;
        for (d, s) in dst.chunks_exact_mut(2).zip(src.chunks_exact(2)) {
            d.copy_from_slice(s);
            sum += u32::from(u16::from_be_bytes([s[0], s[1]]));
            sum = (sum & 0xffff) + (sum >> 16);
        }
        std::hint::black_box(&mut *dst);
    }
    !(sum as u16)
}
