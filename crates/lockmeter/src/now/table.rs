//! One thread's held locks and current waits, readable by any thread
//! without stopping the owner: a seqlock over atomics.
//!
//! The owning thread is the only writer. One word, `state`, holds the
//! generation and the number of held records. Every change is bracketed by
//! two increments of the generation: odd while a change is under way, even
//! when done. A reader reads `state`, the records, then `state` again, and
//! keeps what it read only if both are the same, with an even generation.
//! Every field is an atomic, so a torn read is a discarded read, never
//! undefined behaviour, and the writer never waits for a reader.
//!
//! ```text
//! writer                              reader
//! gen = g+1          (odd)            s1 = state      (Acquire; retry if odd)
//! fence(Release)                      read records    (Relaxed)
//! write records      (Relaxed)        fence(Acquire)
//! gen = g+2, count   (Release)        s2 = state      (retry unless s1 == s2)
//! ```
//!
//! The two changes every lone acquisition makes, its thread's first hold
//! and that hold's release, skip the odd step: they run inside the
//! critical section, where every store lengthens the hold that others wait
//! for (`docs/performance.md`, "Session 9"). Releasing the only hold is one
//! store of the next even generation with a count of 0 (its record stays,
//! outside the count). Taking a first hold writes record 0, which the
//! count (0) leaves out, behind a Release fence, then stores the next even
//! generation with a count of 1. A reader that read the state before the
//! last release and reads record 0 while it is rewritten sees, by the
//! fences, the release's generation at its second read, and retries.
//!
//! A contended acquisition's wait, when its thread holds and waits on
//! nothing, is kept in record 0 the same way ([`HEAD_WAIT`] in the
//! count): written while the count leaves record 0 out, then one store of
//! the state; its end with the lock taken rewrites record 0 as the hold,
//! with the odd step, since readers read record 0 as the wait until then.
//! Any other change first moves that wait to the heap's waits.
//!
//! The generation also says whether a thread did anything between two
//! reads: the deadlock watchdog confirms a cycle only when every thread
//! in it kept its generation across two scans.
//!
//! Those two changes touch only the state and record 0, the table's
//! [`Head`], which a thread's table keeps in the thread's own
//! thread-local (`thread_ptrs`): the observed path reaches it at a fixed
//! offset, and a head whose thread is not registered has a count no table
//! has ([`NOT_LIVE`]), so the lone hold's test of the count covers that
//! too. Records 1 and up, the waits and the overflow count are on the heap.

use std::num::NonZeroU64;
use std::ptr::NonNull;

use crate::primitive::{fence, loom_const_fn, AtomicU64, AtomicUsize, Ordering::*};

/// Locks one thread can hold at once and still be shown; holds beyond are
/// counted in [`Table::untracked`] while they last.
pub(crate) const MAX_HELD: usize = 16;
/// Nested waits kept: a semaphore's `down` and, inside it, the spin on the
/// semaphore's own lock.
pub(crate) const MAX_WAITS: usize = 2;
/// The index of a hold that is not in the table.
pub const UNTRACKED: u32 = u32::MAX;
/// The index of a hold beyond a full table: not in the table either, but
/// counted in [`Table::untracked`] until it is released.
pub const OVERFLOW: u32 = u32::MAX - 1;
/// Reads that found the table changing before a reader gives up (few
/// under loom, whose state space grows with every retry).
const READ_ATTEMPTS: usize = if cfg!(lockmeter_loom) { 2 } else { 64 };

/// One held lock or wait. `lock == 0` is an empty record.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Rec {
    /// The instance's address.
    pub lock: usize,
    /// What was acquired (for the recorder, its entry's address; bit 0
    /// carries [`Rec::LOOSE`]).
    pub what: usize,
    /// The recorder the acquisition counts in.
    pub recorder: usize,
    /// When it began, in watchdog-clock nanoseconds.
    pub since: u64,
}

impl Rec {
    /// Flag in `what`: a semaphore whose permits are also taken and
    /// returned with `down`/`up`, so anyone may end a wait on it.
    pub const LOOSE: usize = 1;
}

/// `repr(C)`: `thread_ptrs` writes record 0 at these offsets.
#[repr(C)]
struct Slot {
    lock: AtomicUsize,
    what: AtomicUsize,
    recorder: AtomicUsize,
    since: AtomicU64,
}

impl Slot {
    loom_const_fn! {
        const fn new() -> Slot {
            Slot {
                lock: AtomicUsize::new(0),
                what: AtomicUsize::new(0),
                recorder: AtomicUsize::new(0),
                since: AtomicU64::new(0),
            }
        }
    }

    #[inline(always)]
    fn set(&self, r: Rec) {
        self.what.store(r.what, Relaxed);
        self.recorder.store(r.recorder, Relaxed);
        self.since.store(r.since, Relaxed);
        self.lock.store(r.lock, Relaxed);
    }

    fn get(&self) -> Rec {
        Rec {
            lock: self.lock.load(Relaxed),
            what: self.what.load(Relaxed),
            recorder: self.recorder.load(Relaxed),
            since: self.since.load(Relaxed),
        }
    }
}

