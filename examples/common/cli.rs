//! The options every seed example shares.

use std::path::PathBuf;

use clap::Args;

/// `--quick`, `--json` and `--dump DIR`, flattened into each example's
/// own arguments.
#[derive(Debug, Clone, Default, Args)]
pub struct CommonArgs {
    /// CI-sized run: fewer iterations, well under 20 s in release on 2 cores
    #[arg(long)]
    pub quick: bool,
    /// Print the results as JSON on stdout, and nothing else on stdout
    #[arg(long)]
    pub json: bool,
    /// Write a v1 snapshot per variant to DIR/EXAMPLE-VARIANT.json,
    /// for `lockmeter diff` and `lockmeter view`
    #[arg(long, value_name = "DIR")]
    pub dump: Option<PathBuf>,
}

impl CommonArgs {
    /// The experiment's sizes: `quick()` under `--quick`, else `full()`.
    pub fn sizes<T>(&self, quick: impl FnOnce() -> T, full: impl FnOnce() -> T) -> T {
        if self.quick {
            quick()
        } else {
            full()
        }
    }
}

/// `--repeats N` and `--no-pin`, for the experiments whose runs are short
/// and noisy: each variant runs several times, in turns, on pinned threads.
#[derive(Debug, Clone, Default, Args)]
pub struct RepeatArgs {
    /// Runs per variant, alternating; the median is reported
    /// [default: 3 (pipe), 5 (epoll); --quick: 1]
    #[arg(long, value_name = "N")]
    pub repeats: Option<usize>,
    /// Let the scheduler place the threads instead of pinning them
    #[arg(long)]
    pub no_pin: bool,
}

impl RepeatArgs {
    /// Sets the experiment's `repeats` (at least 1) where `--repeats` was
    /// given, and `pin` unless `--no-pin` was.
    pub fn apply(&self, repeats: &mut usize, pin: &mut bool) {
        if let Some(r) = self.repeats {
            *repeats = r.max(1);
        }
        *pin = !self.no_pin;
    }
}
