//! One table over many processes: `lockmeter top --all`, `lockmeter table
//! --all`, or several TARGETs.
//!
//! Each process's call-site rows are marked with its pid
//! ([`Snapshot::with_pids`]), then [`Snapshot::merge`] sums them by lock
//! class: a lock's row is the exact sum over every process, and its
//! expanded rows are one per call site and process, with the process in a
//! PID column of its own (text, CSV, JSON and the live view). A process that exits or never answers
//! is marked in the title (the merged snapshot's process name) and on
//! stderr, never fatal; the live view keeps its last numbers in the sums,
//! so totals never go back when one process goes away.

use std::thread;
use std::time::{Duration, Instant};

use lockmeter_model::Snapshot;
use lockmeter_wire::discovery::{list_endpoints_removing_stale, scan_endpoints};
use lockmeter_wire::{fetch_snapshot, EndpointAddr};

use crate::conn::{ConnEvent, Live, REQUEST_TIMEOUT};
use crate::state::{Feed, Frame};

/// What is known about one process of the fleet.
#[derive(Debug, Clone, PartialEq)]
pub struct Member {
    /// The target as given (`pid`, socket path, `tcp://...`).
    pub target: String,
    /// From the endpoint's greeting; `None` until it answered once.
    pub pid: Option<u32>,
    pub name: String,
    /// Its latest (cumulative, in the live view) snapshot.
    pub latest: Option<Snapshot>,
    pub status: Status,
}

/// Whether a process answers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Status {
    /// Not answered yet.
    Waiting,
    Live,
    /// Exited, or never answered: why.
    Gone(String),
}

impl Member {
    pub fn new(target: &EndpointAddr) -> Member {
        Member {
            target: target.as_target(),
            pid: None,
            name: String::new(),
            latest: None,
            status: Status::Waiting,
        }
    }

    /// How its rows are labelled: `pid 4242`, or the target before a
    /// greeting.
    pub fn label(&self) -> String {
        match self.pid {
            Some(pid) => format!("pid {pid}"),
            None => self.target.clone(),
        }
    }
}

/// The endpoints of every attachable process of this user.
pub fn all_targets() -> Vec<EndpointAddr> {
    list_endpoints_removing_stale()
        .iter()
        .map(|e| e.addr())
        .collect()
}

/// The merged snapshot of the members that have data: lock rows summed by
/// class, site rows per site and process; its process name says how many
/// processes it covers and which are gone. `None` if none has data.
pub fn merge(members: &[Member]) -> Option<Snapshot> {
    let labelled: Vec<Snapshot> = members
        .iter()
        .filter_map(|m| m.latest.as_ref().map(|s| labelled(s, &m.label())))
        .collect();
    let mut merged = Snapshot::merge(&labelled)?;
    merged.process.pid = 0;
    merged.process.name = summary(members);
    // What is held now and the deadlocks are per process: all of them,
    // each instance named with its process. Lock order is left out: an
    // edge between two processes' classes would mean nothing.
    merged.now = Default::default();
    merged.deadlocks.clear();
    merged.lock_order = Default::default();
    for s in &labelled {
        merged.now.at_unix_ns = merged.now.at_unix_ns.max(s.now.at_unix_ns);
        merged.now.locks.extend(s.now.locks.iter().cloned());
        merged.now.chains.extend(s.now.chains.iter().cloned());
        merged.now.unreadable_threads += s.now.unreadable_threads;
        merged.now.untracked_holds += s.now.untracked_holds;
        merged.deadlocks.extend(s.deadlocks.iter().cloned());
    }
    Some(merged)
}

/// `snap` with every call-site row marked with its process (the process
/// column) and every held instance of the "now" pane suffixed by
/// ` @ label`.
fn labelled(snap: &Snapshot, label: &str) -> Snapshot {
    let mut s = snap.clone().with_pids();
    for lock in &mut s.now.locks {
        lock.instance = format!("{} @ {label}", lock.instance);
    }
    s
}

