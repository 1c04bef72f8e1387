//! The Prometheus endpoint: `GET /metrics` over loopback TCP, in the
//! Prometheus text format or OpenMetrics, from the cumulative snapshot.
//!
//! - `encode.rs`: the metric families, through `prometheus-client`.
//! - `http.rs`: one request head, capped and with a deadline.
//! - this file: the listener, the accept thread, one thread per client.
//!
//! The cardinality bound lives in the model (`lockmeter_model::series`),
//! as a pure function of snapshots. Like the live endpoint, nothing here
//! runs on an application thread or takes a lock the application uses:
//! a scrape reads [`SnapshotSource::cumulative`], which only takes the
//! recorder's own short internal locks. The security rules are the
//! endpoint's: loopback unless forced, bounded requests, clients and time.

mod encode;
mod http;

use std::io;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use lockmeter_model::series::SiteBound;

use super::SnapshotSource;
use encode::{Format, Scrape};
use http::{ReadError, Request};
use lockmeter_wire::Stream;

use super::clients::{serve_client, ClientSlots};
use super::ACCEPT_ERROR_PAUSE;

/// How the Prometheus endpoint is set up.
#[derive(Debug, Clone)]
pub(crate) struct PrometheusOptions {
    pub(crate) addr: SocketAddr,
    pub(crate) allow_remote: bool,
    pub(crate) top_sites: usize,
    pub(crate) max_clients: usize,
    /// For reading the request and for writing the response, each.
    pub(crate) client_timeout: Duration,
}

/// What the Prometheus endpoint has served and refused so far.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PrometheusStats {
    /// `GET /metrics` requests answered with the metrics.
    pub scrapes: u64,
    /// Requests answered 400, 404, 405 or 431.
    pub bad_requests: u64,
    /// Connections refused with 503 because `max_clients` were being served.
    pub refused_clients: u64,
    /// Clients dropped for not sending a request or not reading the
    /// response within the client timeout.
    pub dropped_clients: u64,
}

#[derive(Debug)]
struct Counters {
    slots: ClientSlots,
    scrapes: AtomicU64,
    bad_requests: AtomicU64,
}

struct Shared {
    source: Arc<dyn SnapshotSource>,
    /// The sticky site selection: scrapes take turns updating it. Only
    /// the endpoint's threads take this lock.
    bound: Mutex<SiteBound>,
    counters: Counters,
    stop: AtomicBool,
    client_timeout: Duration,
}

/// A running Prometheus endpoint.
pub(crate) struct PrometheusServer {
    addr: SocketAddr,
    shared: Arc<Shared>,
    acceptor: JoinHandle<()>,
}

impl PrometheusServer {
    /// Binds and starts the accept thread. Errors say what was refused.
    pub(crate) fn start(
        source: Arc<dyn SnapshotSource>,
        opts: PrometheusOptions,
    ) -> io::Result<PrometheusServer> {
        if !cfg!(feature = "prometheus") {
            return Err(io::Error::new(
                io::ErrorKind::Unsupported,
                "lockmeter was built without its `prometheus` feature (it is off when the \
                 whole dependency tree's parking_lot is patched: see docs/guide.md)",
            ));
        }
        if !opts.addr.ip().is_loopback() && !opts.allow_remote {
            return Err(io::Error::new(
                io::ErrorKind::PermissionDenied,
                format!(
                    "refusing to serve Prometheus metrics on {}: not a loopback address, and the \
                     endpoint has no authentication (set LOCKMETER_PROMETHEUS_ALLOW_REMOTE=1 to force it)",
                    opts.addr
                ),
            ));
        }
        let listener = TcpListener::bind(opts.addr).map_err(|e| {
            io::Error::new(e.kind(), format!("cannot listen on {}: {e}", opts.addr))
        })?;
        let addr = listener.local_addr()?;
        let shared = Arc::new(Shared {
            source,
            bound: Mutex::new(SiteBound::new(opts.top_sites)),
            counters: Counters {
                slots: ClientSlots::new(opts.max_clients),
                scrapes: AtomicU64::new(0),
                bad_requests: AtomicU64::new(0),
            },
            stop: AtomicBool::new(false),
            client_timeout: opts.client_timeout,
        });
        let for_thread = Arc::clone(&shared);
        let acceptor = thread::Builder::new()
            .name("lockmeter-prometheus".into())
            .spawn(move || accept_loop(&listener, &for_thread))?;
        Ok(PrometheusServer {
            addr,
            shared,
            acceptor,
        })
    }

    /// Where it listens (with the real port for port 0).
    pub(crate) fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// A handle on the counters that outlives the server.
    pub(crate) fn stats_source(&self) -> Arc<dyn Fn() -> PrometheusStats + Send + Sync> {
        let shared = Arc::clone(&self.shared);
        Arc::new(move || shared.stats())
    }

    /// At exit: stop accepting, wait for nothing.
    pub(crate) fn stop_at_exit(&self) {
        self.signal_stop();
    }

