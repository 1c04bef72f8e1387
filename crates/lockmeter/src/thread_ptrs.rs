//! The thread-local words that every observed acquisition reads, in one
//! thread-local: two pointers and a flag, and the head of the thread's
//! `now` table (its state word and first record, `now::table::Head`).
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

use crate::now::table::{Head, HeadWords, Rec};
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

/// This thread's `now` table head: [`Head::not_live`] until the thread
/// registers, a live table's head until it exits. Valid for as long as
/// the thread runs (its thread-local destructors included).
#[inline(always)]
pub(crate) fn now_head() -> *const Head {
    imp::head()
}

/// This thread's `now` table head, reached at its fixed offset in the
/// thread-local: on x86-64 Linux with glibc each access is one
/// `%fs`-relative load or store, none waiting on a load of the
/// thread-local's address (`docs/performance.md`, "Session 35").
/// For the owning thread's own hot path; other threads read a head
/// through its table.
pub(crate) struct OwnHead;

impl HeadWords for OwnHead {
    #[inline(always)]
    fn load_state(&self) -> u64 {
        imp::head_state()
    }

    #[inline(always)]
    fn store_state(&self, state: u64) {
        imp::set_head_state(state)
    }

    #[inline(always)]
    fn store_first(&self, r: Rec) {
        imp::set_head_first(r)
    }

    #[inline(always)]
    fn load_first(&self) -> Rec {
        imp::head_first()
    }

    #[inline(always)]
    fn store_since(&self, since: u64) {
        imp::set_head_since(since)
    }
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
/// The pointers and the `now` head in a thread-local of this module's
/// own, 64 bytes in `.tdata` (one cache line), found by adding its offset
/// from the thread pointer (the initial-exec model: one GOT entry, which
/// the linker of an executable turns into a constant) to the thread
/// pointer, read from `%fs:0`.
///
/// Written by hand because stable Rust offers no other way to choose a
/// thread-local's model, and the general-dynamic one's call costs the
/// observed paths their saved registers. The cost of initial-exec: a
/// shared object that holds lockmeter and is loaded with `dlopen` takes
/// its 24 bytes from the static TLS that glibc keeps spare for such
/// objects (docs/guide.md).
mod imp {
    use super::{Head, ThreadPtrs};

    /// What the thread-local holds.
    #[repr(C)]
    pub(super) struct Block {
        ptrs: ThreadPtrs,
        head: Head,
    }

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

    /// Where the head starts in [`Block`], and the word of its state
    /// that the image below sets.
    const HEAD: usize = std::mem::offset_of!(Block, head);

    const _: () = assert!(
        std::mem::size_of::<ThreadPtrs>() == 24
            && std::mem::align_of::<ThreadPtrs>() == 8
            && std::mem::size_of::<Block>() == 64
            && HEAD == 24
            && std::mem::size_of::<Head>() == 40
            && crate::now::table::NOT_LIVE == 0x80
            && crate::now::table::HEAD_STATE_AT == 0
    );

    /// Where the head's state and record 0's words are in [`Block`].
    const STATE_AT: usize = HEAD + crate::now::table::HEAD_STATE_AT;
    const FIRST_AT: [usize; 4] = {
        let at = crate::now::table::HEAD_FIRST_AT;
        [HEAD + at[0], HEAD + at[1], HEAD + at[2], HEAD + at[3]]
    };

    // 64 bytes of `.tdata`, which the C library copies for every new
    // thread: all zero (both pointers null, no scoped layer found, an
    // empty record) but the head's state, `Head::not_live`'s (checked
    // by the test below).
    std::arch::global_asm!(
        concat!(".pushsection .tdata.", symbol!(), ",\"awT\",@progbits"),
        ".p2align 6",
        concat!(".globl ", symbol!()),
        concat!(".type ", symbol!(), ", @tls_object"),
        concat!(".size ", symbol!(), ", 64"),
        concat!(symbol!(), ":"),
        ".zero 24",
        ".quad 0x80",
        ".zero 32",
        ".popsection",
    );

    /// This thread's [`Block`]: the thread pointer plus the
    /// thread-local's offset. `pure`, so that an acquisition computes it
    /// once for the head's loads and stores (the argument of [`load`]'s).
    #[inline(always)]
    fn address() -> *const Block {
        let p: *const Block;
        // SAFETY: `%fs:0` holds the thread pointer on x86-64 Linux, and the
        // GOT entry the initial-exec relocation names holds the symbol's
        // offset from it; neither instruction writes memory or the stack.
        unsafe {
            std::arch::asm!(
                "mov {p}, qword ptr fs:[0]",
                concat!("add {p}, qword ptr [rip + ", symbol!(), "@GOTTPOFF]"),
                p = out(reg) p,
                options(pure, nomem, nostack),
            );
        }
        p
    }

