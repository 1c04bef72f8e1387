//! From the threads' tables to the model: who holds and waits on what,
//! the chains that follow, and the cycles the watchdog reports.
//!
//! [`gather`] reads every table (never blocking a writer); the rest are
//! pure functions over what it read, so they are tested without threads.

use std::collections::BTreeMap;
use std::sync::Arc;

use lockmeter_model::now::{
    Chain, ChainLink, Deadlock, DeadlockedThread, LockAt, LockOrder, Now, NowHolder, NowLock,
    NowWaiter, ThreadRef,
};
use lockmeter_model::LockKind;

use super::table::Rec;
use super::thread::registry;
use crate::class::format_location;
use crate::recorder::entry::Entry;

/// One acquisition (held or waited for), resolved to text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Acq {
    pub(crate) lock: usize,
    pub(crate) id: String,
    pub(crate) kind: LockKind,
    pub(crate) site: String,
    pub(crate) mode: Option<&'static str>,
    pub(crate) recorder: usize,
    pub(crate) since: u64,
    /// A semaphore also used with `down`/`up`: anyone may end the wait.
    pub(crate) loose: bool,
}

/// One thread, read consistently.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ThreadNow {
    /// The slot's address: which thread, across scans.
    pub(crate) slot: usize,
    pub(crate) thread: ThreadRef,
    pub(crate) gen: u64,
    pub(crate) held: Vec<Acq>,
    pub(crate) wait: Option<Acq>,
}

/// Every thread at (about) one moment.
#[derive(Debug, Default)]
pub(crate) struct Picture {
    pub(crate) threads: Vec<ThreadNow>,
    pub(crate) unreadable: u64,
    pub(crate) untracked: u64,
}

/// # Safety
/// `r.what` must be the address of a live entry: true of records read
/// from a registered table while the registry is held (see `thread`).
unsafe fn resolve(r: &Rec) -> Acq {
    // SAFETY: the caller guarantees the entry is alive.
    let e = unsafe { &*((r.what & !Rec::LOOSE) as *const Entry) };
    Acq {
        lock: r.lock,
        id: e.key().class.id(),
        kind: e.key().kind,
        site: format_location(e.key().site),
        mode: e.key().mode.label(),
        recorder: r.recorder,
        since: r.since,
        loose: r.what & Rec::LOOSE != 0,
    }
}

/// Reads every thread, and with `order_of` the lock order of that
/// recorder, under one hold of the registry.
pub(crate) fn gather(order_of: Option<usize>) -> (Picture, Option<LockOrder>) {
    let list = registry();
    let mut p = Picture::default();
    for slot in list.iter() {
        p.untracked += slot.table.untracked();
        let Some(view) = slot.table.read() else {
            p.unreadable += 1;
            continue;
        };
        if view.held.is_empty() && view.wait.is_none() {
            continue;
        }
        // SAFETY: read from a registered table with the registry held.
        let (held, wait) = unsafe {
            (
                view.held.iter().map(|r| resolve(r)).collect(),
                view.wait.as_ref().map(|r| resolve(r)),
            )
        };
        p.threads.push(ThreadNow {
            slot: Arc::as_ptr(slot) as usize,
            thread: slot.thread.clone(),
            gen: view.gen,
            held,
            wait,
        });
    }
    let order = order_of.map(|r| super::order::of(r, &list));
    (p, order)
}

/// Whether holding `held` keeps a waiter for `wait` waiting.
fn blocks(wait: &Acq, held: &Acq) -> bool {
    if wait.lock != held.lock {
        return false;
    }
    match wait.kind {
        // Readers share: only a writer blocks a reader.
        LockKind::Rwlock => !(wait.mode == Some("read") && held.mode == Some("read")),
        _ => true,
    }
}

/// The threads whose holds keep thread `i` waiting (itself included: a
/// thread that re-locks what it holds waits forever).
fn blockers(threads: &[ThreadNow], i: usize) -> Vec<usize> {
    let Some(w) = &threads[i].wait else {
        return Vec::new();
    };
    (0..threads.len())
        .filter(|&j| threads[j].held.iter().any(|h| blocks(w, h)))
        .collect()
}

