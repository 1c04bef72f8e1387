//! The live endpoint's protocol: newline-delimited JSON over a Unix socket
//! or loopback TCP.
//!
//! Every message is one JSON object on one line, tagged by its `type`
//! field. On connect the server sends a [`Hello`]; then the client sends
//! [`Request`]s and reads [`Response`]s:
//!
//! | request | response |
//! |---|---|
//! | `{"type":"snapshot"}` | `{"type":"snapshot","snapshot":{..v1..}}` (the window since the last reset) |
//! | `{"type":"subscribe","interval_ms":N}` | `{"type":"update","seq":n,"interval":{..},"cumulative":{..}}`, repeated |
//! | `{"type":"reset"}` | `{"type":"ok"}` |
//! | `{"type":"stats"}` | `{"type":"stats","clients":..,..}` |
//! | anything else | `{"type":"error","message":".."}`, then the server closes |
//!
//! Lines are capped ([`MAX_REQUEST_LINE`] for requests,
//! [`MAX_RESPONSE_LINE`] for responses) so neither side can be made to
//! buffer without bound. The client helpers here ([`Connection`],
//! [`LineReader`], [`encode`], [`decode_response`]) need no lock code, so
//! the viewer speaks the protocol without linking the library.

use std::fmt;
use std::io::{self, Read, Write};
use std::net::{IpAddr, Ipv4Addr, SocketAddr, TcpStream};
#[cfg(unix)]
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::str::FromStr;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::Snapshot;

/// The protocol version sent in the hello; bumped only for changes an old
/// client cannot ignore (new fields and message types are not such changes).
pub const PROTOCOL_VERSION: u32 = 1;
/// The longest request line the server reads, in bytes, without its newline.
pub const MAX_REQUEST_LINE: usize = 4 * 1024;
/// The longest response line a client reads: a snapshot of a large process
/// fits many times over, a runaway peer does not.
pub const MAX_RESPONSE_LINE: usize = 256 * 1024 * 1024;
/// The shortest subscription interval the server honours.
pub const MIN_INTERVAL_MS: u64 = 50;
/// The longest subscription interval the server honours.
pub const MAX_INTERVAL_MS: u64 = 60_000;

/// Clamps a requested subscription interval to
/// [`MIN_INTERVAL_MS`]..=[`MAX_INTERVAL_MS`].
pub fn clamp_interval_ms(ms: u64) -> u64 {
    ms.clamp(MIN_INTERVAL_MS, MAX_INTERVAL_MS)
}

/// What a client may ask.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Request {
    /// One snapshot of the window since the last reset.
    Snapshot,
    /// Push an [`Response::Update`] every `interval_ms` (clamped) until the
    /// connection closes. A second subscribe replaces the first.
    Subscribe { interval_ms: u64 },
    /// Start a new window for `snapshot` requests and dumps.
    Reset,
    /// The endpoint's own counters.
    Stats,
}

/// What the server sends.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Response {
    /// Sent once, first, on every connection.
    Hello(Hello),
    /// The answer to [`Request::Snapshot`].
    Snapshot { snapshot: Snapshot },
    /// One push of a subscription: `interval` is the window since the
    /// previous push (for `seq` 0, since the subscribe, so empty), and
    /// `cumulative` everything since the process started recording.
    Update {
        seq: u64,
        interval: Snapshot,
        cumulative: Snapshot,
    },
    /// The answer to [`Request::Reset`].
    Ok,
    /// The answer to [`Request::Stats`].
    Stats(EndpointStats),
    /// A request the server could not serve; the server closes after it.
    Error { message: String },
}

/// The greeting: who is on the other end.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Hello {
    /// Always `"lockmeter"`.
    pub format: String,
    /// [`PROTOCOL_VERSION`].
    pub version: u32,
    pub pid: u32,
    /// The process name, as in the snapshots.
    pub name: String,
    /// The endpoint's counters at the time of the greeting.
    #[serde(default)]
    pub stats: EndpointStats,
}

