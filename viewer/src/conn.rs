//! Talking to a live endpoint: parse a target, connect, check the greeting,
//! and keep a subscription alive in a background thread that reconnects with
//! backoff when the target goes away.
//!
//! The protocol is newline-delimited JSON (see `lockmeter_model::wire`): the
//! server greets with `hello`, answers `snapshot` with one snapshot, answers
//! `subscribe` with a stream of `update`s and `reset` with `ok`.

use std::fmt;
use std::io::{self, Read, Write};
use std::net::{Shutdown, TcpStream};
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use lockmeter_model::wire::{
    decode_response, encode, EndpointAddr, LineReader, Request, Response, WireError,
    MAX_RESPONSE_LINE, PROTOCOL_VERSION,
};
use lockmeter_model::{Snapshot, FORMAT_NAME};

/// How long a one-shot request waits for the greeting and the answer.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(5);
/// How often the subscription thread wakes from a blocking read to check
/// whether it should stop.
const POLL: Duration = Duration::from_millis(200);
/// The longest line accepted before the greeting (a greeting is tiny; this
/// bounds what a peer speaking another protocol can make us buffer).
const MAX_HELLO_LINE: usize = 64 * 1024;

/// Parses a target: a pid (its socket in the endpoint directory),
/// `tcp://IP:PORT`, `unix:PATH` or a socket path.
pub fn parse_target(text: &str) -> Result<EndpointAddr, String> {
    let text = text.trim();
    if !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit()) {
        let pid: u32 = text
            .parse()
            .map_err(|_| format!("{text:?} is not a valid pid"))?;
        return Ok(EndpointAddr::Unix(lockmeter_model::discovery::socket_path(
            pid,
        )));
    }
    text.parse::<EndpointAddr>().map_err(|e| e.to_string())
}

/// A target as the user would type it.
pub fn describe(addr: &EndpointAddr) -> String {
    match addr {
        EndpointAddr::Unix(p) => p.display().to_string(),
        EndpointAddr::Tcp(a) => format!("tcp://{a}"),
    }
}

/// What the server said about itself when we connected.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hello {
    pub pid: u32,
    pub name: String,
}

/// Why talking to an endpoint failed; each says what to do about it.
#[derive(Debug)]
pub enum ConnError {
    /// Nothing listens there (or we may not connect).
    Connect { target: String, source: io::Error },
    /// The peer is not a lockmeter endpoint, or sent something unreadable.
    Protocol { target: String, detail: String },
    /// The endpoint is newer than this viewer.
    Version { target: String, found: u32 },
    /// The endpoint reported an error and closed.
    Remote { target: String, message: String },
    /// The connection closed or stalled.
    Io { target: String, detail: String },
}

impl fmt::Display for ConnError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ConnError::Connect { target, source } => {
                write!(f, "cannot connect to {target}: {source}")?;
                if matches!(
                    source.kind(),
                    io::ErrorKind::NotFound | io::ErrorKind::ConnectionRefused
                ) {
                    write!(
                        f,
                        " (is the process running with LOCKMETER_LISTEN set? `lockmeter list` shows what is attachable)"
                    )?;
                }
                Ok(())
            }
            ConnError::Protocol { target, detail } => {
                write!(f, "{target} does not speak the lockmeter protocol: {detail}")
            }
            ConnError::Version { target, found } => write!(
                f,
                "{target} speaks lockmeter protocol version {found}, newer than this viewer (up to {PROTOCOL_VERSION}); upgrade lockmeter"
            ),
            ConnError::Remote { target, message } => {
                write!(f, "{target} reported an error: {message}")
            }
            ConnError::Io { target, detail } => write!(f, "connection to {target}: {detail}"),
        }
    }
}

impl std::error::Error for ConnError {}

/// A byte stream to either kind of endpoint; unlike the model's client it
/// can be cloned, so one thread can send a reset while another reads.
#[derive(Debug)]
enum Stream {
    Unix(UnixStream),
    Tcp(TcpStream),
}

impl Stream {
    fn open(addr: &EndpointAddr, timeout: Duration) -> io::Result<Stream> {
        match addr {
            EndpointAddr::Unix(path) => UnixStream::connect(path).map(Stream::Unix),
            EndpointAddr::Tcp(a) => TcpStream::connect_timeout(a, timeout).map(Stream::Tcp),
        }
    }

    fn try_clone(&self) -> io::Result<Stream> {
        match self {
            Stream::Unix(s) => s.try_clone().map(Stream::Unix),
            Stream::Tcp(s) => s.try_clone().map(Stream::Tcp),
        }
    }

    fn set_read_timeout(&self, d: Option<Duration>) -> io::Result<()> {
        match self {
            Stream::Unix(s) => s.set_read_timeout(d),
            Stream::Tcp(s) => s.set_read_timeout(d),
        }
    }

