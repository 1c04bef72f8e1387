//! Each advisory fires just above its threshold and stays quiet just
//! below it, with the default thresholds and with changed ones.

use lockmeter_model::advice::{advise, advise_lock, Advisory, AdvisoryKind, Thresholds};
use lockmeter_model::{Dist, LockKind, LockStats, ProcessInfo, SiteStats, Snapshot, Stats};

fn mean_dist(count: u64, mean: u64) -> Dist {
    Dist {
        count,
        total: count * mean,
        max: mean,
        ..Dist::default()
    }
}

fn lock(kind: LockKind, total: Stats, sites: Vec<SiteStats>) -> LockStats {
    LockStats {
        id: "l".to_string(),
        display_name: None,
        kind,
        created_at: "t.rs:1:1".to_string(),
        instances: 1,
        parent: None,
        total,
        sites,
        holders: Vec::new(),
    }
}

/// The window every lock here is judged over.
const WINDOW_NS: u64 = 10_000_000;

fn kinds(l: &LockStats, t: &Thresholds) -> Vec<AdvisoryKind> {
    advise_lock(l, WINDOW_NS, t)
        .into_iter()
        .map(|a| a.kind)
        .collect()
}

/// The one advisory `l` raises under the default thresholds, which must
/// be of `kind`.
fn the_advisory(l: &LockStats, kind: AdvisoryKind) -> Advisory {
    let got = advise_lock(l, WINDOW_NS, &Thresholds::default());
    let kinds: Vec<AdvisoryKind> = got.iter().map(|a| a.kind).collect();
    assert_eq!(kinds, [kind], "{got:?}");
    got.into_iter().next().unwrap()
}

/// Asserts that an advisory's message says each of `phrases`.
fn assert_says(msg: &str, phrases: &[&str]) {
    for p in phrases {
        assert!(msg.contains(p), "{p:?} is not in: {msg}");
    }
}

// Rule 1: sleeping lock, short hold, high CON, wait > hold.

/// A semaphore with 1000 acquisitions, mean hold `hold`, CON `con`, mean wait `wait`.
fn sleeping(kind: LockKind, hold: u64, con: f64, wait: u64) -> LockStats {
    let total = Stats {
        acquisitions: 1000,
        contended: (con * 10.0) as u64,
        hold_ns: mean_dist(1000, hold),
        wait_ns: mean_dist(500, wait),
        ..Stats::default()
    };
    lock(kind, total, Vec::new())
}

#[test]
fn sleeping_lock_short_hold_fires_above_its_limits() {
    for kind in [LockKind::Semaphore, LockKind::Mutex] {
        let l = sleeping(kind, 4_999, 20.1, 5_000);
        let msg = the_advisory(&l, AdvisoryKind::SleepingLockShortHold).message;
        assert_says(&msg, &["5.0us", "20.1%", "use a spinlock"]);
    }
}

#[test]
fn sleeping_lock_short_hold_stays_quiet_just_below() {
    let t = Thresholds::default();
    let quiet = [
        sleeping(LockKind::Semaphore, 5_000, 50.0, 9_000), // hold not below 5 us
        sleeping(LockKind::Semaphore, 1_000, 20.0, 9_000), // CON not above 20%
        sleeping(LockKind::Semaphore, 1_000, 50.0, 1_000), // wait not above hold
        sleeping(LockKind::Spinlock, 1_000, 50.0, 9_000),  // does not sleep
        sleeping(LockKind::Rwlock, 1_000, 50.0, 9_000),    // not a semaphore or mutex
    ];
    for l in &quiet {
        assert!(kinds(l, &t).is_empty(), "{l:?}");
    }
    let mut few = sleeping(LockKind::Mutex, 1_000, 50.0, 9_000);
    few.total.acquisitions = 9;
    assert!(kinds(&few, &t).is_empty(), "fired on 9 acquisitions");
}

