//! The `lockmeter` viewer: a live terminal view of lock statistics, a table
//! printer and a differ, all over the v1 snapshot model.
//!
//! The binary (`src/main.rs`) holds only the command line and the event
//! loop; everything it drives lives here so it can be tested without a
//! terminal:
//!
//! - [`state`]: the app model: the data from the source, the view state
//!   (sorting, filtering, selection, the one pause flag and overlay),
//!   rates vs totals, history for sparklines, and how keys change them.
//! - [`view`]: one file per screen, drawn from the state.
//! - [`input`]: which key does what, as pure predicates.
//! - [`source`]: the demo, a live endpoint, a recording or a dump.
//! - [`conn`]: the endpoint client, reconnecting with backoff.
//! - [`fleet`]: one table merged over many processes (`--all`, several targets).
//! - [`commands`]: the one-shot commands (`table`, `diff`, `list`).
//! - [`profile`]: `table --format pprof|folded|flamegraph`.
//! - [`term`]: the terminal session, restored on drop and on panic.
//! - [`demo`]: the built-in contended workloads.
//! - [`dump`]: atomic snapshot files.

pub mod commands;
pub mod conn;
pub mod demo;
pub mod dump;
pub mod fleet;
pub mod input;
pub mod profile;
pub mod source;
pub mod state;
pub mod term;
pub mod view;