    fn set_write_timeout(&self, d: Option<Duration>) -> io::Result<()> {
        match self {
            Stream::Unix(s) => s.set_write_timeout(d),
            Stream::Tcp(s) => s.set_write_timeout(d),
        }
    }

    fn shutdown(&self) {
        let _ = match self {
            Stream::Unix(s) => s.shutdown(Shutdown::Both),
            Stream::Tcp(s) => s.shutdown(Shutdown::Both),
        };
    }
}

impl Read for Stream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Stream::Unix(s) => s.read(buf),
            Stream::Tcp(s) => s.read(buf),
        }
    }
}

impl Write for Stream {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Stream::Unix(s) => s.write(buf),
            Stream::Tcp(s) => s.write(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match self {
            Stream::Unix(s) => s.flush(),
            Stream::Tcp(s) => s.flush(),
        }
    }
}

fn send(stream: &mut Stream, request: &Request) -> io::Result<()> {
    stream.write_all(encode(request).as_bytes())?;
    stream.flush()
}

/// An open, greeted connection.
pub struct Connection {
    target: String,
    stream: Stream,
    reader: LineReader,
    pub hello: Hello,
}

impl Connection {
    /// Connects and waits up to `timeout` for a valid greeting.
    pub fn open(addr: &EndpointAddr, timeout: Duration) -> Result<Connection, ConnError> {
        let target = describe(addr);
        let stream = Stream::open(addr, timeout).map_err(|source| ConnError::Connect {
            target: target.clone(),
            source,
        })?;
        let mut conn = Connection {
            target,
            stream,
            reader: LineReader::new(MAX_HELLO_LINE),
            hello: Hello {
                pid: 0,
                name: String::new(),
            },
        };
        conn.stream
            .set_write_timeout(Some(timeout))
            .map_err(|e| conn.io(e.to_string()))?;
        let first = conn.read_message(Instant::now() + timeout)?;
        conn.reader = LineReader::new(MAX_RESPONSE_LINE);
        conn.hello = match first {
            Some(Response::Hello(h)) => {
                if h.format != FORMAT_NAME {
                    return Err(conn.protocol(format!("its greeting names format {:?}", h.format)));
                }
                if h.version > PROTOCOL_VERSION {
                    return Err(ConnError::Version {
                        target: conn.target.clone(),
                        found: h.version,
                    });
                }
                Hello {
                    pid: h.pid,
                    name: h.name,
                }
            }
            Some(Response::Error { message }) => {
                return Err(ConnError::Remote {
                    target: conn.target.clone(),
                    message,
                })
            }
            Some(other) => {
                return Err(conn.protocol(format!("expected a hello, got {}", kind_of(&other))))
            }
            None => return Err(conn.protocol(format!("no greeting within {timeout:?}"))),
        };
        Ok(conn)
    }

    fn protocol(&self, detail: String) -> ConnError {
        ConnError::Protocol {
            target: self.target.clone(),
            detail,
        }
    }

    fn io(&self, detail: String) -> ConnError {
        ConnError::Io {
            target: self.target.clone(),
            detail,
        }
    }

    /// Asks for one snapshot and waits up to `timeout` for it.
    pub fn snapshot(&mut self, timeout: Duration) -> Result<Snapshot, ConnError> {
        send(&mut self.stream, &Request::Snapshot).map_err(|e| self.io(e.to_string()))?;
        let deadline = Instant::now() + timeout;
        loop {
            match self.read_message(deadline)? {
                Some(Response::Snapshot { snapshot }) => return Ok(snapshot),
                Some(Response::Error { message }) => {
                    return Err(ConnError::Remote {
                        target: self.target.clone(),
                        message,
                    })
                }
                Some(Response::Update { .. } | Response::Ok | Response::Stats(_)) => continue,
                Some(other) => {
                    return Err(
                        self.protocol(format!("expected a snapshot, got {}", kind_of(&other)))
                    )
                }
                None => return Err(self.io(format!("no snapshot within {timeout:?}"))),
            }
        }
    }

    /// Reads one message, waiting until `deadline`. `Ok(None)` means the
    /// deadline passed with no complete line (a partial line is kept).
    fn read_message(&mut self, deadline: Instant) -> Result<Option<Response>, ConnError> {
        loop {
            let now = Instant::now();
            if now >= deadline {
                return Ok(None);
            }
            let wait = (deadline - now).max(Duration::from_millis(1));
            self.stream
                .set_read_timeout(Some(wait))
                .map_err(|e| self.io(e.to_string()))?;
            match self.reader.read_line(&mut self.stream) {
                Ok(Some(line)) => {
                    return decode_response(&line)
                        .map(Some)
                        .map_err(|e| self.protocol(describe_bad_line(&line, &e)));
                }
                Ok(None) | Err(WireError::Closed) => {
                    return Err(self.io("the endpoint closed the connection".to_string()))
                }
                Err(e) if e.is_timeout() => continue,
                Err(e @ (WireError::LineTooLong { .. } | WireError::Malformed(_))) => {
                    return Err(self.protocol(e.to_string()))
                }
                Err(e) => return Err(self.io(e.to_string())),
            }
        }
    }
}

