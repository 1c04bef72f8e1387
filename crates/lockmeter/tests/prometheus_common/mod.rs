//! Helpers shared by the `prometheus_*` integration tests: the demo
//! program (`examples/prometheus_demo.rs`) run as a child process, a plain
//! HTTP/1.0 client, and a reader of the text exposition.
#![allow(dead_code, reason = "each test binary uses a different subset")]

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::{Command, Output, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use crate::child_common::Child;

pub const TIMEOUT: Duration = Duration::from_secs(10);
pub const PATIENCE: Duration = Duration::from_secs(60);

/// The upper bounds of the bucket a ~24 ms wait lands in, in seconds.
pub const WAIT_BUCKET: (f64, f64) = (0.016777215, 0.033554431);

/// A running demo with its Prometheus endpoint.
pub struct Demo {
    proc: Child,
    pub acquisitions: u64,
    pub waits: u64,
    pub addr: SocketAddr,
}

impl Demo {
    /// Starts the demo serving on `listen` and waits until it is ready.
    pub fn start(listen: &str, args: &[&str]) -> Demo {
        let mut proc = Child::start("prometheus_demo", &[("LOCKMETER_PROMETHEUS", listen)], args);
        let [acquisitions, waits] = proc.ready()[..] else {
            panic!("`ready` without 2 numbers; stderr: {}", proc.stderr());
        };
        let mut addr = None;
        let end = Instant::now() + PATIENCE;
        while addr.is_none() && Instant::now() < end {
            addr = proc.stderr().lines().find_map(|l| {
                l.strip_prefix("lockmeter: Prometheus metrics on http://")
                    .and_then(|a| a.strip_suffix("/metrics"))
                    .and_then(|a| a.parse().ok())
            });
            thread::sleep(Duration::from_millis(10));
        }
        let Some(addr) = addr else {
            panic!("no address announced; stderr: {}", proc.stderr());
        };
        Demo {
            proc,
            acquisitions,
            waits,
            addr,
        }
    }

    pub fn stderr(&self) -> String {
        self.proc.stderr()
    }

    /// Closes stdin; the demo exits normally.
    pub fn finish(mut self) {
        drop(self.proc.stdin.take());
        let _ = self.proc.child.wait();
    }
}

/// Runs `cmd` with `input` on its stdin; its output.
pub fn pipe_through(cmd: &mut Command, input: &str) -> Output {
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e}"));
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    child.wait_with_output().unwrap()
}

