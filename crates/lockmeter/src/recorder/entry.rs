//! Per-thread counters for one (class, site, mode).
//!
//! Every [`Entry`] has exactly one writer, the thread that owns its shard,
//! so counters are bumped with a relaxed load and store (a plain `mov` on
//! x86) instead of a locked read-modify-write. Snapshots read them with
//! relaxed loads from another thread: each counter is exact and monotonic,
//! although two counters read a moment apart may straddle an acquisition.

use std::panic::Location;
use std::ptr;
use std::sync::atomic::{
    AtomicPtr, AtomicU64,
    Ordering::{Acquire, Relaxed, Release},
};

use lockmeter_model::dist::{bucket_index, BUCKETS};

use crate::class::SiteKey;

/// A single-writer counter.
#[derive(Debug, Default)]
struct Counter(AtomicU64);

impl Counter {
    #[inline]
    fn add(&self, n: u64) {
        self.0.store(self.0.load(Relaxed).wrapping_add(n), Relaxed);
    }

    #[inline]
    fn sub(&self, n: u64) {
        self.0.store(self.0.load(Relaxed).wrapping_sub(n), Relaxed);
    }

    #[inline]
    fn raise_to(&self, n: u64) {
        if n > self.0.load(Relaxed) {
            self.0.store(n, Relaxed);
        }
    }

    #[inline]
    fn get(&self) -> u64 {
        self.0.load(Relaxed)
    }
}

/// Buckets per lazily allocated chunk of an [`AtomicDist`]: two cache lines.
const CHUNK: usize = 16;
/// Chunks per distribution.
const CHUNKS: usize = BUCKETS.div_ceil(CHUNK);

/// One chunk of buckets.
type Chunk = [Counter; CHUNK];

/// A single-writer log-bucket distribution (see `lockmeter_model::dist`).
///
/// The 160 buckets come in chunks of 16, each allocated the first time a
/// value falls in it: a distribution's values span a few octaves, so an
/// entry holds a few hundred bytes of buckets instead of 5 KiB for four
/// full distributions (see `docs/performance.md`, "Memory"). Counts stay
/// exact; a chunk is allocated by the writer, after the unlock that ends
/// the hold it records, and published with a release store that readers
/// acquire.
struct AtomicDist {
    count: Counter,
    total: Counter,
    min: AtomicU64,
    max: Counter,
    chunks: [AtomicPtr<Chunk>; CHUNKS],
}

impl AtomicDist {
    fn new() -> AtomicDist {
        AtomicDist {
            count: Counter::default(),
            total: Counter::default(),
            min: AtomicU64::new(u64::MAX),
            max: Counter::default(),
            chunks: std::array::from_fn(|_| AtomicPtr::new(ptr::null_mut())),
        }
    }

    #[inline]
    fn record(&self, ns: u64) {
        self.count.add(1);
        self.total.add(ns);
        self.max.raise_to(ns);
        if ns < self.min.load(Relaxed) {
            self.min.store(ns, Relaxed);
        }
        let ix = bucket_index(ns);
        // Relaxed: only this thread ever stores the pointer.
        let mut chunk = self.chunks[ix / CHUNK].load(Relaxed);
        if chunk.is_null() {
            chunk = self.allocate(ix / CHUNK);
        }
        // SAFETY: a published chunk lives until the distribution drops.
        let chunk = unsafe { &*chunk };
        chunk[ix % CHUNK].add(1);
    }

    /// The first value in chunk `c`: allocates and publishes it.
    #[cold]
    #[inline(never)]
    fn allocate(&self, c: usize) -> *mut Chunk {
        let chunk = Box::into_raw(Box::new(std::array::from_fn(|_| Counter::default())));
        self.chunks[c].store(chunk, Release);
        chunk
    }

    /// Bucket `ix` as a reader sees it.
    fn bucket(&self, ix: usize) -> u64 {
        let chunk = self.chunks[ix / CHUNK].load(Acquire);
        if chunk.is_null() {
            return 0;
        }
        // SAFETY: as in `record`.
        let chunk = unsafe { &*chunk };
        chunk[ix % CHUNK].get()
    }

