//! `lockmeter-bench`: lockmeter's overhead against the bare locks, side by
//! side in one process.
//!
//! ```text
//! cargo run --release -p lockmeter-bench -- [--quick] [--json]
//! cargo run --release -p lockmeter-bench -- --callgrind [--only mutex,spinlock]
//! ```
//!
//! Unobserved rows are measured first, while no `lockmeter::Layer` exists
//! in the process. Then a layer is installed as the global default and the
//! observed rows, the cost breakdown, the wait-queue, memory and snapshot
//! rows follow. Every bare-vs-instrumented figure is the median of
//! interleaved pairwise ratios, printed with their interquartile range;
//! the table marks each goal PASS, MISS, or NOISY when that range spans
//! the goal. The exit status is 0 either way (timings are not a gate).
//! See docs/performance.md.
//!
//! With `--callgrind` the uncontended rows are instead counted in
//! instructions per operation under valgrind (see `callgrind.rs`).
//!
//! With `--prometheus` the layer also serves the Prometheus endpoint, and
//! the observed and contended rows are measured with a scraper fetching
//! `/metrics` every second and without, alternately (see `prometheus.rs`).

mod bare;
mod breakdown;
mod callgrind;
mod contended;
mod dropin;
mod floor;
mod host;
mod least;
mod library;
mod measure;
mod memory;
mod own_con;
mod placement;
mod prometheus;
mod report;
mod scrape_trace;
mod selfcost;
mod snapshot;
mod stacks;
mod steps;
mod transfer;
mod uncontended;
mod waitqueue;

use clap::Parser;
use tracing_subscriber::layer::SubscriberExt;

use crate::measure::Config;
use crate::report::Row;
use crate::steps::{Runner, Step};
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
    /// Time the single-thread rows in wall time, not in the thread's CPU
    /// time (which leaves out time spent preempted by other processes).
    #[arg(long)]
    wall_clock: bool,
    /// Run only these steps (comma-separated): unobserved, placement, components,
    /// stacks, observed, modes, contended, floor, least, memory, waitqueue,
    /// snapshot, selfcost; with
    /// --prometheus: observed, contended, trace, scrape; with --callgrind: the
    /// uncontended rows by name (spinlock, mutex, sync_mutex, ...).
    #[arg(long, value_delimiter = ',')]
    only: Vec<String>,
    /// Serve the Prometheus endpoint and compare the observed and
    /// contended rows scraped every second against not scraped.
    #[arg(long, conflicts_with = "callgrind")]
    prometheus: bool,
    /// With --prometheus: rounds of (scraper off, scraper on) per step
    /// [default: 7, 5 with --quick]. Its rows are judged by the 90 %
    /// confidence interval of the median per-round change, which narrows
    /// as rounds are added.
    #[arg(long, requires = "prometheus", value_parser = clap::value_parser!(u64).range(2..))]
    rounds: Option<u64>,
    /// Count the uncontended rows' instructions per operation under
    /// `valgrind --tool=callgrind` instead of timing them.
    #[arg(long)]
    callgrind: bool,
    /// Operations each callgrind child counts.
    #[arg(long, default_value_t = callgrind::DEFAULT_OPS, value_parser = clap::value_parser!(u64).range(1..))]
    callgrind_ops: u64,
    /// Internal: run one side of one row as a callgrind child (WHAT:SIDE).
    #[arg(long, hide = true)]
    callgrind_child: Option<String>,
    /// How many more times a step runs, at the end of its phase, while one
    /// of its goal rows is SHARED (measured on a shared core); its calmest
    /// attempt is kept [default: 2, 0 with --quick].
    #[arg(long)]
    retries: Option<usize>,
}

/// A step for [`Runner::phase`].
fn step<'a>(name: &'static str, f: impl FnMut() -> Vec<Row> + 'a) -> Step<'a> {
    (name, Box::new(f))
}

