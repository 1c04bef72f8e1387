//! Misbehaving HTTP clients of the Prometheus endpoint cost it a client
//! slot for a bounded time and nothing else: garbage gets 400, an
//! oversized request 431, a client that never sends or never reads is
//! dropped and counted, clients over the limit get 503, and well-behaved
//! scrapes, even fifty at once, keep getting the exact counts, while the
//! application's own counting stays exact.

mod child_common;
mod export_common;
mod prometheus_common;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::Arc;
use std::thread;
use std::time::Duration;

use export_common::{clients_at_once, wait_until, FakeSource, LOCK};
use lockmeter::export::{self, ExportConfig, Exporter, PrometheusStats, SnapshotSource};
use lockmeter_model::{LockKind, LockStats, ProcessInfo, SiteStats, Snapshot, Stats};
use prometheus_common::{exchange, get, samples, value, PATIENCE, TIMEOUT};
use tracing_subscriber::prelude::*;

fn loopback() -> SocketAddr {
    "127.0.0.1:0".parse().unwrap()
}

/// Waits until the endpoint has dropped `n` clients; fails if it does not.
fn await_dropped(exp: &Exporter, n: u64) {
    assert!(
        wait_until(PATIENCE, || exp.prometheus_stats().unwrap().dropped_clients
            == n),
        "{:?}",
        exp.prometheus_stats()
    );
}

fn serve(source: Arc<dyn SnapshotSource>, config: ExportConfig) -> (Exporter, SocketAddr) {
    let exp = export::start(source, config.prometheus(loopback()).quiet(true));
    let addr = exp.prometheus_addr().expect("the endpoint did not start");
    (exp, addr)
}

/// The acquisitions of the fake source's lock in a scrape.
fn scraped(addr: SocketAddr) -> f64 {
    acquisitions_in(&get(addr, "/metrics", None))
}

/// The acquisitions of the fake source's lock in a scrape's reply.
fn acquisitions_in(reply: &prometheus_common::Reply) -> f64 {
    assert_eq!(reply.status, 200, "{reply:?}");
    // One request per connection, and the client is told so.
    assert_eq!(reply.header("connection"), Some("close"), "{reply:?}");
    let s = samples(&reply.body);
    value(
        &s,
        "lockmeter_acquisitions_total",
        &[("lock", LOCK), ("site", "tests/fake.rs:2:5")],
    )
    .expect("no acquisitions sample")
}

#[test]
fn garbage_gets_400_and_others_still_get_exact_counts() {
    let src = FakeSource::new(500);
    let (exp, addr) = serve(src.clone(), ExportConfig::default());
    for garbage in [
        &b"\x00\xff\xfe garbage\r\n\r\n"[..],
        b"GET\r\n\r\n",
        b"GET /metrics HTTP/9\r\n\r\n",
        b"{\"type\":\"snapshot\"}\n\n",
        b"GET /metrics HTTP/1.1\r\nno header here\r\n\r\n",
    ] {
        let reply = exchange(addr, garbage).unwrap();
        assert_eq!(reply.status, 400, "{}", String::from_utf8_lossy(garbage));
    }
    assert_eq!(exp.prometheus_stats().unwrap().bad_requests, 5);
    src.acquire(1);
    assert_eq!(scraped(addr), 501.0);
}

#[test]
fn an_oversized_request_gets_431_without_waiting_for_its_end() {
    let src = FakeSource::new(9);
    let (_exp, addr) = serve(src.clone(), ExportConfig::default());
    // No blank line ever: the server must answer once past the cap.
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(TIMEOUT)).unwrap();
    let mut head = b"GET /metrics HTTP/1.1\r\n".to_vec();
    head.extend(std::iter::repeat_n(b'a', 64 * 1024));
    let _ = s.write_all(&head);
    let mut reply = Vec::new();
    let _ = s.read_to_end(&mut reply);
    let reply = String::from_utf8_lossy(&reply);
    assert!(reply.starts_with("HTTP/1.1 431 "), "{reply:?}");
    assert_eq!(scraped(addr), 9.0);
}