    /// The model form of the distribution so far.
    fn read(&self) -> lockmeter_model::Dist {
        let count = self.count.get();
        if count == 0 {
            return lockmeter_model::Dist::default();
        }
        // Every value lies between min and max: only their buckets can be
        // non-empty (read first, so a racing record is at worst missed).
        let (min, max) = (self.min.load(Relaxed), self.max.get());
        let (lo, hi) = (bucket_index(min.min(max)), bucket_index(max));
        let in_range = (lo..=hi).map(|ix| self.bucket(ix));
        let total = self.total.get();
        lockmeter_model::Dist::from_bucket_range(lo, in_range, count, total, min, max)
    }

    /// Bytes of buckets allocated so far.
    #[cfg(test)]
    fn allocated_bytes(&self) -> usize {
        let n = self
            .chunks
            .iter()
            .filter(|c| !c.load(Relaxed).is_null())
            .count();
        n * std::mem::size_of::<Chunk>()
    }
}

impl Drop for AtomicDist {
    fn drop(&mut self) {
        for c in &mut self.chunks {
            let chunk = *c.get_mut();
            if !chunk.is_null() {
                // SAFETY: allocated by `allocate` with `Box::into_raw`,
                // and `&mut self` means no reader or writer remains.
                drop(unsafe { Box::from_raw(chunk) });
            }
        }
    }
}

/// Holder sites remembered per entry; more spill into one "other" slot.
pub(crate) const HOLDER_SLOTS: usize = 8;

/// A call site that held the lock while this entry's acquisitions waited.
#[derive(Default)]
struct HolderSlot {
    /// Null until claimed; the spill slot stays null.
    site: AtomicPtr<Location<'static>>,
    contended: Counter,
    wait_ns: Counter,
}

/// The counters of one (class, site, mode) on one thread.
///
/// The fields are private: the meter (`crate::meter`) is the only writer,
/// through the intent-named methods below, and the snapshot build reads
/// them through [`Entry::stats`] and [`Entry::holders`]. Primitives never
/// see an `Entry`.
pub(crate) struct Entry {
    key: SiteKey,
    /// What an acquisition counted here leaves in the lock's `Meta`: the
    /// token of the entry's thread and the serial of its recorder. Kept
    /// here, on the line the counters are written to anyway, so that the
    /// hot path reads them with one load instead of a thread-local access
    /// and a load through the recorder, and compares both with the lock's
    /// in one compare.
    tokens: Tokens,
    /// The class and tag words of the raw key this entry was made for
    /// (`meter::Meta::raw_key`; the site word is the entry's site), so
    /// that an entry guessed from its call site alone can be checked
    /// against the lock ([`Entry::counts_key`]). Kept as words rather than
    /// derived from `key`, so that the check inside the critical section
    /// is two loads and a compare.
    raw_class: usize,
    raw_tag: usize,
    clock: quanta::Clock,
    /// Acquisitions waiting or holding at least this long emit a WARN event.
    slow_ns: u64,
    /// `sample_every - 1` for a power-of-two `sample_every`: an uncontended
    /// acquisition is timed when `nowait & sample_mask == 0` as it begins,
    /// a contended one left to the sample when `wait_eligible &
    /// sample_mask == 0`. Atomic only so that an overhead budget can lower
    /// it (`recorder::probe`); a relaxed load is the same `mov` as a plain
    /// one.
    sample_mask: AtomicU64,
    /// Acquisitions are `nowait + contended`, so they cost no store here.
    /// Also the uncontended hold sample's counter: the sample reads it
    /// before the attempt and the count stores it after, so that an
    /// uncontended acquisition writes one counter of its entry, not two
    /// (`docs/performance.md`, "Session 28").
    nowait: Counter,
    contended: Counter,
    rejected: Counter,
    spins: Counter,
    sleeps: Counter,
    bounces: Counter,
    instances: Counter,
    waits: Counter,
    wake_calls: Counter,
    wakeups: Counter,
    empty_wake_calls: Counter,
    spurious_wakeups: Counter,
    exclusive_wakeups: Counter,
    max_waiters: Counter,
    /// Acquisitions counted in `nowait` or `wait_eligible` whose hold is
    /// never timed (a semaphore `down`, a wait queue's wait, a leaked
    /// guard, a hold beyond the timed-hold table), so that the population
    /// `hold_sampled` is a sample of is `nowait + wait_eligible - unheld`.
    /// Written only on those paths. (A `down` and a held acquisition at
    /// one call site, possible only through a `#[track_caller]` wrapper,
    /// share the pick counter: the holds are then sampled less evenly, and
    /// still scaled by their own count.)
    unheld: Counter,
    /// Holds after a contended acquisition whose timing was forced (see
    /// `meter::Probe::acquired_after_wait`): every one is timed.
    hold: AtomicDist,
    /// Timed holds of the acquisitions in `Entry::hold_population`, one in
    /// `sample_mask + 1`: uncontended ones, and contended ones whose
    /// timing was left to the sample.
    hold_sampled: AtomicDist,
    /// Waits of contended acquisitions whose timing was forced, and the
    /// sleeps of wait queues.
    wait: AtomicDist,
    /// Waits of the contended acquisitions counted in `wait_eligible`
    /// that the sample timed.
    wait_sampled: AtomicDist,
    /// Contended acquisitions whose timing was left to the sample: the
    /// population that `wait_sampled` is a sample of.
    wait_eligible: Counter,
    wake_latency: AtomicDist,
    holders: [HolderSlot; HOLDER_SLOTS + 1],
    /// Timed guards of this entry not yet released (untimed ones keep no
    /// pointer to it); a shard with such guards is never freed (see
    /// `shard::ThreadState`'s drop).
    outstanding: Counter,
    /// Stacks of this entry's contended acquisitions (and of its holds
    /// that made others wait), allocated on the first one.
    pub(crate) stacks: crate::stacks::table::EntryStacks,
}

