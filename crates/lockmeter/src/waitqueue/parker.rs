//! A one-shot wake-up flag a sleeping waiter blocks on.

use std::time::Instant;

#[cfg(not(lockmeter_loom))]
use std::sync::atomic::Ordering::{Acquire, Relaxed, Release};

/// Set by a waker, waited for by one waiter: a flag beside the waiter's
/// thread, which sleeps in `thread::park`. A wake-up that comes before the
/// sleep is never lost: the flag stays set, and park's own token returns
/// a park that begins after the unpark.
///
/// Built on the thread's parker, not on a mutex and condvar: a waker that
/// woke the waiter while holding that mutex made the waiter, now running,
/// block again on the mutex (the condvar round trip, when condvars were
/// built on this, cost 7.5 times parking_lot's, 3.1 times after the
/// change, same run each).
///
/// Under loom the flag sits under a loom mutex and condvar instead: loom's
/// `unpark` of a thread that is spinning (a loom yield) or blocked on
/// something else wakes it from that and drops the token, where std keeps
/// it, so the park form would deadlock in the models for loom's reason,
/// not ours. The models check the queue algorithm above the parker.
#[cfg(not(lockmeter_loom))]
#[derive(Debug)]
pub(crate) struct Parker {
    signaled: std::sync::atomic::AtomicBool,
    thread: std::thread::Thread,
}

#[cfg(not(lockmeter_loom))]
impl Parker {
    /// The parker of the calling thread, the one that will wait.
    pub(crate) fn new() -> Parker {
        Parker {
            signaled: std::sync::atomic::AtomicBool::new(false),
            thread: std::thread::current(),
        }
    }

    /// Sets the flag and wakes the waiter. The caller keeps the waiter
    /// (and so this parker) alive through the call.
    pub(crate) fn unpark(&self) {
        self.signaled.store(true, Release);
        self.thread.unpark();
    }

    /// Blocks until the flag is set (returns true) or `deadline` passes
    /// (returns false). Clears the flag it consumed. A park that returns
    /// for any other reason (park's spurious returns, a stray unpark)
    /// looks at the flag again.
    pub(crate) fn park(&self, deadline: Option<Instant>) -> bool {
        loop {
            if self.signaled.swap(false, Acquire) {
                return true;
            }
            match deadline {
                None => std::thread::park(),
                Some(d) => {
                    let now = Instant::now();
                    if now >= d {
                        return false;
                    }
                    std::thread::park_timeout(d - now);
                }
            }
        }
    }

    /// Clears a flag left set (by a wake that raced with a timeout).
    pub(crate) fn clear(&self) {
        self.signaled.store(false, Relaxed);
    }
}

/// The loom form (see above): the flag under a mutex, a condvar to wait.
#[cfg(lockmeter_loom)]
#[derive(Debug)]
pub(crate) struct Parker {
    signaled: loom::sync::Mutex<bool>,
    cv: loom::sync::Condvar,
}

#[cfg(lockmeter_loom)]
impl Parker {
    pub(crate) fn new() -> Parker {
        Parker {
            signaled: loom::sync::Mutex::new(false),
            cv: loom::sync::Condvar::new(),
        }
    }

    pub(crate) fn unpark(&self) {
        *self.signaled.lock().unwrap() = true;
        self.cv.notify_one();
    }

    /// As the std form; a deadline is taken to have passed at once.
    pub(crate) fn park(&self, deadline: Option<Instant>) -> bool {
        let mut s = self.signaled.lock().unwrap();
        loop {
            if *s {
                *s = false;
                return true;
            }
            if deadline.is_some() {
                return false;
            }
            s = self.cv.wait(s).unwrap();
        }
    }

    pub(crate) fn clear(&self) {
        *self.signaled.lock().unwrap() = false;
    }
}