#[test]
fn sleeping_lock_short_hold_threshold_is_configurable() {
    let l = sleeping(LockKind::Mutex, 8_000, 15.0, 20_000);
    assert!(kinds(&l, &Thresholds::default()).is_empty());
    let t = Thresholds {
        short_hold_ns: 10_000,
        sleeping_con_pct: 10.0,
        ..Thresholds::default()
    };
    assert_eq!(kinds(&l, &t), [AdvisoryKind::SleepingLockShortHold]);
}

// Rule 2: busy lock, one site holds most of it.

/// A mutex with UTIL `util` (over [`WINDOW_NS`]) whose hold time is split
/// `hot` : `100 - hot` between two sites.
fn busy(util: f64, hot: u64) -> LockStats {
    let held = (util / 100.0 * WINDOW_NS as f64).round();
    let site = |name: &str, share: u64| SiteStats {
        site: name.to_string(),
        mode: None,
        pid: None,
        stats: Stats {
            acquisitions: 50,
            hold_ns: mean_dist(50, (held * share as f64 / 100.0 / 50.0).round() as u64),
            ..Stats::default()
        },
    };
    let total = Stats {
        acquisitions: 100,
        hold_ns: Dist {
            count: 100,
            total: held as u64,
            ..Dist::default()
        },
        ..Stats::default()
    };
    lock(
        LockKind::Mutex,
        total,
        vec![site("cold.rs:1:1", 100 - hot), site("hot.rs:9:9", hot)],
    )
}

#[test]
fn hot_critical_section_fires_at_the_dominant_site() {
    let got = the_advisory(&busy(50.1, 70), AdvisoryKind::HotCriticalSection);
    assert_eq!(got.site.as_deref(), Some("hot.rs:9:9"));
    let phrases = [
        "50.1%",
        "70.0%",
        "shrink the critical section at hot.rs:9:9",
    ];
    assert_says(&got.message, &phrases);
}

#[test]
fn hot_critical_section_stays_quiet_just_below() {
    let t = Thresholds::default();
    assert!(kinds(&busy(50.0, 90), &t).is_empty(), "UTIL not above 50%");
    assert!(kinds(&busy(99.0, 69), &t).is_empty(), "no site has 70%");
    let mut wq = busy(99.0, 90);
    wq.kind = LockKind::Waitqueue;
    assert!(kinds(&wq, &t).is_empty(), "wait queues are not held");
}

#[test]
fn hot_critical_section_threshold_is_configurable() {
    let t = Thresholds {
        hot_util_pct: 30.0,
        hot_site_share_pct: 60.0,
        ..Thresholds::default()
    };
    assert_eq!(
        kinds(&busy(40.0, 60), &t),
        [AdvisoryKind::HotCriticalSection]
    );
}

// Rules 3 and 4: wait queues.

fn waitqueue(wake_calls: u64, wakeups: u64, spurious: u64) -> LockStats {
    let total = Stats {
        waits: wakeups,
        wake_calls,
        wakeups,
        spurious_wakeups: spurious,
        ..Stats::default()
    };
    lock(LockKind::Waitqueue, total, Vec::new())
}

#[test]
fn wake_all_herd_fires_above_its_limits_and_hides_rule_four() {
    // 2.01 wakeups per call, 50.1% spurious.
    let herd = the_advisory(&waitqueue(1000, 2010, 1007), AdvisoryKind::WakeAllHerd);
    assert_says(&herd.message, &["2.0 waiters", "50.1%", "wake-one"]);
}

#[test]
fn wake_all_herd_stays_quiet_just_below() {
    let t = Thresholds::default();
    // Exactly 2.0 per call: not a herd, but 60% spurious is rule 4.
    assert_eq!(
        kinds(&waitqueue(1000, 2000, 1200), &t),
        [AdvisoryKind::UnkeyedSpuriousWakeups]
    );
    // 10 per call but exactly 50% spurious: rule 4, not rule 3.
    assert_eq!(
        kinds(&waitqueue(100, 1000, 500), &t),
        [AdvisoryKind::UnkeyedSpuriousWakeups]
    );
    // Too few wakeups to judge.
    assert!(kinds(&waitqueue(1, 9, 9), &t).is_empty());
}