/// See [`Entry::tokens`]: the `meter::thread_token` of the thread that
/// owns the entry in the low half, the `Recorder::serial` of the recorder
/// it counts in in the high half, one word as the lock's `Meta` keeps them.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) struct Tokens(pub(crate) u64);

impl Tokens {
    /// The tokens of `thread` counting in the recorder `recorder`.
    pub(crate) fn new(thread: u32, recorder: u32) -> Tokens {
        Tokens(u64::from(thread) | u64::from(recorder) << 32)
    }

    /// The thread's token.
    #[inline(always)]
    pub(crate) fn thread(self) -> u32 {
        self.0 as u32
    }

    /// The recorder's serial.
    #[inline(always)]
    pub(crate) fn recorder(self) -> u32 {
        (self.0 >> 32) as u32
    }
}

impl Entry {
    /// A new entry of the calling thread (its only writer), counting in
    /// the recorder with serial `recorder`.
    pub(crate) fn new(
        key: SiteKey,
        raw: [usize; 3],
        recorder: u32,
        clock: quanta::Clock,
        slow_ns: u64,
        sample_every: u64,
    ) -> Entry {
        Entry {
            key,
            tokens: Tokens::new(crate::meter::thread_token(), recorder),
            raw_class: raw[0],
            raw_tag: raw[2],
            clock,
            slow_ns,
            sample_mask: AtomicU64::new(sample_every.max(1).next_power_of_two() - 1),
            nowait: Counter::default(),
            contended: Counter::default(),
            rejected: Counter::default(),
            spins: Counter::default(),
            sleeps: Counter::default(),
            bounces: Counter::default(),
            instances: Counter::default(),
            waits: Counter::default(),
            wake_calls: Counter::default(),
            wakeups: Counter::default(),
            empty_wake_calls: Counter::default(),
            spurious_wakeups: Counter::default(),
            exclusive_wakeups: Counter::default(),
            max_waiters: Counter::default(),
            unheld: Counter::default(),
            hold: AtomicDist::new(),
            hold_sampled: AtomicDist::new(),
            wait: AtomicDist::new(),
            wait_sampled: AtomicDist::new(),
            wait_eligible: Counter::default(),
            wake_latency: AtomicDist::new(),
            holders: std::array::from_fn(|_| HolderSlot::default()),
            outstanding: Counter::default(),
            stacks: crate::stacks::table::EntryStacks::new(),
        }
    }