fn kind_of(r: &Response) -> &'static str {
    match r {
        Response::Hello(_) => "hello",
        Response::Snapshot { .. } => "snapshot",
        Response::Update { .. } => "update",
        Response::Ok => "ok",
        Response::Stats(_) => "stats",
        Response::Error { .. } => "error",
    }
}

/// A bad line, excerpted, with why it was refused.
fn describe_bad_line(line: &str, e: &WireError) -> String {
    let excerpt: String = line.chars().take(60).collect();
    let more = if line.chars().count() > 60 { "…" } else { "" };
    format!("unreadable message {excerpt:?}{more} ({e})")
}

/// Fetches one snapshot: the `table` command's way of reading a target.
pub fn fetch_snapshot(addr: &EndpointAddr) -> Result<(Hello, Snapshot), ConnError> {
    let mut conn = Connection::open(addr, REQUEST_TIMEOUT)?;
    let snap = conn.snapshot(REQUEST_TIMEOUT)?;
    Ok((conn.hello.clone(), snap))
}

/// Delay between reconnection attempts: doubles from [`Backoff::INITIAL`]
/// to [`Backoff::MAX`], back to the start after a good connection.
#[derive(Debug, Clone)]
pub struct Backoff {
    next: Duration,
    pub attempt: u32,
}

impl Backoff {
    pub const INITIAL: Duration = Duration::from_millis(250);
    pub const MAX: Duration = Duration::from_secs(5);

    pub fn new() -> Backoff {
        Backoff {
            next: Backoff::INITIAL,
            attempt: 0,
        }
    }

    /// The delay before the next attempt; each call doubles the following.
    pub fn next_delay(&mut self) -> Duration {
        let d = self.next;
        self.next = (self.next * 2).min(Backoff::MAX);
        self.attempt += 1;
        d
    }

    pub fn reset(&mut self) {
        *self = Backoff::new();
    }
}

impl Default for Backoff {
    fn default() -> Self {
        Backoff::new()
    }
}

/// What the subscription thread reports to the UI.
#[derive(Debug)]
pub enum ConnEvent {
    Connected(Hello),
    Update {
        interval: Box<Snapshot>,
        cumulative: Box<Snapshot>,
    },
    /// The endpoint acknowledged a reset.
    ResetDone,
    /// The connection failed or closed; the thread will retry.
    Lost(String),
    /// The next attempt happens after `delay`.
    Retrying {
        attempt: u32,
        delay: Duration,
    },
}

/// State shared between the UI and the subscription thread.
struct Control {
    stop: AtomicBool,
    /// A clone of the current connection's socket, for sending resets and
    /// for shutting the socket down to wake the reader.
    writer: Mutex<Option<Stream>>,
}

/// A subscription to a live endpoint, kept alive by a background thread.
/// Dropping it stops the thread.
pub struct Live {
    pub target: EndpointAddr,
    events: Receiver<ConnEvent>,
    control: Arc<Control>,
    thread: Option<thread::JoinHandle<()>>,
}

impl Live {
    /// Starts the subscription thread; events start arriving on
    /// [`Live::try_recv`].
    pub fn spawn(target: EndpointAddr, interval: Duration) -> Live {
        let (tx, rx) = mpsc::channel();
        let control = Arc::new(Control {
            stop: AtomicBool::new(false),
            writer: Mutex::new(None),
        });
        let thread = {
            let control = Arc::clone(&control);
            let target = target.clone();
            thread::Builder::new()
                .name("lockmeter-conn".into())
                .spawn(move || subscription(target, interval, tx, control))
                .ok()
        };
        Live {
            target,
            events: rx,
            control,
            thread,
        }
    }

    /// The next event, if one is waiting.
    pub fn try_recv(&self) -> Option<ConnEvent> {
        self.events.try_recv().ok()
    }

    /// Asks the endpoint to reset its window. The acknowledgement arrives as
    /// [`ConnEvent::ResetDone`].
    pub fn reset(&self) -> Result<(), String> {
        let mut guard = self
            .control
            .writer
            .lock()
            .map_err(|_| "connection state poisoned".to_string())?;
        match guard.as_mut() {
            Some(w) => send(w, &Request::Reset).map_err(|e| format!("reset failed: {e}")),
            None => Err("not connected".to_string()),
        }
    }
}