#[test]
fn a_client_that_never_sends_is_dropped_and_counted() {
    let src = FakeSource::new(42);
    let config = ExportConfig::default().client_timeout(Duration::from_millis(200));
    let (exp, addr) = serve(src.clone(), config);
    let mut silent = TcpStream::connect(addr).unwrap();
    // Half a request, then nothing.
    silent.write_all(b"GET /metr").unwrap();
    await_dropped(&exp, 1);
    silent.set_read_timeout(Some(TIMEOUT)).unwrap();
    let mut rest = Vec::new();
    let _ = silent.read_to_end(&mut rest);
    assert!(rest.is_empty(), "a dropped client got {rest:?}");
    src.acquire(8);
    assert_eq!(scraped(addr), 50.0);
}

/// A snapshot with thousands of classes: a response far larger than the
/// socket buffers, for a client that never reads.
struct BigSource;

impl SnapshotSource for BigSource {
    fn snapshot(&self) -> Snapshot {
        self.cumulative()
    }

    fn cumulative(&self) -> Snapshot {
        let mut s = Snapshot::empty(ProcessInfo::default(), "mock");
        for i in 0..1500 {
            let stats = Stats {
                acquisitions: i,
                ..Stats::default()
            };
            s.locks.push(LockStats {
                id: format!("big.lock.{i}"),
                display_name: None,
                kind: LockKind::Mutex,
                created_at: "big.rs:1:1".into(),
                instances: 1,
                parent: None,
                total: stats.clone(),
                sites: vec![SiteStats {
                    site: format!("big.rs:{i}:1"),
                    mode: None,
                    pid: None,
                    stats,
                }],
                holders: Vec::new(),
            });
        }
        s
    }

    fn reset(&self) {}
}

#[test]
fn a_client_that_never_reads_is_dropped_and_counted() {
    let config = ExportConfig::default().client_timeout(Duration::from_millis(300));
    let (exp, addr) = serve(Arc::new(BigSource), config);
    let mut stalled = TcpStream::connect(addr).unwrap();
    stalled.write_all(b"GET /metrics HTTP/1.0\r\n\r\n").unwrap();
    await_dropped(&exp, 1);
    // Served in full to a client that reads.
    let reply = get(addr, "/metrics", None);
    assert_eq!(reply.status, 200);
    assert!(
        reply.body.len() > 8 << 20,
        "only {} bytes",
        reply.body.len()
    );
    let s = samples(&reply.body);
    assert_eq!(
        value(
            &s,
            "lockmeter_acquisitions_total",
            &[("lock", "big.lock.1499")]
        ),
        Some(1499.0)
    );
    drop(stalled);
}

#[test]
fn fifty_scrapes_at_once_all_get_exact_counts() {
    let src = FakeSource::new(12_345);
    let (exp, addr) = serve(src.clone(), ExportConfig::default());
    let seen = clients_at_once(50, || (0..3).map(|_| scraped(addr)).collect::<Vec<_>>());
    assert_eq!(seen, vec![vec![12_345.0; 3]; 50]);
    // Every scrape served, and nothing refused, dropped or bad.
    let served = PrometheusStats {
        scrapes: 150,
        ..PrometheusStats::default()
    };
    assert_eq!(exp.prometheus_stats(), Some(served));
}

#[test]
fn clients_over_the_limit_get_503_and_are_counted() {
    let src = FakeSource::new(1);
    let (exp, addr) = serve(src.clone(), ExportConfig::default().max_clients(2));
    // Two clients that connect and say nothing hold both slots.
    let a = TcpStream::connect(addr).unwrap();
    let b = TcpStream::connect(addr).unwrap();
    let third = get(addr, "/metrics", None);
    assert_eq!(third.status, 503, "{third:?}");
    assert_eq!(exp.prometheus_stats().unwrap().refused_clients, 1);
    drop((a, b));
    // The slots free as the server notices the closes; a slot also stays
    // taken for a moment after its client has read the whole reply, so
    // the scrape that finally gets in is the one checked.
    let mut reply = None;
    assert!(wait_until(PATIENCE, || {
        let r = get(addr, "/metrics", None);
        let ok = r.status == 200;
        reply = Some(r);
        ok
    }));
    assert_eq!(acquisitions_in(&reply.unwrap()), 1.0);
}

