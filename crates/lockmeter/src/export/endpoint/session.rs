//! One client of the live endpoint, on its own thread: the greeting, then
//! requests and subscription pushes until the client leaves, errs, stalls
//! or idles.
//!
//! Memory per client is bounded: one request line (capped at
//! `wire::MAX_REQUEST_LINE`) and one outgoing message. A message the client
//! does not accept within the client timeout gets it dropped and counted.

use std::io::{self, Read};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use lockmeter_model::Snapshot;
use lockmeter_wire::{self as wire, Hello, LineReader, Request, Response, Stream, WireError};

use super::Shared;

/// A client that neither subscribes nor asks anything for this long is
/// disconnected, so idle connections cannot hold client slots forever.
const IDLE_TIMEOUT: Duration = Duration::from_secs(300);
/// How long, and how much, unread input is drained before closing after an
/// error, so that the error line reaches the client instead of a reset.
const LINGER: Duration = Duration::from_millis(100);
const LINGER_BYTES: usize = 64 * 1024;

/// A subscription's state.
struct Subscription {
    every: Duration,
    next: Instant,
    /// The cumulative snapshot of the previous push.
    prev: Snapshot,
    seq: u64,
}

/// What to do after a request.
#[derive(PartialEq, Eq)]
enum Flow {
    Continue,
    Close,
}

struct Session<'a> {
    conn: Stream,
    shared: &'a Shared,
    sub: Option<Subscription>,
}

/// Serves `conn` until it is done.
pub(crate) fn serve(conn: Stream, shared: &Shared) {
    let _ = conn.set_write_timeout(Some(shared.client_timeout));
    let mut s = Session {
        conn,
        shared,
        sub: None,
    };
    let hello = Hello::new(
        std::process::id(),
        shared.process_name(),
        shared.counters.stats(),
    );
    if s.send(&Response::Hello(hello)).is_err() {
        return;
    }
    let mut reader = LineReader::new(wire::MAX_REQUEST_LINE);
    // A subscriber may close its sending side (`echo ... | socat`) and
    // still read updates; then there is nothing to read, only to push.
    let mut input_open = true;
    while !shared.stop.load(Ordering::Acquire) {
        if s.sub.as_ref().is_some_and(|sub| Instant::now() >= sub.next) {
            if s.push().is_err() {
                return;
            }
            continue;
        }
        let wait = match &s.sub {
            Some(sub) => sub
                .next
                .saturating_duration_since(Instant::now())
                .max(Duration::from_millis(1)),
            None => IDLE_TIMEOUT,
        };
        if !input_open {
            std::thread::sleep(wait);
            continue;
        }
        if s.conn.set_read_timeout(Some(wait)).is_err() {
            return;
        }
        match reader.read_line(&mut s.conn) {
            Ok(Some(line)) => {
                if s.handle(&line) == Flow::Close {
                    return;
                }
            }
            Ok(None) if s.sub.is_some() => input_open = false,
            Ok(None) => return,
            Err(e) if e.is_timeout() => {
                if s.sub.is_none() {
                    return;
                }
            }
            Err(e @ (WireError::LineTooLong { .. } | WireError::Malformed(_))) => {
                s.fail(&format!("bad request: {e}"));
                return;
            }
            Err(_) => return,
        }
    }
}

impl Session<'_> {
    fn handle(&mut self, line: &str) -> Flow {
        if line.trim().is_empty() {
            return Flow::Continue;
        }
        let source = &*self.shared.source;
        let sent = match wire::decode_request(line) {
            Ok(Request::Snapshot) => self.send(&Response::Snapshot {
                snapshot: source.snapshot(),
            }),
            Ok(Request::Subscribe { interval_ms }) => self.subscribe(interval_ms),
            Ok(Request::Reset) => {
                source.reset();
                self.send(&Response::Ok)
            }
            Ok(Request::Stats) => self.send(&Response::Stats(self.shared.counters.stats())),
            Err(e) => {
                self.fail(&format!("bad request: {e}"));
                return Flow::Close;
            }
        };
        if sent.is_ok() {
            Flow::Continue
        } else {
            Flow::Close
        }
    }

    /// Starts (or restarts) a subscription with an immediate first update
    /// whose interval is empty.
    fn subscribe(&mut self, interval_ms: u64) -> io::Result<()> {
        let every = Duration::from_millis(wire::clamp_interval_ms(interval_ms));
        let now = self.shared.source.cumulative();
        let first = Response::Update {
            seq: 0,
            interval: now.since(&now),
            cumulative: now,
        };
        self.send(&first)?;
        if let Response::Update {
            cumulative: prev, ..
        } = first
        {
            self.sub = Some(Subscription {
                every,
                next: Instant::now() + every,
                prev,
                seq: 1,
            });
        }
        Ok(())
    }

    /// Sends the window since the previous push.
    fn push(&mut self) -> io::Result<()> {
        let Some(sub) = self.sub.as_mut() else {
            return Ok(());
        };
        let cur = self.shared.source.cumulative();
        let update = Response::Update {
            seq: sub.seq,
            interval: cur.since(&sub.prev),
            cumulative: cur,
        };
        let seq = sub.seq;
        self.send(&update)?;
        let Some(sub) = self.sub.as_mut() else {
            return Ok(());
        };
        if let Response::Update { cumulative, .. } = update {
            sub.prev = cumulative;
        }
        sub.seq = seq + 1;
        sub.next += sub.every;
        let now = Instant::now();
        if sub.next <= now {
            // Fell behind (a slow snapshot or client): skip, don't burst.
            sub.next = now + sub.every;
        }
        Ok(())
    }

    /// Sends one message within the client timeout; a client that does not
    /// take it in time is counted as dropped.
    fn send(&self, msg: &Response) -> io::Result<()> {
        let line = wire::encode(msg);
        let deadline = Instant::now() + self.shared.client_timeout;
        let r = self.conn.send_all(line.as_bytes(), deadline);
        if let Err(e) = &r {
            if e.kind() == io::ErrorKind::TimedOut {
                self.shared.counters.slots.count_dropped();
            }
        }
        r
    }

    /// Answers a bad request with an error line, then closes gently.
    fn fail(&mut self, message: &str) {
        self.shared
            .counters
            .protocol_errors
            .fetch_add(1, Ordering::Relaxed);
        if self
            .send(&Response::Error {
                message: message.to_string(),
            })
            .is_ok()
        {
            self.linger();
        }
    }

    /// Half-closes and discards a little pending input: closing a TCP
    /// socket with unread input sends a reset, which can destroy the error
    /// line before the client reads it.
    fn linger(&mut self) {
        if let Stream::Tcp(s) = &self.conn {
            let _ = s.shutdown(std::net::Shutdown::Write);
        }
        let _ = self.conn.set_read_timeout(Some(LINGER));
        let deadline = Instant::now() + LINGER;
        let mut buf = [0u8; 4096];
        let mut drained = 0;
        while drained < LINGER_BYTES && Instant::now() < deadline {
            match self.conn.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => drained += n,
            }
        }
    }
}