    // ---- What it is (read by anyone holding the entry) ----

    /// The (class, site, mode) this entry counts.
    pub(crate) fn key(&self) -> &SiteKey {
        &self.key
    }

    /// The thread and recorder tokens of this entry.
    #[inline(always)]
    pub(crate) fn tokens(&self) -> Tokens {
        self.tokens
    }

    /// The recorder's clock, read for every timed event of this entry.
    #[inline(always)]
    pub(crate) fn clock(&self) -> &quanta::Clock {
        &self.clock
    }

    /// The slow threshold this entry reports against.
    #[inline]
    pub(crate) fn slow_ns(&self) -> u64 {
        self.slow_ns
    }

    /// The mean of this entry's contended waits so far, `None` before the
    /// first: what a wait about to begin is expected to last.
    pub(crate) fn mean_wait_ns(&self) -> Option<u64> {
        let n = self.wait.count.get();
        (n != 0).then(|| self.wait.total.get() / n)
    }

    /// Whether a wait or hold this long is reported as slow.
    #[inline(always)]
    pub(crate) fn is_slow(&self, wait_ns: u64, hold_ns: u64) -> bool {
        hold_ns >= self.slow_ns || wait_ns >= self.slow_ns
    }

    // ---- Acquisitions (written by the meter only) ----

    /// The NOWAIT count so far, read before an uncontended attempt: the
    /// hold sample's counter ([`Entry::picks`]), and what
    /// [`Entry::count_nowait_after`] stores one higher if the attempt
    /// succeeds.
    #[inline(always)]
    pub(crate) fn nowait_so_far(&self) -> u64 {
        self.nowait.get()
    }

    /// Whether the uncontended acquisition that found `nowait_so_far` has
    /// its hold timed: the first at each site is, then one in
    /// `sample_mask + 1`.
    #[inline(always)]
    pub(crate) fn picks(&self, nowait_so_far: u64) -> bool {
        nowait_so_far & self.sample_mask.load(Relaxed) == 0
    }

    /// Counts an acquisition that found the lock free, whose
    /// [`Entry::nowait_so_far`] read `seen`: no other NOWAIT of this entry
    /// may be counted in between (the entry has one writer, and nothing
    /// between an acquisition's sample and its count is metered).
    #[inline(always)]
    pub(crate) fn count_nowait_after(&self, seen: u64) {
        self.nowait.0.store(seen.wrapping_add(1), Relaxed);
    }

    /// How many acquisitions one timed by the sample stands for.
    #[inline]
    pub(crate) fn sample_every(&self) -> u64 {
        self.sample_mask.load(Relaxed).saturating_add(1)
    }

    /// Times one uncontended hold in `every` (rounded up to a power of
    /// two) from now on; the overhead budget's only write to an entry.
    pub(crate) fn set_sample_every(&self, every: u64) {
        let mask = every
            .max(1)
            .checked_next_power_of_two()
            .map_or(u64::MAX >> 1, |p| p - 1);
        self.sample_mask.store(mask, Relaxed);
    }

    /// Whether this entry counts the raw key whose class and tag words
    /// are `class` and `tag` (at this entry's site).
    #[inline(always)]
    pub(crate) fn counts_key(&self, class: usize, tag: usize) -> bool {
        ((self.raw_class ^ class) | (self.raw_tag ^ tag)) == 0
    }

    /// An acquisition that found the lock free and keeps no hold (a
    /// semaphore `down`, a wait that did not sleep): out of the hold
    /// sample's population.
    pub(crate) fn count_nowait_unheld(&self) {
        self.nowait.add(1);
        self.unheld.add(1);
    }

    /// An acquisition that waited `spins` rounds and `sleeps` sleeps.
    #[inline]
    pub(crate) fn count_contended(&self, spins: u64, sleeps: u64) {
        self.contended.add(1);
        self.spins.add(spins);
        self.sleeps.add(sleeps);
    }

