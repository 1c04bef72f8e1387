//! Under the global dispatcher, self-accounting calibrates through the
//! global recorder itself (the lookup its acquisitions take), and its own
//! calibration locks never show in a snapshot. One test: the global
//! default can be set once per process.

mod common;

use common::install_global;

#[test]
fn the_global_recorder_calibrates_through_its_own_lookup_and_hides_it() {
    let handle = install_global();
    static M: lockmeter::Mutex<u64> = lockmeter::Mutex::named("global.app", 0);
    let workers: Vec<_> = (0..2)
        .map(|_| {
            std::thread::spawn(|| {
                for _ in 0..1_000 {
                    *M.lock() += 1;
                }
            })
        })
        .collect();
    for w in workers {
        w.join().unwrap();
    }
    let first = handle.snapshot();
    let second = handle.cumulative();
    for snap in [&first, &second] {
        let ids: Vec<&str> = snap.locks.iter().map(|l| l.id.as_str()).collect();
        assert_eq!(ids, ["global.app"], "only the program's classes");
        let sc = snap.self_cost.as_ref().expect("self_cost");
        assert_eq!(sc.costs.lookup, "global");
        assert_eq!(sc.locks.len(), 1);
        assert!(sc.locks[0].inside_ns + sc.locks[0].outside_ns > 0);
    }
    assert_eq!(second.lock("global.app").unwrap().total.acquisitions, 2_000);
}
