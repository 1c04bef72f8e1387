//! The on-disk shape of format v1, where it differs from the types in
//! memory: `con_pct` and `util_pct` are written from [`Stats::con_pct`]
//! and [`Stats::util_pct`] (over the snapshot's window), a [`Dist`]'s
//! `mean`, `p50`, `p90` and `p99` from its methods, and a class's `name`
//! from [`LockStats::name`]. Reading ignores the derived values (they are
//! recomputed) and keeps a `name` only where it differs from the `id`, so
//! old dumps load unchanged and the bytes written stay the same.

use serde::ser::{Serialize, SerializeStruct, Serializer};
use serde::{Deserialize, Deserializer};

use crate::now::{Deadlock, LockOrder, Now};
use crate::selfcost::{Budget, OpCosts, SelfCost};
use crate::stacks::Stacks;
use crate::{
    Dist, Holder, LockKind, LockStats, ProcessInfo, Sampling, SiteStats, Snapshot, Stats, Window,
};

/// The top level, in the field order of the format. Every field of
/// [`Snapshot`] must appear here (`every_field_of_a_snapshot_is_written`
/// checks it).
#[derive(serde::Serialize)]
struct SnapshotOut<'a> {
    format: &'a str,
    version: u32,
    process: &'a ProcessInfo,
    window: &'a Window,
    clock: &'a str,
    dropped_records: u64,
    sampling: &'a Sampling,
    locks: Vec<LockOut<'a>>,
    #[serde(skip_serializing_if = "Stacks::is_empty")]
    stacks: &'a Stacks,
    #[serde(skip_serializing_if = "Now::is_empty")]
    now: &'a Now,
    #[serde(skip_serializing_if = "<[Deadlock]>::is_empty")]
    deadlocks: &'a [Deadlock],
    #[serde(skip_serializing_if = "LockOrder::is_empty")]
    lock_order: &'a LockOrder,
    #[serde(skip_serializing_if = "Option::is_none")]
    self_cost: Option<SelfCostOut<'a>>,
}

/// `self_cost` with each class's derived `held_pct` (over the class's
/// `hold_ns.total`), written like `con_pct` and ignored when read.
#[derive(serde::Serialize)]
struct SelfCostOut<'a> {
    costs: &'a OpCosts,
    locks: Vec<LockSelfCostOut<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    budget: Option<&'a Budget>,
}

#[derive(serde::Serialize)]
struct LockSelfCostOut<'a> {
    id: &'a str,
    inside_ns: u64,
    outside_ns: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    held_pct: Option<f64>,
}

impl<'a> SelfCostOut<'a> {
    fn new(sc: &'a SelfCost, locks: &[LockStats]) -> SelfCostOut<'a> {
        let held: std::collections::HashMap<&str, u64> = locks
            .iter()
            .rev()
            .map(|l| (l.id.as_str(), l.total.hold_ns.total))
            .collect();
        SelfCostOut {
            costs: &sc.costs,
            locks: sc
                .locks
                .iter()
                .map(|l| LockSelfCostOut {
                    id: &l.id,
                    inside_ns: l.inside_ns,
                    outside_ns: l.outside_ns,
                    held_pct: held.get(l.id.as_str()).and_then(|&h| l.held_pct(h)),
                })
                .collect(),
            budget: sc.budget.as_ref(),
        }
    }
}

#[derive(serde::Serialize)]
struct LockOut<'a> {
    id: &'a str,
    name: &'a str,
    kind: LockKind,
    created_at: &'a str,
    instances: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    parent: Option<&'a str>,
    total: StatsOut<'a>,
    sites: Vec<SiteOut<'a>>,
    holders: &'a [Holder],
}

#[derive(serde::Serialize)]
struct SiteOut<'a> {
    site: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    mode: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pid: Option<u32>,
    #[serde(flatten)]
    stats: StatsOut<'a>,
}

/// A [`Stats`] with the window its UTIL is over.
struct StatsOut<'a> {
    stats: &'a Stats,
    elapsed_ns: u64,
}

/// Writes fields of `$s` into the struct serializer `$st`, each under its
/// own name, so a name and its value cannot disagree.
macro_rules! fields {
    ($st:ident, $s:ident: $($f:ident),* $(,)?) => {
        $( $st.serialize_field(stringify!($f), &$s.$f)?; )*
    };
}

