//! The thread-local pointers that every observed acquisition reads, in
//! one thread-local.
//!
//! In a library crate, rustc compiles a thread-local's access for the
//! general-dynamic TLS model: a call to `__tls_get_addr`, which the
//! linker of an executable turns into two instructions only after
//! register allocation. So every value live across the access takes a
//! register that the function saves and restores. The observed Mutex's
//! path read two thread-locals (this thread's first recorder slot and its
//! `now` slot); one thread-local for both makes one such call there
//! (`docs/performance.md`, "Session 24").

use std::cell::Cell;

use crate::now::thread::ThreadSlot;
use crate::recorder::shard::Slot;

/// See the module's documentation. Both `const` and without a destructor,
/// so that reading one is one load from the thread-local's address.
pub(crate) struct ThreadPtrs {
    /// `recorder::shard`'s first slot, null while there is none (see
    /// `shard::first_slot`).
    pub(crate) first_slot: Cell<*const Slot>,
    /// `now`'s slot for this thread: null before registration,
    /// `now::thread::DEAD` after exit (see `now::thread::with_slot`).
    pub(crate) now_slot: Cell<*const ThreadSlot>,
}

thread_local! {
    static PTRS: ThreadPtrs = const {
        ThreadPtrs {
            first_slot: Cell::new(std::ptr::null()),
            now_slot: Cell::new(std::ptr::null()),
        }
    };
}

/// This thread's pointers.
#[inline(always)]
pub(crate) fn with<R>(f: impl FnOnce(&ThreadPtrs) -> R) -> R {
    PTRS.with(f)
}
