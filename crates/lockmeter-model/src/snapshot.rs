//! The v1 snapshot: one process, one measurement window, every lock class.

use serde::{Deserialize, Serialize};

use crate::now::{Deadlock, LockOrder, Now};
use crate::selfcost::SelfCost;
use crate::stacks::Stacks;
use crate::Dist;

/// The state of every instrumented lock in one process over one window.
///
/// Serialized through a private mirror (module `v1`) that writes the
/// derived fields (`con_pct`, `util_pct`, a class's `name`) that this type
/// computes instead of storing, and leaves out empty extensions; this type,
/// [`LockStats`] and [`SiteStats`] only deserialize, so their attributes
/// say only how a field is read.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Snapshot {
    /// Always `"lockmeter"`.
    pub format: String,
    /// Format version; this crate writes 1.
    pub version: u32,
    /// The process the snapshot was taken in.
    pub process: ProcessInfo,
    /// The time the snapshot covers.
    pub window: Window,
    /// The time source: `tsc`, `monotonic` or `mock`.
    pub clock: String,
    /// Records that could not be attributed (a bounded table was full).
    #[serde(default)]
    pub dropped_records: u64,
    /// Which acquisitions had their hold timed. Absent in dumps written
    /// before sampling existed, which timed every hold.
    #[serde(default)]
    pub sampling: Sampling,
    /// Every lock class used in the window.
    #[serde(deserialize_with = "crate::v1::locks_in")]
    pub locks: Vec<LockStats>,
    /// Sampled stacks of contended acquisitions (v1 extension; absent when
    /// stacks were off or in older dumps). Boxed: most snapshots that
    /// travel in messages have none, and it keeps `Snapshot` small.
    #[serde(default)]
    pub stacks: Box<Stacks>,
    /// *(extension)* What is held and waited on right now (see [`crate::now`]).
    #[serde(default)]
    pub now: Now,
    /// *(extension)* Deadlocks found since the layer was built.
    #[serde(default)]
    pub deadlocks: Vec<Deadlock>,
    /// *(extension)* The order locks were nested in, and its inversions.
    #[serde(default)]
    pub lock_order: LockOrder,
    /// *(extension)* What lockmeter itself cost, per lock class, and the
    /// overhead budget (see [`crate::selfcost`]). Absent in older dumps and
    /// in snapshots of a recorder that could not calibrate. Boxed, like
    /// `stacks`, to keep `Snapshot` small.
    #[serde(default)]
    pub self_cost: Option<Box<SelfCost>>,
}

/// How hold times were sampled. Counts are never sampled: every
/// acquisition is counted. Contended acquisitions are always timed; one
/// uncontended acquisition in `uncontended_hold_every` (per thread and
/// call site) is, and `hold_ns` is scaled up from those to stand for all.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Sampling {
    /// 1 times every hold.
    pub uncontended_hold_every: u32,
    /// *(extension)* After the first 64 contended acquisitions per thread
    /// and call site, one in N had its wait and hold timed (the others are
    /// counted exactly, untimed); waits of a watchdog tick (10 ms) or more,
    /// and those whose stack was drawn, are always timed. `wait_ns` is
    /// scaled up to stand for every contended acquisition. 1 (absent in
    /// older dumps, and when the slow threshold is under 10 ms): every
    /// contended acquisition timed.
    #[serde(skip_serializing_if = "is_one")]
    pub contended_wait_every: u32,
}

fn is_one(n: &u32) -> bool {
    *n == 1
}

impl Default for Sampling {
    fn default() -> Sampling {
        Sampling {
            uncontended_hold_every: 1,
            contended_wait_every: 1,
        }
    }
}

/// Which process the snapshot came from.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProcessInfo {
    /// The process id.
    pub pid: u32,
    /// The process's name.
    pub name: String,
}

/// The measurement window: wall-clock ends and the monotonic length.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Window {
    /// Start of the window, Unix time in ns.
    pub start_unix_ns: u64,
    /// End of the window, Unix time in ns.
    pub end_unix_ns: u64,
    /// Length of the window by the recording clock, in ns.
    pub elapsed_ns: u64,
}

/// The primitive a lock class is made of.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LockKind {
    /// `lockmeter::SpinLock`.
    Spinlock,
    /// `lockmeter::Mutex`.
    Mutex,
    /// `lockmeter::RwLock`.
    Rwlock,
    /// `lockmeter::Semaphore`.
    Semaphore,
    /// `lockmeter::WaitQueue`.
    Waitqueue,
    /// `lockmeter::Condvar`: a wait queue whose waiters sleep with a mutex
    /// released.
    Condvar,
}

impl LockKind {
    /// Every kind, in declaration order: `ALL[k as usize] == k`. A new
    /// variant goes here too (a lock's packed tag is decoded through it).
    pub const ALL: [LockKind; 6] = [
        LockKind::Spinlock,
        LockKind::Mutex,
        LockKind::Rwlock,
        LockKind::Semaphore,
        LockKind::Waitqueue,
        LockKind::Condvar,
    ];

