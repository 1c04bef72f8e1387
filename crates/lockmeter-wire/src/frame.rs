//! Framing: splitting a byte stream into capped lines, and what can go
//! wrong reading or decoding them.

use std::fmt;
use std::io::{self, Read};

/// Why talking to an endpoint failed.
#[derive(Debug)]
pub enum WireError {
    /// The connection failed, or a read timed out (see [`WireError::is_timeout`]).
    Io(io::Error),
    /// A line longer than `limit` bytes.
    LineTooLong {
        /// The cap, in bytes, newline excluded.
        limit: usize,
    },
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

#[cfg(test)]
mod tests {
    use super::*;

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
}
