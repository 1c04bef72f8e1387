//! Misbehaving clients cost the endpoint a client slot for a bounded time
//! and nothing else: other clients keep getting exact counts, and the
//! endpoint counts what it dropped and refused.

mod export_common;

use std::io::Write;
use std::net::TcpStream;
use std::os::unix::net::UnixStream;
use std::sync::Arc;
use std::time::Duration;

use export_common::{
    acquisitions, assert_error_then_close, clients_at_once, read_to_close, scratch_dir, wait_until,
    FakeSource,
};
use lockmeter::export::{self, ExportConfig, Exporter, ListenAddr};
use lockmeter_wire::{self as wire, Client, EndpointAddr, Response};

const TIMEOUT: Duration = Duration::from_secs(10);
const PATIENCE: Duration = Duration::from_secs(30);

fn unix_endpoint(
    tag: &str,
    src: &Arc<FakeSource>,
    config: ExportConfig,
) -> (Exporter, EndpointAddr) {
    let path = scratch_dir(tag).join("e.sock");
    let exp = export::start(
        src.clone(),
        config.listen(ListenAddr::Unix(path)).quiet(true),
    );
    let addr = exp.endpoint_addr().expect("the endpoint did not start");
    (exp, addr)
}

fn unix_path(addr: &EndpointAddr) -> &std::path::Path {
    match addr {
        EndpointAddr::Unix(p) => p,
        EndpointAddr::Tcp(_) => panic!("not a unix address"),
    }
}

/// A well-behaved client still gets exact counts.
fn assert_still_exact(addr: &EndpointAddr, src: &FakeSource) {
    let mut c = Client::connect(addr, TIMEOUT).unwrap();
    assert_eq!(acquisitions(&c.snapshot().unwrap()), src.total());
}

#[test]
fn garbage_bytes_get_an_error_and_the_connection_closed() {
    let src = FakeSource::new(500);
    let (exp, addr) = unix_endpoint("garbage", &src, ExportConfig::default());
    for garbage in [
        &b"\x00\xff\xfe garbage\n"[..],
        b"{\"type\":\n",
        b"[1,2,3]\n",
        b"{\"type\":\"snapshot\"} trailing\n",
    ] {
        let mut s = UnixStream::connect(unix_path(&addr)).unwrap();
        s.set_read_timeout(Some(TIMEOUT)).unwrap();
        s.write_all(garbage).unwrap();
        assert_error_then_close(&read_to_close(&mut s), &String::from_utf8_lossy(garbage));
    }
    assert_eq!(exp.endpoint_stats().unwrap().protocol_errors, 4);
    src.acquire(1);
    assert_still_exact(&addr, &src);
}

#[test]
fn a_request_over_the_cap_gets_an_error_and_the_connection_closed() {
    let src = FakeSource::new(9);
    let (_exp, addr) = unix_endpoint("cap", &src, ExportConfig::default());
    let mut s = UnixStream::connect(unix_path(&addr)).unwrap();
    s.set_read_timeout(Some(TIMEOUT)).unwrap();
    // No newline: the server must not wait for one past the cap.
    s.write_all(&vec![b'a'; wire::MAX_REQUEST_LINE + 100])
        .unwrap();
    assert_error_then_close(&read_to_close(&mut s), "an over-long line");

    // Over TCP too, where closing with unread input would reset the
    // connection and lose the error line.
    let exp = export::start(
        src.clone(),
        ExportConfig::default()
            .listen("tcp://127.0.0.1:0".parse().unwrap())
            .quiet(true),
    );
    let Some(EndpointAddr::Tcp(tcp)) = exp.endpoint_addr() else {
        panic!("no tcp endpoint")
    };
    let mut t = TcpStream::connect(tcp).unwrap();
    t.set_read_timeout(Some(TIMEOUT)).unwrap();
    let _ = t.write_all(&vec![b'{'; 3 * wire::MAX_REQUEST_LINE]);
    assert_error_then_close(&read_to_close(&mut t), "an over-long line over tcp");
    assert_still_exact(&addr, &src);
}

#[test]
fn a_client_that_never_reads_is_dropped_and_counted() {
    let src = FakeSource::new(42);
    let config = ExportConfig::default().client_timeout(Duration::from_millis(200));
    let (exp, addr) = unix_endpoint("stall", &src, config);
    let mut s = UnixStream::connect(unix_path(&addr)).unwrap();
    // Ask for far more than the socket buffers hold, and never read.
    let flood = "{\"type\":\"snapshot\"}\n".repeat(20_000);
    s.set_write_timeout(Some(Duration::from_secs(2))).unwrap();
    let _ = s.write_all(flood.as_bytes());
    assert!(
        wait_until(PATIENCE, || exp.endpoint_stats().unwrap().dropped_clients
            == 1),
        "the stalled client was not dropped: {:?}",
        exp.endpoint_stats()
    );
    assert!(wait_until(PATIENCE, || exp
        .endpoint_stats()
        .unwrap()
        .clients
        == 0));
    src.acquire(8);
    assert_still_exact(&addr, &src);
    let c = Client::connect(&addr, TIMEOUT).unwrap();
    let hello = c.hello().clone();
    assert_eq!(
        hello.stats.dropped_clients, 1,
        "the hello does not show the drop"
    );
}

