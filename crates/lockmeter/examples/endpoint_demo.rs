//! A program that exports its lock table with no code for it: run it with
//! `LOCKMETER_LISTEN=1` (or `LOCKMETER_DUMP=out.json`, `LOCKMETER_RECORD=
//! rec.jsonl`) and look with `lockmeter list` / `lockmeter top`.
//!
//! ```text
//! LOCKMETER_LISTEN=1 cargo run -p lockmeter --example endpoint_demo -- 100000 4
//! ```
//!
//! It takes the mutex `demo.counter` exactly ACQUISITIONS times from
//! THREADS threads, prints `ready <ACQUISITIONS>`, then waits until its
//! standard input closes (Ctrl-D) and exits normally, which writes
//! `LOCKMETER_DUMP`. With `--exit-holding` it exits while holding the
//! mutex, with another thread waiting for it: the exit dump must still be
//! written, not deadlock. The integration tests `tests/export_*.rs` drive
//! it.
//!
//! Usage: `endpoint_demo [ACQUISITIONS=1000] [THREADS=4] [--exit-holding]`

use std::io::Write;
use std::sync::Arc;
use std::thread;
use std::time::Duration;

use tracing_subscriber::prelude::*;

mod common;

fn main() {
    let (args, [exit_holding]) = common::DemoArgs::parse(
        "usage: endpoint_demo [ACQUISITIONS] [THREADS] [--exit-holding]",
        ["--exit-holding"],
    );
    let total = args.number(0, 1000);
    let threads = args.number(1, 4).max(1);

    tracing_subscriber::registry()
        .with(lockmeter::Layer::new())
        .init();

    let counter = Arc::new(lockmeter::Mutex::named("demo.counter", 0u64));
    let adder = Arc::clone(&counter);
    common::spread_over_threads(total, threads, move || *adder.lock() += 1);

    common::say_ready_and_wait_for_stdin(&format!("ready {total}"));

    if exit_holding {
        let guard = counter.lock();
        let waiter = Arc::clone(&counter);
        thread::spawn(move || {
            *waiter.lock() += 1;
        });
        // Let the waiter block on the mutex, then exit with it held.
        thread::sleep(Duration::from_millis(100));
        println!("exiting while holding demo.counter ({})", *guard);
        let _ = std::io::stdout().flush();
        std::process::exit(0);
    }
}
