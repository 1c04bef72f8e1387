//! Hold and wait times, UTIL, holder sites and slow-lock events, asserted
//! with quanta's mock clock so no real timing is involved.

mod common;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex as StdMutex};
use std::time::Duration;

use common::{lock, observe_with, spawn_observed};
use lockmeter::{Layer, Mutex, SpinLock};

fn mock_layer() -> (lockmeter::LayerBuilder, Arc<quanta::Mock>) {
    let (clock, mock) = quanta::Clock::mock();
    (
        Layer::builder()
            .clock(clock)
            .slow_threshold(Duration::from_millis(10))
            .sample_uncontended_holds(1),
        mock,
    )
}

#[test]
fn sampled_uncontended_holds_are_scaled_to_every_hold() {
    let (clock, mock) = quanta::Clock::mock();
    let builder = Layer::builder().clock(clock).sample_uncontended_holds(4);
    let (handle, ()) = observe_with(builder, || {
        let m = Mutex::named("mock.sampled", ());
        // Ten uncontended holds at one site: the 1st, 5th and 9th are
        // timed (2 ms each), the others would have been 1 ms.
        for i in 0..10u64 {
            let g = m.lock();
            let ms = if i % 4 == 0 { 2 } else { 1 };
            mock.increment(Duration::from_millis(ms));
            drop(g);
        }
        // A successful try-lock is uncontended too, and the first at its
        // own site: timed.
        let g = m.try_lock().expect("free");
        mock.increment(Duration::from_millis(5));
        drop(g);
    });
    let snap = handle.snapshot();
    assert_eq!(snap.sampling.uncontended_hold_every, 4);
    let l = lock(&snap, "mock.sampled");
    let looped = l.sites.iter().find(|s| s.stats.acquisitions == 10);
    let s = &looped.expect("the loop's site").stats;
    assert_eq!(s.nowait, 10, "counts stay exact");
    assert_eq!(s.hold_timed, 3);
    assert_eq!(s.hold_ns.count, 10, "the sample stands for every hold");
    assert_eq!(s.hold_ns.total, 20_000_000);
    assert_eq!((s.hold_ns.min, s.hold_ns.max), (2_000_000, 2_000_000));
    let t = &l.total;
    assert_eq!((t.acquisitions, t.hold_timed, t.hold_ns.count), (11, 4, 11));
    assert_eq!(t.hold_ns.total, 25_000_000);
    let elapsed = snap.window.elapsed_ns as f64;
    assert!((t.util_pct(snap.window.elapsed_ns) - 100.0 * 25e6 / elapsed).abs() < 1e-9);
}

#[test]
fn failed_attempts_take_nothing_from_the_hold_sample() {
    let (clock, mock) = quanta::Clock::mock();
    let builder = Layer::builder().clock(clock).sample_uncontended_holds(4);
    let (handle, ()) = observe_with(builder, || {
        let m = Mutex::named("mock.rejected", ());
        // One call site for the holds and the failed attempts, so that
        // both go through one entry and its sample's counter.
        let try_take = || m.try_lock();
        // Ten holds, each followed by a failed attempt at the same site:
        // the 1st, 5th and 9th holds are timed (2 ms), as with none.
        for i in 0..10u64 {
            let g = try_take().expect("free");
            assert!(try_take().is_none());
            let ms = if i % 4 == 0 { 2 } else { 1 };
            mock.increment(Duration::from_millis(ms));
            drop(g);
        }
    });
    let snap = handle.snapshot();
    let l = lock(&snap, "mock.rejected");
    assert_eq!(l.sites.len(), 1, "one site for both");
    let s = &l.sites[0].stats;
    assert_eq!((s.nowait, s.rejected, s.hold_timed), (10, 10, 3));
    assert_eq!((s.hold_ns.count, s.hold_ns.total), (10, 20_000_000));
}

#[test]
fn sampling_rates_round_up_to_a_power_of_two() {
    let (clock, _mock) = quanta::Clock::mock();
    let builder = Layer::builder().clock(clock).sample_uncontended_holds(5);
    let (handle, ()) = observe_with(builder, || drop(SpinLock::new(()).lock()));
    assert_eq!(handle.snapshot().sampling.uncontended_hold_every, 8);
}

