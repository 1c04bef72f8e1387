//! The lockmeter live endpoint's wire, in the shape of tokio-console's
//! `console-api`: everything a recorder and a viewer must agree on to talk,
//! and nothing else. The snapshot itself is [`lockmeter_model::Snapshot`];
//! this crate moves it between processes and onto disk.
//!
//! - [`message`]: the newline-delimited JSON messages, their limits and
//!   [`encode`] / [`decode_request`] / [`decode_response`].
//! - [`frame`]: [`LineReader`], the capped line splitter both sides read with.
//! - [`addr`]: [`EndpointAddr`], parsed from what a user types.
//! - [`stream`]: [`Stream`], the one Unix/TCP socket type of the endpoint's
//!   server side and of every client.
//! - [`client`]: [`Client`], the one client: greeting checked, deadline
//!   reads, a cloneable [`Writer`] for sending while another thread reads.
//! - [`discovery`]: where default endpoints put their sockets and how to
//!   find them (and, explicitly, remove the stale ones).
//! - [`file`](mod@file): [`write_atomic`], the one way dumps reach the disk.
//!
//! Unix only, like the endpoint.
#![warn(missing_docs)]

pub mod addr;
pub mod client;
pub mod discovery;
pub mod file;
pub mod frame;
pub mod message;
pub mod stream;

pub use addr::{parse_target, AddrError, EndpointAddr};
pub use client::{fetch_snapshot, Client, ClientError, Writer};
pub use file::write_atomic;
pub use frame::{LineReader, WireError};
pub use message::{
    clamp_interval_ms, decode_request, decode_response, encode, EndpointStats, Hello, Message,
    Request, Response, MAX_INTERVAL_MS, MAX_REQUEST_LINE, MAX_RESPONSE_LINE, MIN_INTERVAL_MS,
    PROTOCOL_VERSION,
};
pub use stream::Stream;
