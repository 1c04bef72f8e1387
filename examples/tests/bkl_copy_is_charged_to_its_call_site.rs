//! Seed 004: with the copy under the big lock, all of the lock's hold time
//! is charged to the one call site around the copy; with the lock dropped
//! around the copy, two short sections remain, taken once per request
//! each. The built-in client and the `--serve` mode both get the page.

mod common;

use std::time::Duration;

use common::{lock, measured};
use seed_harness::bkl::server::ServerConfig;
use seed_harness::bkl::{self, client, Variant, BKL};
use seed_harness::meter::observe;

const WORKERS: usize = 2;

fn cfg() -> bkl::Config {
    bkl::Config {
        workers: vec![WORKERS],
        concurrency: 4,
        duration: Duration::from_millis(400),
        copy_passes: 4,
        variants: Variant::ALL.to_vec(),
    }
}

fn run(variant: Variant) -> (bkl::Row, lockmeter_model::Snapshot) {
    measured("server run", |h| bkl::run_one(variant, WORKERS, &cfg(), h))
}

#[test]
fn the_big_lock_is_held_at_one_site_around_the_copy() {
    let (row, snap) = run(Variant::BigLock);
    assert!(row.requests > 0);
    assert_eq!(row.errors, 0);
    let l = lock(&snap, BKL);
    assert_eq!(l.sites.len(), 1, "one call site: the copy");
    assert!(row.top_site.contains("bkl/server.rs"), "{}", row.top_site);
    assert_eq!(row.top_site_hold_share_pct, 100.0);
    // Every request in the window took the lock once.
    assert!(l.total.acquisitions >= row.requests);
    assert!(l.total.acquisitions <= row.served);
}

#[test]
fn dropping_the_lock_leaves_two_short_sections_per_request() {
    let (before, _) = run(Variant::BigLock);
    let (after, snap) = run(Variant::Dropped);
    assert!(after.requests > 0);
    assert_eq!(after.errors, 0);
    let l = lock(&snap, BKL);
    assert_eq!(l.sites.len(), 2, "lock before and after the copy");
    let (a, b) = (l.sites[0].stats.acquisitions, l.sites[1].stats.acquisitions);
    assert!(a.abs_diff(b) <= WORKERS as u64, "{a} vs {b}");
    assert!(
        after.bkl_hold_mean_ns < before.bkl_hold_mean_ns,
        "the copy no longer runs under the lock: {} ns vs {} ns",
        after.bkl_hold_mean_ns,
        before.bkl_hold_mean_ns
    );
}

#[test]
fn serve_mode_answers_a_client_on_loopback() {
    let (_, out) = observe(|h| {
        let cfg = ServerConfig {
            variant: Variant::Dropped,
            workers: 1,
            copy_passes: 1,
            port: 0,
        };
        let mut fetched = None;
        let served = bkl::serve_for(cfg, Duration::from_millis(300), h, |addr| {
            fetched = Some(std::thread::spawn(move || client::fetch(addr)));
        });
        (served, fetched)
    });
    let (served, fetched) = out;
    let fetched = fetched
        .expect("listening callback ran")
        .join()
        .expect("client thread");
    assert!(fetched.is_ok(), "{fetched:?}");
    let (count, _snap) = served.expect("serve");
    assert_eq!(count, 1);
}

#[test]
fn csum_and_copy_copies_and_sums_like_the_internet_checksum() {
    let mut src = [0u8; bkl::server::PAGE_BYTES];
    src[0] = 0x45;
    src[1] = 0x00;
    src[2] = 0x00;
    src[3] = 0x1c;
    let mut dst = [0xffu8; bkl::server::PAGE_BYTES];
    let sum = bkl::server::csum_and_copy(&src, &mut dst, 3);
    assert_eq!(src, dst);
    assert_eq!(sum, !(0x4500u16 + 0x001c));
}
