//! Seed 004: an HTTP/1.0 server on 127.0.0.1 copying its 4 KiB page under
//! one big lock, or with the lock dropped around the copy.
//!
//! `cargo run --release --example bkl_server [-- --quick] [--json] [--dump DIR]`
//! `cargo run --release --example bkl_server -- --serve 60 [--variant dropped] [--workers 4]`
//! then `ab -c 8 -t 30 http://127.0.0.1:PORT/4k.html` from another shell.

use std::io::Write;
use std::process::ExitCode;
use std::time::Duration;

use clap::Parser;
use seed_harness::bkl::{self, server::ServerConfig, Variant};
use seed_harness::report;
use seed_harness::{meter, CommonArgs, Outcome};

/// Big lock around the TCP copy: requests/s before and after dropping it.
#[derive(Debug, Parser)]
struct Args {
    #[command(flatten)]
    common: CommonArgs,
    /// Only serve, for SECONDS, printing the port; drive it with ab or wrk
    #[arg(long, value_name = "SECONDS")]
    serve: Option<u64>,
    /// Variant to serve with --serve
    #[arg(long, value_enum, default_value_t = Variant::BigLock)]
    variant: Variant,
    /// Port to serve on with --serve (0: any free port)
    #[arg(long, default_value_t = 0)]
    port: u16,
    /// Worker pool sizes, comma-separated (with --serve: the first)
    #[arg(long, value_name = "N,..", value_delimiter = ',', default_values_t = [1, 4])]
    workers: Vec<usize>,
    /// Concurrent client connections
    #[arg(long, value_name = "N", default_value_t = 8)]
    concurrency: usize,
    /// Seconds of load per measurement [default: 5, --quick: 1.5]
    #[arg(long, value_name = "SECONDS")]
    seconds: Option<f64>,
    /// Passes over the page per copy (the copy's cost)
    #[arg(long, value_name = "N", default_value_t = bkl::DEFAULT_COPY_PASSES)]
    copy_passes: u32,
}

fn main() -> ExitCode {
    let args = Args::parse();
    let handle = meter::install_global();
    if let Some(seconds) = args.serve {
        return serve(&args, seconds, &handle);
    }
    let mut cfg = args.common.sizes(bkl::Config::quick, bkl::Config::full);
    cfg.workers = args.workers.iter().map(|&w| w.max(1)).collect();
    cfg.concurrency = args.concurrency.max(1);
    cfg.copy_passes = args.copy_passes.max(1);
    if let Some(s) = args.seconds.filter(|s| s.is_finite() && *s > 0.0) {
        cfg.duration = Duration::from_secs_f64(s);
    }
    report::conclude(
        &args.common,
        "bkl_server",
        bkl::run(&cfg, &handle),
        bkl::render,
    )
}

/// `--serve`: serve until the time is up, then print the lock table.
fn serve(args: &Args, seconds: u64, handle: &lockmeter::Handle) -> ExitCode {
    let cfg = ServerConfig {
        variant: args.variant,
        workers: args.workers.first().copied().unwrap_or(4).max(1),
        copy_passes: args.copy_passes.max(1),
        port: args.port,
    };
    let announce = |addr: std::net::SocketAddr| {
        let mut err = std::io::stderr().lock();
        let _ = writeln!(
            err,
            "serving http://{addr}/4k.html for {seconds} s ({}, {} workers)\ntry: ab -c 8 -t 30 http://{addr}/4k.html",
            cfg.variant, cfg.workers
        );
        // The port alone on stdout, for scripts.
        println!("{}", addr.port());
        let _ = std::io::stdout().flush();
    };
    match bkl::serve_for(cfg, Duration::from_secs(seconds), handle, announce) {
        Ok((served, snap)) => {
            eprintln!("served {served} requests");
            let mut outcome = Outcome::new(served);
            outcome.keep_run(
                format!("{}-serve", cfg.variant.name()),
                format!("{}, {} workers, served {served}", cfg.variant, cfg.workers),
                snap,
                bkl::BKL,
            );
            if let Some(dir) = &args.common.dump {
                for run in &outcome.runs {
                    match report::write_dump(dir, "bkl_server", &run.variant, &run.snapshot) {
                        Ok(p) => eprintln!("dumped {}", p.display()),
                        Err(e) => eprintln!("error: cannot write dump: {e}"),
                    }
                }
            }
            eprint!("{}", report::human(&outcome, |_| String::new()));
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}
