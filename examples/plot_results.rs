//! Draws the SVG figures of docs/results.md from the examples' --json
//! outputs.
//!
//! ```text
//! mkdir -p target/seed-results
//! for ex in thundering_herd keyed_wakeups pipe_contention epoll_wakeups bkl_server; do
//!     cargo run --release --example $ex -- --json > target/seed-results/$ex.json
//! done
//! cargo run --release --example plot_results -- target/seed-results docs/img
//! ```
//!
//! `--tables` also prints the numbers as Markdown tables.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Parser;
use serde::de::DeserializeOwned;

use seed_harness::plot::{self, markdown, Figure};
use seed_harness::Report;

/// Draw docs/img/*.svg from <example>.json files written with --json.
#[derive(Debug, Parser)]
struct Args {
    /// Directory holding thundering_herd.json, keyed_wakeups.json, ...
    #[arg(default_value = "target/seed-results")]
    input: PathBuf,
    /// Directory to write the SVG files to
    #[arg(default_value = "docs/img")]
    output: PathBuf,
    /// Also print the numbers as Markdown tables on stdout
    #[arg(long)]
    tables: bool,
}

fn main() -> ExitCode {
    let args = Args::parse();
    let mut figures: Vec<Figure> = Vec::new();
    let mut missing = 0;
    let mut load = |name: &str| -> Option<String> {
        let path = args.input.join(format!("{name}.json"));
        match std::fs::read_to_string(&path) {
            Ok(text) => Some(text),
            Err(e) => {
                eprintln!("skipping {}: {e}", path.display());
                missing += 1;
                None
            }
        }
    };
    let herd = load("thundering_herd");
    let keyed = load("keyed_wakeups");
    let pipe = load("pipe_contention");
    let epoll = load("epoll_wakeups");
    let bkl = load("bkl_server");
    let mut bad = 0;
    let mut tables = String::new();
    let mut add = |figs: Option<(Vec<Figure>, String)>| match figs {
        Some((f, t)) => {
            figures.extend(f);
            tables.push_str(&t);
            tables.push('\n');
        }
        None => bad += 1,
    };
    if let Some(t) = herd {
        add(parse(&t, "thundering_herd").map(|r| (plot::herd(&r), markdown::herd(&r))));
    }
    if let Some(t) = keyed {
        add(parse(&t, "keyed_wakeups").map(|r| (plot::keyed(&r), markdown::keyed(&r))));
    }
    if let Some(t) = pipe {
        add(parse(&t, "pipe_contention").map(|r| (plot::pipe(&r), markdown::pipe(&r))));
    }
    if let Some(t) = epoll {
        add(parse(&t, "epoll_wakeups").map(|r| (plot::epoll(&r), markdown::epoll(&r))));
    }
    if let Some(t) = bkl {
        add(parse(&t, "bkl_server").map(|r| (plot::bkl(&r), markdown::bkl(&r))));
    }
    if args.tables {
        print!("{tables}");
    }
    if let Err(e) = std::fs::create_dir_all(&args.output) {
        eprintln!("error: cannot create {}: {e}", args.output.display());
        return ExitCode::FAILURE;
    }
    let mut failed = bad > 0;
    for (name, svg) in &figures {
        let path: &Path = &args.output.join(name);
        match std::fs::write(path, svg) {
            Ok(()) => eprintln!("wrote {}", path.display()),
            Err(e) => {
                eprintln!("error: cannot write {}: {e}", path.display());
                failed = true;
            }
        }
    }
    if figures.is_empty() || failed {
        if missing == 5 {
            eprintln!("no results found; see the command in this example's doc comment");
        }
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}

/// Parses one example's report, saying what is wrong if it is not one.
fn parse<R: DeserializeOwned>(text: &str, example: &str) -> Option<Report<R>> {
    match serde_json::from_str::<Report<R>>(text) {
        Ok(r) if r.example == example => Some(r),
        Ok(r) => {
            eprintln!("error: {example}.json holds results of {:?}", r.example);
            None
        }
        Err(e) => {
            eprintln!("error: {example}.json is not a --json report of {example}: {e}");
            None
        }
    }
}
