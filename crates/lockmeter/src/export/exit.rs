//! Work at normal process exit (`main` returning or `std::process::exit`),
//! through one `atexit` hook shared by every exporter.
//!
//! The hook runs on the thread that called `exit`, while the other threads
//! still run and may hold any lock, and so may that thread. So an exporter
//! never computes a snapshot here: it hands the work to its own threads and
//! waits for them at most [`EXIT_BUDGET`] in all, then lets the process go.
//! A snapshot stuck behind a lock costs a skipped dump, never a hung exit.

use std::panic::{self, AssertUnwindSafe};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, Once, PoisonError, Weak};
use std::time::{Duration, Instant};

use crate::report;

/// The longest the exit hook waits for final dumps and recordings. Long
/// enough to resolve the stack frames of a debug build on a loaded machine
/// (2 s was not: tokio's example lost its dump at load 56); a snapshot
/// stuck behind a lock still cannot hang the exit for longer.
pub(crate) const EXIT_BUDGET: Duration = Duration::from_secs(10);

/// Something to finish at exit.
pub(crate) trait AtExit: Send + Sync {
    /// Finishes up, returning by `deadline` whatever happens.
    fn at_exit(&self, deadline: Instant);
}

type Hooks = Vec<(u64, Weak<dyn AtExit>)>;

static HOOKS: Mutex<Hooks> = Mutex::new(Vec::new());
static INSTALL: Once = Once::new();
static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// Runs `hook` at exit unless it is dropped or unregistered first.
pub(crate) fn register(hook: Weak<dyn AtExit>) -> u64 {
    INSTALL.call_once(|| {
        // SAFETY: run_hooks is an `extern "C" fn()` that never unwinds
        // (it catches panics) and touches only 'static data.
        if unsafe { libc::atexit(run_hooks) } != 0 {
            report::warn(
                "cannot register the exit hook; no final dump or cleanup will happen at exit",
            );
        }
    });
    let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
    HOOKS
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .push((id, hook));
    id
}

/// Forgets hook `id` (after an explicit shutdown).
pub(crate) fn unregister(id: u64) {
    HOOKS
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .retain(|(i, _)| *i != id);
}

extern "C" fn run_hooks() {
    let _ = panic::catch_unwind(AssertUnwindSafe(|| {
        let deadline = Instant::now() + EXIT_BUDGET;
        let hooks = std::mem::take(&mut *HOOKS.lock().unwrap_or_else(PoisonError::into_inner));
        for (_, hook) in hooks {
            if let Some(hook) = hook.upgrade() {
                hook.at_exit(deadline);
            }
        }
    }));
}
