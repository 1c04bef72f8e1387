//! The event path, `ep_poll_callback`: a connection became ready, so queue
//! it on the ready list and wake a waiter. Every event goes through here
//! exactly once; keeping it in its own file makes its call sites easy to
//! pick out of a snapshot.

use super::{Ep, Event};

/// Queues `ev` and wakes one waiter.
pub(super) fn post(ep: &Ep, ev: Event) {
    match ep {
        Ep::Nested { ready, wq } => {
            let mut list = ready.lock();
            list.push_back(ev);
            // The wait queue's own lock, taken inside the ready-list lock.
            wq.wake_up();
        }
        Ep::Locked { wq } => {
            let mut list = wq.lock();
            list.push_back(ev);
            // Already under the lock that guards the queue.
            list.wake_up_locked();
        }
    }
}