    /// Acquisitions so far, uncontended and contended.
    #[inline]
    pub(crate) fn taken_so_far(&self) -> u64 {
        self.nowait.get().wrapping_add(self.contended.get())
    }

    /// Contended acquisitions so far.
    #[inline]
    pub(crate) fn contended_so_far(&self) -> u64 {
        self.contended.get()
    }

    /// A contended acquisition whose timing is left to the sample (timed
    /// or not, it stands in `wait_eligible`); whether the sample times it:
    /// the first, then one in `sample_mask + 1`.
    #[inline]
    pub(crate) fn count_wait_eligible(&self) -> bool {
        let seen = self.wait_eligible.get();
        self.wait_eligible.0.store(seen.wrapping_add(1), Relaxed);
        seen & self.sample_mask.load(Relaxed) == 0
    }

    /// A contended acquisition the sample did not time: its holder is
    /// charged the acquisition, not a wait time (the timed ones stand for
    /// those, see [`Entry::end_sampled_contended_hold`]).
    #[inline]
    pub(crate) fn charge_untimed_wait(&self, behind: *mut Location<'static>) {
        self.record_holder(behind, 0);
    }

    /// A try-lock that failed or a timed wait that gave up, after `spins`
    /// rounds and `sleeps` sleeps.
    #[inline]
    pub(crate) fn count_rejected(&self, spins: u64, sleeps: u64) {
        self.rejected.add(1);
        self.spins.add(spins);
        self.sleeps.add(sleeps);
    }

    /// The lock changed threads with this acquisition.
    #[inline]
    pub(crate) fn count_bounce(&self) {
        self.bounces.add(1);
    }

    /// This acquisition was the first of its instance in this recorder.
    #[inline]
    pub(crate) fn count_instance(&self) {
        self.instances.add(1);
    }

    // ---- Holds (written by the meter only) ----

    /// A timed hold begins: its guard points at this entry until it ends.
    #[inline(always)]
    pub(crate) fn hold_started(&self) {
        self.outstanding.add(1);
    }

    /// A sampled uncontended hold ended after `hold_ns`.
    #[inline]
    pub(crate) fn end_sampled_hold(&self, hold_ns: u64) {
        self.hold_sampled.record(hold_ns);
        self.outstanding.sub(1);
    }

    /// A sampled uncontended hold ended untimed (a leaked guard, or a hold
    /// beyond the timed-hold table).
    pub(crate) fn end_sampled_hold_untimed(&self) {
        self.unheld.add(1);
        self.outstanding.sub(1);
    }

    /// The hold of a contended acquisition ended after `hold_ns` (`None`:
    /// untimed: a semaphore `down`, a leaked guard). Its wait of `wait_ns`
    /// is recorded now, after the unlock, and charged to `behind`, the
    /// site that held the lock when the wait began (null if unknown).
    #[inline]
    pub(crate) fn end_contended_hold(
        &self,
        hold_ns: Option<u64>,
        wait_ns: u64,
        behind: *mut Location<'static>,
    ) {
        if let Some(hold_ns) = hold_ns {
            self.hold.record(hold_ns);
        }
        self.wait.record(wait_ns);
        self.record_holder(behind, wait_ns);
        self.outstanding.sub(1);
    }

    /// The hold of a contended acquisition that the sample timed ended
    /// after `hold_ns` (`None`: untimed, a semaphore `down`), having waited
    /// `wait_ns` behind `behind`. The holder's wait total is charged for
    /// the untimed acquisitions this one stands for too.
    pub(crate) fn end_sampled_contended_hold(
        &self,
        hold_ns: Option<u64>,
        wait_ns: u64,
        behind: *mut Location<'static>,
    ) {
        match hold_ns {
            Some(ns) => self.hold_sampled.record(ns),
            None => self.unheld.add(1),
        }
        self.wait_sampled.record(wait_ns);
        let every = self.sample_every();
        // The acquisition itself is charged once; its time for `every`.
        self.record_holder(behind, wait_ns.saturating_mul(every));
        self.outstanding.sub(1);
    }