impl Drop for Live {
    fn drop(&mut self) {
        self.control.stop.store(true, Ordering::SeqCst);
        if let Ok(guard) = self.control.writer.lock() {
            if let Some(w) = guard.as_ref() {
                w.shutdown();
            }
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// The subscription thread: connect, subscribe, forward updates; on any
/// failure report it, wait with backoff, and start over.
fn subscription(
    target: EndpointAddr,
    interval: Duration,
    tx: Sender<ConnEvent>,
    control: Arc<Control>,
) {
    let mut backoff = Backoff::new();
    let interval_ms = u64::try_from(interval.as_millis())
        .unwrap_or(u64::MAX)
        .max(1);
    while !control.stop.load(Ordering::SeqCst) {
        let reason = match session(&target, interval_ms, &tx, &control, &mut backoff) {
            Ok(()) => return, // stopped, or the UI went away
            Err(e) => e.to_string(),
        };
        if let Ok(mut w) = control.writer.lock() {
            *w = None;
        }
        if control.stop.load(Ordering::SeqCst) || tx.send(ConnEvent::Lost(reason)).is_err() {
            return;
        }
        let delay = backoff.next_delay();
        let retry = ConnEvent::Retrying {
            attempt: backoff.attempt,
            delay,
        };
        if tx.send(retry).is_err() {
            return;
        }
        let until = Instant::now() + delay;
        while Instant::now() < until {
            if control.stop.load(Ordering::SeqCst) {
                return;
            }
            thread::sleep(POLL.min(until.saturating_duration_since(Instant::now())));
        }
    }
}

/// One connection's life. `Ok(())` means stop for good.
fn session(
    target: &EndpointAddr,
    interval_ms: u64,
    tx: &Sender<ConnEvent>,
    control: &Control,
    backoff: &mut Backoff,
) -> Result<(), ConnError> {
    let mut conn = Connection::open(target, REQUEST_TIMEOUT)?;
    let writer = conn
        .stream
        .try_clone()
        .map_err(|e| conn.io(e.to_string()))?;
    {
        let mut w = control
            .writer
            .lock()
            .map_err(|_| conn.io("connection state poisoned".into()))?;
        send(w.insert(writer), &Request::Subscribe { interval_ms })
            .map_err(|e| conn.io(e.to_string()))?;
    }
    backoff.reset();
    if tx.send(ConnEvent::Connected(conn.hello.clone())).is_err() {
        return Ok(());
    }
    loop {
        if control.stop.load(Ordering::SeqCst) {
            return Ok(());
        }
        let msg = match conn.read_message(Instant::now() + POLL) {
            Err(_) if control.stop.load(Ordering::SeqCst) => return Ok(()),
            other => other?,
        };
        let event = match msg {
            None => continue,
            Some(Response::Update {
                interval,
                cumulative,
                ..
            }) => ConnEvent::Update {
                interval: Box::new(interval),
                cumulative: Box::new(cumulative),
            },
            Some(Response::Ok) => ConnEvent::ResetDone,
            Some(Response::Stats(_)) => continue,
            Some(Response::Error { message }) => {
                return Err(ConnError::Remote {
                    target: conn.target.clone(),
                    message,
                })
            }
            Some(other) => {
                return Err(conn.protocol(format!("unexpected {} message", kind_of(&other))))
            }
        };
        if tx.send(event).is_err() {
            return Ok(());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_parse() {
        assert_eq!(
            parse_target("tcp://127.0.0.1:7000").unwrap(),
            EndpointAddr::Tcp("127.0.0.1:7000".parse().unwrap())
        );
        assert!(parse_target("tcp://127.0.0.1").is_err());
        assert!(parse_target("").is_err());
        assert_eq!(
            parse_target("/tmp/x.sock").unwrap(),
            EndpointAddr::Unix("/tmp/x.sock".into())
        );
        match parse_target("4242").unwrap() {
            EndpointAddr::Unix(p) => assert!(p.ends_with("4242.sock"), "{}", p.display()),
            t => panic!("pid parsed as {t:?}"),
        }
    }

    #[test]
    fn backoff_doubles_up_to_the_cap_and_resets() {
        let mut b = Backoff::new();
        let delays: Vec<Duration> = (0..8).map(|_| b.next_delay()).collect();
        assert_eq!(delays[0], Backoff::INITIAL);
        assert_eq!(delays[1], Backoff::INITIAL * 2);
        assert!(delays.windows(2).all(|w| w[0] <= w[1]));
        assert_eq!(*delays.last().unwrap(), Backoff::MAX);
        assert_eq!(b.attempt, 8);
        b.reset();
        assert_eq!(b.next_delay(), Backoff::INITIAL);
    }

    #[test]
    fn garbage_lines_name_what_was_seen() {
        let line = "SSH-2.0-OpenSSH_9.6";
        let err = decode_response(line).unwrap_err();
        let msg = describe_bad_line(line, &err);
        assert!(msg.contains("SSH-2.0"), "{msg}");
    }
}
