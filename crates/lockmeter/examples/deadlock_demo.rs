//! A program that deadlocks on purpose, to see what lockmeter shows of a
//! hung process:
//!
//! ```text
//! LOCKMETER_LISTEN=1 LOCKMETER_DUMP=hung.json cargo run -p lockmeter --example deadlock_demo
//! lockmeter now <pid>          # the deadlock, who holds and waits on what
//! lockmeter table <pid>        # the table still answers
//! kill -USR1 <pid>             # and the dump is still written
//! ```
//!
//! Two threads, `transfer-ab` and `transfer-ba`, take the mutexes
//! `account.a` and `account.b` in opposite orders and block forever (a
//! third, `report`, waits behind them on `account.a`). The program prints
//! `deadlocked` once both hold their first lock and exits when its standard
//! input closes, leaving the deadlocked threads as they are. The test
//! `viewer/tests/a_deadlocked_process_still_answers.rs` drives it.

use std::io::{Read, Write};
use std::sync::{Arc, Barrier};
use std::thread;
use std::time::Duration;

use tracing_subscriber::prelude::*;

fn main() {
    tracing_subscriber::registry()
        .with(lockmeter::Layer::new())
        .with(tracing_subscriber::fmt::layer().with_writer(std::io::stderr))
        .init();

    let a = Arc::new(lockmeter::Mutex::named("account.a", 100u64));
    let b = Arc::new(lockmeter::Mutex::named("account.b", 100u64));
    let both_hold = Arc::new(Barrier::new(3));
    let transfer =
        |name: &str, from: Arc<lockmeter::Mutex<u64>>, to: Arc<lockmeter::Mutex<u64>>| {
            let go = both_hold.clone();
            thread::Builder::new()
                .name(name.into())
                .spawn(move || {
                    let mut from = from.lock();
                    go.wait();
                    let mut to = to.lock(); // blocks forever: the other thread holds it
                    *from -= 1;
                    *to += 1;
                })
                .expect("spawn")
        };
    let _ab = transfer("transfer-ab", a.clone(), b.clone());
    let _ba = transfer("transfer-ba", b.clone(), a.clone());
    both_hold.wait();
    thread::sleep(Duration::from_millis(50));
    let report = a.clone();
    let _report = thread::Builder::new()
        .name("report".into())
        .spawn(move || println!("{}", *report.lock()))
        .expect("spawn");
    println!("deadlocked");
    std::io::stdout().flush().ok();
    let mut sink = Vec::new();
    let _ = std::io::stdin().read_to_end(&mut sink);
    // The deadlocked threads cannot be joined; leave without them.
    std::process::exit(0);
}