impl Serialize for StatsOut<'_> {
    fn serialize<S: Serializer>(&self, ser: S) -> Result<S::Ok, S::Error> {
        let s = self.stats;
        let mut st = ser.serialize_struct("Stats", 21)?;
        fields!(st, s: acquisitions, nowait, contended, rejected, spins, sleeps, bounces);
        st.serialize_field("con_pct", &s.con_pct())?;
        st.serialize_field("util_pct", &s.util_pct(self.elapsed_ns))?;
        fields!(st, s: hold_ns, hold_timed, wait_ns);
        if s.wait_untimed == 0 {
            st.skip_field("wait_untimed")?;
        } else {
            fields!(st, s: wait_untimed);
        }
        fields!(st, s: waits, wake_calls, wakeups);
        if s.empty_wake_calls == 0 {
            st.skip_field("empty_wake_calls")?;
        } else {
            fields!(st, s: empty_wake_calls);
        }
        fields!(st, s: spurious_wakeups, exclusive_wakeups, max_waiters, wake_latency_ns);
        st.end()
    }
}

impl<'a> LockOut<'a> {
    fn new(l: &'a LockStats, elapsed_ns: u64) -> LockOut<'a> {
        let stats = |stats| StatsOut { stats, elapsed_ns };
        LockOut {
            id: &l.id,
            name: l.name(),
            kind: l.kind,
            created_at: &l.created_at,
            instances: l.instances,
            parent: l.parent.as_deref(),
            total: stats(&l.total),
            sites: l
                .sites
                .iter()
                .map(|s: &'a SiteStats| SiteOut {
                    site: &s.site,
                    mode: s.mode.as_deref(),
                    pid: s.pid,
                    stats: stats(&s.stats),
                })
                .collect(),
            holders: &l.holders,
        }
    }
}

impl Serialize for Snapshot {
    fn serialize<S: Serializer>(&self, ser: S) -> Result<S::Ok, S::Error> {
        let elapsed_ns = self.window.elapsed_ns;
        SnapshotOut {
            format: &self.format,
            version: self.version,
            process: &self.process,
            window: &self.window,
            clock: &self.clock,
            dropped_records: self.dropped_records,
            sampling: &self.sampling,
            locks: self
                .locks
                .iter()
                .map(|l| LockOut::new(l, elapsed_ns))
                .collect(),
            stacks: &self.stacks,
            now: &self.now,
            deadlocks: &self.deadlocks,
            lock_order: &self.lock_order,
            self_cost: self
                .self_cost
                .as_deref()
                .map(|sc| SelfCostOut::new(sc, &self.locks)),
        }
        .serialize(ser)
    }
}

/// A [`Dist`] as written: the derived values between the counted ones, in
/// the field order of the format.
#[derive(serde::Serialize)]
struct DistOut<'a> {
    count: u64,
    total: u64,
    min: u64,
    mean: u64,
    max: u64,
    p50: u64,
    p90: u64,
    p99: u64,
    buckets: &'a [(u64, u64)],
}

impl Serialize for Dist {
    fn serialize<S: Serializer>(&self, ser: S) -> Result<S::Ok, S::Error> {
        DistOut {
            count: self.count,
            total: self.total,
            min: self.min,
            mean: self.mean(),
            max: self.max,
            p50: self.p50(),
            p90: self.p90(),
            p99: self.p99(),
            buckets: &self.buckets,
        }
        .serialize(ser)
    }
}

/// Reads `locks`, keeping a class's `name` only where it is not its id.
pub(crate) fn locks_in<'de, D: Deserializer<'de>>(de: D) -> Result<Vec<LockStats>, D::Error> {
    let mut locks = Vec::<LockStats>::deserialize(de)?;
    for l in &mut locks {
        if l.display_name.as_deref() == Some(l.id.as_str()) {
            l.display_name = None;
        }
    }
    Ok(locks)
}

#[cfg(test)]
mod tests {
    use crate::now::{Deadlock, LockOrder, Now};
    use crate::parse_snapshot;

