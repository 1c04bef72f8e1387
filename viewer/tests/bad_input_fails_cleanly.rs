//! Input the viewer cannot read gets a clear message on stderr and exit
//! code 1, never a panic: for every reader (dump, recording, endpoint) and
//! every command that reads (`table`, `diff`, `view`).

mod common;

use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixListener;
use std::path::PathBuf;
use std::process::Output;
use std::thread;

use common::{assert_clean_failure, fixture, lockmeter, scratch, stderr, stdout};

/// `lockmeter table FILE` and `lockmeter view FILE` both fail cleanly,
/// saying `expect`; their outputs.
fn table_and_view_refuse(file: &str, expect: &str) -> Vec<std::process::Output> {
    ["table", "view"]
        .map(|cmd| {
            let out = lockmeter(&[cmd, file]);
            assert_clean_failure(&out, expect);
            out
        })
        .into()
}

#[test]
fn missing_file() {
    table_and_view_refuse(
        "/nonexistent/lockmeter/dump.json",
        "cannot read /nonexistent/lockmeter/dump.json",
    );
    let out = lockmeter(&["diff", "/nonexistent/a.json", &fixture("mixed.json")]);
    assert_clean_failure(&out, "cannot read /nonexistent/a.json");
    let out = lockmeter(&["diff", &fixture("mixed.json"), "/nonexistent/b.json"]);
    assert_clean_failure(&out, "cannot read /nonexistent/b.json");
}

#[test]
fn corrupt_json() {
    table_and_view_refuse(&fixture("corrupt.json"), "not a lockmeter snapshot");
    let out = lockmeter(&["diff", &fixture("corrupt.json"), &fixture("mixed.json")]);
    assert_clean_failure(&out, "corrupt.json");
}

#[test]
fn not_json_at_all() {
    let out = lockmeter(&["table", &fixture("not_json.txt")]);
    assert_clean_failure(&out, "not a lockmeter snapshot");
}

#[test]
fn future_version() {
    for out in table_and_view_refuse(&fixture("future.json"), "version 99") {
        assert!(stderr(&out).contains("upgrade"), "{}", stderr(&out));
    }
}

#[test]
fn wrong_format() {
    table_and_view_refuse(&fixture("wrong_format.json"), "perf-lock");
}

#[test]
fn a_recording_with_a_bad_line_in_the_middle() {
    let dir = scratch("bad-middle");
    let path = dir.join("bad.jsonl");
    let good = std::fs::read_to_string(fixture("recording.jsonl")).unwrap();
    let mut lines: Vec<&str> = good.lines().collect();
    lines.insert(2, "{ not json");
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    let out = lockmeter(&["table", &path.display().to_string()]);
    assert_clean_failure(&out, "line 3");
}

#[test]
fn an_empty_recording() {
    let dir = scratch("empty-rec");
    let path = dir.join("empty.jsonl");
    std::fs::write(&path, "").unwrap();
    let out = lockmeter(&["table", &path.display().to_string()]);
    assert_clean_failure(&out, "no complete snapshot");
}

#[test]
fn a_truncated_recording_loads_with_a_warning() {
    let out = lockmeter(&["table", &fixture("truncated.jsonl")]);
    assert!(out.status.success(), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("lockmeter: warning:") && err.contains("incomplete last line"),
        "{err}"
    );
    assert!(stdout(&out).contains("pipe.sem"), "{}", stdout(&out));
}

#[test]
fn unreachable_endpoints() {
    let out = lockmeter(&["table", "/nonexistent/lockmeter/1.sock"]);
    assert_clean_failure(&out, "cannot connect to /nonexistent/lockmeter/1.sock");
    // Port 1 on loopback: nothing listens there.
    let out = lockmeter(&["table", "tcp://127.0.0.1:1"]);
    assert_clean_failure(&out, "cannot connect to tcp://127.0.0.1:1");
    // A pid with no endpoint.
    let out = lockmeter(&["table", "4294967295"]);
    assert_clean_failure(&out, "cannot connect");
    // Host names are not looked up.
    let out = lockmeter(&["table", "tcp://example.invalid:80"]);
    assert_clean_failure(&out, "tcp://");
}

#[test]
fn a_file_that_is_not_a_socket_is_read_as_a_file() {
    let out = lockmeter(&["table", &fixture("pipe_spin.json")]);
    assert!(out.status.success(), "{}", stderr(&out));
}

