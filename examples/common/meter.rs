//! Installing the lockmeter layer, and threads that record into it.
//!
//! Examples install the layer globally; tests use [`observe`], which keeps
//! a layer per test so that tests running in parallel never see each
//! other's locks. Threads started with [`spawn`] record into whichever
//! layer their parent was using.

use std::io;
use std::thread::JoinHandle;

use lockmeter::Handle;
use tracing_subscriber::prelude::*;

/// Installs a lockmeter layer as the global subscriber and returns its
/// handle. If another global subscriber is already set, the handle is
/// still returned but records nothing, and a warning says so.
pub fn install_global() -> Handle {
    let layer = lockmeter::Layer::new();
    let handle = layer.handle();
    if tracing_subscriber::registry()
        .with(layer)
        .try_init()
        .is_err()
    {
        eprintln!(
            "warning: a global tracing subscriber was already set; lockmeter records nothing"
        );
    }
    handle
}

/// Runs `f` with a fresh lockmeter layer in effect on this thread and on
/// the threads it starts through [`spawn`]; returns the layer's handle.
///
/// The layer scans for deadlocks every 50 ms and records lock order; a
/// run that reports a deadlock or an inversion panics (the seed workloads
/// have neither: they are the watchdog's no-false-positives test).
pub fn observe<R>(f: impl FnOnce(&Handle) -> R) -> (Handle, R) {
    let layer = lockmeter::Layer::builder()
        .deadlock_detection(Some(std::time::Duration::from_millis(100)))
        .lock_order(true)
        .build();
    let handle = layer.handle();
    let dispatch = tracing::Dispatch::new(tracing_subscriber::registry().with(layer));
    let out = tracing::dispatcher::with_default(&dispatch, || f(&handle));
    let snap = handle.cumulative();
    let (deadlocks, inversions) = (&snap.deadlocks, &snap.lock_order.inversions);
    assert!(
        deadlocks.is_empty() && inversions.is_empty(),
        "false reports: deadlocks {deadlocks:#?}, inversions {inversions:#?}"
    );
    (handle, out)
}

/// Spawns a named thread that runs `f` under the caller's current
/// dispatcher, so its locks are recorded by the same layer. `stack` bytes
/// of stack, or the default when `None` (the herd starts 1,000 threads).
pub fn spawn<R: Send + 'static>(
    name: &str,
    stack: Option<usize>,
    f: impl FnOnce() -> R + Send + 'static,
) -> io::Result<JoinHandle<R>> {
    let dispatch = tracing::dispatcher::get_default(|d| d.clone());
    let mut builder = std::thread::Builder::new().name(name.to_string());
    if let Some(bytes) = stack {
        builder = builder.stack_size(bytes);
    }
    builder.spawn(move || tracing::dispatcher::with_default(&dispatch, f))
}

/// Joins `threads`, turning a panicked thread into an error.
pub fn join_all<R>(threads: Vec<JoinHandle<R>>) -> io::Result<Vec<R>> {
    let mut out = Vec::with_capacity(threads.len());
    let mut panicked = 0;
    for t in threads {
        match t.join() {
            Ok(r) => out.push(r),
            Err(_) => panicked += 1,
        }
    }
    if panicked > 0 {
        return Err(io::Error::other(format!(
            "{panicked} worker thread(s) panicked"
        )));
    }
    Ok(out)
}