    #[test]
    fn a_name_equal_to_the_id_is_not_kept_but_is_written() {
        let text = r#"{"format":"lockmeter","version":1,"process":{"pid":1,"name":"p"},
            "window":{"start_unix_ns":0,"end_unix_ns":10,"elapsed_ns":10},"clock":"mock",
            "locks":[
              {"id":"a","name":"a","kind":"mutex","created_at":"x","total":{"contended":1,"acquisitions":4,"con_pct":99.0},"sites":[]},
              {"id":"b","name":"shown","kind":"mutex","created_at":"x","total":{},"sites":[]}]}"#;
        let snap = parse_snapshot(text).unwrap();
        assert_eq!(snap.locks[0].display_name, None);
        assert_eq!(snap.locks[0].name(), "a");
        assert_eq!(snap.locks[1].name(), "shown");
        // The stored percentage is recomputed, not trusted.
        assert_eq!(snap.locks[0].total.con_pct(), 25.0);
        let v: serde_json::Value = serde_json::to_value(&snap).unwrap();
        assert_eq!(v["locks"][0]["name"], "a");
        assert_eq!(v["locks"][0]["total"]["con_pct"], 25.0);
        assert_eq!(v["locks"][1]["name"], "shown");
    }

    /// A dist's stored mean and percentiles are not trusted: they are
    /// recomputed from the counts and buckets, and written in their place.
    #[test]
    fn a_dists_stored_mean_and_percentiles_are_recomputed() {
        let text = r#"{"count":4,"total":40,"min":7,"mean":999,"max":13,
            "p50":1,"p90":2,"p99":3,"buckets":[[7,1],[9,2],[13,1]]}"#;
        let d: crate::Dist = serde_json::from_str(text).unwrap();
        assert_eq!((d.mean(), d.p50(), d.p90(), d.p99()), (10, 8, 12, 12));
        assert_eq!(
            serde_json::to_string(&d).unwrap(),
            r#"{"count":4,"total":40,"min":7,"mean":10,"max":13,"p50":8,"p90":12,"p99":12,"buckets":[[7,1],[9,2],[13,1]]}"#
        );
    }

    /// A field added to `Snapshot` but not to the mirror would be silently
    /// dropped from dumps and the endpoint (as the hang extensions once
    /// were): every extension survives a round trip.
    #[test]
    fn every_field_of_a_snapshot_is_written() {
        let mut snap = parse_snapshot(include_str!("../tests/fixtures/v1-demo.json")).unwrap();
        snap.now = Now {
            untracked_holds: 3,
            ..Now::default()
        };
        snap.deadlocks = vec![Deadlock {
            detected_unix_ns: 5,
            ..Deadlock::default()
        }];
        snap.lock_order = LockOrder {
            recorded: true,
            dropped_edges: 2,
            ..LockOrder::default()
        };
        // The stacks extension (it was once dropped from every JSON dump
        // and endpoint frame, so the viewer's stacks pane stayed empty).
        snap.stacks.rate_ns = 1_000_000;
        snap.stacks.dropped = 4;
        snap.self_cost = Some(Box::new(crate::selfcost::SelfCost {
            costs: crate::selfcost::OpCosts {
                lookup: "global".into(),
                timed_hold_ns: 19.5,
                ..Default::default()
            },
            locks: vec![crate::selfcost::LockSelfCost {
                id: snap.locks[0].id.clone(),
                inside_ns: 40,
                outside_ns: 12,
            }],
            budget: Some(crate::selfcost::Budget {
                fraction: 0.01,
                lowered: vec![crate::selfcost::Lowered {
                    what: "uncontended_hold_every".into(),
                    from: 64,
                    to: 1024,
                }],
                ..Default::default()
            }),
        }));
        // Stats fields that are left out when zero must still be written
        // when they are not (a condvar's notifies that woke nobody).
        snap.locks[0].total.empty_wake_calls = 7;
        snap.locks[0].sites[0].stats.empty_wake_calls = 7;
        let text = serde_json::to_string(&snap).unwrap();
        assert_eq!(parse_snapshot(&text).unwrap(), snap);
        for key in [
            "\"stacks\"",
            "\"now\"",
            "\"deadlocks\"",
            "\"lock_order\"",
            "\"self_cost\"",
        ] {
            assert!(text.contains(key), "{key} not written");
        }
    }
}
