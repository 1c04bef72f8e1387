//! Advisories: patterns in the stats that past lock fixes were made of.
//!
//! Each rule names the numbers that triggered it and the fix that worked
//! when the same pattern was found by measuring in the Linux kernel:
//!
//! 1. [`AdvisoryKind::SleepingLockShortHold`]: a semaphore or mutex held
//!    only briefly but often contended, whose waiters wait longer than it
//!    is held. Sleeping and waking costs more than the critical section;
//!    a spinlock (or a shorter lock) is cheaper. (A pipe semaphore, 2000.)
//! 2. [`AdvisoryKind::HotCriticalSection`]: a lock held most of the window
//!    with one call site responsible for most of the hold time. Shrink the
//!    critical section there. (The big kernel lock around a TCP copy, 1999.)
//! 3. [`AdvisoryKind::WakeAllHerd`]: a wait queue whose wake calls wake many
//!    waiters each, most of whom find nothing to do and sleep again. Use
//!    exclusive (wake-one) waits. (Thundering herd in `accept()`, 1999.)
//! 4. [`AdvisoryKind::UnkeyedSpuriousWakeups`]: spurious wakeups not
//!    explained by rule 3: few waiters per wake call, but they were woken
//!    by events they do not wait for. Pass a key to the wake call. (UDP
//!    TX-completion wakeups, 2009.)
//!    On the wait queue inside a semaphore (`X.wait`, whose `parent` is
//!    the semaphore) the same numbers mean something else, so the rule
//!    reports [`AdvisoryKind::BargedSemaphoreWakeups`]: the woken waiter
//!    found its permit already taken by a `down` that arrived meanwhile
//!    (barging). A key would not help; a spinlock for short holds, or
//!    handing the permit to the woken waiter, would.
//!
//! 5. [`AdvisoryKind::LockOrderInversion`]: two lock classes acquired in
//!    both orders (`lock_order.inversions`, recorded with
//!    `LOCKMETER_LOCK_ORDER=1`), naming all four sites. Two threads doing
//!    both at once deadlock. No threshold: one sighting each way is enough.
//!
//! All limits are in [`Thresholds`]; "above" and "below" are strict unless
//! a field says otherwise.

use serde::{Deserialize, Serialize};

use crate::format::{format_ns, format_pct};
use crate::{percent, LockKind, LockStats, SiteStats, Snapshot, Stats};

/// The limits the rules use. Every field is public so a command line or a
/// config file can change it; [`Thresholds::default`] gives the values
/// documented on each field.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Thresholds {
    /// All rules: the fewest events (acquisitions for rules 1 and 2,
    /// wakeups for rules 3 and 4) a lock must have before its ratios are
    /// judged, so a handful of samples cannot raise an advisory.
    /// Default: 10.
    pub min_events: u64,
    /// Rule 1: a mean hold time below this (ns) is short. Default: 5000
    /// (5 µs).
    pub short_hold_ns: u64,
    /// Rule 1: CON above this (percent) is high contention. Default: 20.0.
    pub sleeping_con_pct: f64,
    /// Rule 2: UTIL above this (percent of the window) is busy. Default:
    /// 50.0.
    pub hot_util_pct: f64,
    /// Rule 2: one call site holding at least this share (percent) of the
    /// lock's total hold time is responsible for it. Default: 70.0.
    pub hot_site_share_pct: f64,
    /// Rule 3: wakeups per wake call above this is a herd. Default: 2.0.
    pub herd_wakeups_per_call: f64,
    /// Rule 3: spurious wakeups above this share (percent) of wakeups make
    /// the herd wasteful. Default: 50.0.
    pub herd_spurious_pct: f64,
    /// Rule 4: spurious wakeups above this share (percent) of wakeups,
    /// when rule 3 does not apply. Default: 20.0.
    pub spurious_pct: f64,
}

impl Default for Thresholds {
    fn default() -> Thresholds {
        Thresholds {
            min_events: 10,
            short_hold_ns: 5_000,
            sleeping_con_pct: 20.0,
            hot_util_pct: 50.0,
            hot_site_share_pct: 70.0,
            herd_wakeups_per_call: 2.0,
            herd_spurious_pct: 50.0,
            spurious_pct: 20.0,
        }
    }
}

