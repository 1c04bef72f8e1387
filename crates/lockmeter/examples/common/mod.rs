//! What the demo programs that tests drive share: exact work spread over
//! threads, and the `ready` handshake with the test that runs them.

use std::io::{Read, Write};
use std::sync::Arc;
use std::thread;

/// A demo's numbers, in the order its usage line gives them.
pub struct DemoArgs {
    numbers: Vec<u64>,
}

impl DemoArgs {
    /// The program's arguments: numbers, and any of `flags` (returned as
    /// whether each was given). Anything else prints `usage` and exits
    /// with status 2.
    pub fn parse<const N: usize>(usage: &str, flags: [&str; N]) -> (DemoArgs, [bool; N]) {
        let mut numbers = Vec::new();
        let mut given = [false; N];
        for arg in std::env::args().skip(1) {
            if let Some(i) = flags.iter().position(|f| *f == arg) {
                given[i] = true;
            } else if let Ok(n) = arg.parse::<u64>() {
                numbers.push(n);
            } else {
                eprintln!("{usage}");
                std::process::exit(2);
            }
        }
        (DemoArgs { numbers }, given)
    }

    /// The `i`-th number given, or `default`.
    pub fn number(&self, i: usize, default: u64) -> u64 {
        self.numbers.get(i).copied().unwrap_or(default)
    }
}

/// Runs `op` exactly `total` times, spread over `threads` threads, and
/// returns when all are done. The first thread also takes the remainder,
/// so the sum is exact. `op` is written by the caller, so the locks it
/// takes are charged to the caller's call site.
pub fn spread_over_threads(total: u64, threads: u64, op: impl Fn() + Send + Sync + 'static) {
    let threads = threads.max(1);
    let op = Arc::new(op);
    let workers: Vec<_> = (0..threads)
        .map(|i| {
            let op = Arc::clone(&op);
            let share = total / threads + if i == 0 { total % threads } else { 0 };
            thread::spawn(move || {
                for _ in 0..share {
                    op();
                }
            })
        })
        .collect();
    for w in workers {
        w.join().expect("a worker panicked");
    }
}

/// Prints `line` (e.g. `ready 1000`) on stdout for the driving test, then
/// blocks until standard input closes.
pub fn say_ready_and_wait_for_stdin(line: &str) {
    println!("{line}");
    let _ = std::io::stdout().flush();
    let _ = std::io::stdin().read_to_end(&mut Vec::new());
}
