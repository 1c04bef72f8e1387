//! Repeated runs of the variants of a noisy measurement (pipe, epoll),
//! alternating so that no variant gets all the quiet moments.

use std::fmt;
use std::io;

/// Runs each of `variants` `repeats` times (at least once), in turns, so
/// that a change in the machine's load falls on every variant alike.
/// Prints a progress line per run on stderr (`example: variant, size, run
/// i/n`). Returns each variant's runs in run order.
pub fn alternating<V: Copy + fmt::Display, T>(
    example: &str,
    size: &str,
    variants: &[V],
    repeats: usize,
    mut run: impl FnMut(V) -> io::Result<T>,
) -> io::Result<Vec<(V, Vec<T>)>> {
    let repeats = repeats.max(1);
    let mut done: Vec<(V, Vec<T>)> = variants
        .iter()
        .map(|&v| (v, Vec::with_capacity(repeats)))
        .collect();
    for rep in 1..=repeats {
        for (variant, runs) in done.iter_mut() {
            eprintln!("{example}: {variant}, {size}, run {rep}/{repeats}");
            runs.push(run(*variant)?);
        }
    }
    Ok(done)
}
