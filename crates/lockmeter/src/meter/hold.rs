//! What a guard carries: whether and since when its hold is timed.

use std::cell::Cell;
use std::marker::PhantomData;
use std::panic::Location;

use super::{blame_hold, Meta};
use crate::now;
use crate::recorder::entry::Entry;
use crate::slow;
use crate::stacks::hooks::{self as stack_hooks, Captured, PackedCaptured};

/// Makes a guard `!Send`, like parking_lot's `GuardNoSend`: a guard's hold
/// is recorded into the entry of the thread that acquired, which only that
/// thread may write (see `recorder::entry`), and some raw locks must be
/// unlocked by the thread that locked them. Every guard carries one inside
/// its [`Hold`].
///
/// Checked by the `compile_fail` examples in the crate documentation.
#[derive(Clone, Copy)]
pub(crate) struct GuardNoSend(PhantomData<*mut ()>);

/// Carried by a guard: where and since when the lock is held. Holds that
/// are not timed (unobserved, or an uncontended one not sampled) carry no
/// entry and cost nothing to release.
///
/// Eight bytes, one register: a function that returns a guard or a hold
/// returns it in registers, and an unobserved acquisition writes nothing
/// else. A timed hold's part ([`Timed`]) is kept on its thread, beside the
/// `now` record the hold has (`held` indexes both), not in the guard: with
/// it inside (48 bytes), every path that merged an observed acquisition
/// with an unobserved one, observed or not, copied the hold between stack
/// slots (the unobserved upgrade: 55 instructions against parking_lot's
/// 22, by callgrind; `docs/performance.md`, "Session 19").
///
/// `Copy` because it is plain data that owns nothing: the out-of-line
/// release takes a copy by value, so that the guard's own copy never has
/// its address taken and stays in registers on the unobserved path.
///
/// One `u64` rather than two `u32` fields: two were passed and returned as
/// a pair of registers, and a release tested the timing and then the
/// index apart; as one word, the lone observed hold is one constant
/// ([`Hold::LONE`]), tested with one compare (`docs/performance.md`,
/// "Session 37").
#[derive(Clone, Copy)]
pub(crate) struct Hold {
    /// The [`Timing`] in the low 32 bits; in the high 32, where `now`
    /// records this hold ([`now::UNTRACKED`]: nowhere), and, when the hold
    /// is timed, where its [`Timed`] part is in [`TIMED`].
    word: u64,
    _not_send: GuardNoSend,
}

const _: () = assert!(std::mem::size_of::<Hold>() == 8);

thread_local! {
    /// The timed part of each of the thread's timed holds, at the index of
    /// its `now` record: a record is the hold's until the hold ends, and
    /// a guard is released on the thread that took it (`GuardNoSend`).
    /// `const` and without a destructor, so it is one TLS address away and
    /// still there for a guard dropped by another thread-local's destructor.
    static TIMED: [TimedSlot; now::MAX_HELD] = const { [const { TimedSlot::empty() }; now::MAX_HELD] };
}

/// Where a [`Timed`] is kept: a cell per field, so that each is written
/// and read back as the one 8-byte word it is. As one `Cell<Timed>`, the
/// part was written in 16-byte stores and read back in 8-byte loads (or
/// the other way) a few nanoseconds later, a mismatch the store buffer
/// cannot forward: a hold timed every time cost 6 ns more.
struct TimedSlot {
    entry: Cell<*const Entry>,
    start: Cell<u64>,
    wait_ns: Cell<u64>,
    behind: Cell<*mut Location<'static>>,
    stack: Cell<PackedCaptured>,
}

impl TimedSlot {
    const fn empty() -> TimedSlot {
        TimedSlot {
            entry: Cell::new(std::ptr::null()),
            start: Cell::new(0),
            wait_ns: Cell::new(0),
            behind: Cell::new(std::ptr::null_mut()),
            stack: Cell::new(PackedCaptured::NONE),
        }
    }

    #[inline(always)]
    fn put(&self, t: Timed) {
        self.entry.set(t.entry);
        self.start.set(t.start);
        self.wait_ns.set(t.wait_ns);
        self.behind.set(t.behind);
        self.stack.set(t.stack);
    }

    #[inline(always)]
    fn get(&self) -> Timed {
        Timed {
            entry: self.entry.get(),
            start: self.start.get(),
            wait_ns: self.wait_ns.get(),
            behind: self.behind.get(),
            stack: self.stack.get(),
        }
    }
}

