//! What the demo programs that tests drive share: exact work spread over
//! threads, and the `ready` handshake with the test that runs them.

use std::io::{Read, Write};
use std::sync::Arc;
use std::thread;

/// A demo's command line: numbers in a fixed order, and a few flags.
pub struct DemoArgs {
    numbers: Vec<u64>,
    flags: Vec<String>,
}

impl DemoArgs {
    /// The program's arguments: each one of `flags` or a number. Anything
    /// else prints `usage` and exits with status 2.
    pub fn parse(usage: &str, flags: &[&str]) -> DemoArgs {
        let mut args = DemoArgs {
            numbers: Vec::new(),
            flags: Vec::new(),
        };
        for arg in std::env::args().skip(1) {
            if flags.contains(&arg.as_str()) {
                args.flags.push(arg);
            } else if let Ok(n) = arg.parse::<u64>() {
                args.numbers.push(n);
            } else {
                eprintln!("{usage}");
                std::process::exit(2);
            }
        }
        args
    }

    /// The `i`-th number given, or `default`.
    pub fn number(&self, i: usize, default: u64) -> u64 {
        self.numbers.get(i).copied().unwrap_or(default)
    }

    /// Whether `flag` was given.
    pub fn has(&self, flag: &str) -> bool {
        self.flags.iter().any(|f| f == flag)
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
