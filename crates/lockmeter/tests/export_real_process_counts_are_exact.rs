//! The exports of a real program that only installed `Layer::new()` and
//! was configured through `LOCKMETER_*` variables: `examples/
//! endpoint_demo.rs` takes the mutex `demo.counter` a known number of
//! times, then waits for its stdin to close. Clients over the Unix socket
//! and loopback TCP, dumps at exit and on SIGUSR1, recordings, and abusive
//! clients must all see exactly that number, and the program must keep
//! running and exit normally.

mod child_common;
mod export_common;

use std::fs;
use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::thread;
use std::time::Duration;

use child_common::Child;
use export_common::{
    acquisitions, assert_error_then_close, read_to_close, scratch_dir, wait_until, LOCK,
};
use lockmeter_wire::discovery;
use lockmeter_wire::{self as wire, Client, EndpointAddr, Response};

const TIMEOUT: Duration = Duration::from_secs(10);
const PATIENCE: Duration = Duration::from_secs(60);

/// A running demo program.
struct Demo {
    proc: Child,
    total: u64,
}

impl Demo {
    /// Starts the demo with `env` and waits until it did its acquisitions.
    fn start(env: &[(&str, &str)], args: &[&str]) -> Demo {
        let mut proc = Child::start("endpoint_demo", env, args);
        let total = match proc.ready()[..] {
            [total] => total,
            ref other => panic!("`ready` with {other:?}; stderr: {}", proc.stderr()),
        };
        proc.drain_stdout();
        Demo { proc, total }
    }

    fn pid(&self) -> u32 {
        self.proc.child.id()
    }

    fn stderr(&self) -> String {
        self.proc.stderr()
    }

    /// The endpoint address the demo announced on stderr.
    fn endpoint(&self) -> EndpointAddr {
        let mut addr = None;
        let announced = wait_until(PATIENCE, || {
            addr = self.stderr().lines().find_map(|l| {
                l.strip_prefix("lockmeter: endpoint listening on ")
                    .map(str::to_string)
            });
            addr.is_some()
        });
        assert!(
            announced,
            "no endpoint announced; stderr: {}",
            self.stderr()
        );
        addr.unwrap().parse().unwrap()
    }

    fn running(&mut self) -> bool {
        self.proc.running()
    }

    /// Closes stdin so that the demo exits normally; its exit status.
    fn finish(mut self) -> (ExitStatus, String) {
        drop(self.proc.stdin.take());
        let mut status = None;
        let exited = wait_until(PATIENCE, || {
            status = self.proc.child.try_wait().unwrap();
            status.is_some()
        });
        assert!(
            exited,
            "the demo did not exit (deadlock at exit?); stderr: {}",
            self.stderr()
        );
        // Let the stderr reader catch the last lines.
        thread::sleep(Duration::from_millis(50));
        (status.unwrap(), self.stderr())
    }
}

/// A private runtime dir for one test, so the default socket lands there.
fn runtime_dir(tag: &str) -> PathBuf {
    let dir = scratch_dir(tag).join("run");
    fs::create_dir(&dir).unwrap();
    fs::set_permissions(&dir, fs::Permissions::from_mode(0o700)).unwrap();
    dir
}

fn mode(p: &Path) -> u32 {
    fs::symlink_metadata(p).unwrap().permissions().mode() & 0o777
}

fn unix_path(addr: &EndpointAddr) -> PathBuf {
    match addr {
        EndpointAddr::Unix(p) => p.clone(),
        EndpointAddr::Tcp(a) => panic!("expected a unix socket, got tcp://{a}"),
    }
}