    /// The lowercase name used in the format.
    pub fn as_str(self) -> &'static str {
        match self {
            LockKind::Spinlock => "spinlock",
            LockKind::Mutex => "mutex",
            LockKind::Rwlock => "rwlock",
            LockKind::Semaphore => "semaphore",
            LockKind::Waitqueue => "waitqueue",
            LockKind::Condvar => "condvar",
        }
    }

    /// Whether rows of this kind count waits and wake-ups rather than
    /// acquisitions of a lock (wait queues and condition variables).
    pub fn waits_and_wakes(self) -> bool {
        matches!(self, LockKind::Waitqueue | LockKind::Condvar)
    }

    /// Whether a waiter of this kind sleeps in the OS rather than spins.
    pub fn sleeps(self) -> bool {
        !matches!(self, LockKind::Spinlock)
    }
}

/// One lock class: all instances created at one site or given one name.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct LockStats {
    /// The class: the explicit name, else the creation site.
    pub id: String,
    /// A display name that differs from `id`, if any; `None` (always, for
    /// what the recorder writes today) displays the id. Read it with
    /// [`LockStats::name`]; the format's `name` field is written either way.
    #[serde(rename = "name", default)]
    pub display_name: Option<String>,
    /// The kind of lock.
    pub kind: LockKind,
    /// Where the (first) instance of this class was created.
    pub created_at: String,
    /// Instances of this class seen acquiring during the window.
    #[serde(default)]
    pub instances: u64,
    /// For a lock inside another primitive (`pipe.sem.lock`), the outer id.
    #[serde(default)]
    pub parent: Option<String>,
    /// Stats summed over all sites.
    pub total: Stats,
    /// One entry per acquisition call site.
    pub sites: Vec<SiteStats>,
    /// Call sites that held the lock while others waited.
    #[serde(default)]
    pub holders: Vec<Holder>,
}

/// Stats of the acquisitions made at one call site.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct SiteStats {
    /// `file:line:column` of the caller of `lock()`/`down()`/`wait_*()`.
    pub site: String,
    /// For rwlocks: `read` or `write`; absent for other kinds.
    #[serde(default)]
    pub mode: Option<String>,
    /// In a table merged over several processes ([`Snapshot::merge`] of
    /// snapshots [`Snapshot::with_pids`]): the process these acquisitions
    /// were made in, a column of its own in every rendering. Absent in one
    /// process's snapshot.
    #[serde(default)]
    pub pid: Option<u32>,
    #[serde(flatten)]
    /// The site's numbers.
    pub stats: Stats,
}

impl SiteStats {
    /// The acquisitions `stats` at `site`: no mode, one process.
    pub fn at(site: &str, stats: Stats) -> SiteStats {
        SiteStats {
            site: site.to_string(),
            mode: None,
            pid: None,
            stats,
        }
    }

    /// What tells site rows of one lock apart: the call site, the mode and
    /// (in a merged table) the process. Arithmetic, merges and the viewer's
    /// selection match rows by it.
    pub fn key(&self) -> (&str, Option<&str>, Option<u32>) {
        (&self.site, self.mode.as_deref(), self.pid)
    }
}

/// A call site that held the lock when a waiter arrived.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Holder {
    /// The call site (`file:line:col`) that held the lock.
    pub site: String,
    /// Contended acquisitions that found this site holding the lock.
    pub contended: u64,
    /// Total time those acquisitions waited.
    pub wait_ns_total: u64,
}

/// Counters and distributions of one site, or summed over a lock's sites.
///
/// Lock kinds fill the acquisition fields; wait queues fill the sleeping
/// and waking fields. Every field defaults to zero when absent. CON and
/// UTIL are methods ([`Stats::con_pct`], [`Stats::util_pct`]), written to
/// the format's `con_pct` and `util_pct` fields on serialization and
/// ignored when read.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct Stats {
    /// Successful acquisitions, including successful try-locks (TOTAL).
    pub acquisitions: u64,
    /// Acquired at the first attempt (NOWAIT).
    pub nowait: u64,
    /// Had to spin or sleep first (SPIN).
    pub contended: u64,
    /// Failed try-locks and timed-out waits (RJECT).
    pub rejected: u64,
    /// Busy-wait iterations, summed.
    pub spins: u64,
    /// Times a waiter blocked in the OS.
    pub sleeps: u64,
    /// Acquisitions by a thread other than the previous holder.
    pub bounces: u64,
    /// Time from acquisition to release. With sampling (see [`Sampling`])
    /// an estimate: the timed holds, scaled to stand for every hold.
    pub hold_ns: Dist,
    /// How many of the holds in `hold_ns` were actually timed; equal to
    /// `hold_ns.count` when nothing was sampled. 0 in older dumps.
    pub hold_timed: u64,
    /// Time from the first attempt to acquisition (contended acquisitions);
    /// for wait queues, time asleep per wait.
    pub wait_ns: Dist,
    /// Contended acquisitions whose wait and hold were not timed, left out
    /// by the sample (see [`Sampling::contended_wait_every`]); `wait_ns`
    /// is scaled over them. Absent (0) in older dumps, which timed every
    /// one, and left out when 0.
    pub wait_untimed: u64,
    /// Wait queues: waits that slept at least once.
    pub waits: u64,
    /// Wait queues: calls of any wake function.
    pub wake_calls: u64,
    /// Wait queues: waiters woken.
    pub wakeups: u64,
    /// Wait queues: wake calls that found no waiter to wake (a condvar's
    /// `notify_*` with nobody waiting). Absent (0) in older dumps and
    /// left out when 0.
    pub empty_wake_calls: u64,
    /// Wait queues: woken waiters whose condition was still false.
    pub spurious_wakeups: u64,
    /// Wait queues: wakeups of exclusive waiters.
    pub exclusive_wakeups: u64,
    /// Wait queues: most waiters queued at once.
    pub max_waiters: u64,
    /// Wait queues: time from the wake call to the woken waiter running.
    pub wake_latency_ns: Dist,
}

