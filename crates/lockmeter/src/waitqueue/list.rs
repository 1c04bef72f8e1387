//! The waiter lists of a wait queue, protected by the queue's lock.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed as StdRelaxed};
use std::sync::Arc;

use super::parker::Parker;
use crate::primitive::{AtomicU8, Ordering};

/// The order exclusive waiters are woken in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum WakeOrder {
    /// Oldest first, like Linux's `add_wait_queue_exclusive`.
    #[default]
    Fifo,
    /// Newest first: the waiter most likely still cache-hot (the O(1) LIFO
    /// queue that fixed Linux's `accept()` thundering herd).
    Lifo,
}

/// Waiter states; every transition happens under the queue's lock.
///
/// ```text
/// QUEUED --waker picks it--> WOKEN      (removed from the list by the waker)
/// QUEUED --waiter leaves---> CANCELLED  (left in the list, skipped, purged)
/// ```
const QUEUED: u8 = 0;
const WOKEN: u8 = 1;
const CANCELLED: u8 = 2;

/// One sleeping (or about to sleep) waiter.
pub(crate) struct Waiter {
    state: AtomicU8,
    pub(crate) exclusive: bool,
    pub(crate) mask: u64,
    pub(crate) parker: Parker,
    /// Raw clock reading of the wake call, or 0 when the waker was not
    /// observed; gives the wake latency.
    pub(crate) woken_at: AtomicU64,
}

impl Waiter {
    pub(crate) fn new(exclusive: bool, mask: u64) -> Arc<Waiter> {
        Arc::new(Waiter {
            state: AtomicU8::new(QUEUED),
            exclusive,
            mask,
            parker: Parker::new(),
            woken_at: AtomicU64::new(0),
        })
    }
}

/// What one wake call did.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Woken {
    pub(crate) total: u64,
    pub(crate) exclusive: u64,
}

/// Waiters picked under the queue lock, to be woken once it is released
/// (like Linux's `wake_q`), so the lock is not held across a futex call
/// per waiter.
#[derive(Default)]
pub(crate) struct PendingWakes(Vec<Arc<Waiter>>);

impl PendingWakes {
    /// Wakes every picked waiter. Call without the queue lock held.
    #[inline]
    pub(crate) fn unpark_all(&mut self) {
        // Most guards wake nobody: keep their drop to one branch.
        if self.0.is_empty() {
            return;
        }
        for w in self.0.drain(..) {
            w.parker.unpark();
        }
    }
}

/// Waiters of one queue: non-exclusive ones all wake together; exclusive
/// ones wake one at a time from one end of a deque, so waking one costs
/// O(1) however many are queued (when wakes are not keyed).
pub(crate) struct WaitList {
    shared: Vec<Arc<Waiter>>,
    exclusive: VecDeque<Arc<Waiter>>,
    order: WakeOrder,
    /// Waiters queued and not yet woken or cancelled.
    live: usize,
    /// Cancelled waiters still in the lists, purged lazily.
    stale: usize,
}

impl WaitList {
    crate::primitive::loom_const_fn! {
        pub(crate) const fn new(order: WakeOrder) -> WaitList {
            WaitList { shared: Vec::new(), exclusive: VecDeque::new(), order, live: 0, stale: 0 }
        }
    }

    /// Waiters queued right now.
    pub(crate) fn len(&self) -> usize {
        self.live
    }

    /// Queues `w` (fresh or after a spurious wake-up); returns the length.
    pub(crate) fn add(&mut self, w: &Arc<Waiter>) -> usize {
        w.state.store(QUEUED, Ordering::Relaxed);
        w.woken_at.store(0, StdRelaxed);
        if w.exclusive {
            self.exclusive.push_back(w.clone());
        } else {
            self.shared.push(w.clone());
        }
        self.live += 1;
        self.live
    }

    /// Takes `w` out of the queue if no waker picked it; returns whether a
    /// waker had picked it (then it is already out).
    pub(crate) fn remove(&mut self, w: &Waiter) -> bool {
        if w.state.load(Ordering::Relaxed) == QUEUED {
            w.state.store(CANCELLED, Ordering::Relaxed);
            self.live -= 1;
            self.stale += 1;
            if self.stale > 32 && self.stale > self.live {
                self.purge();
            }
            false
        } else {
            w.state.load(Ordering::Relaxed) == WOKEN
        }
    }

    fn purge(&mut self) {
        let queued = |w: &Arc<Waiter>| w.state.load(Ordering::Relaxed) == QUEUED;
        self.shared.retain(queued);
        self.exclusive.retain(queued);
        self.stale = 0;
    }

    /// Picks every non-exclusive waiter whose mask meets `key`, and up to
    /// `nr_exclusive` exclusive ones, in the queue's order; marks them woken
    /// and adds them to `pending`, whose owner wakes them after unlocking.
    pub(crate) fn wake(
        &mut self,
        key: u64,
        nr_exclusive: usize,
        stamp: u64,
        pending: &mut PendingWakes,
    ) -> Woken {
        let mut woken = Woken::default();
        if !self.shared.is_empty() {
            let mut stale = 0;
            self.shared
                .retain(|w| match w.state.load(Ordering::Relaxed) {
                    QUEUED if w.mask & key != 0 => {
                        mark_woken(w, stamp);
                        pending.0.push(w.clone());
                        woken.total += 1;
                        false
                    }
                    QUEUED => true,
                    _ => {
                        stale += 1;
                        false
                    }
                });
            self.stale = self.stale.saturating_sub(stale);
        }
        while (woken.exclusive as usize) < nr_exclusive {
            let Some(w) = self.pop_exclusive(key) else {
                break;
            };
            mark_woken(&w, stamp);
            pending.0.push(w);
            woken.exclusive += 1;
            woken.total += 1;
        }
        self.live -= woken.total as usize;
        woken
    }

    /// The next queued exclusive waiter interested in `key`, skipping (and
    /// dropping) cancelled ones at the wake end.
    fn pop_exclusive(&mut self, key: u64) -> Option<Arc<Waiter>> {
        loop {
            let end = match self.order {
                WakeOrder::Fifo => self.exclusive.front(),
                WakeOrder::Lifo => self.exclusive.back(),
            }?;
            let state = end.state.load(Ordering::Relaxed);
            if state != QUEUED {
                self.take_end();
                self.stale = self.stale.saturating_sub(1);
                continue;
            }
            if end.mask & key != 0 {
                return self.take_end();
            }
            // Keyed wake: look past waiters that are not interested.
            let pos =
                match self.order {
                    WakeOrder::Fifo => self.exclusive.iter().position(|w| {
                        w.state.load(Ordering::Relaxed) == QUEUED && w.mask & key != 0
                    }),
                    WakeOrder::Lifo => self.exclusive.iter().rposition(|w| {
                        w.state.load(Ordering::Relaxed) == QUEUED && w.mask & key != 0
                    }),
                }?;
            return self.exclusive.remove(pos);
        }
    }

    fn take_end(&mut self) -> Option<Arc<Waiter>> {
        match self.order {
            WakeOrder::Fifo => self.exclusive.pop_front(),
            WakeOrder::Lifo => self.exclusive.pop_back(),
        }
    }
}

/// Marks `w` woken, under the queue lock; its thread is unparked later.
/// A waiter that times out in between finds itself WOKEN when it takes
/// the lock to leave, and treats the wake-up as its own.
fn mark_woken(w: &Waiter, stamp: u64) {
    w.state.store(WOKEN, Ordering::Relaxed);
    w.woken_at.store(stamp, StdRelaxed);
}
