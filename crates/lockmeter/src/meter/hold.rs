//! What a guard carries: whether and since when its hold is timed.

use std::marker::PhantomData;
use std::panic::Location;
use std::ptr::NonNull;
use std::sync::atomic::Ordering::Relaxed;

use super::{blame_holder, Meta};
use crate::class::Mode;
use crate::now;
use crate::recorder::entry::Entry;
use crate::slow;
use crate::stacks::hooks::{self as stack_hooks, Captured};

/// Makes a guard `!Send`, like parking_lot's `GuardNoSend`: a guard's hold
/// is recorded into the entry of the thread that acquired, which only that
/// thread may write (see `recorder::entry`), and some raw locks must be
/// unlocked by the thread that locked them. Every guard carries one inside
/// its [`Hold`].
///
/// Checked by the `compile_fail` examples in the crate documentation.
pub(crate) struct GuardNoSend(PhantomData<*mut ()>);

/// Carried by a guard: where and since when the lock is held. Holds that
/// are not timed (unobserved, or an uncontended one not sampled) carry no
/// entry and cost nothing to release.
pub(crate) struct Hold {
    timing: Timing,
    /// Where `now` records this hold ([`now::UNTRACKED`]: nowhere).
    held: u32,
    _not_send: GuardNoSend,
}

/// How a hold is timed.
enum Timing {
    /// Unobserved: releasing it records nothing.
    Untimed,
    /// Observed, an uncontended acquisition outside the sample: releasing
    /// it only checks whether anyone waits, to blame this hold's stack.
    Observed,
    /// An uncontended acquisition timed as one of a sample, since `start`.
    Sampled { entry: NonNull<Entry>, start: u64 },
    /// A contended acquisition, held since `start` after waiting `wait_ns`
    /// behind `behind`, the site that held the lock when the wait began
    /// (null if unknown). The wait is recorded with the hold.
    Contended {
        entry: NonNull<Entry>,
        start: u64,
        wait_ns: u64,
        behind: *mut Location<'static>,
        /// The waiter stack captured after the wait, if one was.
        stack: Option<Captured>,
    },
}

impl Hold {
    /// The hold of an unobserved acquisition: releasing it records nothing.
    pub(crate) const NONE: Hold = Hold::with(Timing::Untimed);
    /// The hold of an observed acquisition that is not timed.
    pub(super) const OBSERVED: Hold = Hold::with(Timing::Observed);

    const fn with(timing: Timing) -> Hold {
        Hold {
            timing,
            held: now::UNTRACKED,
            _not_send: GuardNoSend(PhantomData),
        }
    }

    /// This hold as recorded at `held` in the thread's `now` table.
    #[inline(always)]
    pub(super) fn in_now(mut self, held: u32) -> Hold {
        self.held = held;
        self
    }

    /// A sampled uncontended hold beginning at `start`.
    #[inline(always)]
    pub(super) fn sampled(entry: &Entry, start: u64) -> Hold {
        entry.hold_started();
        Hold::with(Timing::Sampled {
            entry: NonNull::from(entry),
            start,
        })
    }

    /// The hold of a contended acquisition, beginning at `start`.
    #[inline]
    pub(super) fn contended(
        entry: &Entry,
        start: u64,
        wait_ns: u64,
        behind: *mut Location<'static>,
        stack: Option<Captured>,
    ) -> Hold {
        entry.hold_started();
        Hold::with(Timing::Contended {
            entry: NonNull::from(entry),
            start,
            wait_ns,
            behind,
            stack,
        })
    }

    /// The entry a timed hold is recorded into.
    #[inline(always)]
    fn timed(&self) -> Option<(&Entry, u64)> {
        match self.timing {
            Timing::Untimed | Timing::Observed => None,
            Timing::Sampled { entry, start } | Timing::Contended { entry, start, .. } => {
                // SAFETY: an entry lives as long as its thread's slot, which
                // outlives every guard of the thread (see `shard`).
                Some((unsafe { entry.as_ref() }, start))
            }
        }
    }

    /// Ends a hold without timing it (a semaphore `down` without a permit).
    pub(crate) fn discard(self) {
        now::hold_ends(self.held);
        let Some((e, _)) = self.timed() else { return };
        match self.timing {
            Timing::Contended {
                wait_ns, behind, ..
            } => e.end_contended_hold(None, wait_ns, behind),
            _ => e.end_sampled_hold_untimed(),
        }
    }

    /// Runs `unlock` and records the hold time if the hold is timed. An
    /// observed hold of `meta` (in `mode`) that others wait for has its
    /// stack blamed for their wait (see `stacks::blame`).
    #[inline(always)]
    pub(crate) fn release_blaming(&self, meta: &Meta, mode: Mode, unlock: impl FnOnce()) {
        now::hold_ends(self.held);
        match self.timing {
            Timing::Untimed => unlock(),
            // One load of the lock's own line, while it is still ours.
            Timing::Observed => match meta.blame.anyone_waiting() {
                false => unlock(),
                true => {
                    let site = meta.holder.load(Relaxed);
                    unlock();
                    blame_holder(meta, site, mode);
                }
            },
            _ => self.release_timed(meta, mode, unlock),
        }
    }

    /// Like [`Hold::release_blaming`], for the paths that end a hold
    /// other than a guard's drop (mapped and downgraded guards, unlocks
    /// inside a condvar wait): they time and count, but blame no holder.
    #[inline(always)]
    pub(crate) fn release(&self, unlock: impl FnOnce()) {
        now::hold_ends(self.held);
        match self.timing {
            Timing::Untimed | Timing::Observed => unlock(),
            _ => self.release_timed_as(None, unlock),
        }
    }

    /// The hold ends with a clock read just after `unlock`, outside the
    /// critical section.
    #[inline]
    fn release_timed(&self, meta: &Meta, mode: Mode, unlock: impl FnOnce()) {
        let blame = meta
            .blame
            .anyone_waiting()
            .then(|| (meta, meta.holder.load(Relaxed), mode));
        self.release_timed_as(blame, unlock);
    }

    /// [`Hold::release_timed`], blaming the holder afterwards when `blame`
    /// says whom (the lock, the holder's site, the mode).
    #[inline]
    fn release_timed_as(
        &self,
        blame: Option<(&Meta, *mut Location<'static>, Mode)>,
        unlock: impl FnOnce(),
    ) {
        let Some((e, start)) = self.timed() else {
            return unlock();
        };
        unlock();
        let hold_ns = e.clock().delta_as_nanos(start, e.clock().raw());
        let wait_ns = match self.timing {
            Timing::Contended {
                wait_ns,
                behind,
                stack,
                ..
            } => {
                e.end_contended_hold(Some(hold_ns), wait_ns, behind);
                if let Some(c) = stack {
                    stack_hooks::waiter_held(e, c, hold_ns);
                }
                wait_ns
            }
            _ => {
                e.end_sampled_hold(hold_ns);
                0
            }
        };
        if let Some((meta, site, mode)) = blame {
            blame_holder(meta, site, mode);
        }
        if e.is_slow(wait_ns, hold_ns) {
            slow::report(e, wait_ns, hold_ns);
        }
    }
}
