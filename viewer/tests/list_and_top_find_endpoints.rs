//! `lockmeter list` and `lockmeter top` without a target look for endpoints
//! in the endpoint directory (here a scratch `XDG_RUNTIME_DIR`).

mod common;

use common::{assert_clean_failure, lockmeter_in, scratch, stdout};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::UnixListener;

#[test]
fn nothing_to_attach_to() {
    let dir = scratch("no-endpoints");
    let out = lockmeter_in(&dir, &["list"]);
    assert!(out.status.success());
    assert!(
        stdout(&out).contains("no attachable lockmeter process"),
        "{}",
        stdout(&out)
    );
    let out = lockmeter_in(&dir, &["top"]);
    assert_clean_failure(&out, "no attachable lockmeter process found");
}

#[test]
fn a_listening_process_is_listed() {
    let dir = scratch("one-endpoint");
    let sockets = dir.join("lockmeter");
    std::fs::create_dir(&sockets).unwrap();
    std::fs::set_permissions(&sockets, std::fs::Permissions::from_mode(0o700)).unwrap();
    // This test process plays the listening process: its pid is alive.
    let path = sockets.join(format!("{}.sock", std::process::id()));
    let _listener = UnixListener::bind(&path).unwrap();
    let out = lockmeter_in(&dir, &["list"]);
    assert!(out.status.success());
    let text = stdout(&out);
    assert!(text.contains("PID"), "{text}");
    assert!(text.contains(&std::process::id().to_string()), "{text}");
    assert!(text.contains(&path.display().to_string()), "{text}");
    // `top` finds it, and then needs a terminal to show it.
    let out = lockmeter_in(&dir, &["top"]);
    assert_clean_failure(&out, "needs a terminal");
}

#[test]
fn a_bad_target_is_refused_before_anything_else() {
    let dir = scratch("bad-target");
    let out = lockmeter_in(&dir, &["top", "tcp://nohost:1"]);
    assert_clean_failure(&out, "tcp://nohost:1");
}