impl Hello {
    /// A greeting for process `pid` named `name`.
    pub fn new(pid: u32, name: impl Into<String>, stats: EndpointStats) -> Hello {
        Hello {
            format: crate::FORMAT_NAME.to_string(),
            version: PROTOCOL_VERSION,
            pid,
            name: name.into(),
            stats,
        }
    }
}

/// Counters of the endpoint itself, so that a client can see that it (or
/// another client) was dropped or refused.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct EndpointStats {
    /// Clients connected now.
    pub clients: u64,
    /// Most clients served at once; more are refused.
    pub max_clients: u64,
    /// Connections accepted since the endpoint started.
    pub accepted: u64,
    /// Connections refused because `max_clients` were connected.
    pub refused_clients: u64,
    /// Clients dropped because they did not read fast enough.
    pub dropped_clients: u64,
    /// Requests answered with an error (malformed, unknown, too long).
    pub protocol_errors: u64,
}

/// A message of the protocol; only [`Request`] and [`Response`] are.
pub trait Message: Serialize + private::Sealed {}
impl Message for Request {}
impl Message for Response {}

mod private {
    pub trait Sealed {}
    impl Sealed for super::Request {}
    impl Sealed for super::Response {}
}

/// One message as a line: compact JSON and a trailing newline.
pub fn encode<M: Message>(msg: &M) -> String {
    // Serializing these types cannot fail: every map key is a string and
    // every number is finite or serialized as null by serde_json.
    let mut line = serde_json::to_string(msg).unwrap_or_else(|e| {
        let err = Response::Error {
            message: format!("cannot encode message: {e}"),
        };
        serde_json::to_string(&err).unwrap_or_default()
    });
    line.push('\n');
    line
}

/// Parses one request line (with or without its newline).
pub fn decode_request(line: &str) -> Result<Request, WireError> {
    decode(line, MAX_REQUEST_LINE)
}

/// Parses one response line (with or without its newline).
pub fn decode_response(line: &str) -> Result<Response, WireError> {
    decode(line, MAX_RESPONSE_LINE)
}

fn decode<T: for<'de> Deserialize<'de>>(line: &str, limit: usize) -> Result<T, WireError> {
    let line = line.trim_end_matches(['\n', '\r']);
    if line.len() > limit {
        return Err(WireError::LineTooLong { limit });
    }
    serde_json::from_str(line).map_err(|e| WireError::Malformed(e.to_string()))
}

/// Why talking to an endpoint failed.
#[derive(Debug)]
pub enum WireError {
    /// The connection failed, or a read timed out (see [`WireError::is_timeout`]).
    Io(io::Error),
    /// A line longer than `limit` bytes.
    LineTooLong { limit: usize },
    /// Not UTF-8, not JSON, or not a known message.
    Malformed(String),
    /// The peer closed the connection (possibly in the middle of a line).
    Closed,
    /// The server answered with an error message.
    Server(String),
    /// A valid message, but not the one this exchange expects.
    Unexpected(String),
}

impl WireError {
    /// Whether this is a read or write timeout, after which the connection
    /// is still usable (a partial line stays buffered).
    pub fn is_timeout(&self) -> bool {
        matches!(self, WireError::Io(e) if is_timeout_kind(e.kind()))
    }
}

fn is_timeout_kind(kind: io::ErrorKind) -> bool {
    matches!(kind, io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut)
}

impl fmt::Display for WireError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WireError::Io(e) => write!(f, "endpoint connection: {e}"),
            WireError::LineTooLong { limit } => {
                write!(f, "message longer than the {limit}-byte line limit")
            }
            WireError::Malformed(why) => write!(f, "malformed message: {why}"),
            WireError::Closed => write!(f, "the endpoint closed the connection"),
            WireError::Server(msg) => write!(f, "the endpoint answered with an error: {msg}"),
            WireError::Unexpected(what) => {
                write!(f, "unexpected message from the endpoint: {what}")
            }
        }
    }
}