#[test]
fn unkeyed_spurious_wakeups_fires_above_its_limit() {
    let l = waitqueue(1000, 1000, 201);
    let msg = the_advisory(&l, AdvisoryKind::UnkeyedSpuriousWakeups).message;
    assert_says(&msg, &["20.1%", "keyed wakeups"]);
}

#[test]
fn spurious_wakeups_inside_a_semaphore_blame_barging_not_keys() {
    let t = Thresholds::default();
    let mut l = waitqueue(1000, 1000, 350);
    l.parent = Some("pipe.sem".to_string());
    let msg = the_advisory(&l, AdvisoryKind::BargedSemaphoreWakeups).message;
    assert_says(&msg, &["35.0%", "barging"]);
    assert!(!msg.contains("use keyed"), "{msg}");
    // Below the limit it stays quiet, as rule 4 does.
    let mut quiet = waitqueue(1000, 1000, 200);
    quiet.parent = Some("pipe.sem".to_string());
    assert!(kinds(&quiet, &t).is_empty());
}

#[test]
fn unkeyed_spurious_wakeups_stays_quiet_just_below() {
    let t = Thresholds::default();
    assert!(kinds(&waitqueue(1000, 1000, 200), &t).is_empty());
    assert!(kinds(&waitqueue(1000, 1000, 0), &t).is_empty());
    let t = Thresholds {
        spurious_pct: 10.0,
        ..Thresholds::default()
    };
    assert_eq!(
        kinds(&waitqueue(1000, 1000, 200), &t),
        [AdvisoryKind::UnkeyedSpuriousWakeups]
    );
}

#[test]
fn advise_orders_by_lock_then_rule() {
    let mut a = waitqueue(100, 1000, 900);
    a.id = "b.wait".into();
    let mut b = sleeping(LockKind::Mutex, 1_000, 50.0, 9_000);
    b.id = "a.mutex".into();
    let mut snap = Snapshot::empty(ProcessInfo::default(), "mock");
    snap.locks = vec![a, b];
    let got: Vec<(String, AdvisoryKind)> = advise(&snap, &Thresholds::default())
        .into_iter()
        .map(|a| (a.lock_id, a.kind))
        .collect();
    assert_eq!(
        got,
        [
            ("a.mutex".to_string(), AdvisoryKind::SleepingLockShortHold),
            ("b.wait".to_string(), AdvisoryKind::WakeAllHerd)
        ]
    );
}

#[test]
fn advisories_serialise_with_snake_case_kinds() {
    let l = waitqueue(1000, 1000, 500);
    let json = serde_json::to_value(advise_lock(&l, WINDOW_NS, &Thresholds::default())).unwrap();
    assert_eq!(json[0]["kind"], "unkeyed_spurious_wakeups");
    assert_eq!(json[0]["lock_id"], "l");
    assert!(json[0]["site"].is_null());
}

#[test]
fn a_lock_order_inversion_is_an_advisory_naming_four_sites() {
    use lockmeter_model::now::{inversions, OrderEdge};
    let edge = |a: &str, b: &str, ha: &str, hb: &str| OrderEdge {
        held: a.into(),
        held_site: ha.into(),
        acquired: b.into(),
        acquired_site: hb.into(),
        count: 1,
        wait_ns_total: 0,
    };
    let mut snap = lockmeter_model::Snapshot::empty(Default::default(), "mock");
    let edges = vec![
        edge("a", "b", "s1.rs:1:1", "s2.rs:2:2"),
        edge("b", "a", "s3.rs:3:3", "s4.rs:4:4"),
    ];
    snap.lock_order.inversions = inversions(&edges);
    snap.lock_order.edges = edges;
    let got = lockmeter_model::advice::advise(&snap, &Thresholds::default());
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].kind, AdvisoryKind::LockOrderInversion);
    for site in ["s1.rs:1:1", "s2.rs:2:2", "s3.rs:3:3", "s4.rs:4:4"] {
        assert!(got[0].message.contains(site), "{}", got[0].message);
    }
}
