//! The live endpoint answers the documented protocol over a Unix socket
//! and loopback TCP, from a source with known counts.

mod export_common;

use std::io::{BufRead, BufReader, Write};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::UnixStream;
use std::time::Duration;

use export_common::{acquisitions, scratch_dir, FakeSource};
use lockmeter::export::{self, ExportConfig, ListenAddr};
use lockmeter_wire::{self as wire, Client, EndpointAddr, Request, Response};

const TIMEOUT: Duration = Duration::from_secs(10);

/// An endpoint serving `src` on a socket of its own, and a plain socket
/// connected to it (reads time out after [`TIMEOUT`]), to speak the
/// protocol byte by byte.
fn serve_raw(src: std::sync::Arc<FakeSource>, tag: &str) -> (export::Exporter, UnixStream) {
    let path = scratch_dir(tag).join("e.sock");
    let exp = export::start(
        src,
        ExportConfig::default()
            .listen(ListenAddr::Unix(path.clone()))
            .quiet(true),
    );
    let s = UnixStream::connect(&path).unwrap();
    s.set_read_timeout(Some(TIMEOUT)).unwrap();
    (exp, s)
}

#[test]
fn a_unix_client_gets_hello_snapshot_reset_and_stats() {
    let src = FakeSource::new(1000);
    let dir = scratch_dir("unix");
    let path = dir.join("e.sock");
    let exp = export::start(
        src.clone(),
        ExportConfig::default()
            .listen(ListenAddr::Unix(path.clone()))
            .quiet(true),
    );
    let addr = exp.endpoint_addr().expect("the endpoint did not start");
    assert_eq!(addr, EndpointAddr::Unix(path.clone()));
    assert_eq!(
        std::fs::metadata(&path).unwrap().permissions().mode() & 0o777,
        0o600
    );

    let mut c = Client::connect(&addr, TIMEOUT).unwrap();
    let hello = c.hello().clone();
    assert_eq!((hello.format.as_str(), hello.version), ("lockmeter", 1));
    assert_eq!(hello.pid, std::process::id());
    assert_eq!(hello.name, "fake");
    assert_eq!(acquisitions(&c.snapshot().unwrap()), 1000);

    c.send(&Request::Reset).unwrap();
    assert_eq!(c.recv().unwrap(), Response::Ok);
    src.acquire(5);
    assert_eq!(acquisitions(&c.snapshot().unwrap()), 5);

    let stats = c.stats().unwrap();
    assert_eq!(
        (stats.clients, stats.accepted, stats.max_clients),
        (1, 1, 64)
    );
    assert_eq!(exp.endpoint_stats().unwrap().accepted, 1);

    drop(c);
    exp.shutdown();
    assert!(!path.exists(), "the socket file outlived the endpoint");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_loopback_tcp_client_gets_exact_counts() {
    let src = FakeSource::new(77);
    let listen = "tcp://127.0.0.1:0".parse::<ListenAddr>().unwrap();
    let exp = export::start(
        src.clone(),
        ExportConfig::default().listen(listen).quiet(true),
    );
    let addr = exp.endpoint_addr().expect("the endpoint did not start");
    let EndpointAddr::Tcp(sock) = &addr else {
        panic!("not tcp: {addr}")
    };
    assert!(sock.ip().is_loopback() && sock.port() != 0);
    let mut c = Client::connect(&addr, TIMEOUT).unwrap();
    assert_eq!(acquisitions(&c.snapshot().unwrap()), 77);
    src.acquire(23);
    assert_eq!(acquisitions(&c.snapshot().unwrap()), 100);
}

#[test]
fn subscription_windows_add_up_to_the_cumulative_counts() {
    let src = FakeSource::new(10);
    let listen = ListenAddr::Unix(scratch_dir("sub").join("e.sock"));
    let exp = export::start(
        src.clone(),
        ExportConfig::default().listen(listen).quiet(true),
    );
    let mut c = Client::connect(&exp.endpoint_addr().unwrap(), TIMEOUT).unwrap();
    c.subscribe(Duration::from_millis(1)).unwrap(); // clamped up to the minimum

    let mut windows = 0;
    let mut last_cumulative = 0;
    for want_seq in 0..6 {
        let Response::Update {
            seq,
            interval,
            cumulative,
        } = c.recv().unwrap()
        else {
            panic!("expected an update");
        };
        assert_eq!(seq, want_seq);
        if seq == 0 {
            assert_eq!(
                acquisitions(&interval),
                0,
                "the first update's window is empty"
            );
            assert_eq!(acquisitions(&cumulative), 10);
        }
        windows += acquisitions(&interval);
        last_cumulative = acquisitions(&cumulative);
        src.acquire(7);
    }
    assert_eq!(10 + windows, last_cumulative, "the windows do not add up");
}

#[test]
fn raw_lines_have_the_documented_shape() {
    let (_exp, mut s) = serve_raw(FakeSource::new(3), "raw");
    let mut r = BufReader::new(s.try_clone().unwrap());
    let mut line = String::new();
    r.read_line(&mut line).unwrap();
    let hello: serde_json::Value = serde_json::from_str(&line).unwrap();
    assert_eq!(hello["type"], "hello");
    assert_eq!(hello["format"], "lockmeter");
    assert_eq!(hello["version"], 1);
    assert_eq!(hello["pid"], std::process::id());

    // A blank line is ignored, as `nc` users press enter.
    s.write_all(b"\n{\"type\":\"snapshot\"}\n").unwrap();
    line.clear();
    r.read_line(&mut line).unwrap();
    let v: serde_json::Value = serde_json::from_str(&line).unwrap();
    assert_eq!(v["type"], "snapshot");
    assert_eq!(v["snapshot"]["format"], "lockmeter");
    assert_eq!(v["snapshot"]["locks"][0]["total"]["acquisitions"], 3);

    s.write_all(b"{\"type\":\"reset\"}\n{\"type\":\"launch\"}\n")
        .unwrap();
    line.clear();
    r.read_line(&mut line).unwrap();
    assert_eq!(line, "{\"type\":\"ok\"}\n");
    line.clear();
    r.read_line(&mut line).unwrap();
    let v: serde_json::Value = serde_json::from_str(&line).unwrap();
    assert_eq!(v["type"], "error");
    assert!(v["message"].as_str().unwrap().contains("launch"), "{line}");
    line.clear();
    assert_eq!(
        r.read_line(&mut line).unwrap(),
        0,
        "the connection stayed open after an error"
    );
}

/// Regression: `echo '{"type":"subscribe",...}' | socat - UNIX-CONNECT:..`
/// closes its sending side after the request; the updates must go on.
#[test]
fn a_subscriber_that_closed_its_sending_side_still_gets_updates() {
    let (_exp, mut s) = serve_raw(FakeSource::new(1), "halfclose");
    s.write_all(b"{\"type\":\"subscribe\",\"interval_ms\":50}\n")
        .unwrap();
    s.shutdown(std::net::Shutdown::Write).unwrap();
    let mut seqs = Vec::new();
    for line in BufReader::new(s).lines().skip(1).take(4) {
        match wire::decode_response(&line.unwrap()).unwrap() {
            Response::Update { seq, .. } => seqs.push(seq),
            other => panic!("expected an update, got {other:?}"),
        }
    }
    assert_eq!(seqs, [0, 1, 2, 3]);
}