/// What a reader saw: a consistent state of one thread.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct View {
    /// The generation it was read at (even; two more per change).
    pub gen: u64,
    /// The locks the thread held when it was read.
    pub held: Vec<Rec>,
    /// The innermost wait, when the thread waits and it was recorded.
    pub wait: Option<Rec>,
}

/// A first hold whose record [`HeadWords::prepare_first`] wrote.
#[derive(Clone, Copy)]
pub struct FirstHold {
    /// The state [`HeadWords::commit_first`] stores, computed ahead too; never
    /// 0 (it counts one hold), so that an `Option` of it is one word.
    state: NonZeroU64,
}

/// The part of a table that a lone acquisition touches: the state word
/// and the first record. A registered thread's lives in its own
/// thread-local (`thread_ptrs`), so that the observed hot path reaches it
/// at a fixed offset from the thread pointer, with no pointer to load and
/// test (`docs/performance.md`, "Session 35"); the rest of the table,
/// which only nested holds and waits touch, is on the heap.
#[repr(C)]
pub struct Head {
    /// The generation (`state >> COUNT_BITS`) and the number of held
    /// records in use (the low [`COUNT_BITS`]), in one word so that the
    /// lone hold's two changes are each one store. [`NOT_LIVE`] in the
    /// count while the head is no registered table's.
    state: AtomicU64,
    /// Record 0.
    first: Slot,
    /// Under loom, the writer's own copy of `state`, which it reads
    /// instead of loading `state` (see [`Head::own_state`]).
    #[cfg(lockmeter_loom)]
    mine: std::cell::UnsafeCell<u64>,
}

/// The count of a [`Head`] that belongs to no registered table: above any
/// real count, so that the lone hold's test of the count (0 to take, 1 to
/// release) sends a thread not (or no longer) registered the slow way,
/// with no test of its own.
pub(crate) const NOT_LIVE: u64 = 0x80;

const _: () = assert!(NOT_LIVE > MAX_HELD as u64 && NOT_LIVE <= COUNT_MASK);

/// The count of a head whose record 0 is the thread's wait, begun while
/// it held and waited on nothing (`HeadWords::begin_head_wait`): no hold
/// is counted, and the table's heap waits are empty. Any other change of
/// the table first moves that wait to the heap (`Table::settle_head_wait`).
pub(crate) const HEAD_WAIT: u64 = 0x40;

const _: () = assert!(HEAD_WAIT > MAX_HELD as u64 && HEAD_WAIT != NOT_LIVE);

// SAFETY: `mine` is touched by the owning thread only (see `own_state`);
// everything else is atomic.
#[cfg(lockmeter_loom)]
unsafe impl Sync for Head {}

impl Head {
    loom_const_fn! {
        /// A head that belongs to no table yet: what a new thread's is.
        pub(crate) const fn not_live() -> Head {
            Head {
                state: AtomicU64::new(NOT_LIVE),
                first: Slot::new(),
                #[cfg(lockmeter_loom)]
                mine: std::cell::UnsafeCell::new(NOT_LIVE),
            }
        }
    }

    /// Makes a head from [`Head::not_live`] a table's, holding nothing.
    /// Before any reader can reach it.
    pub(crate) fn go_live(&self) {
        self.set_state(0, Release);
    }

    /// The head's table is no longer readable (its thread left the list):
    /// every later acquisition on its thread goes the slow way, which
    /// finds the thread exiting.
    pub(crate) fn retire(&self) {
        let s = self.own_state();
        self.set_state((s & !COUNT_MASK) | NOT_LIVE, Relaxed);
    }

    /// `state` as its writer last stored it. Under loom, from the writer's
    /// own copy: loom's model checker misses a race between a reader's
    /// load and a writer's store when the writer loaded the same atomic
    /// just before (its exploration of the seqlock then stopped at one
    /// interleaving); reading the copy leaves the writer's stores the
    /// only accesses that race. The same value either way: only the
    /// owning thread stores `state`.
    #[inline(always)]
    fn own_state(&self) -> u64 {
        #[cfg(lockmeter_loom)]
        // SAFETY: only the owning thread (the one writer) touches `mine`.
        return unsafe { *self.mine.get() };
        #[cfg(not(lockmeter_loom))]
        self.state.load(Relaxed)
    }

    /// Stores `state` (writer side), and under loom the writer's copy.
    #[inline(always)]
    fn set_state(&self, state: u64, order: crate::primitive::Ordering) {
        #[cfg(lockmeter_loom)]
        // SAFETY: as in `own_state`.
        unsafe {
            *self.mine.get() = state;
        }
        self.state.store(state, order);
    }
}