/// The picture `now` for one recorder: what its locks' holders and
/// waiters are doing. `now_ns` is the watchdog clock, `stall_ns` 0 when
/// stalls are not reported.
pub(crate) fn now(p: &Picture, recorder: usize, now_ns: u64, stall_ns: u64, unix_ns: u64) -> Now {
    let threads: Vec<ThreadNow> = p
        .threads
        .iter()
        .map(|t| ThreadNow {
            held: t
                .held
                .iter()
                .filter(|a| a.recorder == recorder)
                .cloned()
                .collect(),
            wait: t.wait.clone().filter(|a| a.recorder == recorder),
            ..t.clone()
        })
        .filter(|t| !t.held.is_empty() || t.wait.is_some())
        .collect();
    let stalled = |ns: u64| stall_ns != 0 && ns >= stall_ns;
    let mut locks: BTreeMap<usize, NowLock> = BTreeMap::new();
    for t in &threads {
        for h in &t.held {
            let held_ns = now_ns.saturating_sub(h.since);
            lock_entry(&mut locks, h).holders.push(NowHolder {
                thread: t.thread.clone(),
                site: h.site.clone(),
                mode: h.mode.map(str::to_string),
                held_ns,
                stalled: stalled(held_ns),
            });
        }
        if let Some(w) = &t.wait {
            let waiting_ns = now_ns.saturating_sub(w.since);
            lock_entry(&mut locks, w).waiters.push(NowWaiter {
                thread: t.thread.clone(),
                site: w.site.clone(),
                mode: w.mode.map(str::to_string),
                waiting_ns,
                stalled: stalled(waiting_ns),
            });
        }
    }
    let mut locks: Vec<NowLock> = locks.into_values().collect();
    for l in &mut locks {
        l.holders.sort_by_key(|h| std::cmp::Reverse(h.held_ns));
        l.waiters.sort_by_key(|w| std::cmp::Reverse(w.waiting_ns));
    }
    let key = |l: &NowLock| {
        let hold = l.holders.first().map_or(0, |h| h.held_ns);
        let wait = l.waiters.first().map_or(0, |w| w.waiting_ns);
        (hold, wait)
    };
    locks.sort_by(|a, b| key(b).cmp(&key(a)).then_with(|| a.id.cmp(&b.id)));
    Now {
        at_unix_ns: unix_ns,
        locks,
        chains: chains(&threads),
        unreadable_threads: p.unreadable,
        untracked_holds: p.untracked,
    }
}

fn lock_entry<'a>(locks: &'a mut BTreeMap<usize, NowLock>, a: &Acq) -> &'a mut NowLock {
    locks.entry(a.lock).or_insert_with(|| NowLock {
        instance: format!("{:#x}", a.lock),
        id: a.id.clone(),
        kind: a.kind,
        holders: Vec::new(),
        waiters: Vec::new(),
    })
}

/// Chains of two or more waiting threads, and cycles.
fn chains(threads: &[ThreadNow]) -> Vec<Chain> {
    let n = threads.len();
    let bl: Vec<Vec<usize>> = (0..n).map(|i| blockers(threads, i)).collect();
    let waited_for: Vec<bool> = (0..n)
        .map(|j| (0..n).any(|i| i != j && bl[i].contains(&j)))
        .collect();
    let mut out = Vec::new();
    let mut visited = vec![false; n];
    let starts = (0..n)
        .filter(|&i| !bl[i].is_empty() && !waited_for[i])
        .chain(0..n);
    for start in starts {
        if visited[start] || bl[start].is_empty() {
            continue;
        }
        let mut chain = Chain::default();
        let mut on_chain = vec![false; n];
        let mut i = start;
        loop {
            visited[i] = true;
            on_chain[i] = true;
            let w = threads[i].wait.as_ref().expect("blocked threads wait");
            chain.links.push(ChainLink {
                thread: threads[i].thread.clone(),
                waits_on: w.id.clone(),
                instance: format!("{:#x}", w.lock),
                site: w.site.clone(),
            });
            let next = bl[i].iter().copied().find(|&j| j != i).unwrap_or(bl[i][0]);
            if on_chain[next] {
                chain.cycle = true;
                break;
            }
            if bl[next].is_empty() {
                chain.ends_at = Some(threads[next].thread.clone());
                break;
            }
            i = next;
        }
        if chain.links.len() >= 2 || chain.cycle {
            out.push(chain);
        }
    }
    out
}

