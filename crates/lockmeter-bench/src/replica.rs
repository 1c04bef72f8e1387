//! An experiment: lockmeter's observed acquisition path, rebuilt in parts.
//!
//! The real path (`meter.rs`, `recorder/shard.rs`, `recorder/entry.rs` in
//! `crates/lockmeter/src`) cannot be taken apart from outside, so this is a
//! faithful copy of it around the same TTAS spinlock. The const parameter
//! is a set of flags; the ladder adds the library's components one by one
//! in the order it runs them:
//!
//! | flag | adds |
//! |---|---|
//! | [`DISPATCH`] | `tracing::dispatcher::get_default` + downcast to the `Layer` |
//! | [`LOOKUP`]   | this thread's slot (linear scan) and site index (last-hit cache) |
//! | [`COUNT`]    | counters, owner/holder/instance notes, hold distribution |
//! | [`TIMED`]    | two clock reads: with the three above, the library's path ([`FULL`]) |
//!
//! and the others change [`FULL`] as proposed improvements:
//!
//! | flag | change |
//! |---|---|
//! | [`FAST_KEY`] | the site key is compared word by word in registers, not as a 24-byte array spilled to the stack (which costs a store-forwarding stall) |
//! | [`CACHED`]   | the recorder comes from a thread-local cache instead of tracing's dispatcher |
//! | [`SAMPLED`]  | one uncontended acquisition in [`SAMPLE_EVERY`] reads the clock; counts stay exact; contended ones are always timed |
//! | [`OUTSIDE`]  | both clock reads of an uncontended hold happen outside the critical section: before the attempt and after the unlock |
//!
//! The difference between two variants is the cost of what differs.
//! If the library's path changes, this copy must follow it.

use std::cell::{Cell, UnsafeCell};
use std::panic::Location;
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU64, AtomicUsize, Ordering};
use std::sync::OnceLock;

use lockmeter_model::dist::{bucket_index, BUCKETS};

/// + the dispatcher lookup.
pub const DISPATCH: u8 = 1;
/// + the per-thread shard and index lookup.
pub const LOOKUP: u8 = 2;
/// + the counter updates.
pub const COUNT: u8 = 4;
/// + the two clock reads.
pub const TIMED: u8 = 8;
/// The library's whole observed path.
pub const FULL: u8 = DISPATCH | LOOKUP | COUNT | TIMED;
/// Proposal: compare site keys in registers.
pub const FAST_KEY: u8 = 16;
/// Proposal: find the recorder in a thread-local cache.
pub const CACHED: u8 = 32;
/// Proposal: time one uncontended acquisition in [`SAMPLE_EVERY`].
pub const SAMPLED: u8 = 64;
/// Proposal: read the clock outside the critical section.
pub const OUTSIDE: u8 = 128;

/// One uncontended acquisition in this many is timed under [`SAMPLED`].
pub const SAMPLE_EVERY: u64 = 64;

/// Stands in for the library's `OBSERVERS` count; nonzero, as while observed.
static OBSERVERS: AtomicUsize = AtomicUsize::new(1);

/// The clock every replica entry reads (the library's default clock).
fn clock() -> &'static quanta::Clock {
    static CLOCK: OnceLock<quanta::Clock> = OnceLock::new();
    CLOCK.get_or_init(quanta::Clock::new)
}

/// A single-writer counter: load + store, as in the library.
#[derive(Default)]
struct Counter(AtomicU64);

impl Counter {
    #[inline]
    fn add(&self, n: u64) {
        self.0.store(
            self.0.load(Ordering::Relaxed).wrapping_add(n),
            Ordering::Relaxed,
        );
    }

    #[inline]
    fn sub(&self, n: u64) {
        self.0.store(
            self.0.load(Ordering::Relaxed).wrapping_sub(n),
            Ordering::Relaxed,
        );
    }

    #[inline]
    fn raise_to(&self, n: u64) {
        if n > self.0.load(Ordering::Relaxed) {
            self.0.store(n, Ordering::Relaxed);
        }
    }

    fn get(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }
}

struct Dist {
    count: Counter,
    total: Counter,
    min: AtomicU64,
    max: Counter,
    buckets: [Counter; BUCKETS],
}

