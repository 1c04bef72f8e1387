//! A dump written before stacks existed still exports: one frame per call
//! site, and the profile's totals are the table's exact counts.

use lockmeter_model::profile::pprof::{self, Profile};
use lockmeter_model::profile::{folded, samples, Metric};
use lockmeter_model::stacks::Side;
use lockmeter_model::{parse_snapshot, Snapshot, Stats};
use prost::Message;

fn old_dump() -> Snapshot {
    let snap = parse_snapshot(include_str!("fixtures/v1-demo.json")).expect("old dump loads");
    assert!(snap.stacks.is_empty(), "the fixture predates stacks");
    snap
}

/// The sum over every call site of every lock of `f` of its stats: what
/// the table says exactly.
fn over_sites(snap: &Snapshot, f: impl Fn(&Stats) -> u64) -> u64 {
    snap.locks
        .iter()
        .flat_map(|l| &l.sites)
        .map(|s| f(&s.stats))
        .sum()
}

/// The weights of folded lines (`STACK WEIGHT`), added up.
fn total_weight(lines: &[String]) -> u64 {
    lines
        .iter()
        .map(|l| l.rsplit(' ').next().unwrap().parse::<u64>().unwrap())
        .sum()
}

#[test]
fn folded_lines_are_the_sites_weighted_by_their_exact_wait() {
    let snap = old_dump();
    let lines = folded::lines(&snap, Side::Waiter, Metric::Wait);
    let expected = over_sites(&snap, |s| s.wait_ns.total);
    assert!(expected > 0, "the fixture has contention");
    assert_eq!(total_weight(&lines), expected);
    for l in &lines {
        // `[lock NAME];SITE WEIGHT`: two frames.
        let stack = l.rsplit_once(' ').unwrap().0;
        assert_eq!(stack.split(';').count(), 2, "{l}");
    }
}

#[test]
fn the_pprof_profile_decodes_and_adds_up_to_the_table() {
    let snap = old_dump();
    let raw = pprof::profile(&snap, Side::Waiter).encode_to_vec();
    let p = Profile::decode(raw.as_slice()).expect("valid protobuf");
    let name = |i: i64| p.string_table[i as usize].as_str();
    let types: Vec<_> = p
        .sample_type
        .iter()
        .map(|t| format!("{}/{}", name(t.r#type), name(t.unit)))
        .collect();
    assert_eq!(
        types,
        [
            "contentions/count",
            "wait/nanoseconds",
            "hold/nanoseconds",
            "acquisitions/count"
        ]
    );
    assert_eq!(name(p.default_sample_type), "wait");
    let sum = |i: usize| p.sample.iter().map(|s| s.value[i]).sum::<i64>() as u64;
    assert_eq!(sum(0), over_sites(&snap, |s| s.contended));
    assert_eq!(sum(3), over_sites(&snap, |s| s.acquisitions));
    // Every location names a function whose name is a call site.
    for s in &p.sample {
        assert_eq!(s.location_id.len(), 1);
        let labels: Vec<_> = s.label.iter().map(|l| name(l.key)).collect();
        assert!(labels.starts_with(&["lock", "kind", "site"]), "{labels:?}");
    }
    assert_eq!(
        samples(&snap, Side::Waiter).len(),
        p.sample.len(),
        "one sample per site with anything to say"
    );
}

#[test]
fn the_holder_profile_comes_from_the_holder_table() {
    let snap = old_dump();
    let lines = folded::lines(&snap, Side::Holder, Metric::Contentions);
    let expected: u64 = snap
        .locks
        .iter()
        .flat_map(|l| &l.holders)
        .map(|h| h.contended)
        .sum();
    assert_eq!(total_weight(&lines), expected);
}

#[test]
fn a_dump_whose_stacks_name_missing_frames_is_refused_clearly() {
    let mut v: serde_json::Value =
        serde_json::from_str(include_str!("fixtures/v1-demo.json")).unwrap();
    let lock = v["locks"][0]["id"].clone();
    v["stacks"] = serde_json::json!({
        "rate_ns": 1000,
        "frames": [{"function": "app::f"}],
        "samples": [{"lock": lock, "site": "x.rs:1:1", "side": "waiter", "frames": [0, 7]}]
    });
    let err = parse_snapshot(&v.to_string()).unwrap_err().to_string();
    assert_eq!(
        err,
        "stacks: sample 0 names frame 7, but the snapshot has 1 frames"
    );
    v["stacks"]["samples"][0]["frames"] = serde_json::json!([]);
    let err = parse_snapshot(&v.to_string()).unwrap_err().to_string();
    assert_eq!(err, "stacks: sample 0 has no frames");
    v["stacks"]["samples"][0]["frames"] = serde_json::json!("nope");
    assert!(parse_snapshot(&v.to_string()).is_err());
}
