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
//!
//! With `--prometheus` the layer also serves the Prometheus endpoint, and
//! the observed and contended rows are measured with a scraper fetching
//! `/metrics` every second and without, alternately (see `prometheus.rs`).

mod bare;
mod breakdown;
mod contended;
mod dropin;
mod measure;
mod memory;
mod prometheus;
mod report;
mod selfcost;
mod snapshot;
mod stacks;
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
    /// stacks, observed, modes, contended, memory, waitqueue, snapshot; with
    /// --prometheus: observed, contended, scrape.
    #[arg(long, value_delimiter = ',')]
    only: Vec<String>,
    /// Serve the Prometheus endpoint and compare the observed and
    /// contended rows scraped every second against not scraped.
    #[arg(long)]
    prometheus: bool,
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

    let layer = if args.prometheus {
        let config = lockmeter::export::ExportConfig::default()
            .prometheus(std::net::SocketAddr::from(([127, 0, 0, 1], 0)))
            .quiet(true);
        lockmeter::Layer::builder().export(config).build()
    } else {
        lockmeter::Layer::new()
    };
    let handle = layer.handle();
    let prometheus = layer
        .exporter()
        .and_then(lockmeter::export::Exporter::prometheus_addr);
    if let Err(e) =
        tracing::subscriber::set_global_default(tracing_subscriber::registry().with(layer))
    {
        eprintln!("could not install the lockmeter layer globally: {e}; observed rows skipped");
    } else if let Some(addr) = prometheus {
        let scraper = prometheus::Scraper::start(addr);
        step("observed", &mut || {
            prometheus::compare(&scraper, &mut || uncontended::rows(&cfg, Phase::Observed))
        });
        step("contended", &mut || {
            prometheus::compare(&scraper, &mut || contended::rows(&cfg, &handle))
        });
        eprintln!("{} scrapes", scraper.scrapes());
        step("scrape", &mut || vec![scraper.cost_row()]);
    } else {
        step("components", &mut || breakdown::components(&cfg));
        step("stacks", &mut || stacks::rows(&cfg));
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
        step("selfcost", &mut || selfcost::rows(&cfg, &handle));
    }
    eprintln!("[{:>5.1}s] done", started.elapsed().as_secs_f64());

    if args.json {
        println!("{}", report::json(&rows));
    } else {
        print!("{}", report::table(&rows));
    }
}