impl std::error::Error for WireError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            WireError::Io(e) => Some(e),
            _ => None,
        }
    }
}

impl From<io::Error> for WireError {
    fn from(e: io::Error) -> Self {
        WireError::Io(e)
    }
}

/// Splits a byte stream into lines of at most `limit` bytes.
///
/// Unlike `BufRead::read_line`, a read timeout keeps the partial line for
/// the next call, and a peer that never sends a newline cannot make it
/// buffer more than `limit` plus one read.
#[derive(Debug)]
pub struct LineReader {
    buf: Vec<u8>,
    /// Bytes of `buf` already searched for a newline.
    scanned: usize,
    limit: usize,
}

/// How much one `read` call asks for.
const READ_CHUNK: usize = 16 * 1024;

impl LineReader {
    /// A reader whose lines may be at most `limit` bytes (newline excluded).
    pub fn new(limit: usize) -> LineReader {
        LineReader {
            buf: Vec::new(),
            scanned: 0,
            limit,
        }
    }

    /// The next line without its `\n` (and `\r`), `Ok(None)` at a clean end
    /// of stream, [`WireError::Closed`] if the stream ends mid-line.
    pub fn read_line<R: Read>(&mut self, src: &mut R) -> Result<Option<String>, WireError> {
        loop {
            if let Some(line) = self.take_line()? {
                return Ok(Some(line));
            }
            let old_len = self.buf.len();
            let want = READ_CHUNK.min(self.limit + 2);
            self.buf.resize(old_len + want, 0);
            let got = src.read(&mut self.buf[old_len..]);
            match got {
                Ok(n) => {
                    self.buf.truncate(old_len + n);
                    if n == 0 {
                        return if self.buf.is_empty() {
                            Ok(None)
                        } else {
                            Err(WireError::Closed)
                        };
                    }
                }
                Err(e) => {
                    self.buf.truncate(old_len);
                    if e.kind() == io::ErrorKind::Interrupted {
                        continue;
                    }
                    return Err(WireError::Io(e));
                }
            }
        }
    }

    /// A complete buffered line, if any; an error if the pending line is
    /// already over the limit.
    fn take_line(&mut self) -> Result<Option<String>, WireError> {
        let found = self.buf[self.scanned..].iter().position(|&b| b == b'\n');
        let Some(pos) = found.map(|p| p + self.scanned) else {
            self.scanned = self.buf.len();
            if self.buf.len() > self.limit {
                return Err(WireError::LineTooLong { limit: self.limit });
            }
            return Ok(None);
        };
        let mut line: Vec<u8> = self.buf.drain(..=pos).collect();
        self.scanned = 0;
        line.pop();
        if line.last() == Some(&b'\r') {
            line.pop();
        }
        if line.len() > self.limit {
            return Err(WireError::LineTooLong { limit: self.limit });
        }
        String::from_utf8(line)
            .map(Some)
            .map_err(|_| WireError::Malformed("the line is not UTF-8".to_string()))
    }
}

/// Where an endpoint listens.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum EndpointAddr {
    /// A Unix socket path.
    Unix(PathBuf),
    /// A TCP address (loopback unless the process was told otherwise).
    Tcp(SocketAddr),
}

impl fmt::Display for EndpointAddr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EndpointAddr::Unix(p) => write!(f, "unix:{}", p.display()),
            EndpointAddr::Tcp(a) => write!(f, "tcp://{a}"),
        }
    }
}

/// Why an address string was not understood.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AddrError(pub String);

impl fmt::Display for AddrError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for AddrError {}

impl FromStr for EndpointAddr {
    type Err = AddrError;