    /// Charges a contended acquisition's wait to the site that held the lock.
    fn record_holder(&self, holder: *mut Location<'static>, wait_ns: u64) {
        let spill = &self.holders[HOLDER_SLOTS];
        let slot = if holder.is_null() {
            spill
        } else {
            self.holders[..HOLDER_SLOTS]
                .iter()
                .find(|s| {
                    let cur = s.site.load(Relaxed);
                    if cur.is_null() {
                        s.site.store(holder, Relaxed);
                        true
                    } else {
                        ptr::eq(cur, holder)
                    }
                })
                .unwrap_or(spill)
        };
        slot.contended.add(1);
        slot.wait_ns.add(wait_ns);
    }

    // ---- Wait queues (written by the meter only) ----

    /// A wake call that found `waiting` waiters and woke `woken`, of which
    /// `exclusive` were exclusive.
    pub(crate) fn count_wake_call(&self, waiting: u64, woken: u64, exclusive: u64) {
        self.wake_calls.add(1);
        self.wakeups.add(woken);
        if woken == 0 {
            self.empty_wake_calls.add(1);
        }
        self.exclusive_wakeups.add(exclusive);
        self.max_waiters.raise_to(waiting);
    }

    /// A wake call that found nobody waiting: [`Entry::count_wake_call`]
    /// with nothing to wake, without its three stores of unchanged values
    /// (an empty notify is a hot path of its own).
    pub(crate) fn count_empty_wake_call(&self) {
        self.wake_calls.add(1);
        self.empty_wake_calls.add(1);
    }

    /// A waiter joined a queue that now holds `len` waiters.
    pub(crate) fn note_waiters(&self, len: u64) {
        self.max_waiters.raise_to(len);
    }

    /// A woken waiter ran `ns` after its waker picked it.
    pub(crate) fn record_wake_latency(&self, ns: u64) {
        self.wake_latency.record(ns);
    }

    /// A wake-up found the waiter's condition still false.
    pub(crate) fn count_spurious_wakeup(&self) {
        self.spurious_wakeups.add(1);
    }

    /// A wait that slept `sleeps` times, `ns` in all from the first sleep.
    pub(crate) fn record_sleeping_wait(&self, sleeps: u64, ns: u64) {
        self.waits.add(1);
        self.sleeps.add(sleeps);
        self.wait.record(ns);
    }

    // ---- Reading (snapshots, from any thread) ----

    /// Whether a guard timed against this entry is still held.
    pub(crate) fn has_outstanding_guards(&self) -> bool {
        self.outstanding.get() != 0
    }

    /// Instances of the class counted here.
    pub(crate) fn instances(&self) -> u64 {
        self.instances.get()
    }

    /// The counters in the model's form (no derived values yet).
    pub(crate) fn stats(&self) -> lockmeter_model::Stats {
        let (hold_ns, hold_timed) = self.hold_estimate();
        let (wait_ns, wait_untimed) = self.wait_estimate();
        let (nowait, contended) = (self.nowait.get(), self.contended.get());
        lockmeter_model::Stats {
            acquisitions: nowait + contended,
            nowait,
            contended,
            rejected: self.rejected.get(),
            spins: self.spins.get(),
            sleeps: self.sleeps.get(),
            bounces: self.bounces.get(),
            hold_ns,
            hold_timed,
            wait_ns,
            wait_untimed,
            waits: self.waits.get(),
            wake_calls: self.wake_calls.get(),
            wakeups: self.wakeups.get(),
            empty_wake_calls: self.empty_wake_calls.get(),
            spurious_wakeups: self.spurious_wakeups.get(),
            exclusive_wakeups: self.exclusive_wakeups.get(),
            max_waiters: self.max_waiters.get(),
            wake_latency_ns: self.wake_latency.read(),
        }
    }

