//! The live endpoint's messages: newline-delimited JSON over a Unix socket
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
//! buffer without bound; [`crate::LineReader`] enforces the cap on a stream.

use serde::{Deserialize, Serialize};

use lockmeter_model::Snapshot;

use crate::WireError;

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
    Subscribe {
        /// The requested interval, clamped by [`clamp_interval_ms`].
        interval_ms: u64,
    },
    /// Start a new window for `snapshot` requests and dumps.
    Reset,
    /// The endpoint's own counters.
    Stats,
}

/// What the server sends.
#[allow(
    clippy::large_enum_variant,
    reason = "one message is built per send or receive; boxing the snapshots would only add an allocation"
)]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Response {
    /// Sent once, first, on every connection.
    Hello(Hello),
    /// The answer to [`Request::Snapshot`].
    Snapshot {
        /// The window since the last reset.
        snapshot: Snapshot,
    },
    /// One push of a subscription: `interval` is the window since the
    /// previous push (for `seq` 0, since the subscribe, so empty), and
    /// `cumulative` everything since the process started recording.
    Update {
        /// Counts pushes from 0.
        seq: u64,
        /// The window since the previous push.
        interval: Snapshot,
        /// Everything since recording started.
        cumulative: Snapshot,
    },
    /// The answer to [`Request::Reset`].
    Ok,
    /// The answer to [`Request::Stats`].
    Stats(EndpointStats),
    /// A request the server could not serve; the server closes after it.
    Error {
        /// What was wrong with the request.
        message: String,
    },
}

/// The greeting: who is on the other end.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Hello {
    /// Always `"lockmeter"`.
    pub format: String,
    /// [`PROTOCOL_VERSION`].
    pub version: u32,
    /// The process id of the endpoint's program.
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
            format: lockmeter_model::FORMAT_NAME.to_string(),
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

impl Response {
    /// The `type` tag of this response, for error messages.
    pub fn kind(&self) -> &'static str {
        match self {
            Response::Hello(_) => "hello",
            Response::Snapshot { .. } => "snapshot",
            Response::Update { .. } => "update",
            Response::Ok => "ok",
            Response::Stats(_) => "stats",
            Response::Error { .. } => "error",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use lockmeter_model::ProcessInfo;

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
        let mut counts = vec![0u64; lockmeter_model::dist::BUCKETS];
        counts[lockmeter_model::dist::bucket_index(1500)] = 3;
        let stats = lockmeter_model::Stats {
            acquisitions: u64::MAX - 1,
            contended: 3,
            hold_ns: lockmeter_model::Dist::from_buckets(&counts, 3, 4500, 1400, 1600),
            ..Default::default()
        };
        s.locks.push(lockmeter_model::LockStats {
            id: "demo.counter".into(),
            display_name: None,
            kind: lockmeter_model::LockKind::Rwlock,
            created_at: "a.rs:1:1".into(),
            instances: 1,
            parent: None,
            total: stats.clone(),
            sites: vec![lockmeter_model::SiteStats {
                site: "a.rs:2:3".into(),
                mode: Some("read".into()),
                pid: None,
                stats,
            }],
            holders: vec![lockmeter_model::Holder {
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
}
