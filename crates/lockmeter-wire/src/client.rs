//! The one client of the live endpoint: connect, check the greeting, then
//! requests and reads that each wait until a deadline, never forever.
//!
//! [`Client::writer`] hands out a second handle to the socket, so that one
//! thread can block reading a subscription while another sends a reset or
//! shuts the connection down to wake the reader (what the viewer does).

use std::fmt;
use std::io;
use std::time::{Duration, Instant};

use lockmeter_model::{Snapshot, FORMAT_NAME};

use crate::{
    decode_response, encode, EndpointAddr, EndpointStats, Hello, LineReader, Request, Response,
    Stream, WireError, MAX_RESPONSE_LINE, PROTOCOL_VERSION,
};

/// The longest line accepted before the greeting: a greeting is tiny, and
/// this bounds what a peer speaking another protocol can make us buffer.
const MAX_HELLO_LINE: usize = 64 * 1024;

/// Why talking to an endpoint failed; each says what to do about it.
#[derive(Debug)]
pub enum ClientError {
    /// Nothing listens there (or we may not connect).
    Connect {
        /// The address as the user typed it.
        target: String,
        /// What the connect call said.
        source: io::Error,
    },
    /// The peer is not a lockmeter endpoint, or sent something unreadable.
    Protocol {
        /// The address as the user typed it.
        target: String,
        /// What was wrong.
        detail: String,
    },
    /// The endpoint is newer than this client.
    Version {
        /// The address as the user typed it.
        target: String,
        /// The protocol version it greeted with.
        found: u32,
    },
    /// The endpoint answered with an error (and closes).
    Remote {
        /// The address as the user typed it.
        target: String,
        /// The endpoint's message.
        message: String,
    },
    /// Nothing complete arrived before the deadline; the connection is
    /// still usable (a partial line stays buffered).
    Timeout {
        /// The address as the user typed it.
        target: String,
        /// What was awaited ("greeting", "snapshot", "message", ...).
        what: &'static str,
        /// How long it was awaited.
        waited: Duration,
    },
    /// The connection closed or failed.
    Io {
        /// The address as the user typed it.
        target: String,
        /// What happened.
        detail: String,
    },
}

impl ClientError {
    /// Whether the deadline passed with the connection still usable.
    pub fn is_timeout(&self) -> bool {
        matches!(self, ClientError::Timeout { .. })
    }
}

impl fmt::Display for ClientError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ClientError::Connect { target, source } => {
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
            ClientError::Protocol { target, detail } => {
                write!(f, "{target} does not speak the lockmeter protocol: {detail}")
            }
            ClientError::Version { target, found } => write!(
                f,
                "{target} speaks lockmeter protocol version {found}, newer than this viewer (up to {PROTOCOL_VERSION}); upgrade lockmeter"
            ),
            ClientError::Remote { target, message } => {
                write!(f, "{target} reported an error: {message}")
            }
            ClientError::Timeout {
                target,
                what,
                waited,
            } => write!(f, "connection to {target}: no {what} within {waited:?}"),
            ClientError::Io { target, detail } => write!(f, "connection to {target}: {detail}"),
        }
    }
}

impl std::error::Error for ClientError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ClientError::Connect { source, .. } => Some(source),
            _ => None,
        }
    }
}

/// A greeted connection to an endpoint.
///
/// # Examples
///
/// ```no_run
/// use lockmeter_wire::{Client, EndpointAddr};
/// use std::time::Duration;
///
/// let addr: EndpointAddr = "unix:/run/user/1000/lockmeter/4242.sock".parse()?;
/// let mut client = Client::connect(&addr, Duration::from_secs(2))?;
/// let snap = client.snapshot()?;
/// println!("{} has {} lock classes", client.hello().name, snap.locks.len());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct Client {
    target: String,
    stream: Stream,
    reader: LineReader,
    hello: Hello,
    /// How long [`Client::recv`] and the request helpers wait; `None` waits
    /// forever.
    timeout: Option<Duration>,
}