#[test]
fn fifty_clients_at_once_all_get_exact_counts() {
    let src = FakeSource::new(12_345);
    let (exp, addr) = unix_endpoint("fifty", &src, ExportConfig::default());
    let seen = clients_at_once(50, || {
        let mut c = Client::connect(&addr, TIMEOUT).unwrap();
        (0..5)
            .map(|_| acquisitions(&c.snapshot().unwrap()))
            .collect::<Vec<_>>()
    });
    assert_eq!(seen, vec![vec![12_345; 5]; 50]);
    let stats = exp.endpoint_stats().unwrap();
    assert_eq!(
        (stats.accepted, stats.refused_clients, stats.dropped_clients),
        (50, 0, 0)
    );
}

#[test]
fn clients_over_the_limit_are_refused_and_counted() {
    let src = FakeSource::new(1);
    let (exp, addr) = unix_endpoint("limit", &src, ExportConfig::default().max_clients(2));
    let a = Client::connect(&addr, TIMEOUT).unwrap();
    let b = Client::connect(&addr, TIMEOUT).unwrap();
    let mut third = UnixStream::connect(unix_path(&addr)).unwrap();
    third.set_read_timeout(Some(TIMEOUT)).unwrap();
    let lines = read_to_close(&mut third);
    assert_eq!(lines.len(), 1, "{lines:?}");
    let Ok(Response::Error { message }) = wire::decode_response(&lines[0]) else {
        panic!("{lines:?}")
    };
    assert!(message.contains("too many clients"), "{message}");
    assert_eq!(exp.endpoint_stats().unwrap().refused_clients, 1);
    drop((a, b));
    assert!(wait_until(PATIENCE, || exp
        .endpoint_stats()
        .unwrap()
        .clients
        == 0));
    assert_still_exact(&addr, &src);
}

#[test]
fn a_client_gone_mid_subscription_is_cleaned_up() {
    let src = FakeSource::new(0);
    let (exp, addr) = unix_endpoint("gone", &src, ExportConfig::default());
    for _ in 0..3 {
        let mut c = Client::connect(&addr, TIMEOUT).unwrap();
        c.subscribe(Duration::from_millis(50)).unwrap();
        assert!(matches!(c.recv().unwrap(), Response::Update { seq: 0, .. }));
        assert!(matches!(c.recv().unwrap(), Response::Update { seq: 1, .. }));
        src.acquire(100);
        drop(c);
    }
    assert!(
        wait_until(PATIENCE, || exp.endpoint_stats().unwrap().clients == 0),
        "a dead subscriber kept its slot: {:?}",
        exp.endpoint_stats()
    );
    assert_still_exact(&addr, &src);
}

#[test]
fn a_non_loopback_address_is_refused_unless_forced() {
    let src = FakeSource::new(0);
    let any: ListenAddr = "tcp://0.0.0.0:0".parse().unwrap();
    let refused = export::start(
        src.clone(),
        ExportConfig::default().listen(any.clone()).quiet(true),
    );
    assert_eq!(refused.endpoint_addr(), None);
    let forced = export::start(
        src,
        ExportConfig::default()
            .listen(any)
            .allow_remote(true)
            .quiet(true),
    );
    assert!(
        matches!(forced.endpoint_addr(), Some(EndpointAddr::Tcp(a)) if a.ip().is_unspecified())
    );
}

#[test]
fn a_symlink_at_the_socket_path_is_refused_and_left_alone() {
    let dir = scratch_dir("symlink");
    let target = dir.join("target");
    std::fs::write(&target, "precious").unwrap();
    let link = dir.join("e.sock");
    std::os::unix::fs::symlink(&target, &link).unwrap();
    let exp = export::start(
        FakeSource::new(0),
        ExportConfig::default()
            .listen(ListenAddr::Unix(link.clone()))
            .quiet(true),
    );
    assert_eq!(exp.endpoint_addr(), None);
    assert!(std::fs::symlink_metadata(&link)
        .unwrap()
        .file_type()
        .is_symlink());
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "precious");
    std::fs::remove_dir_all(&dir).unwrap();
}
