//! Seed 002: a pipe whose buffer is guarded by a semaphore (rows
//! `pipe.sem`, `pipe.sem.lock`, `pipe.sem.wait`) or by a spinlock.
//!
//! `cargo run --release --example pipe_contention [-- --quick] [--json] [--dump DIR]`

use std::process::ExitCode;

use clap::Parser;
use seed_harness::{pipe, report, CommonArgs, RepeatArgs};

/// Pipe contention: semaphore vs spinlock around a briefly held buffer.
#[derive(Debug, Parser)]
struct Args {
    #[command(flatten)]
    common: CommonArgs,
    /// Messages through the pipe [default: 500000, --quick: 50000]
    #[arg(long, value_name = "N")]
    messages: Option<u64>,
    #[command(flatten)]
    runs: RepeatArgs,
}

fn main() -> ExitCode {
    let args = Args::parse();
    let mut cfg = args.common.sizes(pipe::Config::quick, pipe::Config::full);
    if let Some(m) = args.messages {
        cfg.messages = m;
    }
    args.runs.apply(&mut cfg.repeats, &mut cfg.pin);
    report::measure(
        &args.common,
        "pipe_contention",
        |h| pipe::run(&cfg, h),
        pipe::render,
    )
}