/// Byte offsets in a [`Head`] of its state and of record 0's lock, what,
/// recorder and since: where `thread_ptrs` reaches them in the thread's
/// own head. Unused where `thread_ptrs` reaches the head through a
/// reference (other targets, miri, loom).
#[allow(dead_code)]
pub(crate) const HEAD_STATE_AT: usize = std::mem::offset_of!(Head, state);
#[allow(dead_code)]
pub(crate) const HEAD_FIRST_AT: [usize; 4] = {
    let first = std::mem::offset_of!(Head, first);
    [
        first + std::mem::offset_of!(Slot, lock),
        first + std::mem::offset_of!(Slot, what),
        first + std::mem::offset_of!(Slot, recorder),
        first + std::mem::offset_of!(Slot, since),
    ]
};

/// The words of a head as its owning thread, the one writer, reaches
/// them: through a reference ([`Head`]), or at their fixed offsets in
/// the thread's own thread-local (`thread_ptrs::OwnHead`), which saves the
/// observed path the load of the thread-local's address that each of its
/// accesses depends on (`docs/performance.md`, "Session 35"). The lone
/// hold's two changes are written once, here, over either.
pub(crate) trait HeadWords {
    /// The state as the writer last stored it (see [`Head::own_state`]).
    fn load_state(&self) -> u64;
    /// Stores the state, Release: a reader that sees it sees every store
    /// before it (pairs with the reader's Acquire load).
    fn store_state(&self, state: u64);
    /// Writes record 0 (Relaxed stores), after a Release fence: a reader
    /// that sees one of them also sees, at its second read, the state
    /// stored before (pairs with the reader's Acquire fence).
    fn store_first(&self, r: Rec);
    /// Record 0 as the writer last wrote it.
    fn load_first(&self) -> Rec;
    /// Stores record 0's `since` alone, as [`HeadWords::store_first`]
    /// stores the record.
    fn store_since(&self, since: u64);

    /// The first half of [`Table::hold`] for a thread that holds nothing,
    /// which may run before the lock is even tried: writes `r` as record
    /// 0, which the count (0) leaves out, so no reader sees it until
    /// [`HeadWords::commit_first`] (see the module's doc), and a failed
    /// attempt needs no undoing. `None`, changing nothing, when holds are
    /// recorded or the head is [`NOT_LIVE`]: then the hold is
    /// [`Table::hold`]'s, once the lock is taken. So that the record's
    /// stores run outside the critical section.
    #[inline(always)]
    fn prepare_first(&self, r: Rec) -> Option<FirstHold> {
        let s = self.load_state();
        if s & COUNT_MASK != 0 {
            std::hint::cold_path();
            return None;
        }
        // No odd step (see the module's doc).
        self.store_first(r);
        let state = settled_from_even(s, 0, 1);
        // SAFETY: its count, the low bits, is 1. (`NonZeroU64::new` left a
        // test of the sum on the observed path, the compiler not knowing.)
        let state = unsafe { NonZeroU64::new_unchecked(state) };
        Some(FirstHold { state })
    }

    /// Whether the head is a registered table's (not [`NOT_LIVE`]).
    #[inline(always)]
    fn is_live(&self) -> bool {
        self.load_state() & COUNT_MASK != NOT_LIVE
    }

    /// The lock was taken: the record [`HeadWords::prepare_first`] wrote
    /// is the thread's only hold, at index 0. One store. Nothing may
    /// change the table in between.
    #[inline(always)]
    fn commit_first(&self, first: FirstHold) -> u32 {
        self.store_state(first.state.get());
        0
    }

    /// Forgets the hold at `ix` if it is the thread's only one, in one
    /// store; false, changing nothing, when it is not (or the head is
    /// [`NOT_LIVE`]).
    #[inline(always)]
    fn release_lone(&self, ix: u32) -> bool {
        let s = self.load_state();
        let lone = ix == 0 && s & COUNT_MASK == 1;
        if lone {
            // No odd step (see the module's doc); record 0 keeps its
            // content, outside the count.
            self.store_state(settled_from_even(s, 1, 0));
        }
        lone
    }

    /// A wait begins on a thread that holds and waits on nothing (a
    /// contended acquisition's common case): `r` goes to record 0, which
    /// the count (0) leaves out while it is written, and one store of the
    /// state makes it the wait ([`HEAD_WAIT`]). False, changing nothing,
    /// otherwise (then the wait is the heap's, [`Table::wait`]). So that a
    /// contended acquisition's wait is recorded with no pointer to follow
    /// and no odd step (`docs/performance.md`, "Session 36").
    #[inline(always)]
    fn begin_head_wait(&self, r: Rec) -> bool {
        let s = self.load_state();
        if s & COUNT_MASK != 0 {
            return false;
        }
        self.store_first(r);
        self.store_state(settled_from_even(s, 0, HEAD_WAIT));
        true
    }

    /// The wait [`HeadWords::begin_head_wait`] recorded gave up: one
    /// store. False, changing nothing, when the wait is not the head's.
    #[inline(always)]
    fn end_head_wait(&self) -> bool {
        let s = self.load_state();
        let head = s & COUNT_MASK == HEAD_WAIT;
        if head {
            self.store_state(settled_from_even(s, HEAD_WAIT, 0));
        }
        head
    }

