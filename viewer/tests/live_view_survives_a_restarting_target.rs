//! The live connection against a fake endpoint on a real Unix socket:
//! it subscribes, forwards updates, sends resets, reports a target that
//! went away, and reconnects when the target comes back.

mod common;

use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::{UnixListener, UnixStream};
use std::thread;
use std::time::{Duration, Instant};

use lockmeter_viewer::conn::{ConnEvent, Live};
use lockmeter_wire::EndpointAddr;
use serde_json::json;

fn snapshot() -> serde_json::Value {
    let text = std::fs::read_to_string(common::fixture("pipe_spin.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

fn hello(pid: u32) -> String {
    format!(
        "{}\n",
        json!({"type":"hello","format":"lockmeter","version":1,"pid":pid,"name":"fake"})
    )
}

fn update(seq: u64) -> String {
    format!(
        "{}\n",
        json!({"type":"update","seq":seq,"interval":snapshot(),"cumulative":snapshot()})
    )
}

/// Reads one request line.
fn request(reader: &mut BufReader<UnixStream>) -> serde_json::Value {
    let mut line = String::new();
    reader.read_line(&mut line).unwrap();
    serde_json::from_str(&line).unwrap_or_else(|e| panic!("{line:?}: {e}"))
}

/// Waits (bounded) for the next event.
fn next_event(live: &Live) -> ConnEvent {
    let deadline = Instant::now() + Duration::from_secs(20);
    while Instant::now() < deadline {
        if let Some(ev) = live.try_recv() {
            return ev;
        }
        thread::sleep(Duration::from_millis(10));
    }
    panic!("no event within 20s");
}

/// Serves one connection: hello, the subscription, `updates` updates, then
/// either answers a reset and hangs up, or stays until the client leaves.
fn serve_once(listener: &UnixListener, pid: u32, updates: u64, answer_reset: bool) {
    let (mut stream, _) = listener.accept().unwrap();
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    stream.write_all(hello(pid).as_bytes()).unwrap();
    let sub = request(&mut reader);
    assert_eq!(sub["type"], "subscribe");
    assert!(sub["interval_ms"].as_u64().unwrap() >= 1);
    for seq in 0..updates {
        stream.write_all(update(seq).as_bytes()).unwrap();
    }
    if answer_reset {
        let reset = request(&mut reader);
        assert_eq!(reset["type"], "reset");
        // Bytes written before the hang-up still arrive before the EOF.
        stream.write_all(b"{\"type\":\"ok\"}\n").unwrap();
    } else {
        // Until the client shuts its socket down.
        let mut rest = String::new();
        let _ = reader.read_line(&mut rest);
    }
}

#[test]
fn updates_resets_loss_and_reconnection() {
    let dir = common::scratch("live");
    let path = dir.join("target.sock");
    let listener = UnixListener::bind(&path).unwrap();
    let server_path = path.clone();
    let server = thread::spawn(move || {
        // First life: two updates, a reset, then the process "dies".
        serve_once(&listener, 100, 2, true);
        drop(listener);
        let _ = std::fs::remove_file(&server_path);
        // Dead for a while, then back under the same path.
        thread::sleep(Duration::from_millis(600));
        let listener = UnixListener::bind(&server_path).unwrap();
        serve_once(&listener, 101, 1, false);
    });

    let live = Live::spawn(EndpointAddr::Unix(path.clone()), Duration::from_millis(100));
    match next_event(&live) {
        ConnEvent::Connected(h) => assert_eq!((h.pid, h.name.as_str()), (100, "fake")),
        e => panic!("expected Connected, got {e:?}"),
    }
    for _ in 0..2 {
        match next_event(&live) {
            ConnEvent::Update { interval, .. } => assert_eq!(interval.locks[0].id, "pipe.spin"),
            e => panic!("expected Update, got {e:?}"),
        }
    }
    live.reset().expect("reset is sent");
    assert!(matches!(next_event(&live), ConnEvent::ResetDone));

    // The server hangs up: reported, then retried with growing delays.
    match next_event(&live) {
        ConnEvent::Lost(reason) => assert!(!reason.is_empty()),
        e => panic!("expected Lost, got {e:?}"),
    }
    let mut saw_retry = false;
    loop {
        match next_event(&live) {
            ConnEvent::Retrying { attempt, delay } => {
                assert!(attempt >= 1 && delay > Duration::ZERO);
                saw_retry = true;
            }
            ConnEvent::Lost(_) => {}
            ConnEvent::Connected(h) => {
                assert_eq!(h.pid, 101, "reconnected to the new process");
                break;
            }
            e => panic!("unexpected {e:?} while reconnecting"),
        }
    }
    assert!(saw_retry);
    assert!(matches!(next_event(&live), ConnEvent::Update { .. }));
    drop(live);
    server.join().unwrap();
}

#[test]
fn dropping_a_retrying_connection_joins_its_thread() {
    // Nothing listens: the thread keeps retrying until dropped, and the
    // drop (which joins the thread) returns.
    let live = Live::spawn(
        EndpointAddr::Unix("/nonexistent/lockmeter/none.sock".into()),
        Duration::from_millis(100),
    );
    match next_event(&live) {
        ConnEvent::Lost(reason) => assert!(reason.contains("cannot connect"), "{reason}"),
        e => panic!("expected Lost, got {e:?}"),
    }
    drop(live);
}
