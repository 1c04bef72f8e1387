//! `lockmeter now`: what a process holds and waits on, as text.
//!
//! Deadlocks first (they are why one looks), then every lock held or
//! waited on with the longest hold first, the chains of waiters, and the
//! lock-order inversions. Thread and lock names are sanitized like the
//! table's.

use std::fmt::Write as _;

use crate::format::{format_ns, sanitize};
use crate::now::{Deadlock, NowHolder, NowLock, NowWaiter, ThreadRef};
use crate::Snapshot;

/// The `now`, `deadlocks` and `lock_order` parts of `snap` as text.
pub fn now_text(snap: &Snapshot) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{} (pid {}): {} lock(s) held or waited on, {} deadlock(s)",
        sanitize(&snap.process.name),
        snap.process.pid,
        snap.now.locks.len(),
        snap.deadlocks.len()
    );
    for (i, d) in snap.deadlocks.iter().enumerate() {
        deadlock(&mut out, i + 1, d);
    }
    if snap.now.locks.is_empty() {
        out.push_str("\nnothing is held or waited on\n");
    }
    for l in &snap.now.locks {
        lock(&mut out, l);
    }
    if !snap.now.chains.is_empty() {
        out.push_str("\nchains (who waits behind whom):\n");
    }
    for c in &snap.now.chains {
        let mut line = String::from("  ");
        for (i, link) in c.links.iter().enumerate() {
            if i > 0 {
                line.push_str(" -> ");
            }
            let _ = write!(
                line,
                "{} waits on {} at {}",
                sanitize(&link.thread.label()),
                sanitize(&link.waits_on),
                sanitize(&link.site)
            );
        }
        match (&c.ends_at, c.cycle) {
            (_, true) => line.push_str(" -> (closes a cycle)"),
            (Some(t), _) => {
                let _ = write!(line, " -> held by {}, not waiting", sanitize(&t.label()));
            }
            (None, false) => {}
        }
        out.push_str(&line);
        out.push('\n');
    }
    for n in [
        (
            snap.now.unreadable_threads,
            "thread(s) changed too fast to read",
        ),
        (
            snap.now.untracked_holds,
            "hold(s) beyond a thread's table not shown",
        ),
    ]
    .iter()
    .filter(|(n, _)| *n != 0)
    {
        let _ = writeln!(out, "\nnote: {} {}", n.0, n.1);
    }
    let order = &snap.lock_order;
    if !order.inversions.is_empty() {
        out.push_str("\nlock order inversions:\n");
        for inv in &order.inversions {
            let _ = writeln!(out, "  {}", sanitize(&inv.message()));
        }
    }
    out
}

fn deadlock(out: &mut String, n: usize, d: &Deadlock) {
    let _ = writeln!(out, "\nDEADLOCK {n}: {} threads", d.threads.len());
    for t in &d.threads {
        let held_by: Vec<String> = t.held_by.iter().map(|h| sanitize(&h.label())).collect();
        let _ = writeln!(
            out,
            "  {} waits on {}{} at {}, held by {}",
            sanitize(&t.thread.label()),
            sanitize(&t.waits_on.id),
            mode(t.waits_on.mode.as_deref()),
            sanitize(&t.waits_on.site),
            held_by.join(", ")
        );
        for h in &t.holds {
            let _ = writeln!(
                out,
                "      holds {}{} since {}",
                sanitize(&h.id),
                mode(h.mode.as_deref()),
                sanitize(&h.site)
            );
        }
    }
}

fn mode(m: Option<&str>) -> String {
    mode_suffix(m)
}

/// ` (write)` after a lock or a time, or nothing: how a mode is shown.
pub fn mode_suffix(m: Option<&str>) -> String {
    m.map(|m| format!(" ({m})")).unwrap_or_default()
}

/// `held    1.2ms (write) by worker (tid 7) at src/a.rs:3:9  STALLED`:
/// a holder as the report and the viewer's "now" pane show it.
pub fn holder_line(h: &NowHolder) -> String {
    occupant(
        "held   ",
        h.held_ns,
        h.mode.as_deref(),
        &h.thread,
        &h.site,
        h.stalled,
    )
}

/// `waiting 3.0ms by ...`: a waiter, as [`holder_line`] shows a holder.
pub fn waiter_line(w: &NowWaiter) -> String {
    occupant(
        "waiting",
        w.waiting_ns,
        w.mode.as_deref(),
        &w.thread,
        &w.site,
        w.stalled,
    )
}

fn occupant(
    verb: &str,
    ns: u64,
    m: Option<&str>,
    thread: &ThreadRef,
    site: &str,
    stalled: bool,
) -> String {
    format!(
        "{verb} {:>8}{} by {} at {}{}",
        format_ns(ns),
        mode(m),
        sanitize(&thread.label()),
        sanitize(site),
        if stalled { "  STALLED" } else { "" }
    )
}

fn lock(out: &mut String, l: &NowLock) {
    let _ = writeln!(
        out,
        "\n{} [{} {}]",
        sanitize(&l.id),
        l.kind.as_str(),
        sanitize(&l.instance)
    );
    for h in &l.holders {
        let _ = writeln!(out, "  {}", holder_line(h));
    }
    for w in &l.waiters {
        let _ = writeln!(out, "  {}", waiter_line(w));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::now::*;
    use crate::{LockKind, ProcessInfo};

    fn t(tid: u64, name: &str) -> ThreadRef {
        ThreadRef {
            tid,
            name: name.into(),
        }
    }

    #[test]
    fn a_deadlock_names_threads_locks_and_sites_before_the_locks() {
        let mut s = Snapshot::empty(
            ProcessInfo {
                pid: 7,
                name: "hung".into(),
            },
            "mock",
        );
        s.now.locks.push(NowLock {
            instance: "0x10".into(),
            id: "a".into(),
            kind: LockKind::Mutex,
            holders: vec![NowHolder {
                thread: t(1, "one"),
                site: "x.rs:1:1".into(),
                mode: None,
                held_ns: 2_000_000_000,
                stalled: true,
            }],
            waiters: vec![NowWaiter {
                thread: t(2, "two"),
                site: "x.rs:9:9".into(),
                mode: None,
                waiting_ns: 1_500_000_000,
                stalled: false,
            }],
        });
        s.deadlocks.push(Deadlock {
            detected_unix_ns: 1,
            threads: vec![DeadlockedThread {
                thread: t(2, "two"),
                waits_on: LockAt {
                    id: "a".into(),
                    instance: "0x10".into(),
                    site: "x.rs:9:9".into(),
                    mode: None,
                },
                held_by: vec![t(1, "one")],
                holds: vec![],
            }],
        });
        let text = now_text(&s);
        let dl = text.find("DEADLOCK 1").unwrap();
        let lock = text.find("a [mutex 0x10]").unwrap();
        assert!(dl < lock, "{text}");
        assert!(
            text.contains("two (2) waits on a at x.rs:9:9, held by one (1)"),
            "{text}"
        );
        assert!(
            text.contains("held       2.00s by one (1) at x.rs:1:1  STALLED"),
            "{text}"
        );
        assert!(
            text.contains("waiting    1.50s by two (2) at x.rs:9:9"),
            "{text}"
        );
    }

    #[test]
    fn nothing_held_says_so() {
        let s = Snapshot::empty(ProcessInfo::default(), "mock");
        assert!(now_text(&s).contains("nothing is held or waited on"));
    }
}
