//! Seed 004: an HTTP server whose page copy runs under one big lock.
//!
//! A real HTTP/1.0 server on 127.0.0.1 ([`server`]) with a pool of worker
//! threads serves a 4 KiB page; each request copies and checksums the page
//! into the outgoing buffer, as `tcp_do_sendmsg` did with
//! `csum_and_copy_from_user`. In the "big lock" variant the copy runs
//! under one global lock, `bkl`, like the 2.2 kernel's `lock_kernel()`; in
//! the "dropped" variant the lock is released around the copy, as in
//! Andi Kleen's patch. A closed-loop client ([`client`]) with 8
//! connections drives it over loopback for a bounded time.
//!
//! A copy of 4 KiB takes a microsecond today, far less of a request's cost
//! than in 1999, so the copy makes `copy_passes` passes over the page to
//! give it the share of a request it had then; `docs/results.md` says how
//! that was chosen.

pub mod client;
pub mod server;

use std::io;
use std::time::Duration;

use lockmeter::Handle;
use lockmeter_model::Snapshot;
use serde::{Deserialize, Serialize};

use crate::report::{distinct, fixed, Outcome, TextTable};
use server::{Server, ServerConfig};

/// The big lock.
pub const BKL: &str = "bkl";
/// Passes over the page per copy, by default.
pub const DEFAULT_COPY_PASSES: u32 = 128;

seed_enum! {
    /// Whether the copy runs under the big lock.
    #[derive(clap::ValueEnum)]
    pub enum Variant {
        /// The copy under the lock (2.2.8).
        BigLock = ("big_lock", "copy under big lock"),
        /// The lock dropped around the copy (the patch).
        Dropped = ("dropped", "lock dropped around copy"),
    }
}

/// Sizes of a run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    /// Worker pool sizes to measure (the seed: 1 CPU and 4 CPUs).
    pub workers: Vec<usize>,
    /// Concurrent client connections (`ab -c 8`).
    pub concurrency: usize,
    /// Load time per measurement.
    pub duration: Duration,
    pub copy_passes: u32,
    pub variants: Vec<Variant>,
}

impl Config {
    pub fn full() -> Config {
        Config {
            workers: vec![1, 4],
            concurrency: 8,
            duration: Duration::from_secs(5),
            copy_passes: DEFAULT_COPY_PASSES,
            variants: Variant::ALL.to_vec(),
        }
    }

    pub fn quick() -> Config {
        Config {
            duration: Duration::from_millis(1500),
            ..Config::full()
        }
    }
}

/// One variant with one pool size.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Row {
    pub variant: Variant,
    pub workers: usize,
    pub seconds: f64,
    /// Responses the clients received complete.
    pub requests: u64,
    pub errors: u64,
    pub requests_per_sec: f64,
    /// Requests the server counted (the clients' plus a few cut off by
    /// the deadline).
    pub served: u64,
    pub bkl_acquisitions: u64,
    pub bkl_util_pct: f64,
    pub bkl_con_pct: f64,
    pub bkl_hold_mean_ns: u64,
    /// The call site holding the lock longest in total, and its share of
    /// all hold time.
    pub top_site: String,
    pub top_site_hold_share_pct: f64,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Results {
    pub copy_passes: u32,
    pub concurrency: usize,
    pub rows: Vec<Row>,
}

impl Results {
    pub fn get(&self, variant: Variant, workers: usize) -> Option<&Row> {
        self.rows
            .iter()
            .find(|r| r.variant == variant && r.workers == workers)
    }
}

/// Measures every variant with every pool size; keeps the snapshots of
/// the largest pool.
pub fn run(cfg: &Config, handle: &Handle) -> io::Result<Outcome<Results>> {
    let mut out = Outcome::new(Results {
        copy_passes: cfg.copy_passes,
        concurrency: cfg.concurrency,
        rows: Vec::new(),
    });
    let largest = cfg.workers.iter().copied().max().unwrap_or(1);
    for &workers in &cfg.workers {
        for &variant in &cfg.variants {
            eprintln!(
                "bkl_server: {variant}, {workers} worker(s), {} clients for {:.1} s",
                cfg.concurrency,
                cfg.duration.as_secs_f64()
            );
            let (row, snap) = run_one(variant, workers, cfg, handle)?;
            if workers == largest {
                out.keep_run(
                    variant.name(),
                    format!("{variant}, {workers} workers"),
                    snap,
                    BKL,
                );
            }
            out.results.rows.push(row);
        }
    }
    Ok(out)
}

