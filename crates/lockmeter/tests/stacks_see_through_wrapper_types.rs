//! A wrapper type that every lock of a program goes through (as tokio's
//! `tokio::loom::std::parking_lot` shim wraps every parking_lot lock of the
//! runtime, in one file): the table has one call site, the shim's; with
//! the shim's module named in `skip_frames`, the stacks come apart by the
//! real callers.

mod common;

use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{all_at_once, observe_with};
use lockmeter::model::profile::{folded, Metric};
use lockmeter::model::stacks::Side;

/// Like tokio's loom shim: no `#[track_caller]`, so every lock taken
/// through it has the shim's call site.
mod shim {
    pub struct Mutex<T>(lockmeter::Mutex<T>);

    impl<T> Mutex<T> {
        pub fn new(name: &'static str, t: T) -> Mutex<T> {
            Mutex(lockmeter::Mutex::named(name, t))
        }

        pub fn lock(&self) -> lockmeter::MutexGuard<'_, T> {
            self.0.lock()
        }
    }
}

struct Driver {
    state: shim::Mutex<u64>,
}

fn spin(d: Duration) {
    let t = Instant::now();
    while t.elapsed() < d {
        black_box(0);
    }
}

impl Driver {
    #[inline(never)]
    fn park(&self) {
        let mut g = self.state.lock();
        *g += 1;
        spin(Duration::from_micros(300));
    }

    /// Not the same body as `park`'s: identical functions are folded into
    /// one in a release build, and then so are their stacks.
    #[inline(never)]
    fn unpark(&self) {
        let mut g = self.state.lock();
        *g += 2;
        spin(Duration::from_micros(300));
    }
}

#[test]
fn the_shims_callers_come_apart_in_stacks() {
    let shim_module = concat!(module_path!(), "::shim::");
    let builder = lockmeter::Layer::builder()
        .stack_rate(Duration::from_micros(10))
        .skip_frames([shim_module]);
    let driver = Arc::new(Driver {
        state: shim::Mutex::new("driver.state", 0),
    });
    let (handle, ()) = observe_with(builder, || {
        all_at_once(
            &driver,
            [Driver::park as fn(&Driver), Driver::unpark],
            |d, f| {
                for _ in 0..150 {
                    f(d);
                    std::thread::sleep(Duration::from_micros(100));
                }
            },
        );
    });
    let snap = handle.snapshot();
    let lock = snap.lock("driver.state").unwrap();
    assert_eq!(lock.total.acquisitions, 300);
    assert_eq!(
        lock.sites.len(),
        1,
        "one call site for every caller: the shim's"
    );
    assert!(lock.sites[0]
        .site
        .contains("stacks_see_through_wrapper_types.rs"));
    assert!(snap.stacks.skip_frames.iter().any(|p| p == shim_module));

    let waiters = snap.stacks.top(&lock.id, None, Side::Waiter);
    assert!(!waiters.is_empty(), "contention was forced");
    let mut callers: Vec<String> = waiters
        .iter()
        .map(|s| snap.stacks.caller(s).unwrap().function.clone())
        .collect();
    callers.sort();
    callers.dedup();
    assert!(
        callers
            .iter()
            .all(|c| c.ends_with("Driver::park") || c.ends_with("Driver::unpark")),
        "the shim's frames are folded away: {callers:?}"
    );
    assert_eq!(callers.len(), 2, "{callers:?}");
    let lines = folded::lines(&snap, Side::Waiter, Metric::Wait);
    assert!(
        lines
            .iter()
            .any(|l| l.ends_with_weight_after("Driver::park")),
        "{lines:#?}"
    );
    assert!(
        lines
            .iter()
            .any(|l| l.ends_with_weight_after("Driver::unpark")),
        "{lines:#?}"
    );
    assert!(!lines.iter().any(|l| l.contains("::shim::")), "{lines:#?}");
}

trait FoldedLine {
    /// The line's leaf frame is `name` and it has a positive weight.
    fn ends_with_weight_after(&self, name: &str) -> bool;
}

impl FoldedLine for String {
    fn ends_with_weight_after(&self, name: &str) -> bool {
        let Some((stack, weight)) = self.rsplit_once(' ') else {
            return false;
        };
        stack.ends_with(name) && weight.parse::<u64>().is_ok_and(|w| w > 0)
    }
}