    /// `tcp://IP:PORT` (or `tcp://localhost:PORT`), `unix:PATH`, or a
    /// plain path to a Unix socket.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let s = s.trim();
        if let Some(rest) = s.strip_prefix("tcp://").or_else(|| s.strip_prefix("tcp:")) {
            return parse_tcp(rest).map(EndpointAddr::Tcp);
        }
        let path = s
            .strip_prefix("unix://")
            .or_else(|| s.strip_prefix("unix:"))
            .unwrap_or(s);
        if path.is_empty() {
            return Err(AddrError("empty endpoint address".to_string()));
        }
        if path.contains("://") {
            return Err(AddrError(format!(
                "{s:?}: unknown scheme; use tcp://127.0.0.1:PORT, unix:PATH or a socket path"
            )));
        }
        Ok(EndpointAddr::Unix(PathBuf::from(path)))
    }
}

/// Parses `IP:PORT`, `[IPv6]:PORT` or `localhost:PORT`; host names other
/// than `localhost` are refused so that no name lookup ever happens.
fn parse_tcp(s: &str) -> Result<SocketAddr, AddrError> {
    if let Some(port) = s.strip_prefix("localhost:") {
        let port = port
            .parse::<u16>()
            .map_err(|_| AddrError(format!("tcp://{s}: {port:?} is not a port number")))?;
        return Ok(SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), port));
    }
    s.parse::<SocketAddr>().map_err(|_| {
        AddrError(format!(
            "tcp://{s}: expected tcp://IP:PORT such as tcp://127.0.0.1:7878 (host names other than localhost are not looked up)"
        ))
    })
}

/// The client's end of a connection, either transport.
#[derive(Debug)]
enum Stream {
    #[cfg(unix)]
    Unix(UnixStream),
    Tcp(TcpStream),
}

impl Stream {
    fn set_read_timeout(&self, t: Option<Duration>) -> io::Result<()> {
        match self {
            #[cfg(unix)]
            Stream::Unix(s) => s.set_read_timeout(t),
            Stream::Tcp(s) => s.set_read_timeout(t),
        }
    }

    fn set_write_timeout(&self, t: Option<Duration>) -> io::Result<()> {
        match self {
            #[cfg(unix)]
            Stream::Unix(s) => s.set_write_timeout(t),
            Stream::Tcp(s) => s.set_write_timeout(t),
        }
    }
}

impl Read for Stream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            #[cfg(unix)]
            Stream::Unix(s) => s.read(buf),
            Stream::Tcp(s) => s.read(buf),
        }
    }
}

impl Write for Stream {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            #[cfg(unix)]
            Stream::Unix(s) => s.write(buf),
            Stream::Tcp(s) => s.write(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// A client connection to an endpoint: the building block of the viewer's
/// live mode, usable without the lock library.
///
/// # Examples
///
/// ```no_run
/// use lockmeter_model::wire::{Connection, EndpointAddr};
/// use std::time::Duration;
///
/// let addr: EndpointAddr = "unix:/run/user/1000/lockmeter/4242.sock".parse()?;
/// let (mut conn, hello) = Connection::connect(&addr, Duration::from_secs(2))?;
/// let snap = conn.snapshot()?;
/// println!("{} has {} lock classes", hello.name, snap.locks.len());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct Connection {
    stream: Stream,
    reader: LineReader,
}

impl Connection {
    /// Connects and reads the greeting. `timeout` bounds the connect (TCP),
    /// the greeting and every later read and write; change it with
    /// [`Connection::set_read_timeout`].
    pub fn connect(
        addr: &EndpointAddr,
        timeout: Duration,
    ) -> Result<(Connection, Hello), WireError> {
        let stream = match addr {
            #[cfg(unix)]
            EndpointAddr::Unix(path) => Stream::Unix(UnixStream::connect(path)?),
            #[cfg(not(unix))]
            EndpointAddr::Unix(_) => {
                return Err(WireError::Io(io::Error::new(
                    io::ErrorKind::Unsupported,
                    "Unix sockets are not supported on this platform",
                )))
            }
            EndpointAddr::Tcp(a) => Stream::Tcp(TcpStream::connect_timeout(a, timeout)?),
        };
        stream.set_read_timeout(Some(timeout))?;
        stream.set_write_timeout(Some(timeout))?;
        let mut conn = Connection {
            stream,
            reader: LineReader::new(MAX_RESPONSE_LINE),
        };
        match conn.recv()? {
            Response::Hello(hello) => Ok((conn, hello)),
            other => Err(WireError::Unexpected(describe(&other))),
        }
    }

