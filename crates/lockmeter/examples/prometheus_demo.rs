//! A program to scrape: run it with `LOCKMETER_PROMETHEUS=127.0.0.1:9464`
//! and point Prometheus (or `curl`) at `http://127.0.0.1:9464/metrics`.
//!
//! ```text
//! LOCKMETER_PROMETHEUS=127.0.0.1:9464 cargo run -p lockmeter --example prometheus_demo -- 100000 4 5
//! ```
//!
//! It takes the mutex `prom.counter` exactly ACQUISITIONS times from
//! THREADS threads, all at one call site; then WAITS times, one thread
//! holds the mutex `prom.slow` for 24 ms while another waits for it, so
//! `prom.slow` has WAITS contended acquisitions of about 24 ms each (in the middle of the
//! histogram bucket from 16.8 to 33.6 ms) at one
//! call site. Then it resets the table (which the Prometheus counters must
//! ignore), prints `ready <ACQUISITIONS> <WAITS>`, and waits until its
//! standard input closes. Meanwhile two threads keep `prom.busy` lightly
//! contended (about 100 acquisitions a second, most of them waiting about
//! a millisecond), so that rates and the dashboard's panels have data, and
//! one thread holds `prom.held` for good while another waits for it, so
//! that `lockmeter_holders` and `lockmeter_waiters` are 1 for it. The test `tests/prometheus_round_trip.rs` and
//! `.ci/prometheus_round_trip.sh` drive it.
//!
//! Usage: `prometheus_demo [ACQUISITIONS=1000] [THREADS=4] [WAITS=5]`

use std::sync::{mpsc, Arc};
use std::thread;
use std::time::Duration;

use tracing_subscriber::prelude::*;

mod common;

/// How long the holder of `prom.slow` keeps it while the other waits: in
/// the middle of its octave, so scheduling delays of a few ms on a busy
/// machine leave the wait in the same bucket.
const HOLD: Duration = Duration::from_millis(24);

fn main() {
    let (args, []) = common::DemoArgs::parse(
        "usage: prometheus_demo [ACQUISITIONS] [THREADS] [WAITS]",
        [],
    );
    let total = args.number(0, 1000);
    let threads = args.number(1, 4).max(1);
    let waits = args.number(2, 5);

    let layer = lockmeter::Layer::new();
    let handle = layer.handle();
    tracing_subscriber::registry().with(layer).init();

    let counter = Arc::new(lockmeter::Mutex::named("prom.counter", 0u64));
    let adder = Arc::clone(&counter);
    common::spread_over_threads(total, threads, move || *adder.lock() += 1);

    let slow = Arc::new(lockmeter::Mutex::named("prom.slow", ()));
    for _ in 0..waits {
        let guard = slow.lock();
        let (started, is_started) = mpsc::channel();
        let waiter = {
            let slow = Arc::clone(&slow);
            thread::spawn(move || {
                let _ = started.send(());
                drop(slow.lock());
            })
        };
        let _ = is_started.recv();
        // The waiter is about to block (or already blocks) on `slow`.
        thread::sleep(HOLD);
        drop(guard);
        waiter.join().expect("the waiter panicked");
    }

    handle.reset();
    keep_busy();
    hold_one_forever();
    common::say_ready_and_wait_for_stdin(&format!("ready {total} {waits}"));
}

/// Two threads on `prom.busy`: one holds it 2 ms in every 10, the other
/// takes it 1 ms into that hold. Little CPU, steady contention.
fn keep_busy() {
    let busy = Arc::new(lockmeter::Mutex::named("prom.busy", ()));
    let other = Arc::clone(&busy);
    thread::spawn(move || loop {
        let guard = busy.lock();
        thread::sleep(Duration::from_millis(2));
        drop(guard);
        thread::sleep(Duration::from_millis(8));
    });
    thread::spawn(move || loop {
        thread::sleep(Duration::from_millis(1));
        drop(other.lock());
        thread::sleep(Duration::from_millis(9));
    });
}

/// One thread takes `prom.held` and keeps it; another then blocks on it.
/// Returns once both are in place (the waiter about to block).
fn hold_one_forever() {
    let held = Arc::new(lockmeter::Mutex::named("prom.held", ()));
    let (taken, is_taken) = mpsc::channel();
    let holder = Arc::clone(&held);
    thread::spawn(move || {
        let _guard = holder.lock();
        let _ = taken.send(());
        loop {
            thread::sleep(Duration::from_secs(3600));
        }
    });
    let _ = is_taken.recv();
    thread::spawn(move || drop(held.lock()));
}
