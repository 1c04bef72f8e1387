//! Slow acquisitions become ordinary tracing events.
//!
//! An acquisition that waited or held at least the layer's threshold is
//! reported as a WARN event with target `lockmeter`, emitted in the current
//! span, so fmt, JSON and OpenTelemetry layers show it in context.

use crate::class::format_location;
use crate::recorder::entry::Entry;

#[cold]
#[inline(never)]
pub(crate) fn report(e: &Entry, wait_ns: u64, hold_ns: u64) {
    let key = e.key();
    tracing::warn!(
        target: "lockmeter",
        lock = %key.class.id(),
        kind = key.kind.as_str(),
        site = %format_location(key.site),
        wait_ns,
        hold_ns,
        "slow lock acquisition"
    );
}