    /// The wait [`HeadWords::begin_head_wait`] recorded ended with the lock
    /// taken: record 0 becomes the hold `r` (index 0), in one change with
    /// the odd step, since a reader reads record 0 as the wait until
    /// then. `None`, changing nothing, when the wait is not the head's.
    #[inline(always)]
    fn head_wait_held(&self, r: Rec) -> Option<u32> {
        let s = self.load_state();
        if s & COUNT_MASK != HEAD_WAIT {
            return None;
        }
        self.store_state(s | GEN_STEP);
        // The wait's own acquisition, always so far: only its start moves.
        let w = self.load_first();
        if (w.lock, w.what, w.recorder) == (r.lock, r.what, r.recorder) {
            self.store_since(r.since);
        } else {
            self.store_first(r);
        }
        self.store_state(settled(s, 1));
        Some(0)
    }
}

impl HeadWords for Head {
    #[inline(always)]
    fn load_state(&self) -> u64 {
        self.own_state()
    }

    #[inline(always)]
    fn store_state(&self, state: u64) {
        self.set_state(state, Release)
    }

    #[inline(always)]
    fn store_first(&self, r: Rec) {
        fence(Release);
        self.first.set(r);
    }

    #[inline(always)]
    fn load_first(&self) -> Rec {
        self.first.get()
    }

    #[inline(always)]
    fn store_since(&self, since: u64) {
        fence(Release);
        self.first.since.store(since, Relaxed);
    }
}

/// The table. Methods that change it must be called by its owning thread
/// only (one writer); [`Table::read`] from anywhere.
pub struct Table {
    /// The state and record 0: in the owning thread's thread-local for a
    /// thread's table ([`Table::on_head`]), else this table's own.
    head: NonNull<Head>,
    /// Whether `head` was allocated by [`Table::new`] (and is freed with
    /// the table).
    owns_head: bool,
    /// Records 1 and up.
    rest: [Slot; MAX_HELD - 1],
    /// Nesting depth of waits; only the first [`MAX_WAITS`] are recorded.
    waits_len: AtomicUsize,
    waits: [Slot; MAX_WAITS],
    untracked: AtomicU64,
}

/// Bits of [`Head::state`] that count held records (up to [`MAX_HELD`]).
const COUNT_BITS: u32 = 8;
const COUNT_MASK: u64 = (1 << COUNT_BITS) - 1;
/// One step of the generation in [`Head::state`].
const GEN_STEP: u64 = 1 << COUNT_BITS;

/// The state after a change of `state`, with `count` held records: the
/// next even generation.
#[inline(always)]
fn settled(state: u64, count: usize) -> u64 {
    ((state | GEN_STEP).wrapping_add(GEN_STEP) & !COUNT_MASK) | count as u64
}

/// [`settled`] for the writer's own state outside a change (its
/// generation even, as every store but a change's first leaves it) with
/// `from` held records: one add, where [`settled`] takes three steps that
/// also settle an odd generation (the lone hold's commit and release run
/// on every observed acquisition).
#[inline(always)]
fn settled_from_even(state: u64, from: u64, count: u64) -> u64 {
    debug_assert!(!changing(state) && state & COUNT_MASK == from);
    state.wrapping_add(2 * GEN_STEP + count).wrapping_sub(from)
}

/// Whether a change is under way in `state` (its generation is odd).
fn changing(state: u64) -> bool {
    state & GEN_STEP != 0
}

const _: () = assert!(MAX_HELD as u64 <= COUNT_MASK);

// SAFETY: `head` is either the table's own allocation or a thread's head,
// which the table's user keeps alive as long as the table is read (see
// `Table::on_head`); both are reached through `&self` only, as atomics.
unsafe impl Send for Table {}
// SAFETY: as for `Send`.
unsafe impl Sync for Table {}

impl Default for Table {
    fn default() -> Self {
        Table::new()
    }
}

impl Drop for Table {
    fn drop(&mut self) {
        if self.owns_head {
            // SAFETY: allocated by `Table::new` as a `Box` (leaked there),
            // and freed here only.
            drop(unsafe { Box::from_raw(self.head.as_ptr()) });
        }
    }
}

impl Table {
    /// An empty table with a head of its own: nothing held, no wait.
    pub fn new() -> Table {
        let head = Box::new(Head::not_live());
        head.go_live();
        // SAFETY: a new allocation, freed by the table's `Drop`.
        let mut table = unsafe { Table::on_head(NonNull::from(Box::leak(head))) };
        table.owns_head = true;
        table
    }

    /// An empty table whose state and record 0 are `head`, which
    /// [`Head::go_live`] made live and no other table uses.
    ///
    /// # Safety
    /// `head` must stay valid while the table is used (a thread's head
    /// until the thread leaves the list of readable tables).
    pub(crate) unsafe fn on_head(head: NonNull<Head>) -> Table {
        Table {
            head,
            owns_head: false,
            rest: std::array::from_fn(|_| Slot::new()),
            waits_len: AtomicUsize::new(0),
            waits: std::array::from_fn(|_| Slot::new()),
            untracked: AtomicU64::new(0),
        }
    }

