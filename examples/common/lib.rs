//! Shared harness of the seed examples: each seed experiment as a function
//! that tests can call with small sizes, plus the options, output and dump
//! helpers every example's `main` uses.
//!
//! | module | seed | what it reproduces |
//! |---|---|---|
//! | [`herd`] | 000 | the thundering herd in `accept()`: wake-all vs exclusive wake-one (FIFO, LIFO) |
//! | [`keyed`] | 001 | UDP ping-pong where TX completion wakes the receiver; keyed wakeups |
//! | [`pipe`] | 002 | a pipe guarded by a semaphore vs a spinlock, all waiting on `PIPE_WAIT` |
//! | [`epoll`] | 003 | an epoll ready list whose lock already protects its wait queue |
//! | [`bkl`] | 004 | an HTTP server copying its page under one big lock |
//!
//! [`cli`], [`meter`], [`report`], [`repeats`], [`wait`], [`affinity`] and
//! `seed_enum!` are the plumbing;
//! [`plot`] turns the `--json` outputs into the SVG figures of
//! `docs/results.md`.

#[macro_use]
mod variant;

pub mod affinity;
pub mod bkl;
pub mod cli;
pub mod epoll;
pub mod herd;
pub mod keyed;
pub mod meter;
pub mod pipe;
pub mod plot;
pub mod repeats;
pub mod report;
pub mod wait;

pub use cli::{CommonArgs, RepeatArgs};
pub use report::{Outcome, Report, VariantRun};
