//! Where an endpoint listens, parsed from what a user types.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::str::FromStr;

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

/// Parses a target as the viewer's commands take it: a pid (its socket in
/// the default endpoint directory, see [`crate::discovery::socket_path`]),
/// `tcp://IP:PORT`, `unix:PATH` or a socket path.
pub fn parse_target(text: &str) -> Result<EndpointAddr, AddrError> {
    let text = text.trim();
    if !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit()) {
        let pid: u32 = text
            .parse()
            .map_err(|_| AddrError(format!("{text:?} is not a valid pid")))?;
        return Ok(EndpointAddr::Unix(crate::discovery::socket_path(pid)));
    }
    text.parse::<EndpointAddr>()
}

impl EndpointAddr {
    /// The address as a user would type it: a Unix socket as its plain
    /// path, TCP as `tcp://IP:PORT`.
    pub fn as_target(&self) -> String {
        match self {
            EndpointAddr::Unix(p) => p.display().to_string(),
            EndpointAddr::Tcp(a) => format!("tcp://{a}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        assert_eq!(
            parse_target(" /tmp/y.sock ").unwrap().as_target(),
            "/tmp/y.sock"
        );
    }
}
