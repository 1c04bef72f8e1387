//! A mistyped step or row name is an error that names the choices, not a
//! run that silently measures nothing.

use std::process::Command;

fn run(args: &[&str]) -> (Option<i32>, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_lockmeter-bench"))
        .args(args)
        .output()
        .expect("the bench binary runs");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn an_unknown_step_is_refused_with_the_list_of_steps() {
    let (code, stderr) = run(&["--quick", "--only", "contendd"]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("no step \"contendd\""), "{stderr}");
    assert!(stderr.contains("contended"), "{stderr}");
}

#[test]
fn an_unknown_callgrind_row_is_refused_before_valgrind_runs() {
    let (code, stderr) = run(&["--callgrind", "--only", "mutexx"]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("no uncontended row \"mutexx\""), "{stderr}");
    assert!(stderr.contains("sync_mutex"), "{stderr}");
}

#[test]
fn a_malformed_child_spec_is_refused() {
    for spec in ["mutex", "mutex:sideways", "nosuch:bare"] {
        let (code, stderr) = run(&["--callgrind-child", spec]);
        assert_eq!(code, Some(2), "{spec}: {stderr}");
        assert!(stderr.starts_with("lockmeter-bench: "), "{spec}: {stderr}");
    }
}

#[test]
fn zero_callgrind_ops_is_refused() {
    let (code, stderr) = run(&["--callgrind", "--callgrind-ops", "0"]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("--callgrind-ops"), "{stderr}");
}