/// Which rule fired; see the module doc.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AdvisoryKind {
    /// Rule 1: use a spinlock or a shorter lock.
    SleepingLockShortHold,
    /// Rule 2: shrink the critical section at one call site.
    HotCriticalSection,
    /// Rule 3: use exclusive (wake-one) waits.
    WakeAllHerd,
    /// Rule 4: use keyed wakeups.
    UnkeyedSpuriousWakeups,
    /// Rule 4 on a semaphore's own wait queue: permits are taken by barging
    /// `down`s before the woken waiter runs.
    BargedSemaphoreWakeups,
    /// Rule 5: take the two locks in one order.
    LockOrderInversion,
}

impl AdvisoryKind {
    /// The snake_case name used in JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            AdvisoryKind::SleepingLockShortHold => "sleeping_lock_short_hold",
            AdvisoryKind::HotCriticalSection => "hot_critical_section",
            AdvisoryKind::WakeAllHerd => "wake_all_herd",
            AdvisoryKind::UnkeyedSpuriousWakeups => "unkeyed_spurious_wakeups",
            AdvisoryKind::BargedSemaphoreWakeups => "barged_semaphore_wakeups",
            AdvisoryKind::LockOrderInversion => "lock_order_inversion",
        }
    }
}

/// One finding about one lock (and possibly one of its call sites).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Advisory {
    /// The lock class the finding is about.
    pub lock_id: String,
    /// The call site it is about, when one site is to blame.
    pub site: Option<String>,
    /// Which rule fired.
    pub kind: AdvisoryKind,
    /// One line naming the numbers and the fix.
    pub message: String,
}

/// Every advisory for `snap`, ordered by lock id, rule and site.
pub fn advise(snap: &Snapshot, t: &Thresholds) -> Vec<Advisory> {
    let mut out: Vec<Advisory> = snap
        .locks
        .iter()
        .flat_map(|l| advise_lock(l, snap.window.elapsed_ns, t))
        .collect();
    out.extend(snap.lock_order.inversions.iter().map(|inv| Advisory {
        lock_id: inv.first.clone(),
        site: Some(inv.forward.held_site.clone()),
        kind: AdvisoryKind::LockOrderInversion,
        message: inv.message(),
    }));
    out.sort_by(|a, b| {
        a.lock_id
            .cmp(&b.lock_id)
            .then(a.kind.cmp(&b.kind))
            .then_with(|| a.site.cmp(&b.site))
    });
    out
}

/// The advisories for one lock over a window of `elapsed_ns`, in rule order.
pub fn advise_lock(lock: &LockStats, elapsed_ns: u64, t: &Thresholds) -> Vec<Advisory> {
    let mut out = Vec::new();
    let advisory = |kind, site: Option<String>, message: String| Advisory {
        lock_id: lock.id.clone(),
        site,
        kind,
        message: format!("{}: {message}", lock.name()),
    };
    let s = &lock.total;
    if let Some(msg) = sleeping_lock_short_hold(lock.kind, s, t) {
        out.push(advisory(AdvisoryKind::SleepingLockShortHold, None, msg));
    }
    if let Some((site, msg)) = hot_critical_section(lock, elapsed_ns, t) {
        out.push(advisory(
            AdvisoryKind::HotCriticalSection,
            Some(site.site.clone()),
            msg,
        ));
    }
    let herd = wake_all_herd(s, t);
    if let Some(msg) = &herd {
        out.push(advisory(AdvisoryKind::WakeAllHerd, None, msg.clone()));
    }
    if herd.is_none() {
        let in_semaphore = lock.kind == LockKind::Waitqueue && lock.parent.is_some();
        if let Some(msg) = spurious_wakeups(s, t, in_semaphore) {
            let kind = if in_semaphore {
                AdvisoryKind::BargedSemaphoreWakeups
            } else {
                AdvisoryKind::UnkeyedSpuriousWakeups
            };
            out.push(advisory(kind, None, msg));
        }
    }
    out
}