impl Client {
    /// Connects and waits up to `timeout` for a valid greeting. `timeout`
    /// also bounds a TCP connect, every write, and every later wait (see
    /// [`Client::set_timeout`]).
    pub fn connect(addr: &EndpointAddr, timeout: Duration) -> Result<Client, ClientError> {
        let target = addr.as_target();
        let stream = Stream::connect(addr, timeout).map_err(|source| ClientError::Connect {
            target: target.clone(),
            source,
        })?;
        let mut client = Client {
            target,
            stream,
            reader: LineReader::new(MAX_HELLO_LINE),
            hello: Hello::new(0, "", EndpointStats::default()),
            timeout: Some(timeout),
        };
        client
            .stream
            .set_write_timeout(Some(timeout))
            .map_err(|e| client.io(e.to_string()))?;
        let first = client.recv_until(Instant::now() + timeout)?;
        client.reader = LineReader::new(MAX_RESPONSE_LINE);
        client.hello = match first {
            Some(Response::Hello(h)) => {
                if h.format != FORMAT_NAME {
                    return Err(
                        client.protocol(format!("its greeting names format {:?}", h.format))
                    );
                }
                if h.version > PROTOCOL_VERSION {
                    return Err(ClientError::Version {
                        target: client.target.clone(),
                        found: h.version,
                    });
                }
                h
            }
            Some(Response::Error { message }) => return Err(client.remote(message)),
            Some(other) => {
                return Err(client.protocol(format!("expected a hello, got {}", other.kind())))
            }
            None => return Err(client.timed_out("greeting", timeout)),
        };
        Ok(client)
    }

    /// Who is on the other end, as it greeted us.
    pub fn hello(&self) -> &Hello {
        &self.hello
    }

    /// The address as the user typed it, for messages.
    pub fn target(&self) -> &str {
        &self.target
    }

    /// Sets how long [`Client::recv`], [`Client::snapshot`] and
    /// [`Client::stats`] wait; `None` waits forever.
    pub fn set_timeout(&mut self, timeout: Option<Duration>) {
        self.timeout = timeout;
    }

    /// A second handle for sending requests from another thread.
    pub fn writer(&self) -> Result<Writer, ClientError> {
        self.stream
            .try_clone()
            .map(|stream| Writer { stream })
            .map_err(|e| self.io(e.to_string()))
    }

    /// Sends one request.
    pub fn send(&mut self, req: &Request) -> Result<(), ClientError> {
        send(&self.stream, req).map_err(|e| self.io(e.to_string()))
    }

    /// Starts a subscription; read the updates with [`Client::recv`] or
    /// [`Client::recv_until`].
    pub fn subscribe(&mut self, interval: Duration) -> Result<(), ClientError> {
        let interval_ms = u64::try_from(interval.as_millis())
            .unwrap_or(u64::MAX)
            .max(1);
        self.send(&Request::Subscribe { interval_ms })
    }

    /// The next message, waiting up to the timeout. A server error arrives
    /// as `Ok(Response::Error { .. })`.
    pub fn recv(&mut self) -> Result<Response, ClientError> {
        let Some(timeout) = self.timeout else {
            return self.recv_blocking();
        };
        self.recv_until(Instant::now() + timeout)?
            .ok_or_else(|| self.timed_out("message", timeout))
    }