#[test]
fn a_unix_socket_client_sees_exactly_what_the_program_did() {
    let run = runtime_dir("real-unix");
    let mut demo = Demo::start(
        &[
            ("LOCKMETER_LISTEN", "1"),
            ("XDG_RUNTIME_DIR", run.to_str().unwrap()),
        ],
        &["3000", "4"],
    );
    let addr = demo.endpoint();
    let sock_dir = run.join("lockmeter");
    let sock = sock_dir.join(format!("{}.sock", demo.pid()));
    assert_eq!(addr, EndpointAddr::Unix(sock.clone()));
    assert_eq!(
        mode(&sock_dir),
        0o700,
        "the socket directory is not private"
    );
    assert_eq!(mode(&sock), 0o600, "the socket is not private");
    let listed = discovery::scan_endpoints_in(&sock_dir).live;
    assert_eq!(
        listed.iter().map(|e| e.pid).collect::<Vec<_>>(),
        [demo.pid()]
    );
    assert_eq!(listed[0].name, "endpoint_demo");

    let mut c = Client::connect(&addr, TIMEOUT).unwrap();
    let hello = c.hello().clone();
    assert_eq!(hello.pid, demo.pid());
    assert_eq!(hello.name, "endpoint_demo");
    let snap = c.snapshot().unwrap();
    assert_eq!(acquisitions(&snap), demo.total);
    assert_eq!(
        snap.lock(LOCK).unwrap().kind,
        lockmeter_model::LockKind::Mutex
    );
    c.subscribe(Duration::from_millis(50)).unwrap();
    let Response::Update { cumulative, .. } = c.recv().unwrap() else {
        panic!("expected an update")
    };
    assert_eq!(acquisitions(&cumulative), demo.total);
    drop(c);

    assert!(demo.running());
    let (status, stderr) = demo.finish();
    assert!(status.success(), "{status}; stderr: {stderr}");
    assert!(!sock.exists(), "the socket was not removed at exit");
}

#[test]
fn a_loopback_tcp_client_sees_exactly_what_the_program_did() {
    let demo = Demo::start(&[("LOCKMETER_LISTEN", "tcp://127.0.0.1:0")], &["2500", "3"]);
    let addr = demo.endpoint();
    assert!(
        matches!(&addr, EndpointAddr::Tcp(a) if a.ip().is_loopback() && a.port() != 0),
        "{addr}"
    );
    let mut c = Client::connect(&addr, TIMEOUT).unwrap();
    let hello = c.hello().clone();
    assert_eq!(hello.pid, demo.pid());
    assert_eq!(acquisitions(&c.snapshot().unwrap()), 2500);
    // A reset starts a new window for snapshots; nothing happened since.
    c.send(&wire::Request::Reset).unwrap();
    assert_eq!(c.recv().unwrap(), Response::Ok);
    assert_eq!(acquisitions(&c.snapshot().unwrap()), 0);
    let (status, _) = demo.finish();
    assert!(status.success());
}

#[test]
fn a_non_loopback_address_is_refused_and_the_program_runs_on() {
    let demo = Demo::start(&[("LOCKMETER_LISTEN", "tcp://0.0.0.0:0")], &["10", "1"]);
    let (status, stderr) = demo.finish();
    assert!(status.success());
    assert!(
        stderr.contains("refusing to listen on tcp://0.0.0.0:0"),
        "{stderr}"
    );
    assert!(!stderr.contains("listening on"), "{stderr}");
    assert_eq!(
        stderr.lines().count(),
        1,
        "more than one line for one problem: {stderr}"
    );
}