/// Rule 1.
fn sleeping_lock_short_hold(kind: LockKind, s: &Stats, t: &Thresholds) -> Option<String> {
    let fires = matches!(kind, LockKind::Semaphore | LockKind::Mutex)
        && s.acquisitions >= t.min_events
        && s.hold_ns.count > 0
        && s.hold_ns.mean() < t.short_hold_ns
        && s.con_pct() > t.sleeping_con_pct
        && s.wait_ns.mean() > s.hold_ns.mean();
    fires.then(|| {
        format!(
            "held {} on average, but CON is {} and waiters wait {} on average; \
             waiting costs more than the critical section: use a spinlock or a shorter lock",
            format_ns(s.hold_ns.mean()),
            format_pct(s.con_pct()),
            format_ns(s.wait_ns.mean()),
        )
    })
}

/// Rule 2: the site holding the largest share of a busy lock's hold time.
fn hot_critical_section<'a>(
    lock: &'a LockStats,
    elapsed_ns: u64,
    t: &Thresholds,
) -> Option<(&'a SiteStats, String)> {
    let s = &lock.total;
    let util = s.util_pct(elapsed_ns);
    let busy = util > t.hot_util_pct;
    if lock.kind.waits_and_wakes() || s.acquisitions < t.min_events || !busy {
        return None;
    }
    let site = lock.sites.iter().max_by(|a, b| {
        a.stats
            .hold_ns
            .total
            .cmp(&b.stats.hold_ns.total)
            .then_with(|| b.site.cmp(&a.site))
    })?;
    let sum_of_sites = lock
        .sites
        .iter()
        .fold(0u64, |acc, x| acc.saturating_add(x.stats.hold_ns.total));
    let whole = if s.hold_ns.total > 0 {
        s.hold_ns.total
    } else {
        sum_of_sites
    };
    let share = percent(site.stats.hold_ns.total, whole);
    let dominant = share >= t.hot_site_share_pct;
    if !dominant {
        return None;
    }
    let at = match &site.mode {
        Some(mode) => format!("{} ({mode})", site.site),
        None => site.site.clone(),
    };
    let msg = format!(
        "held {} of the window (UTIL), {} of that at {at} (mean hold {}); shrink the critical section at {at}",
        format_pct(util),
        format_pct(share),
        format_ns(site.stats.hold_ns.mean()),
    );
    Some((site, msg))
}

/// Wakeups per wake call, if there were wake calls.
fn per_call(s: &Stats) -> Option<f64> {
    (s.wake_calls > 0).then(|| s.wakeups as f64 / s.wake_calls as f64)
}

/// Rule 3.
fn wake_all_herd(s: &Stats, t: &Thresholds) -> Option<String> {
    let per_call = per_call(s)?;
    let spurious = percent(s.spurious_wakeups, s.wakeups);
    let fires = s.wakeups >= t.min_events
        && per_call > t.herd_wakeups_per_call
        && spurious > t.herd_spurious_pct;
    fires.then(|| {
        format!(
            "each wake call woke {per_call:.1} waiters ({} wakeups by {} calls) and {} of them slept again; \
             a thundering herd: use exclusive waits (wake-one)",
            s.wakeups,
            s.wake_calls,
            format_pct(spurious),
        )
    })
}

/// Rule 4 (the caller checks that rule 3 did not fire).
fn spurious_wakeups(s: &Stats, t: &Thresholds, in_semaphore: bool) -> Option<String> {
    let spurious = percent(s.spurious_wakeups, s.wakeups);
    let fires = s.wakeups >= t.min_events && spurious > t.spurious_pct;
    let why = if in_semaphore {
        "woken waiters found their permit taken by a down() that came meanwhile (barging); \
         a key would not help: for short holds use a spinlock, else hand the permit to the woken waiter"
    } else {
        "waiters are woken by events they did not ask for: use keyed wakeups"
    };
    fires.then(|| {
        let per_call = per_call(s).map_or_else(|| "?".to_string(), |p| format!("{p:.1}"));
        format!(
            "{} of wakeups were spurious ({} of {}, {per_call} waiters per wake call); {why}",
            format_pct(spurious),
            s.spurious_wakeups,
            s.wakeups,
        )
    })
}