/// The part of a [`Hold`] only a timed hold has.
#[derive(Clone, Copy)]
struct Timed {
    /// The entry the hold is recorded into.
    entry: *const Entry,
    /// The clock reading when the hold began.
    start: u64,
    /// Contended only (zero otherwise): how long the acquisition waited.
    wait_ns: u64,
    /// Contended only: the site that held the lock when the wait began
    /// (null if unknown). The wait is recorded with the hold.
    behind: *mut Location<'static>,
    /// Contended only: the waiter stack captured after the wait, if one was.
    stack: PackedCaptured,
}

/// How a hold is timed.
///
/// Four bytes, so that it and `held` fill [`Hold`]'s last word with no
/// padding: as a byte, the three padding bytes after it were copied from
/// stack slot to stack slot on every acquisition, observed or not, because
/// the out-of-line timed release takes the hold by address and so needs
/// every byte of it (callgrind: 12 instructions of the unobserved
/// `sync::RwLock` read's 48).
#[derive(Clone, Copy, PartialEq, Eq)]
#[repr(u32)]
enum Timing {
    /// Unobserved: releasing it records nothing.
    Untimed,
    /// Observed, an uncontended acquisition outside the sample (or a
    /// contended one the sample left untimed): releasing it ends its
    /// record in `now` and nothing else. Its share of holder blame is
    /// charged to the sampled holds (`stacks::blame`).
    Observed,
    /// An uncontended acquisition timed as one of a sample.
    Sampled,
    /// A contended acquisition whose timing was forced: its wait is
    /// recorded with its hold.
    Contended,
    /// A contended acquisition timed as one of a sample (see
    /// `Probe::acquired_after_wait`): recorded like `Contended`, into the
    /// sampled distributions.
    ContendedSampled,
}

impl Hold {
    /// The hold of an unobserved acquisition: releasing it records nothing.
    #[inline(always)]
    pub(crate) const fn none() -> Hold {
        // All zero, not `Hold::with`'s index: a guard that is
        // unobserved on one path and observed on another then merges a
        // zero, which the unobserved path makes with no constant to carry
        // (as `UNTRACKED`, the unobserved `sync::RwLock` write kept the
        // hold on the stack: 38 -> 47 instructions).
        Hold {
            word: 0,
            _not_send: GuardNoSend(PhantomData),
        }
    }

    /// The hold of an observed acquisition that is not timed.
    #[inline(always)]
    pub(super) const fn observed() -> Hold {
        Hold::with(Timing::Observed)
    }

    #[inline(always)]
    const fn with(timing: Timing) -> Hold {
        Hold::at(timing, now::UNTRACKED)
    }

    #[inline(always)]
    const fn at(timing: Timing, held: u32) -> Hold {
        Hold {
            word: timing as u64 | (held as u64) << 32,
            _not_send: GuardNoSend(PhantomData),
        }
    }

    /// The observed untimed hold that is its thread's only one (index
    /// 0), the common case of an observed acquisition: its release tests
    /// the whole word against this once, where the timing and the index
    /// took two tests each.
    const LONE: u64 = Hold::at(Timing::Observed, 0).word;

    /// How the hold is timed.
    #[inline(always)]
    fn timing(&self) -> Timing {
        match self.word as u32 {
            0 => Timing::Untimed,
            1 => Timing::Observed,
            2 => Timing::Sampled,
            3 => Timing::Contended,
            _ => Timing::ContendedSampled,
        }
    }

    /// Where `now` records this hold; not meaningful for an untimed one
    /// ([`Hold::none`]), which no caller asks.
    #[inline(always)]
    fn held(&self) -> u32 {
        Hold::index_of(self.word)
    }

    /// [`Hold::held`] of a hold's word.
    #[inline(always)]
    fn index_of(word: u64) -> u32 {
        (word >> 32) as u32
    }

    /// A timed hold recorded at `held` in `now`, its timed part kept at
    /// the same index. A hold `now` could not record (a thread holding
    /// [`now::MAX_HELD`] locks already, or exiting) has nowhere to keep it:
    /// its wait is recorded now, its hold time not at all (as a discarded
    /// hold's), and the hold is released as an untimed observed one.
    #[inline(always)]
    fn timed_as(timing: Timing, timed: Timed, held: u32) -> Hold {
        let hold = Hold::at(timing, held);
        match TIMED.with(|t| t.get(held as usize).map(|slot| slot.put(timed))) {
            Some(()) => hold,
            None => {
                hold.end_untimed(timed);
                Hold::observed().in_now(held)
            }
        }
    }

    /// Whether releasing this hold records nothing (unobserved): then a
    /// holder that keeps its hold elsewhere (the std drop-ins' stash)
    /// need keep only this answer, and rebuild the hold as
    /// [`Hold::none`].
    #[inline(always)]
    pub(crate) fn is_untimed(&self) -> bool {
        self.word == 0
    }