/// `4 processes (endpoint_demo)`, with `; gone: pid 7` for those that went
/// away or never answered (why is said on stderr, or was in the status).
pub fn summary(members: &[Member]) -> String {
    let mut names: Vec<&str> = Vec::new();
    for m in members {
        if !m.name.is_empty() && !names.contains(&m.name.as_str()) {
            names.push(&m.name);
        }
    }
    let count = members.len();
    let mut out = format!("{count} process{}", if count == 1 { "" } else { "es" });
    if !names.is_empty() {
        out.push_str(&format!(" ({})", names.join("+")));
    }
    let gone: Vec<String> = members
        .iter()
        .filter_map(|m| match &m.status {
            Status::Gone(_) => Some(m.label()),
            _ => None,
        })
        .collect();
    if !gone.is_empty() {
        out.push_str(&format!("; gone: {}", gone.join(", ")));
    }
    out
}

/// One snapshot from each target, fetched in parallel; those that do not
/// answer within the request timeout are marked gone.
pub fn fetch_all(targets: &[EndpointAddr]) -> Vec<Member> {
    let fetches: Vec<_> = targets
        .iter()
        .cloned()
        .map(|addr| {
            thread::spawn(move || {
                let mut m = Member::new(&addr);
                match fetch_snapshot(&addr, REQUEST_TIMEOUT) {
                    Ok((hello, snap)) => {
                        m.pid = Some(hello.pid);
                        m.name = hello.name;
                        m.latest = Some(snap);
                        m.status = Status::Live;
                    }
                    Err(e) => m.status = Status::Gone(e.to_string()),
                }
                m
            })
        })
        .collect();
    fetches
        .into_iter()
        .zip(targets)
        .map(|(f, addr)| {
            f.join().unwrap_or_else(|_| {
                let mut m = Member::new(addr);
                m.status = Status::Gone("the fetch failed".to_string());
                m
            })
        })
        .collect()
}

/// How often `top --all` looks for processes that started after it.
pub const RESCAN: Duration = Duration::from_secs(2);

/// The live view's source: one subscription per process, merged into one
/// frame whenever any of them sends an update.
pub struct FleetFeed {
    lives: Vec<Live>,
    members: Vec<Member>,
    prev: Option<Snapshot>,
    announced: bool,
    interval: Duration,
    /// With `--all`: how to look for endpoints, and when to look again.
    discovery: Option<Discovery>,
}

/// Where `top --all` looks for processes that started after it.
struct Discovery {
    scan: Box<dyn Fn() -> Vec<EndpointAddr>>,
    next: Instant,
}

impl FleetFeed {
    /// Subscribes to every target.
    pub fn spawn(targets: Vec<EndpointAddr>, interval: Duration) -> FleetFeed {
        let mut feed = FleetFeed {
            lives: Vec::new(),
            members: Vec::new(),
            prev: None,
            announced: false,
            interval,
            discovery: None,
        };
        for t in targets {
            feed.join(t);
        }
        feed
    }

    /// Subscribes to `targets`, and every [`RESCAN`] to every attachable
    /// process that was not among them (`top --all`): one that starts
    /// after the view opened joins it.
    pub fn spawn_discovering(targets: Vec<EndpointAddr>, interval: Duration) -> FleetFeed {
        let scan = || scan_endpoints().live.iter().map(|e| e.addr()).collect();
        FleetFeed::spawn_discovering_with(targets, interval, scan)
    }

    /// [`FleetFeed::spawn_discovering`] with the endpoints found by `scan`
    /// (a test's own directory, say).
    pub fn spawn_discovering_with(
        targets: Vec<EndpointAddr>,
        interval: Duration,
        scan: impl Fn() -> Vec<EndpointAddr> + 'static,
    ) -> FleetFeed {
        let mut feed = FleetFeed::spawn(targets, interval);
        feed.discovery = Some(Discovery {
            scan: Box::new(scan),
            next: Instant::now() + RESCAN,
        });
        feed
    }

    fn join(&mut self, target: EndpointAddr) {
        self.members.push(Member::new(&target));
        self.lives.push(Live::spawn(target, self.interval));
    }

    /// Subscribes to the endpoints discovery lists that are not members
    /// yet (it only reads the directory; stale sockets stay for `list`).
    /// Whether any joined.
    fn discover(&mut self) -> bool {
        let Some(d) = &self.discovery else {
            return false;
        };
        let found = (d.scan)();
        let before = self.members.len();
        for addr in found {
            let target = addr.as_target();
            if !self.members.iter().any(|m| m.target == target) {
                self.join(addr);
            }
        }
        self.members.len() > before
    }