impl Dist {
    fn new() -> Dist {
        Dist {
            count: Counter::default(),
            total: Counter::default(),
            min: AtomicU64::new(u64::MAX),
            max: Counter::default(),
            buckets: std::array::from_fn(|_| Counter::default()),
        }
    }

    #[inline]
    fn record(&self, ns: u64) {
        self.count.add(1);
        self.total.add(ns);
        self.max.raise_to(ns);
        if ns < self.min.load(Ordering::Relaxed) {
            self.min.store(ns, Ordering::Relaxed);
        }
        self.buckets[bucket_index(ns)].add(1);
    }
}

/// The counters of one (class, site) on one thread.
struct Entry {
    /// The lock the entry belongs to (the key's class word).
    class: usize,
    clock: quanta::Clock,
    slow_ns: u64,
    acquisitions: Counter,
    nowait: Counter,
    contended: Counter,
    bounces: Counter,
    instances: Counter,
    outstanding: Counter,
    hold: Dist,
    wait: Dist,
    /// Uncontended acquisitions left until the next timed one ([`SAMPLED`]).
    countdown: Counter,
}

impl Entry {
    fn new(class: usize) -> Entry {
        Entry {
            class,
            clock: clock().clone(),
            slow_ns: 10_000_000,
            acquisitions: Counter::default(),
            nowait: Counter::default(),
            contended: Counter::default(),
            bounces: Counter::default(),
            instances: Counter::default(),
            outstanding: Counter::default(),
            hold: Dist::new(),
            wait: Dist::new(),
            countdown: Counter::default(),
        }
    }
}

/// Open addressing from a raw site key to its entry; the library's `Index`.
struct Index {
    slots: Vec<([usize; 3], *const Entry)>,
    len: usize,
    last: ([usize; 3], *const Entry),
}

const EMPTY: [usize; 3] = [0; 3];

impl Index {
    const fn new() -> Index {
        Index {
            slots: Vec::new(),
            len: 0,
            last: (EMPTY, std::ptr::null()),
        }
    }

    #[inline]
    fn hash(key: &[usize; 3], mask: usize) -> usize {
        let h = (key[0] ^ key[1].rotate_left(21) ^ key[2].rotate_left(42))
            .wrapping_mul(0x9E37_79B9_7F4A_7C15);
        (h >> 20) & mask
    }

    /// Word-by-word equality that stays in registers ([`FAST_KEY`]).
    #[inline(always)]
    fn same(a: &[usize; 3], b: [usize; 3]) -> bool {
        ((a[0] ^ b[0]) | (a[1] ^ b[1]) | (a[2] ^ b[2])) == 0
    }

    /// The library's lookup, but taking the key by value and comparing it
    /// word by word.
    #[inline(always)]
    fn get_fast(&mut self, key: [usize; 3]) -> Option<*const Entry> {
        if Self::same(&self.last.0, key) {
            return Some(self.last.1);
        }
        self.get_slow(&key)
    }

    #[inline(never)]
    fn get_slow(&mut self, key: &[usize; 3]) -> Option<*const Entry> {
        self.get(key)
    }

    #[inline]
    fn get(&mut self, key: &[usize; 3]) -> Option<*const Entry> {
        if self.last.0 == *key {
            return Some(self.last.1);
        }
        if self.slots.is_empty() {
            return None;
        }
        let mask = self.slots.len() - 1;
        let mut i = Self::hash(key, mask);
        loop {
            let (k, e) = self.slots[i];
            if k == *key {
                self.last = (k, e);
                return Some(e);
            }
            if k == EMPTY {
                return None;
            }
            i = (i + 1) & mask;
        }
    }

    fn insert(&mut self, key: [usize; 3], entry: *const Entry) {
        if (self.len + 1) * 2 > self.slots.len() {
            let old = std::mem::take(&mut self.slots);
            self.slots = vec![(EMPTY, std::ptr::null()); (old.len() * 2).max(16)];
            self.len = 0;
            for (k, e) in old.into_iter().filter(|(k, _)| *k != EMPTY) {
                self.insert(k, e);
            }
        }
        let mask = self.slots.len() - 1;
        let mut i = Self::hash(&key, mask);
        while self.slots[i].0 != EMPTY {
            i = (i + 1) & mask;
        }
        self.slots[i] = (key, entry);
        self.len += 1;
    }
}