    /// The state and record 0.
    #[inline(always)]
    pub fn head(&self) -> &Head {
        // SAFETY: valid while the table is used (`Table::on_head`).
        unsafe { self.head.as_ref() }
    }

    /// Record `i`.
    #[inline(always)]
    fn record(&self, i: usize) -> &Slot {
        match i {
            0 => &self.head().first,
            _ => &self.rest[i - 1],
        }
    }

    /// The records `0..len`.
    fn records(&self, len: usize) -> impl Iterator<Item = &Slot> + '_ {
        (0..len).map(|i| self.record(i))
    }

    #[inline(always)]
    fn own_state(&self) -> u64 {
        self.head().own_state()
    }

    #[inline(always)]
    fn set_state(&self, state: u64, order: crate::primitive::Ordering) {
        self.head().set_state(state, order)
    }

    /// Runs `change` as one change readers see whole or not at all;
    /// `change` is given the count of held records in use and returns its
    /// result and the new count.
    #[inline(always)]
    fn change<R>(&self, change: impl FnOnce(usize) -> (R, usize)) -> R {
        let s = self.own_state();
        self.set_state(s | GEN_STEP, Relaxed);
        // Release fence: a reader that sees any store of `change` also
        // sees the odd generation (pairs with the reader's Acquire fence).
        fence(Release);
        let (r, count) = change((s & COUNT_MASK) as usize);
        // Release: a reader that sees the new even generation sees every
        // store of `change` (pairs with the reader's Acquire load).
        self.set_state(settled(s, count), Release);
        r
    }

    /// Holds currently recorded (writer side).
    #[inline(always)]
    pub fn holds(&self) -> usize {
        match self.own_state() & COUNT_MASK {
            HEAD_WAIT => 0,
            n => n as usize,
        }
    }

    /// Whether the head keeps the thread's wait ([`HEAD_WAIT`]).
    fn keeps_head_wait(&self) -> bool {
        self.own_state() & COUNT_MASK == HEAD_WAIT
    }

    /// Moves a wait kept in the head ([`HEAD_WAIT`]) to the heap's
    /// waits, in one change, before any other change of the table (a
    /// nested wait, a flag, a hold: [`Table::hold`], the one way a hold
    /// reaches such a head): the head's record 0 is then free for a hold,
    /// and nested waits stack on top of it as before.
    fn settle_head_wait(&self) {
        if !self.keeps_head_wait() {
            return;
        }
        let w = self.record(0).get();
        self.change(|_| {
            self.waits[0].set(w);
            self.waits_len.store(1, Relaxed);
            ((), 0)
        });
    }

    /// The held records, for the writer's own use (lock order).
    pub fn held_now(&self) -> impl Iterator<Item = Rec> + '_ {
        self.records(self.holds())
            .map(Slot::get)
            .filter(|r| r.lock != 0)
    }

    /// Records a hold; returns its index for [`Table::release`], or
    /// [`OVERFLOW`] when the table is full. The first hold of a thread
    /// holding nothing (the common case) is a few stores, inline.
    #[inline(always)]
    pub fn hold(&self, r: Rec) -> u32 {
        match self.prepare_first(r) {
            Some(first) => self.commit_first(first),
            None => {
                // The only way a hold reaches a head that keeps a wait: its
                // count, not a hold's, sends it here.
                self.settle_head_wait();
                self.hold_among_others(&r)
            }
        }
    }

    /// A hold while others are held (or the table is not live):
    /// [`Table::hold_second`], else [`Table::hold_nested`].
    #[inline(always)]
    pub fn hold_among_others(&self, r: &Rec) -> u32 {
        match self.hold_second(r) {
            Some(ix) => ix,
            None => self.hold_nested(r),
        }
    }

    /// [`HeadWords::prepare_first`] on this table's head.
    #[inline(always)]
    pub fn prepare_first(&self, r: Rec) -> Option<FirstHold> {
        self.head().prepare_first(r)
    }

    /// [`HeadWords::commit_first`] on this table's head.
    #[inline(always)]
    pub fn commit_first(&self, first: FirstHold) -> u32 {
        self.head().commit_first(first)
    }

    /// [`Table::hold`] while other locks are held.
    ///
    /// The record by reference, read a word at a time: by value (32
    /// bytes, passed through memory), some builds copied it with 16-byte
    /// loads of what the caller had just stored in 8-byte words, a load
    /// that cannot be store-forwarded (the observed upgrade, whose write
    /// hold nests in the upgradable one: 1.95 -> 2.28 of parking_lot's
    /// time, with no change to this code; `docs/performance.md`, "Session
    /// 23").
    #[inline(never)]
    pub fn hold_nested(&self, r: &Rec) -> u32 {
        debug_assert!(!self.keeps_head_wait(), "Table::hold settles it first");
        let len = self.holds();
        let ix = self.slot_for_hold(len);
        if ix == MAX_HELD {
            return OVERFLOW;
        }
        self.change(|len| ((), self.put_hold(ix, len, *r)));
        ix as u32
    }

    /// The record a new hold takes when `len` are in use: a hole left by
    /// an out-of-order release (hand-over-hand locking), else the next
    /// free one; `MAX_HELD`, counted as untracked, when the table is full.
    fn slot_for_hold(&self, len: usize) -> usize {
        let ix = (0..len)
            .find(|&i| self.record(i).lock.load(Relaxed) == 0)
            .unwrap_or(len);
        if ix == MAX_HELD {
            self.untracked
                .store(self.untracked.load(Relaxed) + 1, Relaxed);
        }
        ix
    }

    /// Writes `r` to the record `ix` from [`slot_for_hold`] when `len`
    /// are in use; the count after it (one more when `ix` is the next free
    /// one). Inside a [`change`](Self::change).
    ///
    /// [`slot_for_hold`]: Self::slot_for_hold
    fn put_hold(&self, ix: usize, len: usize, r: Rec) -> usize {
        self.record(ix).set(r);
        len.max(ix + 1)
    }

    /// Forgets the hold at `ix`; releasing a thread's only hold, or the
    /// second of two ([`Table::release_second`]), is inline.
    #[inline(always)]
    pub fn release(&self, ix: u32) {
        if !self.release_lone(ix) && !self.release_second(ix) {
            self.release_nested(ix);
        }
    }

    /// [`Table::hold_nested`]'s common case: a second hold on a thread
    /// whose one hold is record 0 (a count of 1, which leaves no hole
    /// below), written as record 1 while the count leaves it out and then
    /// counted with one store, with no odd step, as a first hold is (see
    /// the module's doc). `None`, changing nothing, otherwise. So that a
    /// lock taken inside another costs no call for its record: through
    /// [`Table::hold_nested`], the nested Mutex took 299 instructions a
    /// lock/unlock (`docs/performance.md`, "Session 40").
    #[inline(always)]
    pub fn hold_second(&self, r: &Rec) -> Option<u32> {
        let s = self.own_state();
        if s & COUNT_MASK != 1 {
            return None;
        }
        // A reader that sees one of the record's stores sees, at its
        // second read, the state stored before (as `store_first`).
        fence(Release);
        self.rest[0].set(*r);
        self.set_state(settled_from_even(s, 1, 2), Release);
        Some(1)
    }

    /// Forgets hold 1 in one store if it is the last of two and hold 0 is
    /// still held (so the count after it is 1, as [`Table::clear`] would
    /// leave it); false, changing nothing, otherwise. Record 1 keeps its
    /// content, outside the count, as record 0 does after a lone release.
    #[inline(always)]
    fn release_second(&self, ix: u32) -> bool {
        let s = self.own_state();
        let second = ix == 1 && s & COUNT_MASK == 2 && self.head().first.lock.load(Relaxed) != 0;
        if second {
            self.set_state(settled_from_even(s, 2, 1), Release);
        }
        second
    }

    /// [`HeadWords::release_lone`] on this table's head.
    #[inline(always)]
    pub fn release_lone(&self, ix: u32) -> bool {
        self.head().release_lone(ix)
    }

    #[inline(never)]
    fn release_nested(&self, ix: u32) {
        // A hold taken while the head kept a wait moved the wait first
        // (`Table::hold`), and a waiting thread releases nothing.
        debug_assert!(!self.keeps_head_wait());
        if ix == OVERFLOW {
            // Counted while held (`slot_for_hold`), so no longer.
            let n = self.untracked.load(Relaxed);
            self.untracked.store(n.saturating_sub(1), Relaxed);
            return;
        }
        let ix = ix as usize;
        if ix >= MAX_HELD {
            return;
        }
        self.change(|len| ((), self.clear(ix, len)));
    }

    /// Empties record `ix` when `len` are in use; the count after it
    /// (trailing empty records dropped).
    fn clear(&self, ix: usize, len: usize) -> usize {
        self.record(ix).lock.store(0, Relaxed);
        if ix + 1 != len {
            return len;
        }
        let mut n = ix;
        while n > 0 && self.record(n - 1).lock.load(Relaxed) == 0 {
            n -= 1;
        }
        n
    }

    /// A wait begins (nested waits stack up).
    pub fn wait(&self, r: Rec) {
        if self.head().begin_head_wait(r) {
            return;
        }
        self.settle_head_wait();
        let depth = self.waits_len.load(Relaxed);
        self.change(|len| {
            if depth < MAX_WAITS {
                self.waits[depth].set(r);
            }
            self.waits_len.store(depth + 1, Relaxed);
            ((), len)
        });
    }

    /// Sets `bit` in the innermost wait's `what`.
    pub fn flag_wait(&self, bit: usize) {
        self.settle_head_wait();
        let depth = self.waits_len.load(Relaxed);
        if depth == 0 || depth > MAX_WAITS {
            return;
        }
        let w = &self.waits[depth - 1].what;
        self.change(|len| (w.store(w.load(Relaxed) | bit, Relaxed), len));
    }

    /// The innermost wait ended without acquiring.
    pub fn wait_over(&self) {
        if self.head().end_head_wait() {
            return;
        }
        self.settle_head_wait();
        let depth = self.waits_len.load(Relaxed);
        self.change(|len| (self.waits_len.store(depth.saturating_sub(1), Relaxed), len));
    }

    /// The innermost wait ended by acquiring: one change, so no reader
    /// sees the thread neither waiting nor holding.
    pub fn wait_over_held(&self, r: Rec) -> u32 {
        if let Some(ix) = self.head().head_wait_held(r) {
            return ix;
        }
        self.settle_head_wait();
        let depth = self.waits_len.load(Relaxed);
        let len = self.holds();
        let ix = self.slot_for_hold(len);
        self.change(|len| {
            self.waits_len.store(depth.saturating_sub(1), Relaxed);
            let count = if ix < MAX_HELD {
                self.put_hold(ix, len, r)
            } else {
                len
            };
            ((), count)
        });
        if ix < MAX_HELD {
            ix as u32
        } else {
            OVERFLOW
        }
    }

    /// Holds not in the table because it was full when they began, and
    /// not released yet.
    pub fn untracked(&self) -> u64 {
        self.untracked.load(Relaxed)
    }

    /// A consistent view, or `None` if the owner kept changing it.
    pub fn read(&self) -> Option<View> {
        for _ in 0..READ_ATTEMPTS {
            // Acquire: pairs with the writer's final Release store, so the
            // records of that change are visible below.
            let s1 = self.head().state.load(Acquire);
            if changing(s1) {
                crate::primitive::spin_loop();
                continue;
            }
            let head_wait = s1 & COUNT_MASK == HEAD_WAIT;
            let len = match head_wait {
                true => 0,
                false => ((s1 & COUNT_MASK) as usize).min(MAX_HELD),
            };
            let held: Vec<Rec> = self
                .records(len)
                .map(Slot::get)
                .filter(|r| r.lock != 0)
                .collect();
            let depth = self.waits_len.load(Relaxed);
            let wait = match depth {
                1..=MAX_WAITS => Some(self.waits[depth - 1].get()),
                _ => head_wait.then(|| self.record(0).get()),
            };
            // Acquire fence: if any load above saw a store of a later
            // change, the load below sees that change's odd generation.
            fence(Acquire);
            if self.head().state.load(Relaxed) == s1 {
                return Some(View {
                    gen: s1 >> COUNT_BITS,
                    held,
                    wait,
                });
            }
            crate::primitive::spin_loop();
        }
        None
    }
}

