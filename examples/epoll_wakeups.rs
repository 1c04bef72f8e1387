//! Seed 003: an epoll-like ready list whose lock also protects its wait
//! queue; nested locks vs the locked wait-queue operations.
//!
//! `cargo run --release --example epoll_wakeups [-- --quick] [--json] [--dump DIR]`

use std::process::ExitCode;

use clap::Parser;
use seed_harness::{epoll, report, CommonArgs, RepeatArgs};

/// epoll wakeups: one lock acquisition fewer per event.
#[derive(Debug, Parser)]
struct Args {
    #[command(flatten)]
    common: CommonArgs,
    /// Events per run [default: 2000000, --quick: 200000]
    #[arg(long, value_name = "N")]
    events: Option<u64>,
    /// Worker threads in epoll_wait
    #[arg(long, value_name = "N", default_value_t = 2)]
    workers: usize,
    #[command(flatten)]
    runs: RepeatArgs,
}

fn main() -> ExitCode {
    let args = Args::parse();
    let mut cfg = args.common.sizes(epoll::Config::quick, epoll::Config::full);
    if let Some(e) = args.events {
        cfg.events = e;
    }
    args.runs.apply(&mut cfg.repeats, &mut cfg.pin);
    cfg.workers = args.workers.max(1);
    cfg.connections = cfg.connections.max(4 * cfg.workers);
    report::measure(
        &args.common,
        "epoll_wakeups",
        |h| epoll::run(&cfg, h),
        epoll::render,
    )
}