    /// This hold as recorded at `held` in the thread's `now` table.
    #[inline(always)]
    pub(super) fn in_now(self, held: u32) -> Hold {
        Hold::at(self.timing(), held)
    }

    /// A sampled uncontended hold beginning at `start`, recorded at `held`
    /// in `now`.
    #[inline(always)]
    pub(super) fn sampled(entry: &Entry, start: u64, held: u32) -> Hold {
        entry.hold_started();
        let timed = Timed {
            entry,
            start,
            wait_ns: 0,
            behind: std::ptr::null_mut(),
            stack: PackedCaptured::NONE,
        };
        Hold::timed_as(Timing::Sampled, timed, held)
    }

    /// The hold of a contended acquisition, beginning at `start`; one of
    /// a sample if `sampled`, else one whose timing was forced.
    #[inline]
    pub(super) fn contended(
        entry: &Entry,
        start: u64,
        wait_ns: u64,
        behind: *mut Location<'static>,
        stack: Option<Captured>,
        sampled: bool,
        held: u32,
    ) -> Hold {
        entry.hold_started();
        let stack = PackedCaptured::pack(stack);
        let timed = Timed {
            entry,
            start,
            wait_ns,
            behind,
            stack,
        };
        let timing = match sampled {
            true => Timing::ContendedSampled,
            false => Timing::Contended,
        };
        Hold::timed_as(timing, timed, held)
    }

    /// The timed part and its entry, if the hold is timed. Read before
    /// anything that may take a lock: the hold's index is free for another
    /// once its `now` record is gone.
    #[inline(always)]
    fn timed(&self) -> Option<(&Entry, Timed)> {
        match self.timing() {
            Timing::Untimed | Timing::Observed => None,
            Timing::Sampled | Timing::Contended | Timing::ContendedSampled => {
                let t = TIMED.with(|t| t[self.held() as usize].get());
                // SAFETY: a timed hold's part was written at its index when
                // it was made (`timed_as`, which makes an untracked hold
                // untimed), and nothing else writes there while the hold
                // lasts; its entry lives as long as its thread's slot,
                // which outlives every guard of the thread (see `shard`).
                Some((unsafe { &*t.entry }, t))
            }
        }
    }

    /// Ends a hold without timing it (a semaphore `down`, which hands out
    /// no permit guard, or a leaked guard).
    pub(crate) fn discard(self) {
        if self.is_untimed() {
            return;
        }
        let timed = self.timed();
        now::hold_ends(self.held());
        if let Some((_, t)) = timed {
            self.end_untimed(t);
        }
    }

    /// Records what a timed hold whose time is not kept still counts: its
    /// wait, if it waited, and that its sample ended.
    fn end_untimed(&self, t: Timed) {
        // SAFETY: as in `timed`.
        let e = unsafe { &*t.entry };
        match self.timing() {
            Timing::Contended => e.end_contended_hold(None, t.wait_ns, t.behind),
            Timing::ContendedSampled => e.end_sampled_contended_hold(None, t.wait_ns, t.behind),
            _ => e.end_sampled_hold_untimed(),
        }
    }

    /// Runs `unlock` and records the hold time if the hold is timed. A
    /// timed hold of `meta` that others wait for has its stack blamed for
    /// their wait (see `stacks::blame`).
    ///
    /// The unobserved case is tested first and alone, so that a guard's
    /// drop inlines to the bare unlock plus one compare; everything an
    /// observed release does sits behind it (inlined, the whole match made
    /// the guard's drop too large to inline and the bare path paid for a
    /// call and a guard spilled to memory).
    #[inline(always)]
    pub(crate) fn release_blaming(&self, meta: &Meta, unlock: impl FnOnce()) {
        self.release_blaming_as::<false>(meta, unlock)
    }

    /// [`Hold::release_blaming`] with the lone observed release inline
    /// too (no call: the held-lock table's one store, then `unlock`), for
    /// a guard whose drop stays small with it: the SpinLock's, whose
    /// unlock is one store (observed SpinLock 116 -> 112 instructions per
    /// lock/unlock). The Mutex guard's drop grew its callers' loops with it
    /// (unobserved Mutex 14 -> 27, observed 128 -> 135;
    /// `docs/performance.md`, "Session 31").
    #[inline(always)]
    pub(crate) fn release_blaming_inline(&self, meta: &Meta, unlock: impl FnOnce()) {
        self.release_blaming_as::<true>(meta, unlock)
    }

