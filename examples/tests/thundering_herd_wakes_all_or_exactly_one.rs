//! Seed 000: non-exclusive waits wake every sleeper, so each connection
//! costs `sleepers - 1` spurious wakeups; exclusive waits (FIFO or LIFO)
//! wake exactly one sleeper per connection and none in vain.

mod common;

use common::{lock, measured};
use seed_harness::herd::{self, Variant, QUEUE};

const SLEEPERS: usize = 8;
const CONNECTIONS: u64 = 60;

fn run(variant: Variant) -> (herd::Row, lockmeter_model::Snapshot) {
    measured("herd run", |h| {
        herd::run_one(variant, SLEEPERS, CONNECTIONS, h)
    })
}

#[test]
fn wake_all_wakes_every_sleeper_and_all_but_one_sleep_again() {
    let (row, snap) = run(Variant::WakeAll);
    let n = SLEEPERS as u64;
    assert_eq!(row.wake_calls, CONNECTIONS);
    assert_eq!(row.wakeups, CONNECTIONS * n);
    assert_eq!(row.spurious_wakeups, CONNECTIONS * (n - 1));
    assert_eq!(row.spurious_per_connection, (n - 1) as f64);
    let q = &lock(&snap, QUEUE).total;
    assert_eq!(q.exclusive_wakeups, 0);
    assert_eq!(
        q.acquisitions, CONNECTIONS,
        "one successful accept per connection"
    );
}

/// An exclusive wait: one sleeper woken per connection, none in vain.
fn wakes_exactly_one_and_none_in_vain(variant: Variant) {
    let (row, snap) = run(variant);
    assert_eq!(row.wakeups, CONNECTIONS);
    assert_eq!(row.spurious_wakeups, 0);
    assert_eq!(lock(&snap, QUEUE).total.exclusive_wakeups, CONNECTIONS);
}

#[test]
fn exclusive_fifo_wakes_exactly_one_and_none_in_vain() {
    wakes_exactly_one_and_none_in_vain(Variant::WakeOneFifo);
}

#[test]
fn exclusive_lifo_wakes_exactly_one_and_none_in_vain() {
    wakes_exactly_one_and_none_in_vain(Variant::WakeOneLifo);
}

#[test]
fn wake_all_caps_its_connections_by_the_wakeup_budget() {
    let cfg = herd::Config::full();
    assert_eq!(cfg.connections_for(Variant::WakeAll, 4), 10_000);
    assert_eq!(cfg.connections_for(Variant::WakeAll, 1000), 200);
    assert_eq!(cfg.connections_for(Variant::WakeOneLifo, 1000), 10_000);
}

#[test]
fn the_table_has_a_line_per_number_of_servers() {
    let mut results = herd::Results::default();
    for v in Variant::ALL {
        results.rows.push(run(v).0);
    }
    let text = herd::render(&results);
    assert!(text.contains("Servers"), "{text}");
    let line = text
        .lines()
        .find(|l| l.trim_start().starts_with(&SLEEPERS.to_string()))
        .unwrap_or_else(|| panic!("no line for {SLEEPERS} servers:\n{text}"));
    assert!(
        line.contains("7.00"),
        "wake-all spurious per connection: {line}"
    );
}
