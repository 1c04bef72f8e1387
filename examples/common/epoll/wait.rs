//! The waiting side, `ep_poll`: take the next ready event, sleeping while
//! the ready list is empty.

use super::{Ep, Event};

/// The next event, or `None` once `finished()` says no more will come.
pub(super) fn next_event(ep: &Ep, finished: &dyn Fn() -> bool) -> Option<Event> {
    match ep {
        Ep::Nested { ready, wq } => {
            let mut got = None;
            wq.wait_event_exclusive(|| {
                got = ready.lock().pop_front();
                got.is_some() || finished()
            });
            got
        }
        Ep::Locked { wq } => {
            let list = wq.lock();
            let mut list = list.wait_event_exclusive_locked(|l| !l.is_empty() || finished());
            list.pop_front()
        }
    }
}