    /// [`Hold::release_blaming`], its lone observed release inline when
    /// `INLINE`.
    #[inline(always)]
    fn release_blaming_as<const INLINE: bool>(&self, meta: &Meta, unlock: impl FnOnce()) {
        if self.is_untimed() {
            return unlock();
        }
        match self.timing() {
            Timing::Untimed => unlock(),
            Timing::Observed if INLINE => release_lone_or_nested(self.word, unlock),
            Timing::Observed => release_observed(self.word, unlock),
            // A copy, so that the guard's own hold never has its address
            // taken (which would keep it in memory on every path).
            _ => Hold::release_timed(*self, meta, unlock),
        }
    }

    /// Like [`Hold::release_blaming`], for the paths that end a hold
    /// other than a guard's drop (mapped and downgraded guards, unlocks
    /// inside a condvar wait): they time and count, but blame no holder.
    #[inline(always)]
    pub(crate) fn release(&self, unlock: impl FnOnce()) {
        match self.timing() {
            Timing::Untimed => unlock(),
            Timing::Observed => {
                now::hold_ends(self.held());
                unlock()
            }
            _ => Hold::release_timed_unblamed(*self, unlock),
        }
    }

    /// [`Hold::release`] of a timed hold; by value and out of line for
    /// the reason [`Hold::release_blaming`] gives.
    #[inline(never)]
    fn release_timed_unblamed(self, unlock: impl FnOnce()) {
        let timed = self.timed();
        now::hold_ends(self.held());
        self.release_timed_as(timed, None, unlock)
    }

    /// The hold ends with a clock read just after `unlock`, outside the
    /// critical section. Out of line: one acquisition in `sample_every`,
    /// and every contended one, comes here.
    #[inline(never)]
    fn release_timed(self, meta: &Meta, unlock: impl FnOnce()) {
        let timed = self.timed();
        now::hold_ends(self.held());
        let blame = meta.blame.anyone_waiting().then_some(meta);
        self.release_timed_as(timed, blame, unlock);
    }

    /// [`Hold::release_timed`] of the hold whose part is `timed` (read
    /// by the caller before the hold's record ended), blaming this hold
    /// afterwards for the waiting on `blame`'s lock when given.
    #[inline]
    fn release_timed_as(
        &self,
        timed: Option<(&Entry, Timed)>,
        blame: Option<&Meta>,
        unlock: impl FnOnce(),
    ) {
        let Some((e, t)) = timed else {
            return unlock();
        };
        unlock();
        let end = e.clock().raw();
        let hold_ns = e.clock().delta_as_nanos(t.start, end);
        let wait_ns = match self.timing() {
            Timing::Contended => {
                e.end_contended_hold(Some(hold_ns), t.wait_ns, t.behind);
                if let Some(c) = t.stack.unpack() {
                    stack_hooks::waiter_held(e, c, hold_ns);
                }
                t.wait_ns
            }
            Timing::ContendedSampled => {
                e.end_sampled_contended_hold(Some(hold_ns), t.wait_ns, t.behind);
                t.wait_ns
            }
            _ => {
                e.end_sampled_hold(hold_ns);
                0
            }
        };
        if let Some(meta) = blame {
            // A forced hold is always timed; a sampled one stands for
            // every hold of the sample's population.
            let stands_for = match self.timing() {
                Timing::Contended => 1,
                _ => e.sample_every(),
            };
            blame_hold(meta, e, (t.start, end), stands_for);
        }
        if e.is_slow(wait_ns, hold_ns) {
            slow::report(e, wait_ns, hold_ns);
        }
    }
}

/// The release of an observed hold that is not timed. Out of line and
/// given scalars only, so that the unobserved drop stays small enough to
/// inline and keeps the guard in registers.
///
/// Its common case, the thread's only hold, calls nothing but the unlock,
/// last: the other case is a call in tail position, so the function saves
/// no registers on the stack, stores that would lengthen the critical
/// section (`docs/performance.md`, "Session 9").
#[inline(never)]
fn release_observed(word: u64, unlock: impl FnOnce()) {
    release_lone_or_nested(word, unlock)
}

/// [`release_observed`]'s body, inline in [`Hold::release_blaming_inline`].
#[inline(always)]
fn release_lone_or_nested(word: u64, unlock: impl FnOnce()) {
    if word == Hold::LONE && now::hold_ends_if_lone(0) {
        return unlock();
    }
    release_observed_nested(Hold::index_of(word), unlock)
}

/// [`release_observed`] of a hold among others (or on a thread whose
/// `now` slot is gone).
#[cold]
#[inline(never)]
fn release_observed_nested(held: u32, unlock: impl FnOnce()) {
    now::hold_ends(held);
    unlock()
}