    /// The thread-local's offset from the thread pointer, from the GOT
    /// entry the initial-exec relocation names (a `mov` of a constant once
    /// the linker of an executable has relaxed it). Its own `asm!`, `pure`
    /// and `nomem` (the entry never changes), so that the compiler
    /// computes it once for the accesses below that one function makes,
    /// where each access computing its own cost the observed SpinLock six
    /// instructions a lock/unlock (callgrind 98.4 -> 93.4, 2.34-2.37 ->
    /// 2.20-2.21 of bare; `docs/performance.md`, "Session 37").
    #[inline(always)]
    fn offset() -> usize {
        let off: usize;
        // SAFETY: one load of the GOT entry, which the dynamic linker
        // wrote before any code ran and never changes; no write, no stack.
        unsafe {
            std::arch::asm!(
                concat!("mov {off}, qword ptr [rip + ", symbol!(), "@GOTTPOFF]"),
                off = out(reg) off,
                options(pure, nomem, nostack, preserves_flags),
            );
        }
        off
    }

    #[inline(always)]
    pub(super) fn with<R>(f: impl FnOnce(&ThreadPtrs) -> R) -> R {
        // SAFETY: the address is this thread's 64 bytes, 64-aligned and
        // live until the thread's memory is freed, after its thread-local
        // destructors; the image is a valid `Block`, and the `Cell`s keep
        // the pointers to this thread.
        f(unsafe { &(*address()).ptrs })
    }

    /// The head: its address, not a reference, as other threads read it
    /// (through the registered table) while this one writes.
    #[inline(always)]
    pub(super) fn head() -> *const Head {
        address().wrapping_byte_add(HEAD).cast()
    }

    /// The head's state: one `%fs`-relative load (see [`load`]).
    #[inline(always)]
    pub(super) fn head_state() -> u64 {
        load::<STATE_AT>() as u64
    }

    /// Stores the head's state. Release: the `asm!` may touch any memory,
    /// so the compiler keeps every access before it before it, and x86
    /// keeps stores in order.
    #[inline(always)]
    pub(super) fn set_head_state(state: u64) {
        store::<STATE_AT>(state)
    }

    /// Stores record 0's `since`, as [`set_head_state`] stores the state.
    #[inline(always)]
    pub(super) fn set_head_since(since: u64) {
        store::<{ FIRST_AT[3] }>(since)
    }

    /// Record 0 of the head, as this thread last wrote it.
    #[inline(always)]
    pub(super) fn head_first() -> super::Rec {
        super::Rec {
            lock: load::<{ FIRST_AT[0] }>(),
            what: load::<{ FIRST_AT[1] }>(),
            recorder: load::<{ FIRST_AT[2] }>(),
            since: load::<{ FIRST_AT[3] }>() as u64,
        }
    }

    /// Stores `word` at `OFFSET` in this thread's [`Block`], one
    /// `%fs`-relative store. After every access before it: the `asm!` may
    /// touch any memory, so the compiler keeps them before it, and x86
    /// keeps stores in order.
    #[inline(always)]
    fn store<const OFFSET: usize>(word: u64) {
        // SAFETY: as in `load`; the store writes this thread's own aligned
        // word, which other threads read only as an atomic, and an aligned
        // 8-byte store is atomic on x86-64.
        unsafe {
            std::arch::asm!(
                "mov qword ptr fs:[{off} + {at}], {word}",
                off = in(reg) offset(),
                word = in(reg) word,
                at = const OFFSET,
                options(nostack, preserves_flags),
            );
        }
    }

    /// Writes record 0 of the head, in its field order, each word atomic
    /// (as in [`set_head_state`]); after every access before it, as a
    /// Release fence orders them.
    #[inline(always)]
    pub(super) fn set_head_first(r: super::Rec) {
        // SAFETY: as in `set_head_state`, for four words.
        unsafe {
            std::arch::asm!(
                "mov qword ptr fs:[{off} + {what_at}], {what}",
                "mov qword ptr fs:[{off} + {recorder_at}], {recorder}",
                "mov qword ptr fs:[{off} + {since_at}], {since}",
                "mov qword ptr fs:[{off} + {lock_at}], {lock}",
                off = in(reg) offset(),
                lock = in(reg) r.lock,
                what = in(reg) r.what,
                recorder = in(reg) r.recorder,
                since = in(reg) r.since,
                lock_at = const FIRST_AT[0],
                what_at = const FIRST_AT[1],
                recorder_at = const FIRST_AT[2],
                since_at = const FIRST_AT[3],
                options(nostack, preserves_flags),
            );
        }
    }