/// One measurement: start a server, load it, stop it.
pub fn run_one(
    variant: Variant,
    workers: usize,
    cfg: &Config,
    handle: &Handle,
) -> io::Result<(Row, Snapshot)> {
    let server = Server::start(ServerConfig {
        variant,
        workers,
        copy_passes: cfg.copy_passes,
        port: 0,
    })?;
    handle.reset();
    let load = client::drive(server.addr(), cfg.concurrency, cfg.duration);
    let snap = handle.snapshot();
    let served = server.stop()?;
    let load = load?;
    Ok((row(variant, workers, &load, served, &snap), snap))
}

/// The row of one measurement, from the client's counts and the snapshot.
pub fn row(
    variant: Variant,
    workers: usize,
    load: &client::Load,
    served: u64,
    snap: &Snapshot,
) -> Row {
    let lock = snap.lock(BKL);
    let total = lock.map(|l| l.total.clone()).unwrap_or_default();
    let top = lock.and_then(|l| l.sites.iter().max_by_key(|s| s.stats.hold_ns.total));
    Row {
        variant,
        workers,
        seconds: load.seconds,
        requests: load.ok,
        errors: load.errors,
        requests_per_sec: load.requests_per_sec(),
        served,
        bkl_acquisitions: total.acquisitions,
        bkl_util_pct: total.util_pct(snap.window.elapsed_ns),
        bkl_con_pct: total.con_pct(),
        bkl_hold_mean_ns: total.hold_ns.mean(),
        top_site: top.map(|s| s.site.clone()).unwrap_or_default(),
        top_site_hold_share_pct: top.map_or(0.0, |s| {
            lockmeter_model::percent(s.stats.hold_ns.total, total.hold_ns.total)
        }),
    }
}

/// Serves with one variant until `duration` passes, for `ab` or `wrk`;
/// `on_listening` is told the address first. Returns the requests served
/// and the snapshot of the whole time.
pub fn serve_for(
    cfg: ServerConfig,
    duration: Duration,
    handle: &Handle,
    on_listening: impl FnOnce(std::net::SocketAddr),
) -> io::Result<(u64, Snapshot)> {
    let server = Server::start(cfg)?;
    on_listening(server.addr());
    handle.reset();
    std::thread::sleep(duration);
    let snap = handle.snapshot();
    let served = server.stop()?;
    Ok((served, snap))
}

/// The results in the shape of the seed's: requests/s per pool size,
/// before and after.
pub fn render(results: &Results) -> String {
    let pools = distinct(results.rows.iter().map(|r| r.workers));
    let mut t = TextTable::new(
        &[
            "Workers",
            "big lock (req/s)",
            "dropped (req/s)",
            "gain",
            "bkl UTIL before",
            "after",
            "errors",
        ],
        0,
    );
    for w in pools {
        let before = results.get(Variant::BigLock, w);
        let after = results.get(Variant::Dropped, w);
        let rps = |r: Option<&Row>| r.map_or("-".into(), |r| fixed(r.requests_per_sec, 0));
        let util =
            |r: Option<&Row>| r.map_or("-".into(), |r| format!("{}%", fixed(r.bkl_util_pct, 1)));
        let gain = match (before, after) {
            (Some(b), Some(a)) if b.requests_per_sec > 0.0 => {
                format!("x{}", fixed(a.requests_per_sec / b.requests_per_sec, 2))
            }
            _ => "-".into(),
        };
        let errors: u64 = [before, after].iter().flatten().map(|r| r.errors).sum();
        t.row(vec![
            w.to_string(),
            rps(before),
            rps(after),
            gain,
            util(before),
            util(after),
            errors.to_string(),
        ]);
    }
    format!(
        "HTTP/1.0 server, 4 KiB page, {} clients, copy of {} passes (seed 004: ab -c 8; 4 CPUs 350.95 -> 1334.19 req/s, 1 CPU 1540.22)\n{}",
        results.concurrency,
        results.copy_passes,
        t.render()
    )
}
