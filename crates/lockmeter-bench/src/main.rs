//! `lockmeter-bench`: lockmeter's overhead against the bare locks, side by
//! side in one process.
//!
//! ```text
//! cargo run --release -p lockmeter-bench -- [--quick] [--json]
//! ```
//!
//! Unobserved rows are measured first, while no `lockmeter::Layer` exists
//! in the process. Then a layer is installed as the global default and the
//! observed rows, the cost breakdown, the wait-queue, memory and snapshot
//! rows follow. The table marks each goal PASS or MISS; the exit status is
//! 0 either way (timings are not a gate). See docs/performance.md.

mod bare;
mod breakdown;
mod contended;
mod dropin;
mod measure;
mod memory;
mod report;
mod snapshot;
mod uncontended;
mod waitqueue;

use std::time::Instant;

use clap::Parser;
use tracing_subscriber::layer::SubscriberExt;

use crate::measure::Config;
use crate::report::Row;
use crate::uncontended::Phase;

/// Measure lockmeter's overhead against the bare primitives.
#[derive(Debug, Parser)]
#[command(version, about)]
struct Args {
    /// A shorter run (under a minute) with fewer, shorter repetitions.
    #[arg(long)]
    quick: bool,
    /// Print one JSON object keyed by row instead of the table.
    #[arg(long)]
    json: bool,
    /// Run only these steps (comma-separated): unobserved, components,
    /// observed, modes, contended, memory, waitqueue, snapshot.
    #[arg(long, value_delimiter = ',')]
    only: Vec<String>,
}

fn main() {
    let args = Args::parse();
    let cfg = Config::new(args.quick);
    let started = Instant::now();
    let mut rows: Vec<Row> = Vec::new();
    let only = args.only.clone();
    let mut step = |name: &str, f: &mut dyn FnMut() -> Vec<Row>| {
        if !only.is_empty() && !only.iter().any(|o| o == name) {
            return;
        }
        eprintln!("[{:>5.1}s] {name}", started.elapsed().as_secs_f64());
        rows.extend(f());
    };

    // No Layer exists yet: the instrumented locks run their plain path.
    step("unobserved", &mut || {
        let mut rows = uncontended::rows(&cfg, Phase::Unobserved);
        rows.extend(dropin::rows(&cfg, Phase::Unobserved));
        rows
    });

    let layer = lockmeter::Layer::new();
    let handle = layer.handle();
    if let Err(e) =
        tracing::subscriber::set_global_default(tracing_subscriber::registry().with(layer))
    {
        eprintln!("could not install the lockmeter layer globally: {e}; observed rows skipped");
    } else {
        step("components", &mut || breakdown::components(&cfg));
        step("observed", &mut || {
            let mut rows = uncontended::rows(&cfg, Phase::Observed);
            rows.extend(dropin::rows(&cfg, Phase::Observed));
            rows
        });
        step("modes", &mut || uncontended::mode_rows(&cfg));
        step("contended", &mut || contended::rows(&cfg, &handle));
        step("memory", &mut memory::rows);
        step("waitqueue", &mut || waitqueue::rows(&cfg));
        step("snapshot", &mut || snapshot::rows(&cfg));
    }
    eprintln!("[{:>5.1}s] done", started.elapsed().as_secs_f64());

    if args.json {
        println!("{}", report::json(&rows));
    } else {
        print!("{}", report::table(&rows));
    }
}