    /// The word at `OFFSET` in this thread's [`Block`], one
    /// `%fs`-relative load at [`offset`] where [`with`] takes two more
    /// (the thread pointer's load and an add). `readonly`: a write to memory in between (a
    /// setter's) orders it. `pure`, so the compiler may reuse one read for
    /// another with no write between: a function runs on one thread from
    /// entry to return (Rust lowers an `.await` before code generation,
    /// into returns and re-entries, so no value of this survives one).
    #[inline(always)]
    fn load<const OFFSET: usize>() -> usize {
        let word: usize;
        // SAFETY: as in `address`; the load reads this thread's block at
        // `OFFSET`, a word of `Block`: initialised and aligned.
        unsafe {
            std::arch::asm!(
                "mov {word}, qword ptr fs:[{off} + {at}]",
                off = in(reg) offset(),
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

        /// The image sets the head's state to `Head::not_live`'s: a new
        /// thread's head takes no first hold until it goes live, even
        /// after another thread's head went live and held.
        #[test]
        fn a_new_threads_head_is_not_live_until_it_goes_live() {
            use crate::now::table::{HeadWords, Rec};
            let rec = Rec {
                lock: 1,
                what: 8,
                recorder: 16,
                since: 0,
            };
            let fresh = move || {
                // SAFETY: this thread's head, used on it while it runs.
                let head = unsafe { &*head() };
                let before = head.prepare_first(rec).is_none();
                head.go_live();
                let first = head.prepare_first(rec).expect("live, holding nothing");
                assert_eq!(head.commit_first(first), 0);
                assert!(head.release_lone(0));
                before
            };
            assert!(std::thread::spawn(fresh).join().unwrap(), "not live at first");
            assert!(
                std::thread::spawn(fresh).join().unwrap(),
                "nor on the next thread"
            );
        }

        /// The owning thread's `%fs`-relative accesses reach the same
        /// words as the head's address: record 0 written through one
        /// reads back through the other, and `since` stored alone moves
        /// nothing else.
        #[test]
        fn the_own_heads_record_is_the_heads_record() {
            use crate::now::table::{HeadWords, Rec};
            std::thread::spawn(|| {
                // SAFETY: this thread's head, used on it while it runs.
                let head = unsafe { &*head() };
                let rec = Rec {
                    lock: 1,
                    what: 8,
                    recorder: 16,
                    since: 5,
                };
                super::super::OwnHead.store_first(rec);
                assert_eq!(head.load_first(), rec);
                super::super::OwnHead.store_since(9);
                assert_eq!(head.load_first(), Rec { since: 9, ..rec });
                head.store_first(Rec { lock: 2, ..rec });
                assert_eq!(super::super::OwnHead.load_first(), Rec { lock: 2, ..rec });
            })
            .join()
            .unwrap();
        }
    }
}

/// The pointers in a `thread_local!`, the head in another.
mod imp {
    use std::cell::Cell;

    use super::{Head, HeadWords, ThreadPtrs};

    thread_local! {
        static PTRS: ThreadPtrs = const {
            ThreadPtrs {
                first_slot: Cell::new(std::ptr::null()),
                now_slot: Cell::new(std::ptr::null()),
                scoped_layer: Cell::new(0),
            }
        };
    }

    #[cfg(not(lockmeter_loom))]
    thread_local! {
        /// The head apart from the pointers, as a test reads them alone.
        static HEAD: Head = const { Head::not_live() };
    }

    #[cfg(lockmeter_loom)]
    thread_local! {
        /// Built lazily under loom, whose atomics are not `const`, and
        /// only by an observed acquisition, which no loom model makes.
        static HEAD: Head = Head::not_live();
    }

    #[inline(always)]
    pub(super) fn with<R>(f: impl FnOnce(&ThreadPtrs) -> R) -> R {
        PTRS.with(f)
    }

    #[inline(always)]
    pub(super) fn head() -> *const Head {
        HEAD.with(|h| h as *const Head)
    }

    /// The owning thread's access to its head: through the reference.
    #[inline(always)]
    fn own<R>(f: impl FnOnce(&Head) -> R) -> R {
        // SAFETY: this thread's head, used now, on it.
        f(unsafe { &*head() })
    }

    #[inline(always)]
    pub(super) fn head_state() -> u64 {
        own(|h| h.load_state())
    }

    #[inline(always)]
    pub(super) fn set_head_state(state: u64) {
        own(|h| h.store_state(state))
    }

    #[inline(always)]
    pub(super) fn set_head_first(r: super::Rec) {
        own(|h| h.store_first(r))
    }

    #[inline(always)]
    pub(super) fn set_head_since(since: u64) {
        own(|h| h.store_since(since))
    }

    #[inline(always)]
    pub(super) fn head_first() -> super::Rec {
        own(|h| h.load_first())
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