    /// Stops accepting and waits for the accept thread. Client threads
    /// finish their one request within the client timeout on their own.
    pub(crate) fn stop(self) {
        self.signal_stop();
        let _ = self.acceptor.join();
    }

    fn signal_stop(&self) {
        self.shared.stop.store(true, Ordering::Release);
        // Wake the blocking accept with a connection of our own.
        let mut wake = self.addr;
        if wake.ip().is_unspecified() {
            wake.set_ip(match wake {
                SocketAddr::V4(_) => std::net::Ipv4Addr::LOCALHOST.into(),
                SocketAddr::V6(_) => std::net::Ipv6Addr::LOCALHOST.into(),
            });
        }
        let _ = TcpStream::connect_timeout(&wake, Duration::from_secs(1));
    }
}

impl Shared {
    fn stats(&self) -> PrometheusStats {
        let c = &self.counters;
        PrometheusStats {
            scrapes: c.scrapes.load(Ordering::Relaxed),
            bad_requests: c.bad_requests.load(Ordering::Relaxed),
            refused_clients: c.slots.refused(),
            dropped_clients: c.slots.dropped(),
        }
    }

    /// The exposition of the current cumulative snapshot.
    fn metrics(&self, format: Format) -> String {
        let cumulative = self.source.cumulative();
        let series = self
            .bound
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .series(&cumulative);
        Scrape::new(&cumulative, series).encode(format)
    }
}

fn accept_loop(listener: &TcpListener, shared: &Arc<Shared>) {
    loop {
        let accepted = listener.accept();
        if shared.stop.load(Ordering::Acquire) {
            return;
        }
        match accepted {
            Ok((stream, _)) => admit(stream, shared),
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::Interrupted | io::ErrorKind::ConnectionAborted
                ) => {}
            Err(_) => thread::sleep(ACCEPT_ERROR_PAUSE),
        }
    }
}

/// Serves `stream` on a thread of its own, or answers 503 when full.
fn admit(stream: TcpStream, shared: &Arc<Shared>) {
    let conn = Stream::Tcp(stream);
    let slots = &shared.counters.slots;
    if slots.full() {
        slots.count_refused();
        let _ = conn.set_nonblocking(true);
        conn.send_once(&http::error(
            "503 Service Unavailable",
            "Retry-After: 1\r\n",
        ));
        conn.shutdown();
        return;
    }
    serve_client(
        shared,
        |s| &s.counters.slots,
        "lockmeter-prometheus-client",
        move |shared| serve(conn, shared),
    );
}

/// One request, one response, then the connection is closed.
fn serve(mut conn: Stream, shared: &Shared) {
    let timeout = shared.client_timeout;
    let _ = conn.set_write_timeout(Some(timeout));
    let counters = &shared.counters;
    // Only an error can leave input unread (a body, a cut head): then the
    // response needs a linger to arrive before the close.
    let mut unread = true;
    let reply = match http::read_request(&mut conn, Instant::now() + timeout) {
        Ok(Request::Metrics { accept }) => {
            let format = Format::negotiate(accept.as_deref());
            let body = shared.metrics(format);
            counters.scrapes.fetch_add(1, Ordering::Relaxed);
            unread = false;
            http::response("200 OK", format.content_type(), "", &body)
        }
        Ok(Request::NotFound) => bad(counters, http::error("404 Not Found", "")),
        Ok(Request::MethodNotAllowed) => bad(
            counters,
            http::error("405 Method Not Allowed", "Allow: GET\r\n"),
        ),
        Ok(Request::Bad(_)) => bad(counters, http::error("400 Bad Request", "")),
        Err(ReadError::TooLarge) => bad(
            counters,
            http::error("431 Request Header Fields Too Large", ""),
        ),
        Err(ReadError::TimedOut) => {
            counters.slots.count_dropped();
            return;
        }
        Err(ReadError::Closed) => return,
    };
    match conn.send_all(&reply, Instant::now() + timeout) {
        Err(e) if e.kind() == io::ErrorKind::TimedOut => counters.slots.count_dropped(),
        Err(_) => {}
        Ok(()) if unread => linger(&mut conn),
        Ok(()) => {}
    }
    conn.shutdown();
}

fn bad(counters: &Counters, reply: Vec<u8>) -> Vec<u8> {
    counters.bad_requests.fetch_add(1, Ordering::Relaxed);
    reply
}

/// Half-closes and drains a little unread input, so that closing with a
/// request body still unread does not reset the response away.
fn linger(conn: &mut Stream) {
    use std::io::Read;
    if let Stream::Tcp(s) = conn {
        let _ = s.shutdown(std::net::Shutdown::Write);
    }
    let deadline = Instant::now() + Duration::from_millis(100);
    let _ = conn.set_read_timeout(Some(Duration::from_millis(100)));
    let mut buf = [0u8; 4096];
    let mut drained = 0;
    while drained < 64 * 1024 && Instant::now() < deadline {
        match conn.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => drained += n,
        }
    }
}