fn main() {
    let args = Args::parse();
    if let Some(spec) = &args.callgrind_child {
        if let Err(e) = callgrind::child(spec, args.callgrind_ops) {
            eprintln!("lockmeter-bench: {e}");
            std::process::exit(2);
        }
        return;
    }
    if args.callgrind {
        let known: Vec<&str> = uncontended::OPS.iter().map(|o| o.what).collect();
        if let Some(bad) = args.only.iter().find(|o| !known.contains(&o.as_str())) {
            eprintln!(
                "lockmeter-bench: --callgrind --only: no uncontended row {bad:?}; the rows are: {}",
                known.join(", ")
            );
            std::process::exit(2);
        }
        let rows = callgrind::rows(&args.only, args.callgrind_ops);
        print_rows(&args, &rows);
        return;
    }
    let mut cfg = Config::new(args.quick);
    if args.wall_clock {
        cfg.timer = measure::Timer::Wall;
    }
    let retries = args.retries.unwrap_or(if args.quick { 0 } else { 2 });
    let mut runner = Runner::new(args.only.clone(), retries);

    // No Layer exists yet: the instrumented locks run their plain path.
    runner.phase(vec![
        step("unobserved", || {
            let mut rows = uncontended::rows(&cfg, Phase::Unobserved);
            rows.extend(dropin::rows(&cfg, Phase::Unobserved));
            rows
        }),
        step("placement", || placement::rows(&cfg, Phase::Unobserved)),
    ]);

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
        runner.phase(vec![
            step("observed", || {
                prometheus::compare(&cfg, &scraper, args.rounds, &mut || {
                    uncontended::rows(&cfg, Phase::Observed)
                })
            }),
            step("contended", || {
                prometheus::compare(&cfg, &scraper, args.rounds, &mut || {
                    contended::rows(&cfg, &handle)
                })
            }),
            step("trace", || scrape_trace::rows(&cfg, &scraper)),
        ]);
        eprintln!("{} scrapes", scraper.scrapes());
        runner.phase(vec![step("scrape", || vec![scraper.cost_row()])]);
    } else {
        // The recorder's first snapshot calibrates self-accounting: taken
        // here, between host probes, so that the `selfcost` rows can tell
        // whether the core was shared differently then (see `host.rs`).
        let ((), calibrated_at) = host::around(|| drop(handle.cumulative()));
        runner.phase(vec![
            step("components", || breakdown::components(&cfg)),
            step("stacks", || stacks::rows(&cfg)),
            step("observed", || {
                let mut rows = uncontended::rows(&cfg, Phase::Observed);
                rows.extend(dropin::rows(&cfg, Phase::Observed));
                rows.extend(library::rows(&cfg));
                rows
            }),
            step("placement", || placement::rows(&cfg, Phase::Observed)),
            step("modes", || uncontended::mode_rows(&cfg)),
            step("contended", || contended::rows(&cfg, &handle)),
            step("floor", || floor::rows(&cfg)),
            step("least", || least::rows(&cfg)),
            step("memory", memory::rows),
            step("waitqueue", || waitqueue::rows(&cfg)),
            step("snapshot", || snapshot::rows(&cfg)),
            step("selfcost", || selfcost::rows(&cfg, &handle, calibrated_at)),
        ]);
    }
    runner.done();
    if let Some(bad) = args.only.iter().find(|o| !runner.offered.contains(o)) {
        eprintln!(
            "lockmeter-bench: --only: no step {bad:?} in this mode; the steps are: {}",
            runner.offered.join(", ")
        );
        std::process::exit(2);
    }
    let mut rows = runner.rows;
    least::note_floors(&mut rows);
    rows.extend(transfer::summary_row());
    print_rows(&args, &rows);
}

fn print_rows(args: &Args, rows: &[Row]) {
    if args.json {
        println!("{}", report::json(rows));
    } else {
        print!("{}", report::table(rows));
    }
}