    /// Sets how long [`Connection::recv`] waits; `None` waits forever.
    pub fn set_read_timeout(&self, timeout: Option<Duration>) -> io::Result<()> {
        self.stream.set_read_timeout(timeout)
    }

    /// Sends one request.
    pub fn send(&mut self, req: &Request) -> Result<(), WireError> {
        self.stream.write_all(encode(req).as_bytes())?;
        Ok(())
    }

    /// Reads the next message. A server error arrives as
    /// `Ok(Response::Error { .. })`; on a timeout ([`WireError::is_timeout`])
    /// the connection stays usable.
    pub fn recv(&mut self) -> Result<Response, WireError> {
        match self.reader.read_line(&mut self.stream)? {
            Some(line) => decode_response(&line),
            None => Err(WireError::Closed),
        }
    }

    /// Asks for one snapshot of the window since the last reset. Not for
    /// use while subscribed (updates would arrive in between).
    pub fn snapshot(&mut self) -> Result<Snapshot, WireError> {
        self.send(&Request::Snapshot)?;
        match self.recv()? {
            Response::Snapshot { snapshot } => Ok(snapshot),
            Response::Error { message } => Err(WireError::Server(message)),
            other => Err(WireError::Unexpected(describe(&other))),
        }
    }

    /// Asks for the endpoint's counters. Not for use while subscribed.
    pub fn stats(&mut self) -> Result<EndpointStats, WireError> {
        self.send(&Request::Stats)?;
        match self.recv()? {
            Response::Stats(stats) => Ok(stats),
            Response::Error { message } => Err(WireError::Server(message)),
            other => Err(WireError::Unexpected(describe(&other))),
        }
    }