#[cfg(all(test, not(lockmeter_loom)))]
mod tests {
    use super::*;

    fn rec(lock: usize) -> Rec {
        Rec {
            lock,
            what: 8,
            recorder: 16,
            since: 5,
        }
    }

    #[test]
    fn holds_released_out_of_order_leave_holes_that_are_reused() {
        let t = Table::new();
        let a = t.hold(rec(1));
        let b = t.hold(rec(2));
        t.release(a);
        let c = t.hold(rec(3));
        assert_eq!(c, a, "the hole is reused");
        t.release(b);
        t.release(c);
        assert_eq!(t.holds(), 0);
        // Hand over hand: never more than two records in use.
        let mut prev = t.hold(rec(10));
        for i in 11..100 {
            let next = t.hold(rec(i));
            t.release(prev);
            prev = next;
            assert!(t.holds() <= 2);
        }
    }

    /// A second hold takes record 1 and its release in one store leaves
    /// the first counted; released after a hole at record 0, it leaves
    /// nothing counted, so the next hold is a lone one again.
    #[test]
    fn a_second_hold_is_record_one_and_its_release_keeps_the_count_exact() {
        let t = Table::new();
        let a = t.hold(rec(1));
        let b = t.hold(rec(2));
        assert_eq!((a, b, t.holds()), (0, 1, 2));
        t.release(b);
        assert_eq!(t.holds(), 1);
        let locks =
            |t: &Table| -> Vec<usize> { t.read().unwrap().held.iter().map(|r| r.lock).collect() };
        assert_eq!(locks(&t), [1]);
        let c = t.hold(rec(3));
        assert_eq!((c, locks(&t)), (1, vec![1, 3]));
        t.release(a);
        assert_eq!((t.holds(), locks(&t)), (2, vec![3]));
        t.release(c);
        assert_eq!(t.holds(), 0);
        assert!(t.prepare_first(rec(4)).is_some(), "a lone hold again");
    }

