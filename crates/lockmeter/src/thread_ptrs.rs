//! The thread-local words that every observed acquisition reads, in one
//! thread-local: two pointers and a flag.
//!
//! In a library crate, rustc compiles a thread-local's access for the
//! general-dynamic TLS model: a call to `__tls_get_addr`, which the
//! linker of an executable turns into two instructions only after
//! register allocation. So every value live across the access takes a
//! register that the function saves and restores. The observed Mutex's
//! path read two thread-locals (this thread's first recorder slot and its
//! `now` slot); one thread-local for both makes one such call there
//! (`docs/performance.md`, "Session 24").
//!
//! On x86-64 Linux with glibc the pointers live in a thread-local this
//! module defines itself and reads with the initial-exec model (the
//! first `imp` below): no call at register allocation, so the observed
//! releases save no registers ("Session 25"). Elsewhere, and under miri
//! and loom, a `thread_local!` holds them.

use std::cell::Cell;

use crate::now::thread::ThreadSlot;
use crate::recorder::shard::Slot;

/// See the module's documentation. Both `const` and without a destructor,
/// so that reading one is one load from the thread-local's address; all
/// zero (both pointers null, no scoped layer found) is the state of a new
/// thread.
#[repr(C)]
pub(crate) struct ThreadPtrs {
    /// `recorder::shard`'s first slot, null while there is none (see
    /// `shard::first_slot`).
    pub(crate) first_slot: Cell<*const Slot>,
    /// `now`'s slot for this thread: null before registration,
    /// `now::thread::DEAD` after exit (see `now::thread::with_slot`).
    pub(crate) now_slot: Cell<*const ThreadSlot>,
    /// Not 0 from the moment this thread finds a lockmeter layer in a
    /// scoped dispatcher until it is next seen under the remembered global
    /// one (see `recorder::current`).
    pub(crate) scoped_layer: Cell<usize>,
}

/// This thread's `recorder::shard` first slot.
#[inline(always)]
pub(crate) fn first_slot() -> *const Slot {
    imp::first_slot()
}

/// Sets this thread's [`first_slot`]. Its provenance is exposed: the
/// initial-exec getter reads the word back as an address.
pub(crate) fn set_first_slot(slot: *const Slot) {
    let _ = slot.expose_provenance();
    imp::with(|t| t.first_slot.set(slot))
}

/// This thread's `now` slot.
#[inline(always)]
pub(crate) fn now_slot() -> *const ThreadSlot {
    imp::now_slot()
}

/// Whether this thread has found a lockmeter layer in a scoped dispatcher.
#[inline(always)]
pub(crate) fn found_scoped_layer() -> bool {
    imp::scoped_layer() != 0
}

/// Notes that this thread has found a lockmeter layer in a scoped
/// dispatcher, until [`clear_found_scoped_layer`].
pub(crate) fn set_found_scoped_layer() {
    imp::with(|t| t.scoped_layer.set(1))
}

/// Notes that this thread is back under the remembered global
/// dispatcher (`recorder::current_once`).
pub(crate) fn clear_found_scoped_layer() {
    imp::with(|t| t.scoped_layer.set(0))
}

/// Sets this thread's [`now_slot`], giving back what it was; exposed as
/// in [`set_first_slot`].
pub(crate) fn replace_now_slot(slot: *const ThreadSlot) -> *const ThreadSlot {
    let _ = slot.expose_provenance();
    imp::with(|t| t.now_slot.replace(slot))
}

/// The first item where every condition holds, the second elsewhere:
/// the condition written once, for both.
macro_rules! by_target {
    (where $($cond:meta),+; $yes:item $no:item) => {
        #[cfg(all($($cond),+))]
        $yes
        #[cfg(not(all($($cond),+)))]
        $no
    };
}