#[test]
fn hold_times_and_util_follow_the_mock_clock() {
    let (builder, mock) = mock_layer();
    let (handle, ()) = observe_with(builder, || {
        let m = Mutex::named("mock.hold", ());
        for ms in [1u64, 2, 3] {
            let g = m.lock();
            mock.increment(Duration::from_millis(ms));
            drop(g);
        }
        mock.increment(Duration::from_millis(4));
    });
    let snap = handle.snapshot();
    assert_eq!(snap.clock, "mock");
    assert_eq!(snap.window.elapsed_ns, 10_000_000);
    let s = &lock(&snap, "mock.hold").total;
    assert_eq!(s.hold_ns.count, 3);
    assert_eq!(s.hold_ns.total, 6_000_000);
    assert_eq!(s.hold_ns.max, 3_000_000);
    assert_eq!(s.hold_ns.min, 1_000_000);
    assert_eq!(s.hold_ns.mean(), 2_000_000);
    let util = s.util_pct(snap.window.elapsed_ns);
    assert!((util - 60.0).abs() < 1e-9, "util {util}");
    assert_eq!(s.con_pct(), 0.0);
}

#[test]
fn wait_time_and_holder_site_of_a_contended_acquisition() {
    let (builder, mock) = mock_layer();
    let (handle, holder_line) = observe_with(builder, || {
        let m = Arc::new(SpinLock::named("mock.wait", ()));
        let holder_line = line!() + 1;
        let g = m.lock();
        let started = Arc::new(AtomicBool::new(false));
        let (m2, s2) = (m.clone(), started.clone());
        let waiter = spawn_observed(move || {
            s2.store(true, Ordering::Release);
            drop(m2.lock());
        });
        while !started.load(Ordering::Acquire) {
            std::thread::yield_now();
        }
        // Give the waiter time to fail its first attempt and start waiting.
        std::thread::sleep(Duration::from_millis(200));
        mock.increment(Duration::from_millis(7));
        drop(g);
        waiter.join().unwrap();
        holder_line
    });
    let snap = handle.snapshot();
    let l = lock(&snap, "mock.wait");
    assert_eq!(l.total.acquisitions, 2);
    assert_eq!(l.total.contended, 1);
    assert_eq!(l.total.wait_ns.total, 7_000_000);
    assert_eq!(l.total.bounces, 1);
    assert_eq!(l.holders.len(), 1);
    let holder = &l.holders[0];
    assert!(
        holder
            .site
            .ends_with(&format!("timing_with_mock_clock.rs:{holder_line}:19")),
        "{}",
        holder.site
    );
    assert_eq!((holder.contended, holder.wait_ns_total), (1, 7_000_000));
}

/// Collects the WARN events of target `lockmeter`.
#[derive(Clone, Default)]
struct Events(Arc<StdMutex<Vec<String>>>);

impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for Events {
    fn on_event(&self, event: &tracing::Event<'_>, _: tracing_subscriber::layer::Context<'_, S>) {
        if event.metadata().target() == "lockmeter" {
            let mut fields = String::new();
            let mut v = |f: &tracing::field::Field, val: &dyn std::fmt::Debug| {
                fields.push_str(&format!("{}={:?} ", f.name(), val));
            };
            event.record(&mut v);
            self.0
                .lock()
                .unwrap()
                .push(format!("{} {}", event.metadata().level(), fields));
        }
    }
}

#[test]
fn slow_holds_become_warn_events_and_fast_ones_do_not() {
    use tracing_subscriber::prelude::*;
    let (clock, mock) = quanta::Clock::mock();
    let layer = Layer::builder()
        .clock(clock)
        .slow_threshold(Duration::from_millis(10))
        .build();
    let events = Events::default();
    let subscriber = tracing_subscriber::registry()
        .with(layer)
        .with(events.clone());
    tracing::subscriber::with_default(subscriber, || {
        let m = Mutex::named("mock.slow", ());
        for _ in 0..100 {
            let g = m.lock();
            mock.increment(Duration::from_millis(1));
            drop(g);
        }
        let g = m.lock();
        mock.increment(Duration::from_millis(12));
        drop(g);
    });
    let got = events.0.lock().unwrap().clone();
    assert_eq!(got.len(), 1, "{got:?}");
    assert!(got[0].starts_with("WARN"), "{}", got[0]);
    assert!(got[0].contains("lock=mock.slow"), "{}", got[0]);
    assert!(got[0].contains("hold_ns=12000000"), "{}", got[0]);
}