    /// Starts a subscription; read the updates with [`Connection::recv`].
    pub fn subscribe(&mut self, interval: Duration) -> Result<(), WireError> {
        let interval_ms = u64::try_from(interval.as_millis()).unwrap_or(u64::MAX);
        self.send(&Request::Subscribe { interval_ms })
    }
}

/// The `type` of a response, for error messages.
fn describe(r: &Response) -> String {
    let kind = match r {
        Response::Hello(_) => "hello",
        Response::Snapshot { .. } => "snapshot",
        Response::Update { .. } => "update",
        Response::Ok => "ok",
        Response::Stats(_) => "stats",
        Response::Error { message } => return format!("error: {message}"),
    };
    format!("a {kind} message")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ProcessInfo;

    fn snap() -> Snapshot {
        Snapshot::empty(
            ProcessInfo {
                pid: 7,
                name: "t".into(),
            },
            "mock",
        )
    }

    #[test]
    fn requests_have_the_documented_shape() {
        assert_eq!(encode(&Request::Snapshot), "{\"type\":\"snapshot\"}\n");
        assert_eq!(encode(&Request::Reset), "{\"type\":\"reset\"}\n");
        assert_eq!(
            encode(&Request::Subscribe { interval_ms: 250 }),
            "{\"type\":\"subscribe\",\"interval_ms\":250}\n"
        );
        assert_eq!(
            decode_request("{\"type\":\"subscribe\",\"interval_ms\":9}").unwrap(),
            Request::Subscribe { interval_ms: 9 }
        );
    }

    #[test]
    fn responses_have_the_documented_shape() {
        let hello = Response::Hello(Hello::new(42, "demo", EndpointStats::default()));
        let v: serde_json::Value = serde_json::from_str(&encode(&hello)).unwrap();
        assert_eq!(v["type"], "hello");
        assert_eq!(v["format"], "lockmeter");
        assert_eq!(v["version"], 1);
        assert_eq!(v["pid"], 42);
        assert_eq!(v["name"], "demo");
        assert_eq!(encode(&Response::Ok), "{\"type\":\"ok\"}\n");

        let upd = Response::Update {
            seq: 3,
            interval: snap(),
            cumulative: snap(),
        };
        let v: serde_json::Value = serde_json::from_str(&encode(&upd)).unwrap();
        assert_eq!(v["type"], "update");
        assert_eq!(v["seq"], 3);
        assert_eq!(v["interval"]["format"], "lockmeter");
        assert_eq!(v["cumulative"]["process"]["pid"], 7);
    }

    #[test]
    fn every_response_round_trips() {
        let all = [
            Response::Hello(Hello::new(
                1,
                "x",
                EndpointStats {
                    clients: 2,
                    ..Default::default()
                },
            )),
            Response::Snapshot { snapshot: snap() },
            Response::Update {
                seq: 1,
                interval: snap(),
                cumulative: snap(),
            },
            Response::Ok,
            Response::Stats(EndpointStats {
                dropped_clients: 5,
                ..Default::default()
            }),
            Response::Error {
                message: "no".into(),
            },
        ];
        for r in all {
            let line = encode(&r);
            assert!(line.ends_with('\n') && line.matches('\n').count() == 1);
            assert_eq!(decode_response(&line).unwrap(), r);
        }
    }

    #[test]
    fn a_populated_snapshot_round_trips_inside_a_tagged_message() {
        let mut s = snap();
        let mut counts = vec![0u64; crate::dist::BUCKETS];
        counts[crate::dist::bucket_index(1500)] = 3;
        let stats = crate::Stats {
            acquisitions: u64::MAX - 1,
            contended: 3,
            con_pct: 12.5,
            hold_ns: crate::Dist::from_buckets(&counts, 3, 4500, 1400, 1600),
            ..Default::default()
        };
        s.locks.push(crate::LockStats {
            id: "demo.counter".into(),
            name: "demo.counter".into(),
            kind: crate::LockKind::Rwlock,
            created_at: "a.rs:1:1".into(),
            instances: 1,
            parent: None,
            total: stats.clone(),
            sites: vec![crate::SiteStats {
                site: "a.rs:2:3".into(),
                mode: Some("read".into()),
                stats,
            }],
            holders: vec![crate::Holder {
                site: "a.rs:4:5".into(),
                contended: 3,
                wait_ns_total: 9,
            }],
        });
        let r = Response::Update {
            seq: 9,
            interval: s.clone(),
            cumulative: s,
        };
        assert_eq!(decode_response(&encode(&r)).unwrap(), r);
    }

    #[test]
    fn a_minimal_hello_from_an_older_server_decodes() {
        let r = decode_response(
            r#"{"type":"hello","format":"lockmeter","version":1,"pid":3,"name":"n"}"#,
        )
        .unwrap();
        let Response::Hello(h) = r else {
            panic!("not a hello: {r:?}")
        };
        assert_eq!(
            (h.pid, h.name.as_str(), h.stats),
            (3, "n", EndpointStats::default())
        );
    }

    #[test]
    fn bad_requests_are_errors_not_panics() {
        for bad in [
            "",
            "{",
            "null",
            "[]",
            "{\"type\":\"launch\"}",
            "{\"type\":\"subscribe\"}",
            "{\"type\":\"subscribe\",\"interval_ms\":-1}",
            "{\"no_type\":1}",
        ] {
            assert!(
                matches!(decode_request(bad), Err(WireError::Malformed(_))),
                "{bad}"
            );
        }
        let long = format!(
            "{{\"type\":\"snapshot\",\"x\":\"{}\"}}",
            "a".repeat(MAX_REQUEST_LINE)
        );
        assert!(matches!(
            decode_request(&long),
            Err(WireError::LineTooLong { .. })
        ));
    }

    #[test]
    fn intervals_are_clamped() {
        assert_eq!(clamp_interval_ms(0), MIN_INTERVAL_MS);
        assert_eq!(clamp_interval_ms(1000), 1000);
        assert_eq!(clamp_interval_ms(u64::MAX), MAX_INTERVAL_MS);
    }

    /// A reader that hands out its chunks one `read` at a time, with a
    /// timeout error between them.
    struct Chunks(Vec<io::Result<Vec<u8>>>);

    impl Read for Chunks {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            if self.0.is_empty() {
                return Ok(0);
            }
            match self.0.remove(0) {
                Ok(mut c) => {
                    let n = c.len().min(buf.len());
                    buf[..n].copy_from_slice(&c[..n]);
                    if n < c.len() {
                        self.0.insert(0, Ok(c.split_off(n)));
                    }
                    Ok(n)
                }
                Err(e) => Err(e),
            }
        }
    }