    pub fn members(&self) -> &[Member] {
        &self.members
    }

    /// What happened since the last poll (at `now`): at most one merged
    /// frame.
    pub fn poll(&mut self, now: Instant) -> Vec<Feed> {
        let mut changed = false;
        if self.discovery.as_ref().is_some_and(|d| now >= d.next) {
            // A new member changes the title at once, before its data.
            changed |= self.discover();
            if let Some(d) = &mut self.discovery {
                d.next = now + RESCAN;
            }
        }
        for (live, m) in self.lives.iter().zip(&mut self.members) {
            while let Some(ev) = live.try_recv() {
                match ev {
                    ConnEvent::Connected(h) => {
                        m.pid = Some(h.pid);
                        m.name = h.name;
                        m.status = Status::Live;
                        changed = true;
                    }
                    ConnEvent::Update { cumulative, .. } => {
                        m.latest = Some(*cumulative);
                        m.status = Status::Live;
                        changed = true;
                    }
                    ConnEvent::Lost(why) => {
                        m.status = Status::Gone(why);
                        changed = true;
                    }
                    ConnEvent::Retrying { .. } | ConnEvent::ResetDone => {}
                }
            }
        }
        let mut out = Vec::new();
        if !changed {
            return out;
        }
        let Some(cumulative) = merge(&self.members) else {
            return out;
        };
        if !self.announced {
            self.announced = true;
            out.push(Feed::Connected {
                pid: 0,
                name: cumulative.process.name.clone(),
            });
        }
        let interval = match &self.prev {
            Some(p) => cumulative.since(p),
            None => cumulative.since(&cumulative),
        };
        self.prev = Some(cumulative.clone());
        out.push(Feed::Data(Box::new(Frame {
            interval,
            cumulative,
        })));
        out
    }

    /// Resets every process's window (the live view's totals are
    /// cumulative and do not change).
    pub fn reset(&self) -> Result<&'static str, String> {
        let failed: Vec<String> = self
            .lives
            .iter()
            .zip(&self.members)
            .filter_map(|(l, m)| l.reset().err().map(|e| format!("{}: {e}", m.label())))
            .collect();
        if failed.len() == self.lives.len() {
            Err(failed.join("; "))
        } else {
            Ok("reset sent to every process that answers")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use lockmeter_model::{LockKind, LockStats, ProcessInfo, SiteStats, Stats};

    fn snap(pid: u32, acquisitions: u64) -> Snapshot {
        let mut s = Snapshot::empty(
            ProcessInfo {
                pid,
                name: "app".into(),
            },
            "mock",
        );
        let stats = Stats {
            acquisitions,
            ..Stats::default()
        };
        let site = SiteStats::at("a.rs:2:5", stats.clone());
        s.locks
            .push(LockStats::new("l", LockKind::Mutex, stats, vec![site]));
        s
    }

    fn member(pid: u32, latest: Option<Snapshot>, status: Status) -> Member {
        Member {
            target: pid.to_string(),
            pid: Some(pid),
            name: "app".into(),
            latest,
            status,
        }
    }

    #[test]
    fn totals_add_up_and_sites_are_per_process() {
        let members = vec![
            member(1, Some(snap(1, 10)), Status::Live),
            member(2, Some(snap(2, 32)), Status::Live),
            member(3, None, Status::Gone("connection refused".into())),
        ];
        let m = merge(&members).unwrap();
        let lock = m.lock("l").unwrap();
        assert_eq!(lock.total.acquisitions, 42);
        let sites: Vec<(&str, Option<u32>, u64)> = lock
            .sites
            .iter()
            .map(|s| (s.site.as_str(), s.pid, s.stats.acquisitions))
            .collect();
        assert_eq!(
            sites,
            [("a.rs:2:5", Some(1), 10), ("a.rs:2:5", Some(2), 32)]
        );
        assert_eq!(m.process.name, "3 processes (app); gone: pid 3");
        assert_eq!(m.process.pid, 0);
        assert!(merge(&members[2..]).is_none());
    }
}