#[test]
fn fmt_layer_beside_it_prints_nothing_per_acquisition() {
    use tracing_subscriber::prelude::*;
    #[derive(Clone, Default)]
    struct Sink(Arc<StdMutex<Vec<u8>>>);
    impl std::io::Write for Sink {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(b);
            Ok(b.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let sink = Sink::default();
    let s2 = sink.clone();
    let layer = Layer::new();
    let handle = layer.handle();
    let fmt = tracing_subscriber::fmt::layer().with_writer(move || s2.clone());
    let subscriber = tracing_subscriber::registry().with(layer).with(fmt);
    tracing::subscriber::with_default(subscriber, || {
        let m = Mutex::named("fmt.quiet", 0);
        for _ in 0..1000 {
            *m.lock() += 1;
        }
    });
    assert!(
        sink.0.lock().unwrap().is_empty(),
        "fmt printed: {}",
        String::from_utf8_lossy(&sink.0.lock().unwrap())
    );
    assert_eq!(
        handle
            .snapshot()
            .lock("fmt.quiet")
            .unwrap()
            .total
            .acquisitions,
        1000
    );
}

#[test]
fn reset_starts_a_new_window() {
    let (builder, mock) = mock_layer();
    let layer = builder.build();
    let handle = layer.handle();
    let dispatch = tracing::Dispatch::new(tracing_subscriber::layer::SubscriberExt::with(
        tracing_subscriber::registry(),
        layer,
    ));
    tracing::dispatcher::with_default(&dispatch, || {
        let m = Mutex::named("mock.reset", ());
        for _ in 0..5 {
            drop(m.lock());
        }
        mock.increment(Duration::from_millis(5));
        handle.reset();
        for _ in 0..3 {
            let g = m.lock();
            mock.increment(Duration::from_millis(1));
            drop(g);
        }
    });
    let window = handle.snapshot();
    let s = &window.lock("mock.reset").unwrap().total;
    assert_eq!(s.acquisitions, 3);
    assert_eq!(window.window.elapsed_ns, 3_000_000);
    assert!((s.util_pct(window.window.elapsed_ns) - 100.0).abs() < 1e-9);
    assert_eq!(
        handle
            .cumulative()
            .lock("mock.reset")
            .unwrap()
            .total
            .acquisitions,
        8
    );
}

/// A thread holding as many locks as its `now` table shows has nowhere to
/// keep a further hold's timing: that hold is counted exactly but not
/// timed, and the holds around it, before and after, keep their times
/// (a timed hold's part lives at its `now` index, which is reused).
#[test]
fn a_hold_beyond_the_held_table_is_counted_but_not_timed() {
    let (builder, mock) = mock_layer();
    let (handle, ()) = observe_with(builder, || {
        let fillers: Vec<_> = (0..16).map(|_| Mutex::named("mock.filler", ())).collect();
        let deep = Mutex::named("mock.deep", ());
        let held: Vec<_> = fillers.iter().map(|m| m.lock()).collect();
        let g = deep.lock();
        mock.increment(Duration::from_millis(2));
        drop(g);
        drop(held);
        // The table has room again: timed as usual, at a reused index.
        let g = deep.lock();
        mock.increment(Duration::from_millis(3));
        drop(g);
    });
    let snap = handle.snapshot();
    let d = &lock(&snap, "mock.deep").total;
    assert_eq!((d.acquisitions, d.nowait), (2, 2), "counts stay exact");
    assert_eq!(
        d.hold_timed, 1,
        "only the hold the table could show is timed"
    );
    assert_eq!(d.hold_ns.total, 3_000_000);
    let f = &lock(&snap, "mock.filler").total;
    assert_eq!((f.acquisitions, f.hold_timed), (16, 16));
    // Each filler was held across both increments of the first part.
    assert_eq!(f.hold_ns.min, 2_000_000);
}
