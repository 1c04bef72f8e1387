//! The lockmeter snapshot model, format version 1.
//!
//! This crate is the contract between the recorder (the `lockmeter` crate),
//! the live endpoint, dump files and the viewer. It holds plain serde types
//! and pure functions over them; it depends on no lock code, so the viewer
//! can read any dump without linking the primitives.
//!
//! - [`Snapshot`] and its parts: the v1 JSON object (see `docs/format.md`).
//! - [`dist`]: the log-bucket layout shared by the recorder and readers.
//! - [`read`]: parsing dumps and recordings with clear errors.
//! - [`format`](mod@format): human-readable durations, percentages and counts.
//! - [`render`]: the text table, CSV and JSON renderings.
//! - [`metric`]: the metric table every sort, diff and column reads.
//! - [`diff`]: before/after comparison of two snapshots.
//! - [`advice`]: advisories computed from the stats.
//! - [`stacks`]: sampled stacks of both sides of a wait (v1 extension).
//! - [`profile`]: pprof, folded stacks and flame graphs, from stacks or sites.
//! - [`series`]: bounded, monotonic per-site series for metric exporters.
//! - [`now`]: what is held and waited on now, deadlocks, lock order.
//! - [`selfcost`]: what lockmeter itself cost, per lock class, and its budget.
//!
//! Moving snapshots between processes and onto disk (the endpoint's
//! messages, sockets, discovery, atomic writes) is `lockmeter-wire`'s job.

#![warn(missing_docs)]

pub mod advice;
mod arith;
pub mod diff;
pub mod dist;
pub mod format;
pub mod metric;
pub mod now;
pub mod profile;
pub mod read;
pub mod render;
pub mod selfcost;
pub mod series;
mod snapshot;
pub mod stacks;
mod v1;

pub use dist::Dist;
pub use read::{parse_recording, parse_snapshot, ReadError, Recording};
pub use snapshot::{
    percent, Holder, LockKind, LockStats, ProcessInfo, Sampling, SiteStats, Snapshot, Stats, Window,
};

/// The value of the `format` field of every snapshot.
pub const FORMAT_NAME: &str = "lockmeter";
/// The snapshot format version this crate writes and the newest it reads.
pub const FORMAT_VERSION: u32 = 1;