#[test]
fn dumps_at_exit_come_in_three_formats() {
    let dir = scratch_dir("real-dumps");
    let demos: Vec<(PathBuf, Demo)> = ["d.json", "d.csv", "d.txt"]
        .iter()
        .map(|name| {
            let path = dir.join(name);
            let demo = Demo::start(
                &[("LOCKMETER_DUMP", path.to_str().unwrap())],
                &["1234", "2"],
            );
            (path, demo)
        })
        .collect();
    for (path, demo) in demos {
        assert!(!path.exists(), "{} was written before exit", path.display());
        let (status, stderr) = demo.finish();
        assert!(status.success(), "{stderr}");
        let text = fs::read_to_string(&path)
            .unwrap_or_else(|e| panic!("{}: {e}; stderr: {stderr}", path.display()));
        match path.extension().unwrap().to_str().unwrap() {
            "json" => assert_eq!(
                acquisitions(&lockmeter_model::parse_snapshot(&text).unwrap()),
                1234
            ),
            "csv" => {
                let header: Vec<&str> = text.lines().next().unwrap().split(',').collect();
                let col = header.iter().position(|&h| h == "acquisitions").unwrap();
                let row: Vec<&str> = text
                    .lines()
                    .map(|l| l.split(',').collect::<Vec<_>>())
                    .find(|r| r[0] == "lock" && r.contains(&LOCK))
                    .unwrap();
                assert_eq!(row[col], "1234");
            }
            _ => {
                let row = text
                    .lines()
                    .find(|l| l.contains(LOCK))
                    .expect("no row for the lock");
                assert!(row.split_whitespace().any(|w| w == "1234"), "{row}");
            }
        }
    }
    fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn sigusr1_dumps_without_stopping_the_program() {
    let dir = scratch_dir("real-sig");
    let path = dir.join("sig.json");
    let mut demo = Demo::start(&[("LOCKMETER_DUMP", path.to_str().unwrap())], &["777", "2"]);
    // SAFETY: kill has no memory-safety preconditions; the pid is our
    // own child, which has not been waited for, so it cannot be reused.
    let rc = unsafe { libc::kill(demo.pid() as libc::pid_t, libc::SIGUSR1) };
    assert_eq!(rc, 0);
    assert!(
        wait_until(PATIENCE, || path.exists()),
        "no dump after SIGUSR1; stderr: {}",
        demo.stderr()
    );
    assert!(wait_until(PATIENCE, || demo.stderr().contains("dumped to")));
    assert_eq!(
        acquisitions(
            &lockmeter_model::parse_snapshot(&fs::read_to_string(&path).unwrap()).unwrap()
        ),
        777
    );
    assert!(demo.running(), "SIGUSR1 stopped the program");
    let (status, _) = demo.finish();
    assert!(status.success());
    fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn exiting_while_holding_a_lock_still_dumps_and_exits() {
    let dir = scratch_dir("real-hold");
    let path = dir.join("hold.json");
    let demo = Demo::start(
        &[("LOCKMETER_DUMP", path.to_str().unwrap())],
        &["500", "2", "--exit-holding"],
    );
    let (status, stderr) = demo.finish();
    assert!(status.success(), "{stderr}");
    let snap = lockmeter_model::parse_snapshot(&fs::read_to_string(&path).unwrap()).unwrap();
    // The held acquisition may be counted at acquisition or at release.
    assert!(
        [500, 501].contains(&acquisitions(&snap)),
        "{}",
        acquisitions(&snap)
    );
    fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_recording_adds_up_and_survives_a_kill() {
    let dir = scratch_dir("real-rec");
    let path = dir.join("r.jsonl");
    let env = [
        ("LOCKMETER_RECORD", path.to_str().unwrap()),
        ("LOCKMETER_RECORD_INTERVAL_MS", "10"),
    ];
    let demo = Demo::start(&env, &["4000", "4"]);
    let lines = || {
        fs::read_to_string(&path)
            .map(|t| t.lines().count())
            .unwrap_or(0)
    };
    assert!(wait_until(PATIENCE, || lines() >= 3));
    let (status, _) = demo.finish();
    assert!(status.success());
    let rec = lockmeter_model::parse_recording(&fs::read_to_string(&path).unwrap()).unwrap();
    assert_eq!(rec.frames.iter().map(acquisitions).sum::<u64>(), 4000);

    // Killed mid-recording: whatever is on disk still loads.
    let mut demo = Demo::start(&env, &["100", "1"]);
    assert!(wait_until(PATIENCE, || lines() >= 5));
    demo.proc.child.kill().unwrap();
    demo.proc.child.wait().unwrap();
    let rec = lockmeter_model::parse_recording(&fs::read_to_string(&path).unwrap()).unwrap();
    assert!(
        rec.frames.len() >= 5 && rec.warnings.len() <= 1,
        "{:?}",
        rec.warnings
    );
    fs::remove_dir_all(&dir).unwrap();
}

fn stats(addr: &EndpointAddr) -> wire::EndpointStats {
    Client::connect(addr, TIMEOUT).unwrap().stats().unwrap()
}

#[test]
fn abusive_clients_do_not_disturb_the_program_or_its_counts() {
    let run = runtime_dir("real-abuse");
    let env = [
        ("LOCKMETER_LISTEN", "1"),
        ("XDG_RUNTIME_DIR", run.to_str().unwrap()),
        ("LOCKMETER_CLIENT_TIMEOUT_MS", "300"),
    ];
    let mut demo = Demo::start(&env, &["6000", "4"]);
    let addr = demo.endpoint();
    let path = unix_path(&addr);

    // Garbage bytes, then a request over the cap.
    let mut s = UnixStream::connect(&path).unwrap();
    s.write_all(b"\x00\x01\xff\xfe\r\n").unwrap();
    s.set_read_timeout(Some(TIMEOUT)).unwrap();
    assert_error_then_close(&read_to_close(&mut s), "a bad request");
    let mut s = UnixStream::connect(&path).unwrap();
    let _ = s.write_all(&vec![b'x'; 2 * wire::MAX_REQUEST_LINE]);
    s.set_read_timeout(Some(TIMEOUT)).unwrap();
    assert_error_then_close(&read_to_close(&mut s), "a bad request");

    // A client that asks for a lot and never reads.
    let mut stalled = UnixStream::connect(&path).unwrap();
    stalled
        .set_write_timeout(Some(Duration::from_secs(2)))
        .unwrap();
    let _ = stalled.write_all("{\"type\":\"snapshot\"}\n".repeat(20_000).as_bytes());
    assert!(
        wait_until(PATIENCE, || stats(&addr).dropped_clients == 1),
        "{:?}",
        stats(&addr)
    );

    // Fifty clients at once.
    let clients: Vec<_> = (0..50)
        .map(|_| {
            let addr = addr.clone();
            thread::spawn(move || {
                acquisitions(&Client::connect(&addr, TIMEOUT).unwrap().snapshot().unwrap())
            })
        })
        .collect();
    for c in clients {
        assert_eq!(c.join().unwrap(), 6000);
    }

    // A subscriber process killed mid-stream.
    let marker = run.join("subscribed");
    let mut sub = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "subscriber_child", "--test-threads=1"])
        .env(SUBSCRIBE_TO, addr.to_string())
        .env(SUBSCRIBED_MARKER, &marker)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    assert!(
        wait_until(PATIENCE, || marker.exists()),
        "the subscriber child did not subscribe"
    );
    sub.kill().unwrap();
    sub.wait().unwrap();

    // Only the stats connection itself is left.
    assert!(
        wait_until(PATIENCE, || stats(&addr).clients == 1),
        "{:?}",
        stats(&addr)
    );
    let mut c = Client::connect(&addr, TIMEOUT).unwrap();
    assert_eq!(acquisitions(&c.snapshot().unwrap()), 6000);
    drop(c);
    drop(stalled);
    assert!(demo.running());
    let (status, stderr) = demo.finish();
    assert!(status.success(), "{stderr}");
    assert!(!path.exists());
}

const SUBSCRIBE_TO: &str = "LMX_TEST_SUBSCRIBE_TO";
const SUBSCRIBED_MARKER: &str = "LMX_TEST_SUBSCRIBED_MARKER";

/// Not a test on its own: run by `abusive_clients_...` as a separate
/// process that subscribes, reads a little, says so by creating the marker
/// file, and is then killed while it reads on.
#[test]
fn subscriber_child() {
    let (Ok(addr), Some(marker)) = (
        std::env::var(SUBSCRIBE_TO),
        std::env::var_os(SUBSCRIBED_MARKER),
    ) else {
        return;
    };
    let mut c = Client::connect(&addr.parse().unwrap(), TIMEOUT).unwrap();
    c.subscribe(Duration::from_millis(50)).unwrap();
    c.recv().unwrap();
    c.recv().unwrap();
    fs::write(marker, "subscribed").unwrap();
    c.set_timeout(None);
    while c.recv().is_ok() {}
}

#[test]
fn a_kill_mid_dump_leaves_the_previous_or_a_complete_file() {
    // Dumps are requested with SIGUSR1 and the process is killed right
    // after, so some kills land while a dump is being written. The file
    // must always be the previous dump or a complete new one, never a torn
    // mix (the write goes to a temporary file renamed into place).
    let dir = scratch_dir("real-killdump");
    let path = dir.join("k.json");
    fs::write(&path, "previous").unwrap();
    let mut complete = 0;
    for round in 0..8 {
        let mut demo = Demo::start(
            &[("LOCKMETER_DUMP", path.to_str().unwrap())],
            &["3000", "2"],
        );
        for _ in 0..round * 4 {
            // SAFETY: our own child, not yet waited for.
            unsafe { libc::kill(demo.pid() as libc::pid_t, libc::SIGUSR1) };
        }
        // Later rounds give the dump more time, so kills land before,
        // during and after writes.
        std::thread::sleep(Duration::from_micros(400 * round));
        // SAFETY: as above.
        unsafe { libc::kill(demo.pid() as libc::pid_t, libc::SIGKILL) };
        let _ = demo.proc.child.wait();
        let text = fs::read_to_string(&path).unwrap();
        if text != "previous" {
            let snap = lockmeter_model::parse_snapshot(&text)
                .unwrap_or_else(|e| panic!("round {round}: a torn dump: {e}"));
            assert_eq!(acquisitions(&snap), 3000, "round {round}");
            complete += 1;
        }
    }
    println!("kill mid-dump: 8 kills, {complete} rounds left a complete new dump, the rest the previous file");
    fs::remove_dir_all(&dir).unwrap();
}