/// A Unix socket in a scratch dir served by `serve`, one connection; the
/// server thread owns the directory.
fn fake_endpoint(
    name: &str,
    serve: impl FnOnce(std::os::unix::net::UnixStream) + Send + 'static,
) -> (PathBuf, thread::JoinHandle<()>) {
    let dir = scratch(name);
    let path = dir.join("fake.sock");
    let listener = UnixListener::bind(&path).expect("bind");
    let t = thread::spawn(move || {
        if let Ok((stream, _)) = listener.accept() {
            serve(stream);
        }
        // The directory goes once the one connection was served.
        drop(dir);
    });
    (path, t)
}

/// `lockmeter table` of a [`fake_endpoint`] that `serve`s the one
/// connection; returns once the server is done too.
fn table_of_fake_endpoint(
    name: &str,
    serve: impl FnOnce(std::os::unix::net::UnixStream) + Send + 'static,
) -> Output {
    let (path, server) = fake_endpoint(name, serve);
    let out = lockmeter(&["table", &path.display().to_string()]);
    server.join().expect("the fake endpoint panicked");
    out
}

#[test]
fn an_endpoint_that_speaks_garbage() {
    let out = table_of_fake_endpoint("garbage", |mut s| {
        let _ = s.write_all(b"SSH-2.0-OpenSSH_9.6\r\n\x00\x01\x02 binary junk\n");
    });
    assert_clean_failure(&out, "does not speak the lockmeter protocol");
    assert!(stderr(&out).contains("SSH-2.0"), "{}", stderr(&out));
}

#[test]
fn an_endpoint_that_sends_an_endless_line() {
    let out = table_of_fake_endpoint("endless", |mut s| {
        let chunk = vec![b'x'; 64 * 1024];
        for _ in 0..4 {
            if s.write_all(&chunk).is_err() {
                break;
            }
        }
    });
    assert_clean_failure(&out, "does not speak the lockmeter protocol");
}

#[test]
fn an_endpoint_that_hangs_up_at_once() {
    let out = table_of_fake_endpoint("hangup", drop);
    assert_clean_failure(&out, "closed the connection");
}

#[test]
fn an_endpoint_from_the_future() {
    let out = table_of_fake_endpoint("future", |mut s| {
        let _ = s.write_all(
            b"{\"type\":\"hello\",\"format\":\"lockmeter\",\"version\":99,\"pid\":7,\"name\":\"x\"}\n",
        );
    });
    assert_clean_failure(&out, "version 99");
}

#[test]
fn an_endpoint_that_answers_with_an_error() {
    let out = table_of_fake_endpoint("error", |mut s| {
        let _ = s.write_all(b"{\"type\":\"hello\",\"format\":\"lockmeter\",\"version\":1,\"pid\":7,\"name\":\"x\"}\n");
        let mut line = String::new();
        let _ = BufReader::new(s.try_clone().unwrap()).read_line(&mut line);
        let _ = s.write_all(b"{\"type\":\"error\",\"message\":\"too many clients\"}\n");
    });
    assert_clean_failure(&out, "too many clients");
}

#[test]
fn a_good_endpoint_is_printed_like_a_file() {
    let snap = std::fs::read_to_string(fixture("pipe_spin.json")).unwrap();
    let value: serde_json::Value = serde_json::from_str(&snap).unwrap();
    let live = table_of_fake_endpoint("good", move |mut s| {
        let _ = s.write_all(b"{\"type\":\"hello\",\"format\":\"lockmeter\",\"version\":1,\"pid\":4343,\"name\":\"pipedis\"}\n");
        let mut line = String::new();
        let _ = BufReader::new(s.try_clone().unwrap()).read_line(&mut line);
        assert_eq!(line.trim(), r#"{"type":"snapshot"}"#);
        let reply = serde_json::json!({ "type": "snapshot", "snapshot": value });
        let _ = s.write_all(format!("{reply}\n").as_bytes());
    });
    let file = lockmeter(&["table", &fixture("pipe_spin.json")]);
    assert!(live.status.success(), "{}", stderr(&live));
    assert_eq!(stdout(&live), stdout(&file));
}

#[test]
fn the_live_view_without_a_terminal_says_so() {
    let out = lockmeter(&["view", &fixture("mixed.json")]);
    assert_clean_failure(&out, "needs a terminal");
    let out = lockmeter(&["demo"]);
    assert_clean_failure(&out, "needs a terminal");
}

#[test]
fn bad_advice_config() {
    let out = lockmeter(&[
        "table",
        &fixture("mixed.json"),
        "--advice-config",
        &fixture("corrupt.json"),
    ]);
    assert_clean_failure(&out, "advice config");
}
