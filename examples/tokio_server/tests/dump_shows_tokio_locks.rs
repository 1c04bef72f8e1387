//! The server, run as a user would (a real process, `LOCKMETER_DUMP`),
//! dumps a table in which tokio's own locks appear, classed by their
//! creation sites in tokio's source, with the counts the program can know
//! exactly: one keyspace lock, one `watch` write and one `Notify` waiter
//! list lock per request.

use std::path::Path;
use std::process::Command;

use lockmeter_model::{LockKind, LockStats, Snapshot};

const CLIENTS: u64 = 6;
const PER_CLIENT: u64 = 200;
const REQUESTS: u64 = CLIENTS * PER_CLIENT;

/// tokio wraps every parking_lot lock in this one file.
const TOKIO_WRAPPER: &str = "src/loom/std/parking_lot.rs";

fn run_server() -> Snapshot {
    let dir = std::env::temp_dir().join(format!("tokio_server_test_{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let dump = dir.join("dump.json");
    let out = Command::new(env!("CARGO_BIN_EXE_tokio_server"))
        .args([CLIENTS.to_string(), PER_CLIENT.to_string()])
        .env("LOCKMETER_DUMP", &dump)
        .env("LOCKMETER_QUIET", "1")
        .output()
        .expect("run tokio_server");
    assert!(
        out.status.success(),
        "tokio_server failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        format!("requests={REQUESTS}")
    );
    let text = std::fs::read_to_string(&dump).expect("the dump was written at exit");
    std::fs::remove_dir_all(&dir).ok();
    lockmeter_model::parse_snapshot(&text).expect("a valid snapshot")
}

/// The source line a `file:line:col` site names, read from the file.
fn source_line(site: &str) -> String {
    let mut parts = site.rsplitn(3, ':');
    let (_col, line, file) = (parts.next(), parts.next().unwrap(), parts.next().unwrap());
    let n: usize = line.parse().unwrap();
    let text = std::fs::read_to_string(Path::new(file))
        .unwrap_or_else(|e| panic!("cannot read {file} (named by site {site}): {e}"));
    text.lines().nth(n - 1).unwrap().to_owned()
}

fn tokio_classes(snap: &Snapshot) -> Vec<&LockStats> {
    snap.locks
        .iter()
        .filter(|l| l.created_at.contains("/tokio-") && l.created_at.contains(TOKIO_WRAPPER))
        .collect()
}

fn sum_sites(l: &LockStats, mode: Option<&str>) -> u64 {
    l.sites
        .iter()
        .filter(|s| mode.is_none() || s.mode.as_deref() == mode)
        .map(|s| s.stats.acquisitions)
        .sum()
}

#[test]
fn tokio_internal_locks_are_in_the_table_with_exact_counts() {
    let snap = run_server();
    let tokio = tokio_classes(&snap);
    let ids: Vec<_> = snap.locks.iter().map(|l| (&l.id, l.kind)).collect();
    assert!(
        !tokio.is_empty(),
        "no lock class in tokio's source; have {ids:?}"
    );

    // Every tokio class, and every one of its call sites, is in tokio's
    // wrapper file: what the table can and cannot tell apart (see the
    // guide). Inner parts (a condvar's queue lock, `parent` set) are locked
    // inside lockmeter and belong to a tokio class.
    for l in &tokio {
        match &l.parent {
            None => {
                for s in &l.sites {
                    assert!(
                        s.site.contains(TOKIO_WRAPPER),
                        "{} locked at {}",
                        l.id,
                        s.site
                    );
                }
            }
            Some(parent) => assert!(
                tokio.iter().any(|p| &p.id == parent),
                "{} belongs to {parent}, not a tokio class",
                l.id
            ),
        }
    }

    // The program's own lock: one per request, plus the final sum.
    let keyspace = snap
        .locks
        .iter()
        .find(|l| l.created_at.starts_with("src/main.rs:"))
        .unwrap_or_else(|| panic!("no keyspace lock; have {ids:?}"));
    assert_eq!(keyspace.kind, LockKind::Mutex);
    assert_eq!(keyspace.total.acquisitions, REQUESTS + 1);
    assert_eq!(keyspace.instances, 1);

    // tokio's only parking_lot RwLock is the watch channel's: one write per
    // `send_modify`, i.e. per request.
    let watch = tokio
        .iter()
        .find(|l| l.kind == LockKind::Rwlock)
        .unwrap_or_else(|| panic!("no tokio rwlock; have {ids:?}"));
    assert!(source_line(&watch.created_at).contains("RwLock::new("));
    assert_eq!(sum_sites(watch, Some("write")), REQUESTS);

    // The static Notify's waiter list, created by `const_mutex`: locked
    // once per `notify_waiters`. A class of its own (its creation site is
    // the `const_new` line), so nothing else of the runtime's adds to it.
    let consts: Vec<_> = tokio
        .iter()
        .filter(|l| {
            l.kind == LockKind::Mutex && source_line(&l.created_at).contains("const_mutex(")
        })
        .collect();
    assert_eq!(consts.len(), 1, "one const_mutex class; have {ids:?}");
    assert_eq!(consts[0].total.acquisitions, REQUESTS);
    assert_eq!(sum_sites(consts[0], None), REQUESTS);

    // And the runtime's own mutexes (scheduler, I/O driver, blocking pool):
    // one class, `Mutex::new` in the wrapper, busy, with many instances.
    let runtime = tokio
        .iter()
        .find(|l| l.kind == LockKind::Mutex && source_line(&l.created_at).contains("Mutex::new("))
        .unwrap_or_else(|| panic!("no tokio Mutex::new class; have {ids:?}"));
    assert!(runtime.total.acquisitions > 0);
    assert!(runtime.instances > 1, "{} instances", runtime.instances);
}