// lockmeter's own initial-exec thread-local works on x86-64 Linux with
// glibc; not under miri, whose interpreter runs no `asm!`, nor loom.
by_target! {
where target_arch = "x86_64", target_os = "linux", target_env = "gnu", not(miri), not(lockmeter_loom);
/// The pointers in a thread-local of this module's own, 24 zeroed bytes in
/// `.tbss`, found by adding its offset from the thread pointer (the
/// initial-exec model: one GOT entry, which the linker of an executable
/// turns into a constant) to the thread pointer, read from `%fs:0`.
///
/// Written by hand because stable Rust offers no other way to choose a
/// thread-local's model, and the general-dynamic one's call costs the
/// observed paths their saved registers. The cost of initial-exec: a
/// shared object that holds lockmeter and is loaded with `dlopen` takes
/// its 24 bytes from the static TLS that glibc keeps spare for such
/// objects (docs/guide.md).
mod imp {
    use super::ThreadPtrs;

    /// The symbol's name, versioned so that two versions of lockmeter in
    /// one program keep apart.
    macro_rules! symbol {
        () => {
            concat!(
                "lockmeter_thread_ptrs_",
                env!("CARGO_PKG_VERSION_MAJOR"),
                "_",
                env!("CARGO_PKG_VERSION_MINOR"),
                "_",
                env!("CARGO_PKG_VERSION_PATCH")
            )
        };
    }

    const _: () =
        assert!(std::mem::size_of::<ThreadPtrs>() == 24 && std::mem::align_of::<ThreadPtrs>() == 8);

    // 24 bytes of `.tbss`, zeroed for every new thread by the C library.
    std::arch::global_asm!(
        concat!(".pushsection .tbss.", symbol!(), ",\"awT\",@nobits"),
        ".p2align 3",
        concat!(".globl ", symbol!()),
        concat!(".type ", symbol!(), ", @tls_object"),
        concat!(".size ", symbol!(), ", 24"),
        concat!(symbol!(), ":"),
        ".zero 24",
        ".popsection",
    );

    /// This thread's [`ThreadPtrs`]: the thread pointer plus the
    /// thread-local's offset. For the setters and the test; not `pure`,
    /// as nothing here needs it to be.
    #[inline(always)]
    fn address() -> *const ThreadPtrs {
        let p: *const ThreadPtrs;
        // SAFETY: `%fs:0` holds the thread pointer on x86-64 Linux, and the
        // GOT entry the initial-exec relocation names holds the symbol's
        // offset from it; neither instruction writes memory or the stack.
        unsafe {
            std::arch::asm!(
                "mov {p}, qword ptr fs:[0]",
                concat!("add {p}, qword ptr [rip + ", symbol!(), "@GOTTPOFF]"),
                p = out(reg) p,
                options(nomem, nostack),
            );
        }
        p
    }

    #[inline(always)]
    pub(super) fn with<R>(f: impl FnOnce(&ThreadPtrs) -> R) -> R {
        // SAFETY: the address is this thread's 24 bytes, 8-aligned and
        // live until the thread's memory is freed, after its thread-local
        // destructors; all zero is a valid `ThreadPtrs`, and its `Cell`s
        // keep it to this thread.
        f(unsafe { &*address() })
    }

    /// The word at `OFFSET` in this thread's [`ThreadPtrs`], read in two
    /// instructions (the offset's GOT load, which the linker of an
    /// executable makes a constant, and the `%fs`-relative load) where
    /// [`with`] takes three. `readonly`: a write to memory in between (a
    /// setter's) orders it. `pure`, so the compiler may reuse one read for
    /// another with no write between: a function runs on one thread from
    /// entry to return (Rust lowers an `.await` before code generation,
    /// into returns and re-entries, so no value of this survives one).
    #[inline(always)]
    fn load<const OFFSET: usize>() -> usize {
        let word: usize;
        // SAFETY: as in `address`; the load reads this thread's 24 bytes
        // at `OFFSET`, 0, 8 or 16, an initialised and aligned word.
        unsafe {
            std::arch::asm!(
                concat!("mov {off}, qword ptr [rip + ", symbol!(), "@GOTTPOFF]"),
                "mov {word}, qword ptr fs:[{off} + {at}]",
                off = out(reg) _,
                word = out(reg) word,
                at = const OFFSET,
                options(pure, readonly, nostack, preserves_flags),
            );
        }
        word
    }

    #[inline(always)]
    pub(super) fn first_slot() -> *const super::Slot {
        std::ptr::with_exposed_provenance(load::<{ std::mem::offset_of!(ThreadPtrs, first_slot) }>())
    }

    #[inline(always)]
    pub(super) fn now_slot() -> *const super::ThreadSlot {
        std::ptr::with_exposed_provenance(load::<{ std::mem::offset_of!(ThreadPtrs, now_slot) }>())
    }

    #[inline(always)]
    pub(super) fn scoped_layer() -> usize {
        load::<{ std::mem::offset_of!(ThreadPtrs, scoped_layer) }>()
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        /// On threads of its own: the test harness's thread may hold a
        /// recorder's slot that these writes would hide.
        #[test]
        fn each_thread_has_its_own_zeroed_pointers_at_one_address() {
            std::thread::spawn(|| {
                let here = address();
                assert_eq!(here, address(), "one thread, one address");
                assert!(
                    first_slot().is_null() && now_slot().is_null(),
                    "a new thread's are null"
                );
                with(|t| t.first_slot.set(std::ptr::dangling()));
                let slot = std::ptr::dangling::<super::super::ThreadSlot>().wrapping_add(1);
                with(|t| t.now_slot.set(slot));
                assert_eq!(
                    first_slot(),
                    std::ptr::dangling(),
                    "the load sees the store"
                );
                assert_eq!(now_slot(), slot);
                let (there, fresh) = std::thread::spawn(|| {
                    (
                        address() as usize,
                        first_slot().is_null() && now_slot().is_null(),
                    )
                })
                .join()
                .unwrap();
                assert_ne!(here as usize, there, "two live threads, two addresses");
                assert!(fresh, "another thread's are its own, and null");
                assert_eq!(first_slot(), std::ptr::dangling(), "untouched by the other");
            })
            .join()
            .unwrap();
        }
    }
}

/// The pointers in a `thread_local!`.
mod imp {
    use std::cell::Cell;

    use super::ThreadPtrs;

    thread_local! {
        static PTRS: ThreadPtrs = const {
            ThreadPtrs {
                first_slot: Cell::new(std::ptr::null()),
                now_slot: Cell::new(std::ptr::null()),
                scoped_layer: Cell::new(0),
            }
        };
    }

    #[inline(always)]
    pub(super) fn with<R>(f: impl FnOnce(&ThreadPtrs) -> R) -> R {
        PTRS.with(f)
    }

    #[inline(always)]
    pub(super) fn first_slot() -> *const super::Slot {
        with(|t| t.first_slot.get())
    }

    #[inline(always)]
    pub(super) fn now_slot() -> *const super::ThreadSlot {
        with(|t| t.now_slot.get())
    }

    #[inline(always)]
    pub(super) fn scoped_layer() -> usize {
        with(|t| t.scoped_layer.get())
    }
}
}