    #[test]
    fn a_full_table_counts_what_it_cannot_hold() {
        let t = Table::new();
        let ixs: Vec<u32> = (1..=MAX_HELD + 2).map(|i| t.hold(rec(i))).collect();
        assert_eq!(&ixs[MAX_HELD..], &[OVERFLOW, OVERFLOW]);
        assert_eq!(t.untracked(), 2);
        for ix in ixs {
            t.release(ix);
        }
        assert_eq!(t.read().unwrap().held, vec![]);
        assert_eq!(t.untracked(), 0, "released, no longer counted");
    }

    #[test]
    fn a_wait_that_acquires_becomes_a_hold_in_one_change() {
        let t = Table::new();
        t.wait(rec(7));
        let v = t.read().unwrap();
        assert_eq!(v.wait, Some(rec(7)));
        let g = v.gen;
        let ix = t.wait_over_held(rec(7));
        let v = t.read().unwrap();
        assert_eq!(v.gen, g + 2, "one change");
        assert_eq!((v.wait, v.held), (None, vec![rec(7)]));
        t.release(ix);
        t.wait(rec(8));
        t.wait(rec(9));
        assert_eq!(t.read().unwrap().wait, Some(rec(9)), "innermost");
        t.wait_over();
        assert_eq!(t.read().unwrap().wait, Some(rec(8)));
        t.wait_over();
        assert_eq!(t.read().unwrap().wait, None);
    }

