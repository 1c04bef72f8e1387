//! `lockmeter top --all`'s feed ([`FleetFeed::spawn_discovering_with`],
//! here scanning a private runtime directory) takes in a real process that
//! starts after the view opened: at the next scan it joins, its call-site
//! row appears with its pid, and the lock row's total adds its exact count.

mod common;

use std::ffi::OsStr;
use std::time::{Duration, Instant};

use common::{example_exe, per_process, private_runtime, start_listening};
use lockmeter_model::Snapshot;
use lockmeter_viewer::fleet::{FleetFeed, RESCAN};
use lockmeter_viewer::state::Feed;
use lockmeter_wire::discovery::scan_endpoints_in;

const LOCK: &str = "demo.counter";

/// Polls `feed` (as if every poll were a scan's time) until a merged frame
/// satisfies `done`; that frame's totals.
fn until(feed: &mut FleetFeed, done: impl Fn(&Snapshot) -> bool) -> Snapshot {
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut last = None;
    while Instant::now() < deadline {
        for f in feed.poll(Instant::now() + RESCAN) {
            if let Feed::Data(frame) = f {
                last = Some(frame.cumulative);
            }
        }
        if let Some(s) = last.as_ref().filter(|s| done(s)) {
            return s.clone();
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("never satisfied; last merged frame: {last:?}");
}

fn total(s: &Snapshot) -> u64 {
    s.lock(LOCK).map_or(0, |l| l.total.acquisitions)
}

#[test]
fn a_process_started_after_the_view_opened_joins_it() {
    let runtime = private_runtime("late-joiner");
    let sockets = runtime.join("lockmeter");
    let exe = example_exe("endpoint_demo");
    let quiet = [("LOCKMETER_QUIET", OsStr::new("1"))];
    let (first, line) = start_listening(&exe, &["1000", "2"], &runtime, &quiet);
    assert_eq!(line, "ready 1000");

    let dir = sockets.clone();
    let scan = move || {
        scan_endpoints_in(&dir)
            .live
            .iter()
            .map(|e| e.addr())
            .collect()
    };
    let mut feed = FleetFeed::spawn_discovering_with(Vec::new(), Duration::from_millis(100), scan);
    let one = until(&mut feed, |s| total(s) == 1000);
    assert_eq!(feed.members().len(), 1);
    assert!(
        one.process.name.starts_with("1 process "),
        "{}",
        one.process.name
    );

    let (late, line) = start_listening(&exe, &["2000", "2"], &runtime, &quiet);
    assert_eq!(line, "ready 2000");
    let both = until(&mut feed, |s| total(s) == 3000);
    assert_eq!(
        feed.members().len(),
        2,
        "joined once, not again at each scan"
    );
    assert!(
        both.process.name.starts_with("2 processes "),
        "{}",
        both.process.name
    );
    let rows = per_process(&both, LOCK);
    let mut want = vec![(Some(first.pid()), 1000), (Some(late.pid()), 2000)];
    want.sort();
    assert_eq!(rows, want);
}
