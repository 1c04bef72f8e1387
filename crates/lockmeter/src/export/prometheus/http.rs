//! Just enough HTTP/1.x for `GET /metrics`: reading one request head under
//! a size cap and a deadline, and the few responses the server sends.
//!
//! Hand-written rather than a server crate because the whole protocol here
//! is one request per connection, and the limits (bytes, time, clients)
//! must be ours to set exactly like the live endpoint's.

use std::io::{self, Read};
use std::time::Instant;

use lockmeter_wire::Stream;

/// The longest request head accepted (request line and headers).
pub(crate) const MAX_REQUEST: usize = 8 * 1024;

/// What a request asked for.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Request {
    /// `GET /metrics` (any query string), with its `Accept` header.
    Metrics { accept: Option<String> },
    /// Another path: 404.
    NotFound,
    /// Another method: 405.
    MethodNotAllowed,
    /// Not HTTP: 400.
    Bad(&'static str),
}

/// Why no request could be read.
#[derive(Debug)]
pub(crate) enum ReadError {
    /// The head grew past [`MAX_REQUEST`]: 431.
    TooLarge,
    /// The deadline passed first: the client is dropped.
    TimedOut,
    /// The client closed or the socket failed.
    Closed,
}

/// Reads one request head from `conn` by `deadline`, at most
/// [`MAX_REQUEST`] bytes, and parses it.
pub(crate) fn read_request(conn: &mut Stream, deadline: Instant) -> Result<Request, ReadError> {
    let mut buf = Vec::with_capacity(1024);
    let mut chunk = [0u8; 1024];
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(ReadError::TimedOut);
        }
        if conn.set_read_timeout(Some(left)).is_err() {
            return Err(ReadError::Closed);
        }
        let n = match conn.read(&mut chunk) {
            Ok(0) => return Err(ReadError::Closed),
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                ) =>
            {
                return Err(ReadError::TimedOut)
            }
            Err(_) => return Err(ReadError::Closed),
        };
        // Look for the end of the head only in what could contain it.
        let from = buf.len().saturating_sub(3);
        buf.extend_from_slice(&chunk[..n]);
        if let Some(end) = head_end(&buf[from..]) {
            return Ok(parse(&buf[..from + end]));
        }
        if buf.len() > MAX_REQUEST {
            return Err(ReadError::TooLarge);
        }
    }
}

/// Where the blank line ending a head is in `buf` (`\r\n\r\n` or `\n\n`).
fn head_end(buf: &[u8]) -> Option<usize> {
    (0..buf.len()).find_map(|i| {
        if buf[i..].starts_with(b"\r\n\r\n") {
            Some(i + 4)
        } else if buf[i..].starts_with(b"\n\n") {
            Some(i + 2)
        } else {
            None
        }
    })
}

/// Parses a complete request head.
pub(crate) fn parse(head: &[u8]) -> Request {
    if head.len() > MAX_REQUEST {
        return Request::Bad("request too large");
    }
    let Ok(text) = std::str::from_utf8(head) else {
        return Request::Bad("request is not UTF-8");
    };
    let mut lines = text.split('\n').map(|l| l.strip_suffix('\r').unwrap_or(l));
    let Some(request_line) = lines.next() else {
        return Request::Bad("empty request");
    };
    let mut parts = request_line.split(' ');
    let (Some(method), Some(target), Some(version), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Request::Bad("malformed request line");
    };
    if !version.starts_with("HTTP/1.") || method.is_empty() || !target.starts_with('/') {
        return Request::Bad("malformed request line");
    }
    let mut accept = None;
    for line in lines.take_while(|l| !l.is_empty()) {
        let Some((name, value)) = line.split_once(':') else {
            return Request::Bad("malformed header");
        };
        if name.eq_ignore_ascii_case("accept") {
            accept = Some(value.trim().to_string());
        }
    }
    let path = target.split_once('?').map_or(target, |(p, _)| p);
    if path != "/metrics" {
        Request::NotFound
    } else if method != "GET" {
        Request::MethodNotAllowed
    } else {
        Request::Metrics { accept }
    }
}

/// A complete response with `Connection: close`.
pub(crate) fn response(status: &str, content_type: &str, extra: &str, body: &str) -> Vec<u8> {
    let mut out = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\n{extra}Connection: close\r\n\r\n",
        body.len()
    )
    .into_bytes();
    out.extend_from_slice(body.as_bytes());
    out
}

/// A short plain-text error response.
pub(crate) fn error(status: &str, extra: &str) -> Vec<u8> {
    response(
        status,
        "text/plain; charset=utf-8",
        extra,
        &format!("{status}\n"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_parse() {
        assert_eq!(
            parse(b"GET /metrics HTTP/1.1\r\nHost: x\r\nAccept: text/plain\r\n\r\n"),
            Request::Metrics {
                accept: Some("text/plain".into())
            }
        );
        assert_eq!(
            parse(b"GET /metrics?x=1 HTTP/1.0\n\n"),
            Request::Metrics { accept: None }
        );
        assert_eq!(parse(b"GET / HTTP/1.1\r\n\r\n"), Request::NotFound);
        assert_eq!(
            parse(b"POST /metrics HTTP/1.1\r\n\r\n"),
            Request::MethodNotAllowed
        );
        for bad in [
            &b"garbage\r\n\r\n"[..],
            b"GET /metrics\r\n\r\n",
            b"GET metrics HTTP/1.1\r\n\r\n",
            b"GET /metrics SPDY/3\r\n\r\n",
            b"GET /metrics HTTP/1.1\r\nno colon\r\n\r\n",
            b"\xff\xfe\r\n\r\n",
        ] {
            assert!(matches!(parse(bad), Request::Bad(_)), "{bad:?}");
        }
    }

    #[test]
    fn the_head_ends_at_the_first_blank_line() {
        assert_eq!(head_end(b"GET / HTTP/1.1\r\n\r\nbody"), Some(18));
        assert_eq!(head_end(b"GET / HTTP/1.1\n\nbody"), Some(16));
        assert_eq!(head_end(b"GET / HTTP/1.1\r\n"), None);
    }
}
