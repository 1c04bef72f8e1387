//! Per-thread shards: where a thread's acquisitions are counted.
//!
//! Each thread keeps, per recorder it has seen, a [`Shard`] of entries and
//! a private index from (class, site, mode) to entry. The index is touched
//! only by its thread, so a lookup takes no lock; the shard's entry list is
//! shared with snapshots behind a mutex that the hot path never takes
//! (only the first acquisition at a new site does).

use std::cell::{Cell, UnsafeCell};
use std::sync::{Arc, Mutex};

use crate::class::{SiteKey, MODE_KEY_BITS};

use super::entry::Entry;
use super::Recorder;

/// Most entries one thread keeps per recorder; beyond this, acquisitions
/// at new sites are counted in `dropped_records` instead.
pub(crate) const MAX_ENTRIES_PER_THREAD: usize = 1 << 16;

/// One thread's entries for one recorder, readable by snapshots.
#[derive(Default)]
pub(crate) struct Shard {
    /// `Arc` rather than `Box`: the index keeps raw pointers to entries, and
    /// moving a `Box` would assert unique ownership over them.
    pub(crate) entries: Mutex<Vec<Arc<Entry>>>,
}

impl Shard {
    /// Whether any guard of this shard is still held.
    fn has_outstanding_guards(&self) -> bool {
        let entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        entries.iter().any(|e| e.has_outstanding_guards())
    }
}

/// Open-addressing map from a raw site key to its entry, owned by one thread.
struct Index {
    slots: Vec<([usize; 3], *const Entry)>,
    len: usize,
    /// Recent hits, by call site, two ways: most code acquires at a few
    /// sites again and again (a semaphore cycle touches three or more),
    /// and a hit here costs no loop and no mispredicted probe.
    recent: [([usize; 3], *const Entry); RECENT],
}

const EMPTY: [usize; 3] = [0; 3];
/// Entries of [`Index::recent`]; a power of two. With 8, a build whose
/// semaphore sites hashed into one pair of slots paid a table look-up on
/// every acquisition (observed down+up 739 instructions instead of 459).
/// With 32 (16 pairs), a lock taken at 50 sites in turn besides its hot
/// one (the bench's `many sites` rows) missed here on 9 of 10 of those
/// acquisitions, each a table look-up (~150 instructions, ~25 ns more);
/// 128 holds them all, for 3 KiB more per thread and recorder (the slot is
/// boxed, so that moving it to the front stays cheap) and nothing per hit.
const RECENT: usize = 128;

impl Index {
    const fn new() -> Index {
        Index {
            slots: Vec::new(),
            len: 0,
            recent: [(EMPTY, std::ptr::null()); RECENT],
        }
    }

    /// The `recent` slot of a key: call sites are 8-byte aligned statics a
    /// few dozen bytes apart, so their low bits above the alignment spread;
    /// the mode word tells a site's modes apart. Shifts and xors, not a
    /// multiply: a Fibonacci hash spread keys no better across 32 two-way
    /// slots and its multiply's latency, on the path to the load, made
    /// every observed row 3-6 % slower in time (same run, 8 alternations).
    ///
    /// Returns the first of the key's pair of slots (its set; even): the
    /// pair is a two-way set, most recent first. Homes of their own in
    /// one pair made two sites whose homes were neighbours evict each
    /// other on every acquisition (each new one pushed its home's
    /// occupant over the other): observed Semaphore 1.4 -> 2.1x bare in a
    /// build where two of its sites were such neighbours.
    #[inline(always)]
    fn recent_slot(key: &[usize; 3]) -> usize {
        Self::recent_hash(key) & (RECENT - 2)
    }

    /// The bits [`Index::recent_slot`] picks a pair from: the call site
    /// and the mode only, the parts of a key the caller knows without
    /// reading the lock, so that [`Index::only_at`] finds the same pair.
    #[inline(always)]
    fn recent_hash(key: &[usize; 3]) -> usize {
        Self::site_hash(key[1], key[2] & MODE_KEY_BITS)
    }

