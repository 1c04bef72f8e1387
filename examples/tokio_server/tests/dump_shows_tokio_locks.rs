//! The server, run as a user would (a real process, `LOCKMETER_DUMP`),
//! dumps a table in which tokio's own locks appear, classed by their
//! creation sites in tokio's source, with the counts the program can know
//! exactly: one keyspace lock, one `watch` write and one `Notify` waiter
//! list lock per request. Dumped as folded stacks, the same locks come
//! apart by their real callers in tokio's source.

use std::path::Path;
use std::process::Command;

use lockmeter_model::{LockKind, LockStats, Snapshot};

const CLIENTS: u64 = 6;
const PER_CLIENT: u64 = 200;
const REQUESTS: u64 = CLIENTS * PER_CLIENT;

/// The stacks test's load: how many of tokio's callers meet in a wait is
/// up to the scheduler, and at 6 x 200 a run showed 5 to 14 of them (once
/// 2, in CI); at 16 x 300, 12 to 16, in under a second.
const STACKS_LOAD: (u64, u64) = (16, 300);

/// tokio wraps every parking_lot lock in this one file.
const TOKIO_WRAPPER: &str = "src/loom/std/parking_lot.rs";

/// Runs the server for `clients` x `per_client` requests with
/// `LOCKMETER_DUMP=<scratch>/<dump>` and `env`; the text of each of `read`
/// (files beside the dump) it wrote at exit.
fn run_server(
    (clients, per_client): (u64, u64),
    dump: &str,
    env: &[(&str, &str)],
    read: &[&str],
) -> Vec<String> {
    let dir = std::env::temp_dir().join(format!("tokio_server_test_{}_{dump}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_tokio_server"))
        .args([clients.to_string(), per_client.to_string()])
        .env("LOCKMETER_DUMP", dir.join(dump))
        .env("LOCKMETER_QUIET", "1")
        .envs(env.iter().copied())
        .output()
        .expect("run tokio_server");
    assert!(
        out.status.success(),
        "tokio_server failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        format!("requests={}", clients * per_client)
    );
    let texts = read
        .iter()
        .map(|f| {
            std::fs::read_to_string(dir.join(f)).unwrap_or_else(|e| {
                panic!(
                    "{f} was not written at exit: {e}; stderr: {}",
                    String::from_utf8_lossy(&out.stderr)
                )
            })
        })
        .collect();
    std::fs::remove_dir_all(&dir).ok();
    texts
}

/// The table, dumped as JSON.
fn run_server_for_table() -> Snapshot {
    let text = run_server((CLIENTS, PER_CLIENT), "dump.json", &[], &["dump.json"]).remove(0);
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
    let snap = run_server_for_table();
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

/// One line of a folded dump: `[lock NAME];outermost;…;leaf WEIGHT`.
struct Folded<'a> {
    lock: &'a str,
    /// Outermost first; the last is the frame that took the lock.
    frames: Vec<&'a str>,
}

fn folded(text: &str) -> Vec<Folded<'_>> {
    text.lines()
        .map(|l| {
            let (stack, weight) = l.rsplit_once(' ').expect("a weight");
            assert!(weight.parse::<u64>().is_ok_and(|w| w > 0), "weight of {l}");
            let mut parts = stack.split(';');
            let lock = parts.next().unwrap();
            let lock = lock
                .strip_prefix("[lock ")
                .and_then(|l| l.strip_suffix(']'))
                .unwrap_or_else(|| panic!("no lock root in {l}"));
            Folded {
                lock,
                frames: parts.collect(),
            }
        })
        .collect()
}

/// With every contended wait captured (`LOCKMETER_STACK_RATE=1`), the
/// stacks of tokio's `Mutex::new` class, one row in the table, name many
/// different callers in tokio's source (blocking pool, scheduler, timer
/// wheel, ...), and the holders' stacks name tokio's callers too: the
/// default skip list folds away tokio's loom shim, the compat crate,
/// lock_api and lockmeter, and the frame that took the lock is tokio's
/// own caller.
#[test]
fn tokio_locks_come_apart_by_their_callers_in_tokio_source() {
    let texts = run_server(
        STACKS_LOAD,
        "stacks.folded",
        &[("LOCKMETER_STACK_RATE", "1")],
        &["stacks.folded", "stacks.holder.folded"],
    );
    let skip: Vec<String> = lockmeter::DEFAULT_SKIP_FRAMES
        .iter()
        .map(|s| s.to_string())
        .collect();
    for (side, text) in ["waiter", "holder"].iter().zip(&texts) {
        let lines = folded(text);
        for l in &lines {
            for f in &l.frames {
                assert!(
                    !lockmeter_model::stacks::in_module(f, &skip),
                    "{side}: wrapper frame {f} not folded away under {}",
                    l.lock
                );
            }
        }
        let runtime: Vec<&Folded> = lines
            .iter()
            .filter(|l| {
                l.lock.contains("/tokio-")
                    && l.lock.contains(TOKIO_WRAPPER)
                    && source_line(l.lock).contains("Mutex::new(")
            })
            .collect();
        let mut callers = std::collections::BTreeSet::new();
        for l in &runtime {
            let leaf = *l.frames.last().expect("a frame");
            if l.frames.len() == 1 && leaf.contains(TOKIO_WRAPPER) {
                continue; // the call site's remainder (waits not captured)
            }
            assert!(
                leaf.starts_with("tokio::"),
                "{side}: a stack of {} is taken by {leaf}, not by tokio: {:?}",
                l.lock,
                l.frames
            );
            callers.insert(leaf);
        }
        // The holder side counts one wait in 8 (lockmeter's blame
        // sampling), so it sees fewer stacks: there, one is enough.
        let want = if *side == "waiter" { 3 } else { 1 };
        assert!(
            callers.len() >= want,
            "{side}: tokio's runtime mutexes come apart by only {} callers: {callers:?}\n{text}",
            callers.len()
        );
    }
}
