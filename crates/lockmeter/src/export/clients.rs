//! The client slots of a listener, the live endpoint's and the Prometheus
//! endpoint's alike: at most `max` clients served at once, each on a thread
//! of its own, and the clients refused and dropped counted, so that both
//! listeners cap and count clients the same way.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::thread;

/// Stack of a listener's client thread: it parses small requests and
/// serializes snapshots or formats text, nothing deep.
const CLIENT_STACK: usize = 512 * 1024;

/// A listener's client slots and what became of the clients it could not
/// serve.
#[derive(Debug)]
pub(crate) struct ClientSlots {
    in_use: AtomicU64,
    max: u64,
    refused: AtomicU64,
    dropped: AtomicU64,
}

impl ClientSlots {
    /// `max` slots (at least 1).
    pub(crate) fn new(max: usize) -> ClientSlots {
        ClientSlots {
            in_use: AtomicU64::new(0),
            max: max.max(1) as u64,
            refused: AtomicU64::new(0),
            dropped: AtomicU64::new(0),
        }
    }

    /// Clients being served now.
    pub(crate) fn in_use(&self) -> u64 {
        self.in_use.load(Relaxed)
    }

    pub(crate) fn max(&self) -> u64 {
        self.max
    }

    /// Clients turned away because every slot was taken, or because their
    /// thread could not be started.
    pub(crate) fn refused(&self) -> u64 {
        self.refused.load(Relaxed)
    }

    /// Clients dropped for not keeping to the client timeout.
    pub(crate) fn dropped(&self) -> u64 {
        self.dropped.load(Relaxed)
    }

    /// Whether every slot is taken. Only a listener's accept thread admits,
    /// so this check and the [`serve_client`] that follows it cannot race
    /// with another admission.
    pub(crate) fn full(&self) -> bool {
        self.in_use() >= self.max
    }

    pub(crate) fn count_refused(&self) {
        self.refused.fetch_add(1, Relaxed);
    }

    pub(crate) fn count_dropped(&self) {
        self.dropped.fetch_add(1, Relaxed);
    }
}

/// Runs `serve(&shared)` on a client thread named `name` that holds one of
/// the slots `slots(&shared)` until `serve` returns. A thread that cannot
/// be started gives its slot back and counts as a refusal; then `serve`,
/// and the connection it owns, are dropped, and this is `false`.
pub(crate) fn serve_client<S: Send + Sync + 'static>(
    shared: &Arc<S>,
    slots: fn(&S) -> &ClientSlots,
    name: &str,
    serve: impl FnOnce(&S) + Send + 'static,
) -> bool {
    slots(shared).in_use.fetch_add(1, Relaxed);
    let for_thread = Arc::clone(shared);
    let spawned = thread::Builder::new()
        .name(name.into())
        .stack_size(CLIENT_STACK)
        .spawn(move || {
            serve(&for_thread);
            slots(&for_thread).in_use.fetch_sub(1, Relaxed);
        });
    if spawned.is_err() {
        let slots = slots(shared);
        slots.in_use.fetch_sub(1, Relaxed);
        slots.count_refused();
    }
    spawned.is_ok()
}