/// An HTTP/1.0 response: status code, headers (lowercase names), body.
#[derive(Debug)]
pub struct Reply {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl Reply {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// Sends `raw` to `addr` and reads the response until the server closes.
pub fn exchange(addr: SocketAddr, raw: &[u8]) -> std::io::Result<Reply> {
    let mut s = TcpStream::connect_timeout(&addr, TIMEOUT)?;
    s.set_read_timeout(Some(TIMEOUT))?;
    s.set_write_timeout(Some(TIMEOUT))?;
    s.write_all(raw)?;
    let mut all = Vec::new();
    s.read_to_end(&mut all)?;
    parse_reply(&all)
}

fn parse_reply(all: &[u8]) -> std::io::Result<Reply> {
    let bad = |why: &str| std::io::Error::new(std::io::ErrorKind::InvalidData, why.to_string());
    let text = String::from_utf8_lossy(all);
    let (head, body) = text
        .split_once("\r\n\r\n")
        .ok_or_else(|| bad("no end of head"))?;
    let mut lines = head.split("\r\n");
    let status = lines
        .next()
        .and_then(|l| l.split(' ').nth(1))
        .and_then(|c| c.parse().ok())
        .ok_or_else(|| bad("no status"))?;
    let headers = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    Ok(Reply {
        status,
        headers,
        body: body.to_string(),
    })
}

/// `GET path` over HTTP/1.0 (so no chunked encoding comes back).
pub fn get(addr: SocketAddr, path: &str, accept: Option<&str>) -> Reply {
    let accept = accept.map_or(String::new(), |a| format!("Accept: {a}\r\n"));
    let req = format!("GET {path} HTTP/1.0\r\nHost: {addr}\r\n{accept}\r\n");
    exchange(addr, req.as_bytes()).unwrap_or_else(|e| panic!("GET {path} from {addr}: {e}"))
}

/// One sample of the text exposition: name, labels, value.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    pub name: String,
    pub labels: BTreeMap<String, String>,
    pub value: f64,
}

/// The samples of an exposition (label values escape only `\\`, `\"`
/// and `\n`). Panics on a line it cannot read.
pub fn samples(text: &str) -> Vec<Sample> {
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(|line| sample(line).unwrap_or_else(|| panic!("unreadable sample: {line}")))
        .collect()
}

fn sample(line: &str) -> Option<Sample> {
    let (name, labels, rest) = match line.find('{') {
        Some(i) => {
            let (labels, rest) = labels(&line[i + 1..])?;
            (&line[..i], labels, rest)
        }
        None => {
            let (n, rest) = line.split_once(' ')?;
            (n, BTreeMap::new(), rest)
        }
    };
    let value = rest.split_whitespace().next()?;
    let value = match value {
        "+Inf" => f64::INFINITY,
        v => v.parse().ok()?,
    };
    Some(Sample {
        name: name.to_string(),
        labels,
        value,
    })
}

/// `k="v",...}` and what follows the closing brace.
fn labels(s: &str) -> Option<(BTreeMap<String, String>, &str)> {
    let mut labels = BTreeMap::new();
    let mut rest = s;
    loop {
        if let Some(after) = rest.strip_prefix('}') {
            return Some((labels, after));
        }
        let (key, after) = rest.split_once("=\"")?;
        let mut value = String::new();
        let mut chars = after.char_indices();
        let end = loop {
            match chars.next()? {
                (_, '\\') => match chars.next()?.1 {
                    'n' => value.push('\n'),
                    c => value.push(c),
                },
                (i, '"') => break i,
                (_, c) => value.push(c),
            }
        };
        labels.insert(key.to_string(), value);
        rest = &after[end + 1..];
        rest = rest.strip_prefix(',').unwrap_or(rest);
    }
}

/// The value of the one sample named `name` whose labels include `want`.
pub fn value(samples: &[Sample], name: &str, want: &[(&str, &str)]) -> Option<f64> {
    let mut hits = samples.iter().filter(|s| {
        s.name == name
            && want
                .iter()
                .all(|(k, v)| s.labels.get(*k).map(String::as_str) == Some(*v))
    });
    let first = hits.next()?;
    assert!(
        hits.next().is_none(),
        "{name} {want:?} matches several samples"
    );
    Some(first.value)
}

/// The one non-`(other)` site of lock `lock`.
pub fn only_site(samples: &[Sample], lock: &str, name: &str) -> String {
    let sites: Vec<&String> = samples
        .iter()
        .filter(|s| s.name == name && s.labels.get("lock").map(String::as_str) == Some(lock))
        .filter_map(|s| s.labels.get("site"))
        .filter(|s| *s != "(other)")
        .collect();
    assert!(!sites.is_empty(), "no {name} for {lock}");
    assert!(sites.iter().all(|s| *s == sites[0]), "{lock}: {sites:?}");
    sites[0].clone()
}

/// Whether `program` can be run (for the independent tools).
pub fn have(program: &str, args: &[&str]) -> bool {
    Command::new(program)
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Skips (returns false) when a tool is missing, unless the CI asked for
/// it with `LOCKMETER_REQUIRE_PROMETHEUS=1`, in which case missing it fails.
pub fn tool_or_skip(what: &str, present: bool) -> bool {
    if present {
        return true;
    }
    if std::env::var_os("LOCKMETER_REQUIRE_PROMETHEUS").is_some_and(|v| v == "1") {
        panic!("{what} is required (LOCKMETER_REQUIRE_PROMETHEUS=1) but missing");
    }
    eprintln!("skipped: {what} is not installed (bash .ci/prometheus installs it)");
    false
}