/// This thread's view of one recorder.
struct Slot {
    recorder: usize,
    index: Index,
    #[allow(
        clippy::vec_box,
        reason = "boxed so they never move: the index points into them"
    )]
    entries: Vec<Box<Entry>>,
}

/// All of one thread's slots (with drop glue, like the library's).
struct ThreadState {
    slots: UnsafeCell<Vec<Slot>>,
}

thread_local! {
    static THREAD: ThreadState = const { ThreadState { slots: UnsafeCell::new(Vec::new()) } };
    static CACHED_RECORDER: Cell<usize> = const { Cell::new(0) };
}

#[inline]
fn entry<const S: u8>(recorder: usize, key: [usize; 3]) -> Option<*const Entry> {
    THREAD
        .try_with(|t| {
            // SAFETY: `slots` is only touched by this thread, and nothing
            // called while the borrow is live re-enters this function.
            let slots = unsafe { &mut *t.slots.get() };
            let slot = match slots.iter().position(|s| s.recorder == recorder) {
                Some(i) => &mut slots[i],
                None => new_slot(slots, recorder),
            };
            let found = if S & FAST_KEY != 0 {
                slot.index.get_fast(key)
            } else {
                slot.index.get(&key)
            };
            match found {
                Some(e) => e,
                None => new_entry(slot, key),
            }
        })
        .ok()
}

#[cold]
fn new_slot(slots: &mut Vec<Slot>, recorder: usize) -> &mut Slot {
    slots.push(Slot {
        recorder,
        index: Index::new(),
        entries: Vec::new(),
    });
    let last = slots.len() - 1;
    &mut slots[last]
}

#[cold]
fn new_entry(slot: &mut Slot, key: [usize; 3]) -> *const Entry {
    let e = Box::new(Entry::new(key[0]));
    let ptr: *const Entry = &*e;
    slot.entries.push(e);
    slot.index.insert(key, ptr);
    ptr
}

#[inline]
fn thread_token() -> usize {
    thread_local!(static TOKEN: u8 = const { 0 });
    TOKEN.with(|t| t as *const u8 as usize)
}

/// The recorder of the subscriber in effect, as the library finds it.
#[inline]
fn dispatched_recorder() -> Option<usize> {
    tracing::dispatcher::get_default(|d| {
        d.downcast_ref::<lockmeter::Layer>()
            .map(|l| l as *const lockmeter::Layer as usize)
    })
}

/// The recorder from a thread-local cache, filled once per thread.
#[inline]
fn cached_recorder() -> Option<usize> {
    let r = CACHED_RECORDER.with(Cell::get);
    if r != 0 {
        return Some(r);
    }
    let r = dispatched_recorder()?;
    CACHED_RECORDER.with(|c| c.set(r));
    Some(r)
}

/// The TTAS spinlock with the replica recording path of stage `S`.
pub struct ReplicaSpin<const S: u8> {
    locked: AtomicBool,
    holder: AtomicPtr<Location<'static>>,
    owner: AtomicUsize,
    seen: AtomicU64,
    data: UnsafeCell<u64>,
}

// SAFETY: the lock hands out access to the data one thread at a time.
unsafe impl<const S: u8> Sync for ReplicaSpin<S> {}

/// What a guard carries: the entry and the start of a timed hold.
struct Hold {
    entry: *const Entry,
    /// Raw clock at acquisition, 0 when this hold is not timed.
    start: u64,
    wait_ns: u64,
}

const NO_HOLD: Hold = Hold {
    entry: std::ptr::null(),
    start: 0,
    wait_ns: 0,
};

impl<const S: u8> Default for ReplicaSpin<S> {
    fn default() -> Self {
        Self::new()
    }
}

impl<const S: u8> ReplicaSpin<S> {
    /// An unlocked replica spinlock.
    pub const fn new() -> Self {
        ReplicaSpin {
            locked: AtomicBool::new(false),
            holder: AtomicPtr::new(std::ptr::null_mut()),
            owner: AtomicUsize::new(0),
            seen: AtomicU64::new(0),
            data: UnsafeCell::new(0),
        }
    }

