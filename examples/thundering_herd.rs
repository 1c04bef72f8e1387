//! Seed 000: N threads sleep in an `accept()`-like wait; each connection
//! wakes all of them (wake-all) or one (exclusive wake-one, FIFO or LIFO).
//!
//! `cargo run --release --example thundering_herd [-- --quick] [--json] [--dump DIR]`

use std::process::ExitCode;

use clap::Parser;
use seed_harness::{herd, report, CommonArgs};

/// Thundering herd: wake-all vs exclusive wake-one on an accept queue.
#[derive(Debug, Parser)]
struct Args {
    #[command(flatten)]
    common: CommonArgs,
    /// Connections per run [default: 10000, --quick: 1000]
    #[arg(long, value_name = "N")]
    connections: Option<u64>,
    /// Numbers of sleeping servers, comma-separated
    /// [default: 1,2,4,100,200,400,600,1000, --quick: 1,4,100,400]
    #[arg(long, value_name = "N,..", value_delimiter = ',')]
    sleepers: Option<Vec<usize>>,
}

fn main() -> ExitCode {
    let args = Args::parse();
    let mut cfg = args.common.sizes(herd::Config::quick, herd::Config::full);
    if let Some(c) = args.connections {
        cfg.connections = c;
    }
    if let Some(s) = args.sleepers {
        cfg.sleepers = s;
    }
    report::measure(
        &args.common,
        "thundering_herd",
        |h| herd::run(&cfg, h),
        herd::render,
    )
}