impl Stats {
    /// Contended acquisitions whose wait (and hold) were timed.
    pub fn contended_timed(&self) -> u64 {
        self.contended.saturating_sub(self.wait_untimed)
    }

    /// Uncontended holds that were timed: `hold_timed` less the timed
    /// contended acquisitions, each of which timed its hold (but for a
    /// semaphore's `down`, whose hold is never timed: there this is low).
    pub fn uncontended_holds_timed(&self) -> u64 {
        self.hold_timed.saturating_sub(self.contended_timed())
    }

    /// CON: `100 * contended / acquisitions`, 0 without acquisitions.
    pub fn con_pct(&self) -> f64 {
        percent(self.contended, self.acquisitions)
    }

    /// UTIL over a window of `elapsed_ns`: `100 * hold_ns.total /
    /// elapsed_ns`, 0 for an empty window. A class with several instances
    /// may exceed 100.
    pub fn util_pct(&self, elapsed_ns: u64) -> f64 {
        percent(self.hold_ns.total, elapsed_ns)
    }
}

/// `100 * part / whole`, or 0 for an empty whole.
pub fn percent(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        100.0 * part as f64 / whole as f64
    }
}

impl Snapshot {
    /// An empty snapshot for `process` (no locks, zero window).
    pub fn empty(process: ProcessInfo, clock: &str) -> Snapshot {
        Snapshot {
            format: crate::FORMAT_NAME.to_string(),
            version: crate::FORMAT_VERSION,
            process,
            window: Window::default(),
            clock: clock.to_string(),
            dropped_records: 0,
            sampling: Sampling::default(),
            locks: Vec::new(),
            stacks: Box::default(),
            now: Now::default(),
            deadlocks: Vec::new(),
            lock_order: LockOrder::default(),
            self_cost: None,
        }
    }

    /// The lock with class `id`, if any.
    pub fn lock(&self, id: &str) -> Option<&LockStats> {
        self.locks.iter().find(|l| l.id == id)
    }
}

impl LockStats {
    /// A class `id` of `kind` with `total` over `sites`: one instance, no
    /// creation site, parent or holders. For snapshots built by hand
    /// (tests, converters); the recorder fills every field.
    pub fn new(id: &str, kind: LockKind, total: Stats, sites: Vec<SiteStats>) -> LockStats {
        LockStats {
            id: id.to_string(),
            display_name: None,
            kind,
            created_at: String::new(),
            instances: 1,
            parent: None,
            total,
            sites,
            holders: Vec::new(),
        }
    }

    /// The display name: the explicit one if it differs from the id, else
    /// the id.
    pub fn name(&self) -> &str {
        self.display_name.as_deref().unwrap_or(&self.id)
    }

    /// The stats of call site `site` (any mode, any process), if any.
    pub fn site(&self, site: &str) -> Option<&SiteStats> {
        self.sites.iter().find(|s| s.site == site)
    }
}

#[cfg(test)]
mod lock_kind_tests {
    use super::LockKind;

    #[test]
    fn all_kinds_are_listed_once_in_declaration_order() {
        for (i, k) in LockKind::ALL.into_iter().enumerate() {
            assert_eq!(k as usize, i, "{k:?}");
            // Exhaustive: a new variant fails to compile here until it is
            // given its place, and then this test until `ALL` lists it.
            let last = match k {
                LockKind::Spinlock
                | LockKind::Mutex
                | LockKind::Rwlock
                | LockKind::Semaphore
                | LockKind::Waitqueue => false,
                LockKind::Condvar => true,
            };
            assert_eq!(last, i + 1 == LockKind::ALL.len());
        }
    }
}