#[test]
fn a_non_loopback_address_is_refused_unless_forced() {
    let src = FakeSource::new(1);
    let exp = export::start(
        src.clone(),
        ExportConfig::default()
            .prometheus("0.0.0.0:0".parse().unwrap())
            .quiet(true),
    );
    assert_eq!(exp.prometheus_addr(), None);
    let exp = export::start(
        src,
        ExportConfig::default()
            .prometheus("0.0.0.0:0".parse().unwrap())
            .prometheus_allow_remote(true)
            .quiet(true),
    );
    let addr = exp.prometheus_addr().expect("forced, it listens");
    let local: SocketAddr = format!("127.0.0.1:{}", addr.port()).parse().unwrap();
    assert_eq!(scraped(local), 1.0);
}

/// The application's threads count exactly while abusers and scrapers
/// hammer the endpoint, and the last scrape has the exact total.
#[test]
fn the_applications_counts_stay_exact_under_abuse() {
    const THREADS: u64 = 4;
    const EACH: u64 = 20_000;
    let layer = lockmeter::Layer::builder()
        .export(
            ExportConfig::default()
                .prometheus(loopback())
                .client_timeout(Duration::from_millis(200))
                .quiet(true),
        )
        .build();
    let addr = layer.exporter().unwrap().prometheus_addr().unwrap();
    let handle = layer.handle();
    let dispatch = tracing::Dispatch::new(tracing_subscriber::registry().with(layer));
    let counter = Arc::new(lockmeter::Mutex::named("abuse.counter", 0u64));
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let abusers: Vec<_> = (0..4)
        .map(|i| {
            let stop = Arc::clone(&stop);
            thread::spawn(move || {
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    let _ = match i {
                        0 => exchange(addr, b"\xff garbage\r\n\r\n").map(|_| ()),
                        1 => exchange(addr, &[b'x'; 20_000]).map(|_| ()),
                        2 => TcpStream::connect(addr).map(drop),
                        _ => {
                            // The connect-and-drop abuser can fill every
                            // client slot: then a scrape is refused with
                            // 503 and Retry-After, as designed, and counted.
                            let r = get(addr, "/metrics", None);
                            match r.status {
                                200 => assert!(!samples(&r.body).is_empty(), "{r:?}"),
                                503 => assert!(r.header("retry-after").is_some(), "{r:?}"),
                                _ => panic!("a scrape got neither its metrics nor 503: {r:?}"),
                            }
                            Ok(())
                        }
                    };
                }
            })
        })
        .collect();
    let workers: Vec<_> = (0..THREADS)
        .map(|_| {
            let counter = Arc::clone(&counter);
            let dispatch = dispatch.clone();
            thread::spawn(move || {
                tracing::dispatcher::with_default(&dispatch, || {
                    for _ in 0..EACH {
                        *counter.lock() += 1;
                    }
                })
            })
        })
        .collect();
    for w in workers {
        w.join().unwrap();
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    for a in abusers {
        a.join().unwrap();
    }
    assert_eq!(*counter.lock(), THREADS * EACH);
    let s = samples(&get(addr, "/metrics", None).body);
    let total: f64 = s
        .iter()
        .filter(|x| {
            x.name == "lockmeter_acquisitions_total"
                && x.labels.get("lock").map(String::as_str) == Some("abuse.counter")
        })
        .map(|x| x.value)
        .sum();
    assert_eq!(total, (THREADS * EACH) as f64);
    let lock = handle.cumulative();
    assert_eq!(
        lock.lock("abuse.counter").unwrap().total.acquisitions,
        THREADS * EACH
    );
    drop(dispatch);
}