    /// The next message, or `Ok(None)` if `deadline` passes first (a
    /// partial line is kept for the next call).
    pub fn recv_until(&mut self, deadline: Instant) -> Result<Option<Response>, ClientError> {
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
                Err(e) if e.is_timeout() => continue,
                other => return self.decoded(other).map(Some),
            }
        }
    }

    fn recv_blocking(&mut self) -> Result<Response, ClientError> {
        self.stream
            .set_read_timeout(None)
            .map_err(|e| self.io(e.to_string()))?;
        let line = self.reader.read_line(&mut self.stream);
        self.decoded(line)
    }

    /// One read's outcome as a message or the error to report.
    fn decoded(&self, read: Result<Option<String>, WireError>) -> Result<Response, ClientError> {
        match read {
            Ok(Some(line)) => {
                decode_response(&line).map_err(|e| self.protocol(describe_bad_line(&line, &e)))
            }
            Ok(None) | Err(WireError::Closed) => {
                Err(self.io("the endpoint closed the connection".to_string()))
            }
            Err(e @ (WireError::LineTooLong { .. } | WireError::Malformed(_))) => {
                Err(self.protocol(e.to_string()))
            }
            Err(e) => Err(self.io(e.to_string())),
        }
    }

    /// Asks for one snapshot of the window since the last reset. Updates
    /// and acknowledgements that arrive first (while subscribed) are
    /// skipped.
    pub fn snapshot(&mut self) -> Result<Snapshot, ClientError> {
        self.send(&Request::Snapshot)?;
        self.answer("snapshot", |r| match r {
            Response::Snapshot { snapshot } => Some(snapshot),
            _ => None,
        })
    }

    /// Asks for the endpoint's own counters.
    pub fn stats(&mut self) -> Result<EndpointStats, ClientError> {
        self.send(&Request::Stats)?;
        self.answer("stats", |r| match r {
            Response::Stats(stats) => Some(stats),
            _ => None,
        })
    }

    /// Waits (up to the timeout) for the response of type `kind`, skipping
    /// the interleaved ones a subscription produces.
    fn answer<T>(
        &mut self,
        kind: &'static str,
        pick: impl Fn(Response) -> Option<T>,
    ) -> Result<T, ClientError> {
        let deadline = self.timeout.map(|t| Instant::now() + t);
        loop {
            let msg = match deadline {
                Some(d) => self
                    .recv_until(d)?
                    .ok_or_else(|| self.timed_out(kind, self.timeout.unwrap_or_default()))?,
                None => self.recv_blocking()?,
            };
            match msg {
                Response::Error { message } => return Err(self.remote(message)),
                m if m.kind() == kind => {
                    return pick(m).ok_or_else(|| self.protocol(format!("a bad {kind}")))
                }
                Response::Update { .. } | Response::Ok | Response::Stats(_) => continue,
                other => {
                    return Err(self.protocol(format!("expected a {kind}, got {}", other.kind())))
                }
            }
        }
    }

    fn protocol(&self, detail: String) -> ClientError {
        ClientError::Protocol {
            target: self.target.clone(),
            detail,
        }
    }

    fn io(&self, detail: String) -> ClientError {
        ClientError::Io {
            target: self.target.clone(),
            detail,
        }
    }

    fn remote(&self, message: String) -> ClientError {
        ClientError::Remote {
            target: self.target.clone(),
            message,
        }
    }

    fn timed_out(&self, what: &'static str, waited: Duration) -> ClientError {
        ClientError::Timeout {
            target: self.target.clone(),
            what,
            waited,
        }
    }
}

/// A second handle to a [`Client`]'s socket: sends requests, or shuts the
/// connection down to wake a thread blocked reading it.
#[derive(Debug)]
pub struct Writer {
    stream: Stream,
}

impl Writer {
    /// Sends one request.
    pub fn send(&self, req: &Request) -> io::Result<()> {
        send(&self.stream, req)
    }

    /// Ends the connection in both directions; the reading side sees it
    /// closed.
    pub fn shutdown(&self) {
        self.stream.shutdown();
    }

    /// Another handle to the same socket.
    pub fn try_clone(&self) -> io::Result<Writer> {
        self.stream.try_clone().map(|stream| Writer { stream })
    }
}

/// Writes one request within the stream's write timeout.
fn send(stream: &Stream, req: &Request) -> io::Result<()> {
    // The write timeout set at connect bounds each send; a whole request
    // is a few dozen bytes.
    stream.send_all(
        encode(req).as_bytes(),
        Instant::now() + Duration::from_secs(3600),
    )
}

/// A bad line, excerpted, with why it was refused.
fn describe_bad_line(line: &str, e: &WireError) -> String {
    let excerpt: String = line.chars().take(60).collect();
    let more = if line.chars().count() > 60 { "…" } else { "" };
    format!("unreadable message {excerpt:?}{more} ({e})")
}

/// Fetches one snapshot, waiting up to `timeout` for each step: the
/// `table` command's way of reading a target.
pub fn fetch_snapshot(
    addr: &EndpointAddr,
    timeout: Duration,
) -> Result<(Hello, Snapshot), ClientError> {
    let mut client = Client::connect(addr, timeout)?;
    let snap = client.snapshot()?;
    Ok((client.hello, snap))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn garbage_lines_name_what_was_seen() {
        let line = "SSH-2.0-OpenSSH_9.6";
        let err = decode_response(line).unwrap_err();
        let msg = describe_bad_line(line, &err);
        assert!(msg.contains("SSH-2.0"), "{msg}");
    }
}
