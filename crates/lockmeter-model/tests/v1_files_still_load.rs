//! A dump written by lockmeter 0.1 (format version 1) must keep loading,
//! with the same numbers, in every later version. The fixture is a real
//! dump of `lockmeter demo`; never regenerate it, add new ones beside it.

use lockmeter_model::{parse_snapshot, LockKind};

const V1_DEMO: &str = include_str!("fixtures/v1-demo.json");

#[test]
fn the_first_v1_dump_still_loads_with_its_numbers() {
    let snap = parse_snapshot(V1_DEMO).expect("a v1 dump must load");
    assert_eq!(snap.format, "lockmeter");
    assert_eq!(snap.version, 1);
    let ids: Vec<&str> = snap.locks.iter().map(|l| l.id.as_str()).collect();
    for id in [
        "bkl",
        "pipe.sem",
        "pipe.sem.lock",
        "pipe.sem.wait",
        "pipe.spin",
        "accept.herd",
    ] {
        assert!(ids.contains(&id), "{id} missing from {ids:?}");
    }
    let sem_lock = snap.lock("pipe.sem.lock").unwrap();
    assert_eq!(sem_lock.kind, LockKind::Spinlock);
    assert_eq!(sem_lock.parent.as_deref(), Some("pipe.sem"));
    for lock in &snap.locks {
        let t = &lock.total;
        assert_eq!(t.nowait + t.contended, t.acquisitions, "{}", lock.id);
        let by_site: u64 = lock.sites.iter().map(|s| s.stats.acquisitions).sum();
        assert_eq!(by_site, t.acquisitions, "{}", lock.id);
    }
}

#[test]
fn a_v1_dump_round_trips_through_serde() {
    let snap = parse_snapshot(V1_DEMO).unwrap();
    let again = parse_snapshot(&serde_json::to_string(&snap).unwrap()).unwrap();
    assert_eq!(snap, again);
}

/// Every distribution in the dump carries the mean and percentiles it was
/// written with; the model keeps only the counts and recomputes those, so
/// each must come out as the same JSON it went in as.
#[test]
fn a_v1_dumps_distributions_are_written_back_as_they_were() {
    fn dists<'a>(v: &'a serde_json::Value, out: &mut Vec<&'a serde_json::Value>) {
        match v {
            serde_json::Value::Object(m) if m.contains_key("buckets") && m.contains_key("p99") => {
                out.push(v)
            }
            serde_json::Value::Object(m) => m.values().for_each(|x| dists(x, out)),
            serde_json::Value::Array(a) => a.iter().for_each(|x| dists(x, out)),
            _ => {}
        }
    }
    let dump: serde_json::Value = serde_json::from_str(V1_DEMO).unwrap();
    let mut found = Vec::new();
    dists(&dump, &mut found);
    assert!(found.len() > 20, "only {} distributions found", found.len());
    let mut with_samples = 0;
    for d in found {
        let dist: lockmeter_model::Dist = serde_json::from_value(d.clone()).unwrap();
        assert_eq!(&serde_json::to_value(&dist).unwrap(), d);
        with_samples += usize::from(dist.count > 0 && dist.p99() > 0);
    }
    assert!(
        with_samples > 5,
        "only {with_samples} non-empty distributions"
    );
}