    /// Calls `f(site, contended, wait_ns_total)` for each site that held
    /// the lock while an acquisition here waited; `None` is the spill slot
    /// ("other").
    pub(crate) fn holders(&self, mut f: impl FnMut(Option<&'static Location<'static>>, u64, u64)) {
        // Holders are charged by contended acquisitions only (after counting
        // them), so an uncontended entry has none: skip reading its slots,
        // cache lines of their own at the far end of the entry.
        if self.contended.get() == 0 {
            return;
        }
        for (i, h) in self.holders.iter().enumerate() {
            let contended = h.contended.get();
            if contended == 0 {
                continue;
            }
            let site = h.site.load(Relaxed);
            let site = if i == HOLDER_SLOTS || site.is_null() {
                None
            } else {
                // SAFETY: only `&'static Location` addresses are stored.
                Some(unsafe { &*site })
            };
            f(site, contended, h.wait_ns.get());
        }
    }

    /// Every contended acquisition's wait: the forced ones, plus the
    /// sampled ones scaled to stand for all they were sampled from (while
    /// the sample has none, the forced ones stand for them), so that the
    /// count is the contended count; and how many of those the sample
    /// left untimed.
    fn wait_estimate(&self) -> (lockmeter_model::Dist, u64) {
        let all = self.wait.read();
        let eligible = self.wait_eligible.get();
        if eligible == 0 {
            return (all, 0);
        }
        let sampled = self.wait_sampled.read();
        let untimed = eligible.saturating_sub(sampled.count);
        if sampled.count == 0 {
            return (all.scaled_to(all.count.saturating_add(eligible)), untimed);
        }
        let sampled = sampled.scaled_to(eligible);
        if all.count == 0 && all.buckets.is_empty() {
            return (sampled, untimed);
        }
        let mut all = all;
        all.merge(&sampled);
        (all, untimed)
    }

    /// The acquisitions `hold_sampled` is a sample of: the uncontended
    /// ones that keep a hold, and the contended ones whose timing was left
    /// to the sample. Read from three counters a moment apart, so it may
    /// straddle an acquisition; it only scales an estimate.
    fn hold_population(&self) -> u64 {
        let counted = self.nowait.get().wrapping_add(self.wait_eligible.get());
        counted.saturating_sub(self.unheld.get())
    }

    /// Every hold: the contended ones, plus the sampled uncontended ones
    /// scaled to stand for all of them; and how many were timed.
    fn hold_estimate(&self) -> (lockmeter_model::Dist, u64) {
        let mut all = self.hold.read();
        let sampled = self.hold_sampled.read();
        let timed = all.count + sampled.count;
        let eligible = self.hold_population();
        let sampled = if eligible > sampled.count {
            sampled.scaled_to(eligible)
        } else {
            sampled
        };
        if all.count == 0 && all.buckets.is_empty() {
            // Merging into nothing would copy `sampled` as it is.
            return (sampled, timed);
        }
        all.merge(&sampled);
        (all, timed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_distribution_allocates_only_the_chunks_its_values_fall_in() {
        let d = AtomicDist::new();
        assert_eq!(d.allocated_bytes(), 0);
        for ns in 1_000..1_100 {
            d.record(ns);
        }
        assert_eq!(d.allocated_bytes(), std::mem::size_of::<Chunk>());
    }

    #[test]
    fn counts_stay_exact_across_chunks() {
        let d = AtomicDist::new();
        let values = [0u64, 3, 17, 900, 1_000_000, 1 << 40, u64::MAX];
        for (i, &v) in values.iter().enumerate() {
            for _ in 0..=i {
                d.record(v);
            }
        }
        let read = d.read();
        assert_eq!(read.count, 28);
        assert_eq!(read.min, 0);
        assert_eq!(read.max, u64::MAX);
        assert_eq!(read.buckets.iter().map(|&(_, c)| c).sum::<u64>(), 28);
        let expected = lockmeter_model::Dist::from_buckets(
            &{
                let mut c = [0u64; BUCKETS];
                for (i, &v) in values.iter().enumerate() {
                    c[bucket_index(v)] += i as u64 + 1;
                }
                c
            },
            28,
            read.total,
            0,
            u64::MAX,
        );
        assert_eq!(read.buckets, expected.buckets);
    }
}