/// A cycle found in one scan: `key` is every thread it rests on with its
/// generation, so the same key on the next scan means nobody moved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Candidate {
    pub(crate) key: Vec<(usize, u64)>,
    pub(crate) recorders: Vec<usize>,
    pub(crate) deadlock: Deadlock,
}

/// The cycles of threads that can never proceed.
///
/// A thread waiting on a mutex, spinlock or rwlock is stuck when any
/// holder it waits for is stuck (it needs them all to let go); a thread
/// waiting on a semaphore when every permit holder is stuck (any one
/// returning a permit would do), and never when the semaphore's permits
/// also move by `down`/`up`. Threads not waiting are never stuck. The
/// largest set satisfying these rules is found by removing threads until
/// none breaks them; its strongly connected parts are the deadlocks.
pub(crate) fn cycles(threads: &[ThreadNow]) -> Vec<Candidate> {
    let n = threads.len();
    let bl: Vec<Vec<usize>> = (0..n).map(|i| blockers(threads, i)).collect();
    let or_node = |i: usize| {
        threads[i]
            .wait
            .as_ref()
            .is_some_and(|w| w.kind == LockKind::Semaphore)
    };
    let mut stuck: Vec<bool> = (0..n)
        .map(|i| {
            let w = threads[i].wait.as_ref();
            w.is_some() && !bl[i].is_empty() && !w.is_some_and(|w| w.loose)
        })
        .collect();
    loop {
        let mut changed = false;
        for i in 0..n {
            if !stuck[i] {
                continue;
            }
            let keep = if or_node(i) {
                bl[i].iter().all(|&j| stuck[j])
            } else {
                bl[i].iter().any(|&j| stuck[j])
            };
            if !keep {
                stuck[i] = false;
                changed = true;
            }
        }
        if !changed {
            break;
        }
    }
    let edges = |i: usize| bl[i].iter().copied().filter(|&j| stuck[j]);
    let reach: Vec<Vec<bool>> = (0..n)
        .map(|s| {
            let mut seen = vec![false; n];
            let mut todo: Vec<usize> = if stuck[s] { edges(s).collect() } else { vec![] };
            while let Some(i) = todo.pop() {
                if !seen[i] {
                    seen[i] = true;
                    todo.extend(edges(i));
                }
            }
            seen
        })
        .collect();
    let mut done = vec![false; n];
    let mut out = Vec::new();
    for s in 0..n {
        if !stuck[s] || done[s] || !reach[s][s] {
            continue;
        }
        let members: Vec<usize> = (0..n).filter(|&j| reach[s][j] && reach[j][s]).collect();
        members.iter().for_each(|&j| done[j] = true);
        let mut key: Vec<(usize, u64)> = (0..n)
            .filter(|&j| reach[s][j] || j == s)
            .map(|j| (threads[j].slot, threads[j].gen))
            .collect();
        key.sort_unstable();
        let mut recorders: Vec<usize> = members
            .iter()
            .flat_map(|&j| {
                let t = &threads[j];
                t.held.iter().chain(&t.wait).map(|a| a.recorder)
            })
            .collect();
        recorders.sort_unstable();
        recorders.dedup();
        out.push(Candidate {
            key,
            recorders,
            deadlock: describe(threads, &members, &bl),
        });
    }
    out
}

/// The deadlock's threads in cycle order, starting at the lowest tid.
fn describe(threads: &[ThreadNow], members: &[usize], bl: &[Vec<usize>]) -> Deadlock {
    let mut order = Vec::new();
    let mut i = *members
        .iter()
        .min_by_key(|&&j| threads[j].thread.tid)
        .expect("a cycle has members");
    while !order.contains(&i) {
        order.push(i);
        let next = bl[i]
            .iter()
            .copied()
            .filter(|j| members.contains(j))
            .find(|j| !order.contains(j));
        match next {
            Some(j) => i = j,
            None => break,
        }
    }
    // Members not on the walk (a knot rather than a ring) follow it.
    let rest: Vec<usize> = members
        .iter()
        .copied()
        .filter(|j| !order.contains(j))
        .collect();
    order.extend(rest);
    let lock_at = |a: &Acq| LockAt {
        id: a.id.clone(),
        instance: format!("{:#x}", a.lock),
        site: a.site.clone(),
        mode: a.mode.map(str::to_string),
    };
    Deadlock {
        detected_unix_ns: 0,
        threads: order
            .iter()
            .map(|&j| {
                let t = &threads[j];
                DeadlockedThread {
                    thread: t.thread.clone(),
                    waits_on: t.wait.as_ref().map(lock_at).unwrap_or_default(),
                    held_by: bl[j]
                        .iter()
                        .filter(|k| members.contains(k))
                        .map(|&k| threads[k].thread.clone())
                        .collect(),
                    holds: t.held.iter().map(lock_at).collect(),
                }
            })
            .collect(),
    }
}