    #[test]
    fn line_reader_keeps_a_partial_line_across_a_timeout() {
        let timeout = || Err(io::Error::new(io::ErrorKind::WouldBlock, "t"));
        let mut src = Chunks(vec![
            Ok(b"{\"a\"".to_vec()),
            timeout(),
            Ok(b":1}\r\nx\ny".to_vec()),
        ]);
        let mut r = LineReader::new(64);
        let e = r.read_line(&mut src).unwrap_err();
        assert!(e.is_timeout());
        assert_eq!(r.read_line(&mut src).unwrap().as_deref(), Some("{\"a\":1}"));
        assert_eq!(r.read_line(&mut src).unwrap().as_deref(), Some("x"));
        assert!(matches!(r.read_line(&mut src), Err(WireError::Closed)));
    }

    #[test]
    fn line_reader_stops_at_the_limit_without_a_newline() {
        let mut src = Chunks(vec![Ok(vec![b'a'; 10_000])]);
        let mut r = LineReader::new(100);
        assert!(matches!(
            r.read_line(&mut src),
            Err(WireError::LineTooLong { limit: 100 })
        ));
        assert!(r.buf.len() <= 102, "buffered {} bytes", r.buf.len());
    }

    #[test]
    fn line_reader_rejects_a_long_line_with_a_newline_and_non_utf8() {
        let mut src = Chunks(vec![Ok([vec![b'a'; 101], b"\n".to_vec()].concat())]);
        assert!(matches!(
            LineReader::new(100).read_line(&mut src),
            Err(WireError::LineTooLong { .. })
        ));
        let mut src = Chunks(vec![Ok(b"\xff\xfe\n".to_vec())]);
        assert!(matches!(
            LineReader::new(100).read_line(&mut src),
            Err(WireError::Malformed(_))
        ));
        let mut src = Chunks(vec![]);
        assert!(LineReader::new(100).read_line(&mut src).unwrap().is_none());
    }

    #[test]
    fn addresses_parse_and_print() {
        let a: EndpointAddr = "tcp://127.0.0.1:7878".parse().unwrap();
        assert_eq!(a, EndpointAddr::Tcp("127.0.0.1:7878".parse().unwrap()));
        assert_eq!(a.to_string(), "tcp://127.0.0.1:7878");
        let l: EndpointAddr = "tcp://localhost:9".parse().unwrap();
        assert_eq!(l, EndpointAddr::Tcp("127.0.0.1:9".parse().unwrap()));
        let v6: EndpointAddr = "tcp://[::1]:9".parse().unwrap();
        assert_eq!(v6, EndpointAddr::Tcp("[::1]:9".parse().unwrap()));
        let u: EndpointAddr = "unix:/tmp/x.sock".parse().unwrap();
        assert_eq!(u, EndpointAddr::Unix("/tmp/x.sock".into()));
        assert_eq!(u.to_string(), "unix:/tmp/x.sock");
        assert_eq!(
            "/tmp/y.sock".parse::<EndpointAddr>().unwrap(),
            EndpointAddr::Unix("/tmp/y.sock".into())
        );
        for bad in [
            "",
            "tcp://example.com:80",
            "tcp://127.0.0.1",
            "http://x",
            "tcp://localhost:99999",
        ] {
            assert!(bad.parse::<EndpointAddr>().is_err(), "{bad}");
        }
    }
}