    /// Lock, increment the data, unlock.
    #[track_caller]
    #[inline]
    pub fn cycle(&self) {
        let hold = self.acquire(Location::caller());
        // SAFETY: `acquire` took the lock.
        unsafe { *self.data.get() += 1 };
        self.release(&hold);
    }

    /// Acquisitions of this lock recorded by this thread (a check that the
    /// replica really records) and how many of their holds were timed.
    pub fn recorded_here(&self) -> (u64, u64) {
        let me = self as *const Self as usize;
        THREAD.with(|t| {
            // SAFETY: only this thread touches its slots; no re-entry here.
            let slots = unsafe { &*t.slots.get() };
            slots
                .iter()
                .flat_map(|s| s.entries.iter())
                .filter(|e| e.class == me)
                .fold((0, 0), |(a, h), e| {
                    (a + e.acquisitions.get(), h + e.hold.count.get())
                })
        })
    }

    #[inline]
    fn try_raw(&self) -> bool {
        self.locked
            .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_ok()
    }

    #[cold]
    fn spin(&self) -> u64 {
        let mut rounds = 0u64;
        loop {
            while self.locked.load(Ordering::Relaxed) {
                std::hint::spin_loop();
                rounds += 1;
            }
            if self.try_raw() {
                return rounds;
            }
        }
    }

    #[inline]
    fn plain(&self) -> Hold {
        if !self.try_raw() {
            self.spin();
        }
        NO_HOLD
    }

    /// The entry to record into, or `None` to take the plain path (after
    /// doing the lookups the flags include).
    #[inline]
    fn probe(&self, site: &'static Location<'static>) -> Option<&'static Entry> {
        if OBSERVERS.load(Ordering::Relaxed) == 0 {
            return None;
        }
        let recorder = if S & CACHED != 0 {
            cached_recorder()?
        } else {
            dispatched_recorder()?
        };
        if S & LOOKUP == 0 {
            std::hint::black_box(recorder);
            return None;
        }
        let class = self as *const Self as usize;
        let key = [class, site as *const Location<'static> as usize, 0x11];
        let e = entry::<S>(recorder, key)?;
        if S & COUNT == 0 {
            std::hint::black_box(e);
            return None;
        }
        // SAFETY: entries are boxed and kept until the thread exits.
        Some(unsafe { &*e })
    }

    /// Whether this uncontended acquisition reads the clock.
    #[inline]
    fn timed(e: &Entry) -> bool {
        if S & TIMED == 0 {
            return false;
        }
        if S & SAMPLED == 0 {
            return true;
        }
        let left = e.countdown.get();
        if left == 0 {
            e.countdown.0.store(SAMPLE_EVERY - 1, Ordering::Relaxed);
            true
        } else {
            e.countdown.sub(1);
            false
        }
    }

    #[inline]
    fn acquire(&self, site: &'static Location<'static>) -> Hold {
        let Some(e) = self.probe(site) else {
            return self.plain();
        };
        let timed = Self::timed(e);
        // OUTSIDE: the hold starts just before the attempt, so the clock
        // read is not inside the critical section.
        let early = if timed && S & OUTSIDE != 0 {
            e.clock.raw()
        } else {
            0
        };
        if self.try_raw() {
            let now = match (timed, S & OUTSIDE != 0) {
                (false, _) => 0,
                (true, true) => early,
                (true, false) => e.clock.raw(),
            };
            e.acquisitions.add(1);
            e.nowait.add(1);
            self.note_owner(e, site);
            e.outstanding.add(1);
            return Hold {
                entry: e,
                start: now,
                wait_ns: 0,
            };
        }
        self.acquire_contended(e, site, early)
    }

    #[inline(never)]
    fn acquire_contended(&self, e: &Entry, site: &'static Location<'static>, early: u64) -> Hold {
        let start = if early != 0 { early } else { e.clock.raw() };
        let spins = self.spin();
        let now = e.clock.raw();
        let wait_ns = e.clock.delta_as_nanos(start, now);
        e.acquisitions.add(1);
        e.contended.add(1);
        std::hint::black_box(spins);
        e.wait.record(wait_ns);
        self.note_owner(e, site);
        e.outstanding.add(1);
        Hold {
            entry: e,
            start: now,
            wait_ns,
        }
    }

