//! Seed 001: UDP-like ping-pong where TX completion wakes the blocked
//! receiver; plain vs keyed wakeups, on one CPU and on two.
//!
//! `cargo run --release --example keyed_wakeups [-- --quick] [--json] [--dump DIR]`

use std::process::ExitCode;

use clap::Parser;
use seed_harness::{keyed, report, CommonArgs};

/// Keyed wakeups: TX completion no longer wakes a blocked receiver.
#[derive(Debug, Parser)]
struct Args {
    #[command(flatten)]
    common: CommonArgs,
    /// Round trips per line [default: 20000, --quick: 1000]
    #[arg(long, value_name = "N")]
    rounds: Option<u64>,
}

fn main() -> ExitCode {
    let args = Args::parse();
    let mut cfg = args.common.sizes(keyed::Config::quick, keyed::Config::full);
    if let Some(r) = args.rounds {
        cfg.rounds = r;
    }
    report::measure(
        &args.common,
        "keyed_wakeups",
        |h| keyed::run(&cfg, h),
        keyed::render,
    )
}
