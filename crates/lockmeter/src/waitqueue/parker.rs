//! A one-shot wake-up flag a sleeping waiter blocks on.

use std::time::Instant;

use crate::primitive::{Condvar, Mutex};

/// Set by a waker, waited for by one waiter. Built on a mutex and condvar
/// so loom can model it, and so a wake-up that comes before the sleep is
/// never lost: the flag stays set.
#[derive(Debug, Default)]
pub(crate) struct Parker {
    signaled: Mutex<bool>,
    cv: Condvar,
}

impl Parker {
    pub(crate) fn new() -> Parker {
        Parker {
            signaled: Mutex::new(false),
            cv: Condvar::new(),
        }
    }

    /// Sets the flag and wakes the waiter.
    pub(crate) fn unpark(&self) {
        let mut s = self.signaled.lock().unwrap_or_else(|e| e.into_inner());
        *s = true;
        self.cv.notify_one();
    }

    /// Blocks until the flag is set (returns true) or `deadline` passes
    /// (returns false). Clears the flag it consumed.
    pub(crate) fn park(&self, deadline: Option<Instant>) -> bool {
        let mut s = self.signaled.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            if *s {
                *s = false;
                return true;
            }
            match deadline {
                None => s = self.cv.wait(s).unwrap_or_else(|e| e.into_inner()),
                #[cfg(not(lockmeter_loom))]
                Some(d) => {
                    let now = Instant::now();
                    if now >= d {
                        return false;
                    }
                    s = self
                        .cv
                        .wait_timeout(s, d - now)
                        .unwrap_or_else(|e| e.into_inner())
                        .0;
                }
                #[cfg(lockmeter_loom)]
                Some(_) => return false,
            }
        }
    }

    /// Clears a flag left set (by a wake that raced with a timeout).
    pub(crate) fn clear(&self) {
        *self.signaled.lock().unwrap_or_else(|e| e.into_inner()) = false;
    }
}