    #[inline(always)]
    fn site_hash(site: usize, mode_bits: usize) -> usize {
        (site >> 3) ^ (site >> 8) ^ mode_bits
    }

    /// The recent entry at `site` in the mode of `mode_bits`
    /// ([`Mode::key_bits`](crate::class::Mode::key_bits)), if exactly one
    /// of its pair is at that site and mode: a guess made without reading
    /// the lock, which the caller checks against the lock once it holds
    /// the lock's line (`meter::acquire`, [`Entry::counts_key`]). Two
    /// classes taken at one site (a helper's lock call) make no guess.
    #[inline(always)]
    fn only_at(&self, site: usize, mode_bits: usize) -> Option<*const Entry> {
        let i = Self::site_hash(site, mode_bits) & (RECENT - 2);
        let at = |k: &[usize; 3]| ((k[1] ^ site) | ((k[2] & MODE_KEY_BITS) ^ mode_bits)) == 0;
        let ((a, ea), (b, eb)) = (&self.recent[i], &self.recent[i + 1]);
        if at(a) {
            // Only the site, to be quick: another mode at one site is rare.
            return (b[1] != site).then_some(*ea);
        }
        at(b).then_some(*eb)
    }

    #[inline]
    fn hash(key: &[usize; 3], mask: usize) -> usize {
        let h = (key[0] ^ key[1].rotate_left(21) ^ key[2].rotate_left(42))
            .wrapping_mul(0x9E37_79B9_7F4A_7C15);
        (h >> 20) & mask
    }

    /// Compares word by word: an array `==` reads the freshly stored key
    /// back with a 16-byte load spanning two 8-byte stores, which cannot be
    /// store-forwarded and stalls ~25 cycles (see `docs/performance.md`).
    #[inline(always)]
    fn same(a: &[usize; 3], b: &[usize; 3]) -> bool {
        ((a[0] ^ b[0]) | (a[1] ^ b[1]) | (a[2] ^ b[2])) == 0
    }

    /// The entry of `key` if it was found recently: in its own `recent`
    /// slot or, where another hot site holds that slot, in the one next
    /// door (see [`Index::remember`]). Two probes, both inline: the
    /// thread-local access around this is kept to its address (see
    /// [`entry`]), which left room for the second.
    #[inline(always)]
    fn last_hit(&self, key: &[usize; 3]) -> Option<*const Entry> {
        let i = Self::recent_slot(key);
        let (k, e) = &self.recent[i];
        if Self::same(k, key) {
            return Some(*e);
        }
        let (k, e) = &self.recent[i + 1];
        Self::same(k, key).then_some(*e)
    }

    /// The entry of `key`: from `recent`, else from the table.
    fn get(&mut self, key: &[usize; 3]) -> Option<*const Entry> {
        if let Some(e) = self.last_hit(key) {
            return Some(e);
        }
        if self.slots.is_empty() {
            return None;
        }
        let mask = self.slots.len() - 1;
        let mut i = Self::hash(key, mask);
        loop {
            let (k, e) = self.slots[i];
            if Self::same(&k, key) {
                self.remember(k, e);
                return Some(e);
            }
            if k == EMPTY {
                return None;
            }
            i = (i + 1) & mask;
        }
    }