    #[inline]
    fn note_owner(&self, e: &Entry, site: &'static Location<'static>) {
        let me = thread_token();
        let prev = self.owner.load(Ordering::Relaxed);
        if prev != me {
            if prev != 0 {
                e.bounces.add(1);
            }
            self.owner.store(me, Ordering::Relaxed);
        }
        self.holder
            .store(site as *const _ as *mut _, Ordering::Relaxed);
        let tag = e as *const Entry as u64;
        if self.seen.load(Ordering::Relaxed) != tag {
            self.seen.store(tag, Ordering::Relaxed);
            e.instances.add(1);
        }
    }

    #[inline]
    fn release(&self, hold: &Hold) {
        if hold.entry.is_null() {
            self.locked.store(false, Ordering::Release);
            return;
        }
        // SAFETY: as in `probe`.
        let e = unsafe { &*hold.entry };
        if hold.start == 0 {
            self.locked.store(false, Ordering::Release);
            e.outstanding.sub(1);
            if S & TIMED == 0 {
                e.hold.record(0);
            }
            return;
        }
        let end = if S & OUTSIDE != 0 {
            self.locked.store(false, Ordering::Release);
            e.clock.raw()
        } else {
            let end = e.clock.raw();
            self.locked.store(false, Ordering::Release);
            end
        };
        let hold_ns = e.clock.delta_as_nanos(hold.start, end);
        e.hold.record(hold_ns);
        e.outstanding.sub(1);
        if hold_ns >= e.slow_ns || hold.wait_ns >= e.slow_ns {
            slow(hold_ns);
        }
    }
}

#[cold]
#[inline(never)]
fn slow(ns: u64) {
    std::hint::black_box(ns);
}

#[cfg(test)]
mod tests {
    use super::*;
    use tracing_subscriber::layer::SubscriberExt;

    fn observed(f: impl FnOnce()) {
        let dispatch =
            tracing::Dispatch::new(tracing_subscriber::registry().with(lockmeter::Layer::new()));
        tracing::dispatcher::with_default(&dispatch, f);
    }

    #[test]
    fn without_a_layer_nothing_is_recorded() {
        let l = ReplicaSpin::<FULL>::new();
        l.cycle();
        assert_eq!(l.recorded_here(), (0, 0));
    }

    #[test]
    fn the_full_path_counts_and_times_every_acquisition() {
        let l = ReplicaSpin::<FULL>::new();
        observed(|| (0..100).for_each(|_| l.cycle()));
        assert_eq!(l.recorded_here(), (100, 100));
    }

    #[test]
    fn sampling_counts_all_and_times_one_in_sample_every() {
        let l = ReplicaSpin::<{ FULL | SAMPLED | FAST_KEY | OUTSIDE }>::new();
        observed(|| (0..SAMPLE_EVERY * 3).for_each(|_| l.cycle()));
        assert_eq!(l.recorded_here(), (SAMPLE_EVERY * 3, 3));
    }

    #[test]
    fn stages_without_counters_record_nothing() {
        let l = ReplicaSpin::<{ DISPATCH | LOOKUP }>::new();
        observed(|| (0..10).for_each(|_| l.cycle()));
        assert_eq!(l.recorded_here(), (0, 0));
    }

    #[test]
    fn a_fast_key_finds_the_same_entry_as_the_array_compare() {
        let mut index = Index::new();
        let entries: Vec<Box<Entry>> = (1..=40).map(|i| Box::new(Entry::new(i))).collect();
        for (i, e) in entries.iter().enumerate() {
            index.insert([i + 1, 7, 0x11], &**e);
        }
        for i in 1..=40 {
            let key = [i, 7, 0x11];
            assert_eq!(index.get_fast(key), index.get(&key));
            assert!(index.get(&key).is_some());
        }
        assert_eq!(index.get_fast([99, 7, 0x11]), None);
    }
}