/// Threads slots, for tests of the functions above.
#[cfg(test)]
pub(crate) mod fake {
    use super::*;

    pub(crate) fn acq(lock: usize, kind: LockKind, mode: Option<&'static str>) -> Acq {
        Acq {
            lock,
            id: format!("L{lock}"),
            kind,
            site: format!("site{lock}"),
            mode,
            recorder: 1,
            since: 0,
            loose: false,
        }
    }

    pub(crate) fn thread(tid: u64, held: Vec<Acq>, wait: Option<Acq>) -> ThreadNow {
        ThreadNow {
            slot: tid as usize * 64,
            thread: ThreadRef {
                tid,
                name: format!("t{tid}"),
            },
            gen: 2,
            held,
            wait,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::fake::{acq, thread};
    use super::*;
    use LockKind::*;

    fn m(lock: usize) -> Acq {
        acq(lock, Mutex, None)
    }

    #[test]
    fn ab_ba_is_one_cycle_of_two() {
        let ts = vec![
            thread(1, vec![m(10)], Some(m(20))),
            thread(2, vec![m(20)], Some(m(10))),
            thread(3, vec![], Some(m(10))), // waits behind the cycle
        ];
        let found = cycles(&ts);
        assert_eq!(found.len(), 1);
        let d = &found[0].deadlock;
        let tids: Vec<u64> = d.threads.iter().map(|t| t.thread.tid).collect();
        assert_eq!(tids, vec![1, 2]);
        assert_eq!(d.threads[0].waits_on.id, "L20");
        assert_eq!(d.threads[0].held_by[0].tid, 2);
        assert_eq!(
            found[0].key.len(),
            2,
            "thread 3 is not what the cycle rests on"
        );
    }

    #[test]
    fn a_chain_to_a_running_holder_is_no_cycle() {
        let ts = vec![
            thread(1, vec![m(10)], Some(m(20))),
            thread(2, vec![m(20)], Some(m(30))),
            thread(3, vec![m(30)], None),
        ];
        assert!(cycles(&ts).is_empty());
        let c = chains(&ts);
        assert_eq!(c.len(), 1);
        assert_eq!(c[0].links.len(), 2);
        assert_eq!(c[0].ends_at.as_ref().map(|t| t.tid), Some(3));
    }

    #[test]
    fn readers_do_not_block_readers() {
        let r = |l| acq(l, Rwlock, Some("read"));
        let w = |l| acq(l, Rwlock, Some("write"));
        let ok = vec![
            thread(1, vec![r(10)], Some(m(20))),
            thread(2, vec![m(20)], Some(r(10))),
        ];
        assert!(cycles(&ok).is_empty());
        let stuck = vec![
            thread(1, vec![r(10)], Some(m(20))),
            thread(2, vec![m(20)], Some(w(10))),
        ];
        assert_eq!(cycles(&stuck).len(), 1);
    }

    #[test]
    fn a_semaphore_wait_needs_every_permit_holder_stuck() {
        let s = |l| acq(l, Semaphore, None);
        let one_free = vec![
            thread(1, vec![m(20)], Some(s(10))),
            thread(2, vec![s(10)], Some(m(20))),
            thread(3, vec![s(10)], None),
        ];
        assert!(cycles(&one_free).is_empty(), "thread 3 can return a permit");
        let all = vec![
            thread(1, vec![m(20)], Some(s(10))),
            thread(2, vec![s(10)], Some(m(20))),
        ];
        assert_eq!(cycles(&all).len(), 1);
        let mut loose = all.clone();
        loose[0].wait.as_mut().unwrap().loose = true;
        assert!(cycles(&loose).is_empty(), "an up() from anyone may end it");
    }

    #[test]
    fn relocking_a_held_mutex_is_a_cycle_of_one() {
        let ts = vec![thread(1, vec![m(10)], Some(m(10)))];
        assert_eq!(cycles(&ts).len(), 1);
    }
}
