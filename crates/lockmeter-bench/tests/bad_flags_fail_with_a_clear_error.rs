//! A mistyped step or row name is an error that names the choices, not a
//! run that silently measures nothing.

use std::process::Command;

/// Runs the bench with `args`, asserts that it refuses them (exit status
/// 2), and returns its stderr.
fn refused(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_lockmeter-bench"))
        .args(args)
        .output()
        .expect("the bench binary runs");
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
    stderr
}

/// The bench refuses `args`, and its stderr says each of `says`.
fn assert_refused(args: &[&str], says: &[&str]) {
    let stderr = refused(args);
    for s in says {
        assert!(stderr.contains(s), "{args:?}: want {s:?} in {stderr}");
    }
}

#[test]
fn an_unknown_step_is_refused_with_the_list_of_steps() {
    assert_refused(
        &["--quick", "--only", "contendd"],
        &["no step \"contendd\"", "contended"],
    );
}

#[test]
fn an_unknown_callgrind_row_is_refused_before_valgrind_runs() {
    assert_refused(
        &["--callgrind", "--only", "mutexx"],
        &["no uncontended row \"mutexx\"", "sync_mutex"],
    );
}

#[test]
fn a_malformed_child_spec_is_refused() {
    for spec in ["mutex", "mutex:sideways", "nosuch:bare"] {
        let stderr = refused(&["--callgrind-child", spec]);
        assert!(stderr.starts_with("lockmeter-bench: "), "{spec}: {stderr}");
    }
}

#[test]
fn zero_callgrind_ops_is_refused() {
    assert_refused(
        &["--callgrind", "--callgrind-ops", "0"],
        &["--callgrind-ops"],
    );
}