    /// Remembers a hit first in its pair; the pair's first moves to the
    /// second, whose occupant, the least recent, goes. Direct-mapped, two
    /// sites of one loop that hash to one slot missed on every
    /// acquisition: a semaphore cycle (three sites) cost 699 instructions
    /// instead of 473 in a build where two of its sites collided,
    /// depending only on where the linker put their `Location`s.
    fn remember(&mut self, key: [usize; 3], entry: *const Entry) {
        let i = Self::recent_slot(&key);
        self.recent[i + 1] = self.recent[i];
        self.recent[i] = (key, entry);
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
pub(crate) struct Slot {
    recorder: Arc<Recorder>,
    /// `Arc::as_ptr(&recorder)`, kept so that the observed path compares
    /// it with one load (the `Arc`'s pointer is its count's, 16 bytes
    /// before the recorder: a load and an add).
    recorder_at: *const Recorder,
    /// One site's entry, guessed with one compare ([`LastGuess`]).
    last_guess: LastGuess,
    shard: Arc<Shard>,
    index: Index,
}

/// All of one thread's slots. Dropped when the thread exits, which folds
/// its counts into the recorders so that exited threads stay counted.
pub(crate) struct ThreadState {
    /// Boxed: a slot holds its [`Index`]'s recent sites inline (4 KiB),
    /// and [`find_entry`] moves the recorder in use to the front.
    slots: UnsafeCell<Vec<Box<Slot>>>,
}

thread_local! {
    static THREAD: ThreadState = const { ThreadState { slots: UnsafeCell::new(Vec::new()) } };
}

/// `THREAD`'s first slot while it has one, else null: in
/// `thread_ptrs` (read with `now`'s slot, in one thread-local). Reading
/// it is one load, where `THREAD` (dropped at exit) checks first that its
/// destructor is registered and has not run. Set by [`find_entry`] after
/// every change of the slots (so the pointer is derived after the last
/// write through the `Vec`), cleared before they are dropped.
#[inline(always)]
fn first() -> *const Slot {
    crate::thread_ptrs::first_slot()
}

/// Sets [`first`].
fn set_first(slot: *const Slot) {
    crate::thread_ptrs::set_first_slot(slot);
}

/// This thread's first slot, if it has one.
#[inline(always)]
fn first_slot<'a>() -> Option<&'a Slot> {
    let first = first();
    // SAFETY: non-null, `first` points at `THREAD`'s first slot, derived
    // after the last change of the slots (`find_entry`) and cleared
    // before they are dropped; only this thread touches them, and the
    // reference ends within the caller's acquisition, which changes them
    // only through `find_entry`, after its last use.
    (!first.is_null()).then(|| unsafe { &*first })
}

/// Finds or creates this thread's entry for `key` in the recorder at
/// `recorder` (an address from [`super::current`]).
///
/// The entry lives as long as this thread's slot for the recorder, which
/// lives until the thread exits (and longer if a guard is still out).
#[inline(always)]
pub(crate) fn entry(
    recorder: *const Recorder,
    raw: [usize; 3],
    key: impl FnOnce() -> SiteKey,
) -> Option<*const Entry> {
    // The common case, kept small enough to inline: this thread's first
    // recorder, and a site it used recently.
    if let Some(slot) = first_slot() {
        if slot.recorder_at == recorder {
            if let Some(e) = slot.index.last_hit(&raw) {
                return Some(e);
            }
        }
    }
    // Only the thread-local's address inside `try_with`: with the lookup
    // inside its closure too, one more probe made LLVM stop inlining
    // `try_with` (+44 instructions on every acquisition).
    let slots = THREAD.try_with(|t| t.slots.get()).ok()?;
    // SAFETY: `slots` is only touched by this thread, and nothing called
    // while the borrow is live re-enters this module; the thread-local
    // outlives this call.
    find_entry(unsafe { &mut *slots }, recorder, raw, &key())
}

/// This thread's entry at `site` in the mode of `mode_bits` in the
/// recorder at `recorder`, guessed from its recent entries without reading
/// the lock ([`Index::only_at`]); the caller checks it once the attempt
/// has made the lock's line its own ([`Entry::counts_key`]) and otherwise
/// looks up with [`entry`]. Reading the lock before its attempt took the
/// line shared, and the attempt then had to take it back: two transfers of
/// a contended lock's line instead of one (`docs/performance.md`,
/// "Session 11").
#[inline(always)]
pub(crate) fn guess_entry(
    recorder: *const Recorder,
    site: usize,
    mode_bits: usize,
) -> Option<*const Entry> {
    let slot = first_slot()?;
    if slot.recorder_at != recorder {
        std::hint::cold_path();
        return None;
    }
    let key = LastGuess::key(site, mode_bits);
    if let Some(e) = slot.last_guess.at(key) {
        return Some(e);
    }
    std::hint::cold_path();
    let guess = slot.index.only_at(site, mode_bits)?;
    slot.last_guess.offer(key, guess);
    Some(guess)
}

/// One site's guess kept in front of [`Index::only_at`]: a thread that
/// takes one site again and again (a loop) finds its entry with one
/// compare, not the recent pair's hash and probes (observed Mutex 150 ->
/// 131 instructions per lock/unlock, `docs/performance.md`, "Session 29").
///
/// Offered a guess the pair made, or, at a site where two classes are
/// taken (a helper's), where the pair makes none, the entry that two
/// look-ups in a row by the lock's key found there ([`looked_up`]). Set
/// when empty, and otherwise in place of the kept one if, over
/// the last [`LastGuess::REPLACE_AFTER`] guesses from the pair, the kept
/// site was taken fewer times than that: a loop returning to a site the
/// thread took before takes the guess back within that many acquisitions,
/// and a hot site visited by others keeps it ("Session 30"). Emptied by every full look-up
/// ([`find_entry`]: a new site, so the next site guessed takes it) and by
/// a guess that proved wrong ([`forget_guess`]). Not replaced on every
/// guess: code that cycles through a few sites (a semaphore's down and
/// up) would then store it on every acquisition and read it back on the
/// next, which cost the observed Semaphore 22 instructions a cycle and
/// about 1 ns more than no such guess at all.
struct LastGuess {
    /// [`LastGuess::key`] of the site, or [`LastGuess::NONE`].
    key: Cell<usize>,
    entry: Cell<*const Entry>,
    /// Guesses from the pair left before the next one may replace the
    /// kept guess; 0 when none is kept.
    misses_left: Cell<u32>,
    /// The kept entry's acquisitions ([`Entry::taken_so_far`]) when
    /// `misses_left` was last set.
    taken_then: Cell<u64>,
    /// The entry the last look-up by the lock's key found at a site with
    /// no guess ([`LastGuess::looked_up`]); only compared, never read.
    looked_up_last: Cell<*const Entry>,
}

impl LastGuess {
    /// No site's key (sites are 8-aligned addresses, never 1).
    const NONE: usize = 1;

    /// Guesses the pair makes, the kept one missed, before the next may
    /// replace it: the check ([`LastGuess::renew_or_replace`]) and its
    /// stores come once per that many misses.
    const REPLACE_AFTER: u32 = 64;

    const fn new() -> LastGuess {
        LastGuess {
            key: Cell::new(Self::NONE),
            entry: Cell::new(std::ptr::null()),
            misses_left: Cell::new(0),
            taken_then: Cell::new(0),
            looked_up_last: Cell::new(std::ptr::null()),
        }
    }

    /// A site and mode as one word: call sites are 8-byte aligned, so
    /// the mode's two bits fit under the site's.
    #[inline(always)]
    fn key(site: usize, mode_bits: usize) -> usize {
        site | mode_bits >> 2
    }

    /// The guess for `key`, if it is the one kept.
    #[inline(always)]
    fn at(&self, key: usize) -> Option<*const Entry> {
        (self.key.get() == key).then(|| self.entry.get())
    }

    /// Counts a guess the pair made for `key` (the kept guess missed); at
    /// the count's end, [`LastGuess::renew_or_replace`].
    #[inline(always)]
    fn offer(&self, key: usize, entry: *const Entry) {
        match self.misses_left.get() {
            0 => self.renew_or_replace(key, entry),
            left => self.misses_left.set(left - 1),
        }
    }

    /// Keeps `entry` as `key`'s guess if none is kept, or if the kept
    /// site was taken fewer than [`LastGuess::REPLACE_AFTER`] times while
    /// that many guesses missed it; otherwise counts the misses again.
    #[cold]
    #[inline(never)]
    fn renew_or_replace(&self, key: usize, entry: *const Entry) {
        let kept = match self.key.get() {
            Self::NONE => None,
            // SAFETY: a kept entry is one of this thread's entries in the
            // slot holding this guess, which live as long as the slot.
            _ => Some(unsafe { &*self.entry.get() }.taken_so_far()),
        };
        let taken = match kept {
            Some(now)
                if now.wrapping_sub(self.taken_then.get()) >= u64::from(Self::REPLACE_AFTER) =>
            {
                now
            }
            _ => {
                self.key.set(key);
                self.entry.set(entry);
                // SAFETY: `entry` is one of this thread's entries in this
                // guess's slot (the pair's guess, or the entry a look-up
                // just found in this slot, `looked_up`), as above.
                unsafe { &*entry }.taken_so_far()
            }
        };
        self.taken_then.set(taken);
        self.misses_left.set(Self::REPLACE_AFTER);
    }

    /// A look-up by the lock's key found `entry` at `key`, a site the pair
    /// made no guess for. The second look-up in a row to find the same
    /// entry offers it ([`LastGuess::offer`]): a loop taking one class at a
    /// helper's site then goes the inline way, its guess checked after the
    /// attempt like any other; classes taken there in turn never offer
    /// one, so they are never guessed wrong.
    #[inline(always)]
    fn looked_up(&self, key: usize, entry: *const Entry) {
        if self.looked_up_last.replace(entry) == entry {
            self.offer(key, entry);
        }
    }

    /// Empties the guess, and the look-up that may have offered it: in a
    /// loop taking two classes in turn at one site, whose look-ups of one
    /// class followed its wrong guesses, that look-up and the next of its
    /// class offered that class every other time, wrong each next time.
    fn forget(&self) {
        self.key.set(Self::NONE);
        self.misses_left.set(0);
        self.looked_up_last.set(std::ptr::null());
    }
}

/// Forgets this thread's kept guess ([`LastGuess`]) after it proved
/// wrong, so that a site where two classes are taken in turn costs one
/// wrong guess, not one per acquisition.
#[cold]
pub(crate) fn forget_guess() {
    if let Some(slot) = first_slot() {
        slot.last_guess.forget();
    }
}

/// Tells this thread's kept guess ([`LastGuess::looked_up`]) that a
/// look-up by the lock's key in the recorder at `recorder` found `entry`
/// at `site` in the mode of `mode_bits`, a site [`guess_entry`] had no
/// guess for.
#[inline]
pub(crate) fn looked_up(
    recorder: *const Recorder,
    site: usize,
    mode_bits: usize,
    entry: *const Entry,
) {
    if let Some(slot) = first_slot().filter(|slot| slot.recorder_at == recorder) {
        slot.last_guess
            .looked_up(LastGuess::key(site, mode_bits), entry);
    }
}

#[inline(never)]
fn find_entry(
    slots: &mut Vec<Box<Slot>>,
    recorder: *const Recorder,
    raw: [usize; 3],
    key: &SiteKey,
) -> Option<*const Entry> {
    let i = match slots.iter().position(|s| s.recorder_at == recorder) {
        Some(i) => i,
        None => {
            new_slot(slots)?;
            slots.len() - 1
        }
    };
    // The recorder in use moves to the front, where `entry`'s inline
    // check looks: a thread that once recorded under a scoped subscriber
    // otherwise came here on every later acquisition under the global one
    // (~60 instructions more each, found by the bench's scoped rows).
    // Only when it is not there already (the slots are boxed, so a swap
    // moves two pointers; unboxed, it copied whole slots, even onto
    // themselves, on every miss of the recent-site cache).
    if i != 0 {
        slots.swap(0, i);
    }
    let slot = &mut slots[0];
    slot.last_guess.forget();
    let found = match slot.index.get(&raw) {
        Some(e) => Some(e),
        None => new_entry(slot, raw, key),
    };
    set_first(&*slots[0]);
    found
}

#[cold]
fn new_slot(slots: &mut Vec<Box<Slot>>) -> Option<&mut Slot> {
    let recorder = super::current_arc()?;
    let shard = Arc::new(Shard::default());
    recorder.adopt(shard.clone());
    slots.push(Box::new(Slot {
        recorder_at: Arc::as_ptr(&recorder),
        last_guess: LastGuess::new(),
        recorder,
        shard,
        index: Index::new(),
    }));
    slots.last_mut().map(|slot| &mut **slot)
}

#[cold]
fn new_entry(slot: &mut Slot, raw: [usize; 3], key: &SiteKey) -> Option<*const Entry> {
    let mut entries = slot.shard.entries.lock().unwrap_or_else(|e| e.into_inner());
    if entries.len() >= MAX_ENTRIES_PER_THREAD {
        slot.recorder.count_dropped();
        return None;
    }
    let entry = Arc::new(Entry::new(
        *key,
        raw,
        slot.recorder.serial,
        slot.recorder.clock.clone(),
        slot.recorder.slow_ns,
        // The rate in effect: an overhead budget may have lowered it.
        u64::from(slot.recorder.probe.hold_every()),
    ));
    let ptr = Arc::as_ptr(&entry);
    entries.push(entry);
    drop(entries);
    slot.index.insert(raw, ptr);
    Some(ptr)
}

impl Drop for ThreadState {
    fn drop(&mut self) {
        set_first(std::ptr::null());
        // Before the entries go: `now`'s readers resolve entries of
        // registered threads only.
        crate::now::exiting();
        for slot in self.slots.get_mut().drain(..) {
            let slot = *slot;
            slot.recorder.retire(&slot.shard);
            if slot.shard.has_outstanding_guards() {
                // A guard outlives this thread's storage (held by another
                // thread-local being destroyed later): keep its entry alive.
                std::mem::forget(slot.shard);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two keys whose `recent` slot is the same.
    fn colliding_keys() -> ([usize; 3], [usize; 3]) {
        let a = [1, 0x1000, 0];
        let b = (1..)
            .map(|n| [2, 0x1000 + 8 * n, 0])
            .find(|b| Index::recent_slot(b) == Index::recent_slot(&a))
            .unwrap();
        (a, b)
    }

    /// Two sites of one loop whose hashes differ only in the last bit
    /// (with homes of their own, they were neighbours that evicted each
    /// other), and a stale site in their pair, used alternately: after
    /// one miss each, both hit for ever.
    #[test]
    fn two_sites_of_a_pair_used_in_turn_stop_missing() {
        let hash = |k: &[usize; 3]| Index::recent_hash(k) & (RECENT - 1);
        let a = [1, 0x1000, 0];
        let b = (1..)
            .map(|n| [2, 0x1000 + 8 * n, 0])
            .find(|b| hash(b) == hash(&a) ^ 1)
            .unwrap();
        let stale = (1..)
            .map(|n| [3, 0x2000 + 8 * n, 0])
            .find(|k| Index::recent_slot(k) == Index::recent_slot(&a))
            .unwrap();
        let e = std::ptr::dangling::<Entry>();
        let mut index = Index::new();
        index.remember(stale, e);
        let mut misses = 0;
        for round in 0..10 {
            for k in [a, b] {
                if index.last_hit(&k).is_none() {
                    misses += 1;
                    assert!(round == 0, "{k:?} missed again in round {round}");
                    index.remember(k, e);
                }
            }
        }
        assert_eq!(misses, 2);
    }

    /// The bench's `many sites` shape: a hot site and, one acquisition
    /// in 16, the next of 50 others, their `Location`s 24 bytes apart as
    /// the compiler lays them out. After each site's first look-up, every
    /// one is found in `recent` (with 32 entries, 9 in 10 of the others
    /// missed on every round).
    #[test]
    fn fifty_sites_taken_in_turn_with_a_hot_one_stay_recent() {
        let hot = [1, 0x7000, 0];
        let cold: Vec<[usize; 3]> = (0..50).map(|n| [1, 0x9000 + 24 * n, 0]).collect();
        let e = std::ptr::dangling::<Entry>();
        let mut index = Index::new();
        for k in std::iter::once(&hot).chain(&cold) {
            index.insert(*k, e);
        }
        let mut misses_after_first_round = 0;
        for i in 0..16 * 50 * 3 {
            let k = match i % 16 {
                15 => cold[(i / 16) % 50],
                _ => hot,
            };
            if index.last_hit(&k).is_none() {
                misses_after_first_round += usize::from(i >= 16 * 50);
                assert_eq!(index.get(&k), Some(e));
            }
        }
        assert_eq!(misses_after_first_round, 0);
    }

    #[test]
    fn two_sites_sharing_a_recent_slot_both_stay_recent() {
        let (a, b) = colliding_keys();
        let ea = std::ptr::dangling::<Entry>();
        let eb = ea.wrapping_add(1);
        let mut index = Index::new();
        index.insert(a, ea);
        index.insert(b, eb);
        assert_eq!(index.get(&a), Some(ea));
        assert_eq!(index.get(&b), Some(eb));
        // Both are now answered from `recent`: one in its own slot, the
        // other next door, with the table out of the way.
        index.slots.clear();
        assert_eq!(index.get(&a), Some(ea));
        assert_eq!(index.get(&b), Some(eb));
        assert_eq!(index.last_hit(&b), Some(eb));
    }

    /// A standalone entry for the kept guess's tests.
    fn test_entry() -> Entry {
        use crate::class::{Class, Mode};
        use lockmeter_model::LockKind;
        use std::panic::Location;
        let key = SiteKey {
            class: Class::new(Some("lockmeter.test.kept_guess"), Location::caller()),
            kind: LockKind::Mutex,
            site: Location::caller(),
            mode: Mode::Exclusive,
        };
        Entry::new(key, [0; 3], 0, quanta::Clock::mock().0, u64::MAX, 1)
    }

    /// `n` acquisitions counted at `e`, each a miss of the kept guess
    /// (`offer`) when `missed` is `Some`.
    fn take(guess: &LastGuess, e: &Entry, n: u32, missed: Option<usize>) {
        for _ in 0..n {
            if let Some(key) = missed {
                guess.offer(key, e);
            }
            e.count_nowait_after(e.nowait_so_far());
        }
    }

    /// The kept guess takes the first site offered and keeps it against
    /// later offers until forgotten; a site that misses it
    /// [`LastGuess::REPLACE_AFTER`] times while the kept one is not taken
    /// (a loop back at a site taken before) then takes it.
    #[test]
    fn the_kept_guess_is_the_first_offered_until_forgotten_or_not_taken() {
        use crate::class::Mode;
        let (ea, eb) = (test_entry(), test_entry());
        let (a, b) = (0x1000, 0x1018);
        let (ka, kb) = (
            LastGuess::key(a, Mode::Exclusive.key_bits()),
            LastGuess::key(b, Mode::Exclusive.key_bits()),
        );
        assert_ne!(ka, LastGuess::key(a, Mode::Read.key_bits()));
        let (pa, pb) = (&ea as *const Entry, &eb as *const Entry);
        let guess = LastGuess::new();
        assert_eq!(guess.at(ka), None);
        guess.offer(ka, pa);
        guess.offer(kb, pb);
        assert_eq!((guess.at(ka), guess.at(kb)), (Some(pa), None));
        guess.forget();
        assert_eq!(guess.at(ka), None);
        guess.offer(kb, pb);
        assert_eq!((guess.at(ka), guess.at(kb)), (None, Some(pb)));
        // `b` is kept and no longer taken; `a` misses it
        // `REPLACE_AFTER` times, and the next miss replaces it.
        take(&guess, &ea, LastGuess::REPLACE_AFTER, Some(ka));
        assert_eq!((guess.at(ka), guess.at(kb)), (None, Some(pb)));
        take(&guess, &ea, 1, Some(ka));
        assert_eq!((guess.at(ka), guess.at(kb)), (Some(pa), None));
    }

    /// A kept site taken at least as often as others miss it keeps the
    /// guess: a hot site among cold ones, and two sites taken in turn
    /// (a semaphore's down and up), which would otherwise swap it.
    #[test]
    fn a_kept_guess_taken_as_often_as_it_misses_stays() {
        use crate::class::Mode;
        let (hot, cold) = (test_entry(), test_entry());
        let (kh, kc) = (
            LastGuess::key(0x1000, Mode::Exclusive.key_bits()),
            LastGuess::key(0x1018, Mode::Exclusive.key_bits()),
        );
        let guess = LastGuess::new();
        guess.offer(kh, &hot);
        for _ in 0..10 * LastGuess::REPLACE_AFTER {
            take(&guess, &hot, 1, None);
            take(&guess, &cold, 1, Some(kc));
            assert_eq!(guess.at(kh), Some(&hot as *const Entry));
        }
        // Taken less often than it misses, it goes.
        for _ in 0..2 * LastGuess::REPLACE_AFTER {
            take(&guess, &cold, 2, Some(kc));
            take(&guess, &hot, 1, None);
        }
        assert_eq!(guess.at(kc), Some(&cold as *const Entry));
    }

    /// At a site the pair makes no guess for, two look-ups in a row that
    /// find one entry offer it; look-ups that find two classes in turn
    /// never do, so they are never guessed wrong.
    #[test]
    fn a_shared_site_is_guessed_after_two_look_ups_of_one_class() {
        use crate::class::Mode;
        let (ea, eb) = (test_entry(), test_entry());
        let (pa, pb) = (&ea as *const Entry, &eb as *const Entry);
        let key = LastGuess::key(0x1000, Mode::Exclusive.key_bits());
        let guess = LastGuess::new();
        for _ in 0..10 {
            guess.looked_up(key, pa);
            assert_eq!(guess.at(key), None);
            guess.looked_up(key, pb);
            assert_eq!(guess.at(key), None);
        }
        guess.looked_up(key, pb);
        assert_eq!(guess.at(key), Some(pb));
        // Proved wrong (`a` taken under `b`'s guess): forgotten, and `a`
        // is guessed after two look-ups of its own.
        guess.forget();
        guess.looked_up(key, pa);
        assert_eq!(guess.at(key), None);
        guess.looked_up(key, pa);
        assert_eq!(guess.at(key), Some(pa));
        // Then the two in turn: `b` under `a`'s guess, forgotten; `a`'s
        // look-up before the wrong guess does not count with its next.
        guess.forget();
        for _ in 0..10 {
            guess.looked_up(key, pa);
            assert_eq!(guess.at(key), None);
            guess.looked_up(key, pb);
            assert_eq!(guess.at(key), None);
        }
    }

    /// A site's entry is guessed when its pair holds that site once, in
    /// that mode; not when a second class at the same site shares the pair
    /// (the guess would be wrong for one of them every other time).
    #[test]
    fn a_site_is_guessed_only_when_one_class_was_taken_there() {
        use crate::class::Mode;
        let site = 0x1000;
        let class_a = [1, site, Mode::Exclusive.key_bits()];
        let class_b = [2, site, Mode::Exclusive.key_bits()];
        let ea = std::ptr::dangling::<Entry>();
        let eb = ea.wrapping_add(1);
        let mut index = Index::new();
        assert_eq!(index.only_at(site, Mode::Exclusive.key_bits()), None);
        index.remember(class_a, ea);
        assert_eq!(index.only_at(site, Mode::Exclusive.key_bits()), Some(ea));
        assert_eq!(index.only_at(site, Mode::Read.key_bits()), None);
        assert_eq!(index.only_at(site + 8, Mode::Exclusive.key_bits()), None);
        // The pair of a key depends on its site and mode only.
        assert_eq!(Index::recent_slot(&class_a), Index::recent_slot(&class_b));
        index.remember(class_b, eb);
        assert_eq!(index.only_at(site, Mode::Exclusive.key_bits()), None);
        assert_eq!(index.last_hit(&class_a), Some(ea));
        assert_eq!(index.last_hit(&class_b), Some(eb));
    }
}