    /// A wait begun holding nothing is kept in the head; whatever the
    /// table does next (a nested wait, a hold, a flag) moves it to the
    /// heap first, so that views keep showing it as the outermost wait.
    #[test]
    fn a_wait_kept_in_the_head_moves_to_the_heap_before_any_other_change() {
        let t = Table::new();
        t.wait(rec(7));
        assert_eq!(
            t.head().load_state() & COUNT_MASK,
            HEAD_WAIT,
            "kept in the head"
        );
        assert_eq!(t.holds(), 0);
        let v = t.read().unwrap();
        assert_eq!((v.wait, v.held.len()), (Some(rec(7)), 0));
        // A semaphore's down: the spin on its own lock, a hold of it, and
        // a flag on the outer wait.
        t.wait(rec(8));
        assert_eq!(t.head().load_state() & COUNT_MASK, 0, "moved to the heap");
        assert_eq!(t.read().unwrap().wait, Some(rec(8)), "innermost");
        let inner = t.wait_over_held(rec(8));
        let v = t.read().unwrap();
        assert_eq!((v.wait, v.held), (Some(rec(7)), vec![rec(8)]));
        t.flag_wait(Rec::LOOSE);
        t.release(inner);
        let loose = Rec {
            what: rec(7).what | Rec::LOOSE,
            ..rec(7)
        };
        assert_eq!(t.read().unwrap().wait, Some(loose));
        t.wait_over();
        let v = t.read().unwrap();
        assert_eq!((v.wait, v.held.len()), (None, 0));

        // Kept in the head again, then a hold taken while it waits.
        t.wait(rec(9));
        let h = t.hold(rec(10));
        let v = t.read().unwrap();
        assert_eq!((v.wait, v.held), (Some(rec(9)), vec![rec(10)]));
        t.release(h);
        t.wait_over();
        assert_eq!(t.read().unwrap().wait, None);
    }

    /// The head's wait ends in one state store when it gives up, and
    /// becomes the hold at index 0 when it acquires, which the lone
    /// release then forgets; each a change of the generation.
    #[test]
    fn a_wait_kept_in_the_head_ends_as_a_hold_or_gives_up() {
        let t = Table::new();
        let g = t.read().unwrap().gen;
        t.wait(rec(7));
        t.wait_over();
        let v = t.read().unwrap();
        assert_eq!((v.gen, v.wait), (g + 4, None));
        t.wait(rec(7));
        let held = Rec {
            since: 99,
            ..rec(7)
        };
        let ix = t.wait_over_held(held);
        assert_eq!(ix, 0);
        let v = t.read().unwrap();
        assert_eq!((v.gen, v.wait, v.held), (g + 8, None, vec![held]));
        assert!(t.release_lone(ix), "the lone release forgets it");
        assert_eq!(t.read().unwrap().held, vec![]);
        // Held as another record than the wait's: the whole record moves.
        t.wait(rec(7));
        let ix = t.wait_over_held(rec(8));
        assert_eq!(t.read().unwrap().held, vec![rec(8)]);
        t.release(ix);
    }

    /// A reader on another thread only ever sees states the writer was in.
    /// The writer runs its 20,000 rounds and then on until the reader has
    /// read while it ran (bounded): on a loaded machine the writer could
    /// otherwise finish before the reader was ever scheduled.
    #[test]
    fn concurrent_reads_see_only_whole_states() {
        use std::sync::atomic::AtomicBool;
        let t = std::sync::Arc::new(Table::new());
        let read_enough = std::sync::Arc::new(AtomicBool::new(false));
        let (w, enough) = (t.clone(), read_enough.clone());
        let writer = std::thread::spawn(move || {
            let mut i = 1usize;
            while i < 20_000 || (!enough.load(Relaxed) && i < 20_000_000) {
                let a = w.hold(rec(i));
                let b = w.hold(rec(i + 1));
                w.release(a);
                w.release(b);
                i += 1;
            }
        });
        let mut seen = 0;
        while !writer.is_finished() {
            if let Some(v) = t.read() {
                match v.held.as_slice() {
                    [] => {}
                    [a] => assert!(a.what == 8 && a.since == 5),
                    [a, b] => assert_eq!(b.lock, a.lock + 1, "{v:?}"),
                    other => panic!("impossible state {other:?}"),
                }
                seen += 1;
                if seen == 100 {
                    read_enough.store(true, Relaxed);
                }
            }
        }
        writer.join().unwrap();
        assert!(seen > 0);
    }
}
