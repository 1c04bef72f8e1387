//! The metering core every primitive shares: what one acquisition records.
//!
//! A primitive calls [`acquire`] (or [`Probe::start`] for compound ones).
//! When nobody observes, that is one relaxed load and the primitive runs
//! exactly its plain path. Otherwise it finds the thread's entry for the
//! call site and tries the lock once: on success the acquisition counts as
//! NOWAIT; on failure [`Probe::contended`] notes when and behind whom the
//! wait began, and [`Probe::acquired_after_wait`] closes it. The returned
//! [`Hold`] travels in the guard and records the hold time on release.
//!
//! Every acquisition is counted. One in `sample_every` per entry is
//! timed, with one clock read just before the attempt and one just after
//! the unlock, both outside the critical section; the others cost a lookup
//! and a few single-writer counter stores, and their release costs nothing.
//! A contended acquisition left to the sample is timed one in
//! `sample_every` too (counted apart, in `wait_eligible`), and always
//! among an entry's first [`TIMED_FIRST`], after a wait of a watchdog tick
//! or more, or with a stack drawn ([`Probe::acquired_after_wait`]); a timed
//! one adds a clock read inside the critical section.
//!
//! The meter is the only writer of the per-thread counters
//! (`recorder::entry`): primitives describe what happened (an acquisition
//! that waited, a rejected try, a wake call in [`WakeCall`], a wait on a
//! queue in [`WaitStats`]) and never see an entry. Each instance's
//! [`Meta`] knows its class and kind, so no call passes them.
//!
//! | file | what |
//! |---|---|
//! | `mod.rs` | [`Meta`], [`Probe`] and the `acquire*` entry points |
//! | `hold.rs` | [`Hold`], what a guard carries, and the `GuardNoSend` marker |
//! | `wait.rs` | [`WaitStats`] and [`WakeCall`], for wait queues |

use std::cell::Cell;
use std::panic::Location;
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU32, AtomicU64, Ordering::Relaxed};

use lockmeter_model::LockKind;

use crate::class::{Class, Mode, Role, SiteKey};
use crate::now;
use crate::recorder;
use crate::recorder::entry::{Entry, Tokens};
use crate::stacks::blame::Blame;
use crate::stacks::hooks::{self as stack_hooks, PreWait};

mod hold;
mod wait;

pub(crate) use self::hold::Hold;
pub(crate) use self::wait::{WaitStats, WakeCall};

/// Per-instance metering state, embedded in every instrumented lock: what
/// the instance is (its class and [`LockKind`], fixed when it is built) and
/// the notes its acquisitions leave. Touched only while observed.
///
/// 48 bytes, `repr(C)`, and placed *before* the lock word in every lock
/// that guards data (`[Meta][lock word][data]`), so that the lock word and
/// the data sit side by side as in the bare lock:
/// - after the lock word, the Meta put the data 56 bytes away, on the next
///   cache line wherever the lock was not line-aligned (7 placements in 8).
///   On an Intel Xeon host that cost the unobserved Mutex and `RwLock`
///   write (locks whose unlock is a locked instruction) 14-18 % of the
///   bare lock's uncontended time, and a contended 2-thread lock 24 bytes
///   into a line about a third of its throughput (a bare parking_lot
///   Mutex with its data 56 bytes away paid the same uncontended;
///   `docs/performance.md`, "Session 16").
/// - before it, a line-aligned lock still has the Meta, the lock word and
///   an 8-byte value on one line (lock word at 48, value at 56); that
///   placement keeps a hand-off to one line (session 8).
///
/// Hence the class name kept as a pointer and a 32-bit length, and 32-bit
/// thread and recorder tokens, in one word. The fields an acquisition
/// writes come last, nearest the lock word.
#[repr(C)]
pub(crate) struct Meta {
    /// The class's word in [`Meta::raw_key`]: the bytes of
    /// [`Class::name`], or for an unnamed class (`name_len` is
    /// [`UNNAMED`]) its [`Class::created_at`]; one load and no branch on
    /// the observed path, which compares it with its guessed entry's.
    class_word: *const u8,
    /// [`Class::created_at`].
    created_at: &'static Location<'static>,
    /// Who waits for the lock now, so that a releasing holder can be
    /// blamed for it (`stacks::blame`); read by every timed release.
    blame: Blame,
    /// The length of [`Class::name`], or [`UNNAMED`].
    name_len: u32,
    /// [`Class::role`] and the [`LockKind`] as they enter
    /// [`Meta::raw_key`] (see [`Meta::tag_of`]), so that the hot path
    /// reads one load for both; [`Meta::role`] and [`Meta::kind`] decode it.
    tag: u16,
    /// Semaphores only: set once a permit was taken by `down` or given by
    /// `up` while observed. Such permits belong to no guard and any thread
    /// may return one, so a wait on the semaphore is never part of a
    /// reported deadlock (`now`). In padding: free.
    pub(crate) loose: AtomicBool,
    /// The call site of the current (or last) holder.
    holder: AtomicPtr<Location<'static>>,
    /// The [`Tokens`] of the last observed acquisition: in the low half
    /// the [`thread_token`] of the thread that acquired last, for
    /// `bounces`; in the high half the serial of the recorder that counted
    /// this instance, for `instances`. One word, so that an acquisition
    /// that changes neither (a lock taken again by the same thread) reads
    /// and compares once.
    last: AtomicU64,
}

// SAFETY: `class_word` is the pointer of a `&'static str` or of a
// `&'static Location`, which any thread may read; every other field is
// `Send + Sync`.
unsafe impl Send for Meta {}
// SAFETY: as above.
unsafe impl Sync for Meta {}

const _: () = assert!(std::mem::size_of::<Meta>() == 48);

/// [`Meta`]'s `name_len` of an unnamed class.
const UNNAMED: u32 = u32::MAX;

impl Meta {
    /// The instance's identity in `now`: this field's address.
    #[inline(always)]
    fn instance(&self) -> usize {
        self as *const Meta as usize
    }

    /// The state of a new instance of `class`, a primitive of `kind`.
    pub(crate) const fn new(class: Class, kind: LockKind) -> Meta {
        let (class_word, name_len) = match class.name {
            Some(n) => {
                assert!(n.len() < UNNAMED as usize, "a lock name of 4 GiB or more");
                (n.as_ptr(), n.len() as u32)
            }
            None => (
                class.created_at as *const Location<'static> as *const u8,
                UNNAMED,
            ),
        };
        Meta {
            class_word,
            created_at: class.created_at,
            blame: Blame::new(),
            name_len,
            tag: Meta::tag_of(class.role, kind),
            loose: AtomicBool::new(false),
            holder: AtomicPtr::new(std::ptr::null_mut()),
            last: AtomicU64::new(0),
        }
    }

    /// `role` in bits 0-1 (bits 2-3 are the mode's, in [`Meta::raw_key`]),
    /// `kind` from bit 4.
    const fn tag_of(role: Role, kind: LockKind) -> u16 {
        role as u16 | (kind as u16) << 4
    }

    /// [`Class::role`], from the tag.
    fn role(&self) -> Role {
        [Role::Own, Role::InnerLock, Role::InnerWait]
            .into_iter()
            .find(|&r| r as u16 == self.tag & 3)
            .unwrap_or(Role::Own)
    }

    /// The instance's kind, from the tag.
    fn kind(&self) -> LockKind {
        LockKind::ALL
            .into_iter()
            .find(|&k| Meta::tag_of(Role::Own, k) == self.tag & !3)
            .unwrap_or(LockKind::Mutex)
    }

    /// [`Class::name`].
    fn name(&self) -> Option<&'static str> {
        if self.name_len == UNNAMED {
            return None;
        }
        // SAFETY: `class_word` and `name_len` were taken from a `&'static
        // str` in `Meta::new` and never change.
        Some(unsafe {
            std::str::from_utf8_unchecked(std::slice::from_raw_parts(
                self.class_word,
                self.name_len as usize,
            ))
        })
    }

    /// The class this instance counts in.
    pub(crate) fn class(&self) -> Class {
        Class {
            name: self.name(),
            created_at: self.created_at,
            role: self.role(),
        }
    }

    /// Exact hash-table identity of (class, kind, site, mode), computed
    /// in place: copying a whole key to the stack and reading it back cost
    /// the hot path a store-forwarding stall. The class part is the name's
    /// or the creation site's address; equal classes may have different
    /// addresses (a string literal duplicated by the compiler), and
    /// snapshots merge those by id.
    #[inline(always)]
    fn raw_key(&self, site: &'static Location<'static>, mode: Mode) -> [usize; 3] {
        let class = self.class_word as usize;
        let tag = self.tag as usize | mode.key_bits();
        [class, site as *const Location<'static> as usize, tag]
    }

    /// The full key of an acquisition at `site`, for a new entry.
    #[inline(always)]
    fn site_key(&self, site: &'static Location<'static>, mode: Mode) -> SiteKey {
        SiteKey {
            class: self.class(),
            kind: self.kind(),
            site,
            mode,
        }
    }
}

/// A token of the calling thread, never 0, unique among the first 2^32 - 1
/// threads of the process (a 32-bit count, so that `Meta` keeps it in 4
/// bytes; after that many threads two may share one and a bounce between
/// them go uncounted).
/// Read once per entry, when it is made (`Entry::tokens`).
pub(crate) fn thread_token() -> u32 {
    thread_local!(static TOKEN: Cell<u32> = const { Cell::new(0) });
    TOKEN
        .try_with(|t| match t.get() {
            0 => new_thread_token(t),
            token => token,
        })
        .unwrap_or(u32::MAX)
}

#[cold]
fn new_thread_token(t: &Cell<u32>) -> u32 {
    static NEXT: AtomicU32 = AtomicU32::new(1);
    let mut token = NEXT.fetch_add(1, Relaxed);
    if token == 0 {
        token = NEXT.fetch_add(1, Relaxed);
    }
    t.set(token);
    token
}

/// Contended acquisitions per entry that are all timed before the sample
/// takes over: a site that waits rarely has every wait timed.
const TIMED_FIRST: u64 = 64;

/// Whether contended acquisitions' timing may be left to the sample under
/// a slow threshold of `slow_ns`: only when every wait that can be slow is
/// sure to be timed, i.e. the threshold is at least the watchdog's tick, the
/// resolution at which [`Probe::acquired_after_wait`] notices a long wait
/// without a clock read. Also what the snapshot's
/// `sampling.contended_wait_every` reports (`Recorder::contended_wait_every`).
pub(crate) fn samples_contended_timing(slow_ns: u64) -> bool {
    slow_ns >= now::TICK_NS
}

/// What an uncontended acquisition read before its attempt
/// ([`Probe::sample`]).
#[derive(Clone, Copy)]
pub(crate) struct Sample {
    /// The entry's NOWAIT count: the sample's counter, stored back one
    /// higher if the attempt succeeds (one load of the counter per
    /// acquisition, and no store before the attempt).
    nowait: u64,
    /// The clock when the sample picks the acquisition: its hold is timed,
    /// and its wait, if the attempt fails, starts here.
    start: Option<u64>,
}

/// A contended acquisition whose timing the sample may decide.
#[derive(Clone, Copy)]
pub(crate) struct LeftToSample {
    /// [`now::coarse_ns`] when the wait began: a wait that lasted a
    /// watchdog tick or more is timed whatever the sample says.
    coarse_start: u64,
}

/// An acquisition being recorded.
pub(crate) struct Probe {
    entry: *const Entry,
    recorder: *const recorder::Recorder,
}

/// A wait in progress: when it began and who held the lock.
pub(crate) struct Waiting {
    start: u64,
    /// `Some` when the acquisition's timing may be left to the sample (one
    /// in `sample_every` of an entry's such acquisitions,
    /// `Entry::count_wait_eligible`); `None` when every such wait is timed
    /// (timed and condvar acquisitions).
    sampling: Option<LeftToSample>,
    holder: *mut Location<'static>,
    /// The lock's blame word if this wait is counted in it (until
    /// dropped; one wait in `stacks::BLAME_EVERY`), else null.
    blame: *const Blame,
    /// What was done about the waiter's stack before the wait.
    pre: PreWait,
}

impl Drop for Waiting {
    fn drop(&mut self) {
        if !matches!(self.pre, PreWait::Off) {
            // Not taken by `acquired_after_wait`: a timed wait that gave
            // up, or an unwinding one.
            stack_hooks::abandon_wait(self.pre);
        }
        if !self.blame.is_null() {
            // SAFETY: `blame` points into the `Meta` of the lock being
            // waited for, which outlives the acquisition this wait is in.
            unsafe { &*self.blame }.end_wait();
        }
    }
}

impl Probe {
    /// The probe for an acquisition at `site`, or `None` when unobserved.
    #[inline]
    pub(crate) fn start(
        meta: &Meta,
        site: &'static Location<'static>,
        mode: Mode,
    ) -> Option<Probe> {
        if !recorder::observing() {
            return None;
        }
        Self::lookup(meta, site, mode)
    }

    #[inline(always)]
    fn lookup(meta: &Meta, site: &'static Location<'static>, mode: Mode) -> Option<Probe> {
        Self::lookup_in(recorder::current()?, meta, site, mode)
    }

    #[inline(always)]
    fn lookup_in(
        rec: *const recorder::Recorder,
        meta: &Meta,
        site: &'static Location<'static>,
        mode: Mode,
    ) -> Option<Probe> {
        let raw = meta.raw_key(site, mode);
        let entry = recorder::shard::entry(rec, raw, move || meta.site_key(site, mode))?;
        Some(Probe {
            entry,
            recorder: rec,
        })
    }

    /// Like [`Probe::lookup`], before the attempt of a blocking
    /// acquisition: the entry may be a guess from the call site alone
    /// (`shard::guess_entry`), to be checked with [`Probe::counts`] once
    /// the attempt has made the lock's line this thread's.
    /// `recorder` finds the recorder ([`recorder::current`], or one the
    /// caller already found).
    #[inline(always)]
    fn lookup_ahead(
        recorder: impl FnOnce() -> Option<*const recorder::Recorder>,
        meta: &Meta,
        site: &'static Location<'static>,
        mode: Mode,
    ) -> Option<Probe> {
        let rec = recorder()?;
        let at = site as *const Location<'static> as usize;
        match recorder::shard::guess_entry(rec, at, mode.key_bits()) {
            Some(entry) => Some(Probe {
                entry,
                recorder: rec,
            }),
            None => {
                let entry = Self::unguessed_entry(rec, meta, site, mode);
                (!entry.is_null()).then_some(Probe {
                    entry,
                    recorder: rec,
                })
            }
        }
    }

    /// [`Probe::lookup_ahead`] without a guess: the look-up that reads the
    /// lock, out of line (a helper's site, or the first acquisitions); its
    /// entry, null for none. A pointer rather than an `Option<Probe>`, which
    /// came back through memory and made the unobserved path store `None`
    /// to the stack on every acquisition.
    #[inline(never)]
    fn unguessed_entry(
        rec: *const recorder::Recorder,
        meta: &Meta,
        site: &'static Location<'static>,
        mode: Mode,
    ) -> *const Entry {
        Self::lookup_in(rec, meta, site, mode).map_or(std::ptr::null(), |p| p.entry)
    }

    /// Whether this probe's entry is the one of `meta` at `site` in
    /// `mode`.
    #[inline(always)]
    fn counts(&self, meta: &Meta, site: &'static Location<'static>, mode: Mode) -> bool {
        let [class, _, tag] = meta.raw_key(site, mode);
        self.entry().counts_key(class, tag)
    }

    /// An acquisition whose entry [`Probe::lookup_ahead`] guessed wrong
    /// (another class was last taken at this site), its attempt made (the
    /// guess counted nothing, so nothing is given back): the right entry's
    /// probe, sample and prepared hold, as [`acquire`] made them for the
    /// guess (here after the attempt: inside the critical section if it
    /// succeeded). `None` as for [`Probe::lookup`].
    #[cold]
    #[inline(never)]
    fn misguessed(
        self,
        meta: &Meta,
        site: &'static Location<'static>,
        mode: Mode,
    ) -> Option<(Probe, Sample, now::Prepared)> {
        recorder::shard::forget_guess();
        let probe = Self::lookup_in(self.recorder, meta, site, mode)?;
        let start = probe.sample();
        let prepared = probe.prepare_hold(meta);
        Some((probe, start, prepared))
    }

    /// The entry this acquisition counts in. Private to the meter: the
    /// meter is the only writer of entries.
    #[inline]
    fn entry(&self) -> &Entry {
        // SAFETY: entries live as long as their thread's slot, which
        // outlives every probe and guard of the thread (see `shard`).
        unsafe { &*self.entry }
    }

    #[inline]
    fn recorder(&self) -> &recorder::Recorder {
        // SAFETY: a probe lives within one acquisition (or release), while
        // the subscriber holding the recorder is in effect.
        unsafe { &*self.recorder }
    }

    /// Reads the entry's NOWAIT count before an uncontended attempt and,
    /// if the sample picks this acquisition, the clock (see [`Sample`]).
    /// Counts nothing, so a failed attempt has nothing to take back.
    #[inline(always)]
    fn sample(&self) -> Sample {
        let e = self.entry();
        let nowait = e.nowait_so_far();
        Sample {
            nowait,
            start: e.picks(nowait).then(|| e.clock().raw()),
        }
    }

    /// The lock was free at the first attempt; the hold is timed when this
    /// acquisition is sampled.
    #[inline]
    pub(crate) fn acquired_nowait(self, meta: &Meta, site: &'static Location<'static>) -> Hold {
        let start = self.sample();
        let prepared = self.prepare_hold(meta);
        self.acquired_nowait_at(meta, site, start, prepared)
    }

    /// The held-lock record of a hold about to be attempted, written
    /// before the attempt as far as it can be (`now::prepare_hold`).
    #[inline(always)]
    fn prepare_hold(&self, meta: &Meta) -> now::Prepared {
        now::prepare_hold(meta.instance(), self.entry, self.recorder)
    }

    /// Like [`Probe::acquired_nowait`], for a hold that is never timed
    /// (a semaphore `down`, which hands out no guard).
    pub(crate) fn acquired_nowait_untimed(self, meta: &Meta, site: &'static Location<'static>) {
        self.entry().count_nowait_unheld();
        self.note_owner(meta, site);
    }

    #[inline(always)]
    fn acquired_nowait_at(
        self,
        meta: &Meta,
        site: &'static Location<'static>,
        Sample { nowait, start }: Sample,
        prepared: now::Prepared,
    ) -> Hold {
        self.entry().count_nowait_after(nowait);
        self.note_owner(meta, site);
        let held = now::hold_prepared(prepared, meta.instance(), self.entry, self.recorder);
        match start {
            None => Hold::observed().in_now(held),
            Some(start) => Hold::sampled(self.entry(), start, held),
        }
    }

    /// The first attempt failed: the wait begins now.
    #[inline]
    pub(crate) fn contended(&self, meta: &Meta) -> Waiting {
        self.contended_from(meta, None, false)
    }

    /// Like [`Probe::contended`], starting the wait at the clock read a
    /// sampled attempt already took, if it took one; `left_to_sample` when
    /// the sample may decide its timing (see [`Waiting::sampling`]).
    #[inline(never)]
    fn contended_from(
        &self,
        meta: &Meta,
        sampled_start: Option<u64>,
        left_to_sample: bool,
    ) -> Waiting {
        now::wait_begins(meta.instance(), self.entry, self.recorder);
        let stacks = self.recorder().stacks.rate_ns != 0;
        // The waiter's stack, if drawn, is captured now, before the wait
        // is timed (so the capture does not count as waiting) and outside
        // the critical section it is about to enter.
        let pre = match stacks {
            true => stack_hooks::before_wait(self.recorder(), self.entry()),
            false => PreWait::Off,
        };
        let start = match (pre, sampled_start) {
            (PreWait::Off | PreWait::Skipped, Some(early)) => early,
            _ => self.entry().clock().raw(),
        };
        let blame = if stacks && crate::stacks::counts_for_blame() {
            meta.blame.begin_wait(start);
            &meta.blame as *const Blame
        } else {
            std::ptr::null()
        };
        Waiting {
            start,
            sampling: left_to_sample.then(|| LeftToSample {
                coarse_start: now::coarse_ns(),
            }),
            holder: meta.holder.load(Relaxed),
            blame,
            pre,
        }
    }

    /// The lock was acquired after waiting `spins` rounds and `sleeps`
    /// blocking sleeps.
    #[inline(never)]
    pub(crate) fn acquired_after_wait(
        self,
        meta: &Meta,
        site: &'static Location<'static>,
        mut waiting: Waiting,
        spins: u64,
        sleeps: u64,
    ) -> Hold {
        let e = self.entry();
        let sampled = match waiting.sampling {
            Some(left) if !self.forced(&waiting, left.coarse_start) => {
                if !e.count_wait_eligible() {
                    // Off or Skipped (else forced): nothing to keep or give back.
                    waiting.pre = PreWait::Off;
                    return self.acquired_untimed(meta, site, waiting.holder, (spins, sleeps));
                }
                true
            }
            // Forced: out of the population the sample stands for.
            Some(_) | None => false,
        };
        let now = e.clock().raw();
        let wait_ns = e.clock().delta_as_nanos(waiting.start, now);
        // Only counts here, inside the critical section: the wait time and
        // its holder are recorded when the hold ends, after the unlock
        // (see `Hold::release`). Slower bookkeeping under a lock that is
        // already contended lengthens every hold and feeds the convoy.
        e.count_contended(spins, sleeps);
        self.note_owner(meta, site);
        // The waiter's stack, captured before the wait (`before_wait`):
        // here it is only kept or dropped.
        let pre = std::mem::replace(&mut waiting.pre, PreWait::Off);
        let stack = match pre {
            PreWait::Off => None,
            pre => stack_hooks::after_wait(self.recorder(), e, pre, wait_ns),
        };
        let held = now::wait_ends_held(meta.instance(), self.entry, self.recorder, wait_ns);
        Hold::contended(e, now, wait_ns, waiting.holder, stack, sampled, held)
    }

    /// Whether this contended acquisition is timed whatever the sample
    /// says: among the first [`TIMED_FIRST`] of its entry (so that a site
    /// with few contended acquisitions has all of them timed); when its
    /// waiter's stack was drawn (the stack is weighted by the wait); when
    /// it waited a watchdog tick or more (so every wait that can pass the
    /// slow threshold is timed and reported); or when the slow threshold is
    /// under a tick.
    #[inline]
    fn forced(&self, waiting: &Waiting, coarse_start: u64) -> bool {
        let e = self.entry();
        e.contended_so_far() < TIMED_FIRST
            || !matches!(waiting.pre, PreWait::Off | PreWait::Skipped)
            || now::coarse_ns() != coarse_start
            || !samples_contended_timing(e.slow_ns())
    }

    /// A contended acquisition that the sample did not time: counted and
    /// noted as every acquisition is, its holder charged, no clock read
    /// inside the critical section and nothing to time at the release.
    /// (Timing every contended acquisition lengthened the holds of a
    /// contended lock enough to keep it contended: `docs/performance.md`.)
    /// `behind` held the lock when the wait began; `(spins, sleeps)` as
    /// for [`Probe::acquired_after_wait`].
    #[inline]
    fn acquired_untimed(
        self,
        meta: &Meta,
        site: &'static Location<'static>,
        behind: *mut Location<'static>,
        (spins, sleeps): (u64, u64),
    ) -> Hold {
        let e = self.entry();
        e.count_contended(spins, sleeps);
        self.note_owner(meta, site);
        e.charge_untimed_wait(behind);
        let held = now::wait_ends_held(meta.instance(), self.entry, self.recorder, 0);
        Hold::observed().in_now(held)
    }

    /// A try-lock failed or a timed wait gave up.
    pub(crate) fn rejected(self) {
        self.entry().count_rejected(0, 0);
    }

    /// A timed acquisition that waited and gave up.
    pub(crate) fn rejected_after_wait(self, spins: u64, sleeps: u64) {
        now::wait_ends();
        self.entry().count_rejected(spins, sleeps);
    }

    /// The clock's raw reading now, on this entry's clock.
    #[inline]
    fn now(&self) -> u64 {
        self.entry().clock().raw()
    }

    #[inline(always)]
    fn note_owner(&self, meta: &Meta, site: &'static Location<'static>) {
        let e = self.entry();
        let mine = e.tokens();
        let last = Tokens(meta.last.load(Relaxed));
        if last != mine {
            std::hint::cold_path();
            if last.thread() != mine.thread() && last.thread() != 0 {
                e.count_bounce();
            }
            if last.recorder() != mine.recorder() {
                e.count_instance();
            }
            meta.last.store(mine.0, Relaxed);
        }
        // Stored only when it changes: a waiter spinning on the lock's line
        // takes it shared, and a store in the critical section would then
        // have to take it back (a site that keeps the lock busy rarely
        // changes).
        let site = site as *const _ as *mut _;
        if meta.holder.load(Relaxed) != site {
            std::hint::cold_path();
            meta.holder.store(site, Relaxed);
        }
    }
}

/// Charges the waiting a timed hold of `meta` caused, from `start` to
/// `end` (raw readings), to the releasing thread's stack in the hold's
/// entry `e`. The hold stands for `stands_for` holds (the hold sample's
/// rate, or 1 for one whose timing was forced), so a stack drawn for it is
/// weighted by that too: the holder side stays an unbiased estimate of the
/// waiting every hold caused (`stacks::blame`).
#[cold]
#[inline(never)]
pub(super) fn blame_hold(meta: &Meta, e: &Entry, (start, end): (u64, u64), stands_for: u64) {
    let Some(rec) = recorder::current() else {
        return;
    };
    // SAFETY: the recorder of the subscriber in effect outlives this call.
    let rec = unsafe { &*rec };
    if rec.stacks.rate_ns == 0 {
        return;
    }
    let (waiters, ticks) = meta.blame.charge(start, end);
    // Each counted waiter stands for `BLAME_EVERY` waits.
    let blamed = rec
        .clock
        .delta_as_nanos(0, ticks)
        .saturating_mul(u64::from(waiters.max(1)) * crate::stacks::BLAME_EVERY);
    let drawn_as = blamed.saturating_mul(stands_for);
    let Some(weight) = crate::stacks::weight_of(rec.stacks.rate_ns, drawn_as) else {
        return;
    };
    stack_hooks::holder(rec, e, weight * stands_for as f64, blamed);
}

/// A blocking acquisition: records it when observed, otherwise runs `plain`.
///
/// `attempt` tries once without waiting; `wait` blocks until acquired and
/// reports the spin rounds and OS sleeps it took. Each is called at most
/// once; `Copy` because the ways out of line each take their own copy.
///
/// Forced inline, observed part included: out of line, returning the
/// guard and [`Hold`] through memory cost the spinlock ~4 ns. What stays
/// inline is [`acquire_in`]'s common case; every other case is a call,
/// so an unobserved lock stays as small as the bare one plus the
/// `observing()` test.
#[inline(always)]
pub(crate) fn acquire<G>(
    meta: &Meta,
    site: &'static Location<'static>,
    mode: Mode,
    plain: impl FnOnce() -> G + Copy,
    attempt: impl FnOnce() -> Option<G> + Copy,
    wait: impl FnOnce() -> (G, u64, u64) + Copy,
) -> (G, Hold) {
    acquire_hinted(meta, site, mode, |_| {}, plain, attempt, wait)
}

/// [`acquire`], asking for the lock's cache line before the attempt
/// (`own_line`, given the recorder's `hint::OwnLine`): the Mutex's, whose
/// `lock_api` attempt reads the lock word before it compare-exchanges
/// (see `hint`).
#[inline(always)]
pub(crate) fn acquire_hinted<G>(
    meta: &Meta,
    site: &'static Location<'static>,
    mode: Mode,
    own_line: impl FnOnce(crate::hint::OwnLine) + Copy,
    plain: impl FnOnce() -> G + Copy,
    attempt: impl FnOnce() -> Option<G> + Copy,
    wait: impl FnOnce() -> (G, u64, u64) + Copy,
) -> (G, Hold) {
    if !recorder::observing() {
        return (plain(), Hold::none());
    }
    match recorder::current() {
        Some(rec) => acquire_in(rec, meta, site, mode, own_line, plain, attempt, wait),
        None => unrecorded(plain),
    }
}

/// [`acquire`] where the dispatcher in effect holds no lockmeter layer.
#[cold]
#[inline(never)]
fn unrecorded<G>(plain: impl FnOnce() -> G) -> (G, Hold) {
    (plain(), Hold::none())
}

/// An observed blocking acquisition in the recorder `rec`: the common
/// case inline with no call ([`acquire_lean`]), each other one a call of
/// its own in tail position ([`general_way`], [`timed_way`],
/// [`failed_way`], [`misguessed_way`]). So the inline path carries no
/// flag for the sample's decision and no merged tail: the observed
/// SpinLock took 93.4 -> 89.4 instructions a lock/unlock and 2.20-2.26 ->
/// 2.10-2.17 of bare against the one body all cases shared
/// (`docs/performance.md`, "Session 37"). `own_line` asks for the lock's
/// line before an attempt, given the recorder's `hint::OwnLine` (the
/// Mutex's `hint`; nothing for the others). Given it rather than
/// capturing `rec`: a closure holding `rec` made the Mutex's path keep it
/// on the stack for the ways out of line (one more store before the
/// attempt).
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub(crate) fn acquire_in<G>(
    rec: *const recorder::Recorder,
    meta: &Meta,
    site: &'static Location<'static>,
    mode: Mode,
    own_line: impl FnOnce(crate::hint::OwnLine) + Copy,
    plain: impl FnOnce() -> G + Copy,
    attempt: impl FnOnce() -> Option<G> + Copy,
    wait: impl FnOnce() -> (G, u64, u64) + Copy,
) -> (G, Hold) {
    acquire_lean(
        rec,
        meta,
        site,
        mode,
        // SAFETY: `rec` is the live recorder the caller found.
        || own_line(unsafe { (*rec).own_line }),
        attempt,
        |guessed| {
            general_way(
                rec, meta, site, mode, guessed, own_line, plain, attempt, wait,
            )
        },
        |probe| timed_way(probe, meta, site, mode, own_line, plain, attempt, wait),
        |probe| failed_way(probe, meta, site, mode, wait),
        |g, probe| misguessed_way(probe, meta, site, mode, Some(g), wait),
    )
}

/// [`acquire_in`] in every case, having counted nothing: a thread holding
/// other locks (`guessed`, the entry its site guessed, taken as found: a
/// second guess cost the nested Mutex 323 -> 305 instructions), or a site
/// with no guess (null: a helper's site where two classes are taken, or
/// one this thread has not taken recently). The latter looks its entry up by
/// the lock's key here, once (through [`Probe::lookup_ahead`], it made
/// the guess a second time and called out of line for the look-up), and
/// tells the site's guess what it found (`shard::looked_up`), so that a
/// loop on one class at a helper's site goes the inline way: two SpinLock
/// classes at one helper's site cost 14.5 ns a lock/unlock against 5.8 ns
/// for one class (`docs/performance.md`, "Session 40").
#[inline(never)]
#[allow(clippy::too_many_arguments)]
fn general_way<G>(
    rec: *const recorder::Recorder,
    meta: &Meta,
    site: &'static Location<'static>,
    mode: Mode,
    guessed: *const Entry,
    own_line: impl FnOnce(crate::hint::OwnLine),
    plain: impl FnOnce() -> G,
    attempt: impl FnOnce() -> Option<G>,
    wait: impl FnOnce() -> (G, u64, u64),
) -> (G, Hold) {
    let asked = || {
        // SAFETY: `rec` is the live recorder the caller found.
        own_line(unsafe { (*rec).own_line });
        attempt()
    };
    if !guessed.is_null() {
        let probe = Probe {
            entry: guessed,
            recorder: rec,
        };
        return acquire_tested(meta, site, mode, Some(probe), || None, plain, asked, wait);
    }
    let found = Probe::lookup_in(rec, meta, site, mode).inspect(|probe| {
        let at = site as *const Location<'static> as usize;
        recorder::shard::looked_up(rec, at, mode.key_bits(), probe.entry);
    });
    acquire_tested(meta, site, mode, found, || None, plain, asked, wait)
}

/// [`acquire_in`] of a hold the sample times, its entry found.
#[inline(never)]
#[allow(clippy::too_many_arguments)]
fn timed_way<G>(
    probe: Probe,
    meta: &Meta,
    site: &'static Location<'static>,
    mode: Mode,
    own_line: impl FnOnce(crate::hint::OwnLine),
    plain: impl FnOnce() -> G,
    attempt: impl FnOnce() -> Option<G>,
    wait: impl FnOnce() -> (G, u64, u64),
) -> (G, Hold) {
    let line = probe.recorder().own_line;
    let asked = || {
        own_line(line);
        attempt()
    };
    let no_recorder = || None;
    acquire_tested(
        meta,
        site,
        mode,
        Some(probe),
        no_recorder,
        plain,
        asked,
        wait,
    )
}

/// [`acquire_in`]'s acquisition whose untimed attempt failed: it waits,
/// in the entry guessed if the guess was right (checked here, so that the
/// inline path tests the guess on its success alone), else as
/// [`misguessed_way`]. The out-of-line ways take `wait` and not `plain`
/// (a blocking acquisition either way): a seventh argument went on the
/// stack, four stores on the inline path before the attempt.
#[inline(never)]
fn failed_way<G>(
    probe: Probe,
    meta: &Meta,
    site: &'static Location<'static>,
    mode: Mode,
    wait: impl FnOnce() -> (G, u64, u64),
) -> (G, Hold) {
    match probe.counts(meta, site, mode) {
        // Left to the sample, as in `acquire`.
        true => acquire_contended(probe, meta, site, None, wait),
        false => misguessed_way(probe, meta, site, mode, None, wait),
    }
}

/// [`acquire_in`]'s acquisition whose entry `probe` was guessed wrong,
/// its attempt made (`attempted`): counted in the right entry.
#[cold]
#[inline(never)]
fn misguessed_way<G>(
    probe: Probe,
    meta: &Meta,
    site: &'static Location<'static>,
    mode: Mode,
    attempted: Option<G>,
    wait: impl FnOnce() -> (G, u64, u64),
) -> (G, Hold) {
    let Some((probe, start, prepared)) = probe.misguessed(meta, site, mode) else {
        return (attempted.unwrap_or_else(|| wait().0), Hold::none());
    };
    match attempted {
        Some(g) => (g, probe.acquired_nowait_at(meta, site, start, prepared)),
        None => acquire_contended(probe, meta, site, start.start, wait),
    }
}

/// [`acquire`] for a caller that has just seen `recorder::observing()`
/// answer yes (the out-of-line observed paths): the test is not made
/// twice. A layer gone in between is still safe: no recorder is found
/// and `plain` runs, as in [`acquire`]. One body for every case, with no
/// common case inline: its one caller (an upgrade) holds the upgradable
/// lock, so [`acquire_lean`]'s way, for a thread holding nothing, never
/// applies (through [`acquire_in`], the observed upgrade took 483 -> 535
/// instructions).
#[inline(always)]
pub(crate) fn acquire_observed<G>(
    meta: &Meta,
    site: &'static Location<'static>,
    mode: Mode,
    plain: impl FnOnce() -> G,
    attempt: impl FnOnce() -> Option<G>,
    wait: impl FnOnce() -> (G, u64, u64),
) -> (G, Hold) {
    acquire_tested(
        meta,
        site,
        mode,
        None,
        recorder::current,
        plain,
        attempt,
        wait,
    )
}

/// The recorder of the dispatcher in effect (`None`: it holds no
/// lockmeter layer), for an out-of-line observed path that runs
/// [`acquire_lean`] in it.
#[inline(always)]
pub(crate) fn recorder() -> Option<*const recorder::Recorder> {
    recorder::current()
}

/// [`acquire_in`]'s common case, with no call on its way: a site this
/// thread took recently, a hold the sample does not time, nothing else
/// held, and the lock free at the attempt. Each other case goes on in a
/// function of its own, out of line: before the attempt, `general`
/// ([`general_way`]), having counted nothing, or `timed` ([`timed_way`])
/// for a hold the sample picks; after it, `failed` ([`failed_way`]) for a
/// lock that was not free, `misguessed` ([`misguessed_way`]) for a lock
/// taken under a guess that was wrong. Every
/// call here is the path's last act: the path had stored and reloaded its
/// sample's decision and its prepared record on the stack around a clock
/// read one acquisition in 64, and kept the recorder's `Option` in a
/// register to test it again (`docs/performance.md`, "Session 24").
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub(crate) fn acquire_lean<G>(
    rec: *const recorder::Recorder,
    meta: &Meta,
    site: &'static Location<'static>,
    mode: Mode,
    own_line: impl FnOnce(),
    attempt: impl FnOnce() -> Option<G>,
    general: impl FnOnce(*const Entry) -> (G, Hold),
    timed: impl FnOnce(Probe) -> (G, Hold),
    failed: impl FnOnce(Probe) -> (G, Hold),
    misguessed: impl FnOnce(G, Probe) -> (G, Hold),
) -> (G, Hold) {
    let at = site as *const Location<'static> as usize;
    let Some(entry) = recorder::shard::guess_entry(rec, at, mode.key_bits()) else {
        return general(std::ptr::null());
    };
    let probe = Probe {
        entry,
        recorder: rec,
    };
    // Written before the attempt and unseen until committed: nothing to
    // undo on the way out.
    let prepared = now::prepare_lone(meta.instance(), entry, rec);
    if !prepared.is_some() {
        return general(entry);
    }
    own_line();
    let nowait = probe.entry().nowait_so_far();
    if probe.entry().picks(nowait) {
        return timed(probe);
    }
    // The guess is checked once the attempt has made the lock's line this
    // thread's, on each way out.
    let Some(g) = attempt() else {
        return failed(probe);
    };
    if !probe.counts(meta, site, mode) {
        return misguessed(g, probe);
    }
    let untimed = Sample {
        nowait,
        start: None,
    };
    (g, probe.acquired_nowait_at(meta, site, untimed, prepared))
}

/// [`acquire_in`]'s general and timed ways, and [`acquire_observed`].
/// `found` is the entry when the caller found it already ([`timed_way`]);
/// otherwise the look-up runs, in the recorder `recorder` finds.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn acquire_tested<G>(
    meta: &Meta,
    site: &'static Location<'static>,
    mode: Mode,
    found: Option<Probe>,
    recorder: impl FnOnce() -> Option<*const recorder::Recorder>,
    plain: impl FnOnce() -> G,
    attempt: impl FnOnce() -> Option<G>,
    wait: impl FnOnce() -> (G, u64, u64),
) -> (G, Hold) {
    let probe = match found {
        Some(probe) => Some(probe),
        None => Probe::lookup_ahead(recorder, meta, site, mode),
    };
    let Some(probe) = probe else {
        return (plain(), Hold::none());
    };
    let start = probe.sample();
    let prepared = probe.prepare_hold(meta);
    let attempted = attempt();
    if !probe.counts(meta, site, mode) {
        return misguessed_way(probe, meta, site, mode, attempted, wait);
    }
    if let Some(g) = attempted {
        return (g, probe.acquired_nowait_at(meta, site, start, prepared));
    }
    // Left to the sample: the acquisition joins the sample's population
    // unless its timing is forced (`Probe::acquired_after_wait`).
    acquire_contended(probe, meta, site, start.start, wait)
}

/// An acquisition whose attempt failed: the wait recorded, taken, and
/// closed.
///
/// Inline, though it is the slow path: out of line, it returned the guard
/// and [`Hold`] through memory, and merging that with the fast path's
/// in-register values made every acquisition, observed or not, copy the
/// guard between stack slots (unobserved Mutex: 74 instructions per
/// lock/unlock against 20 inline, by callgrind). Its own parts are calls.
#[inline(always)]
fn acquire_contended<G>(
    probe: Probe,
    meta: &Meta,
    site: &'static Location<'static>,
    early: Option<u64>,
    wait: impl FnOnce() -> (G, u64, u64),
) -> (G, Hold) {
    let waiting = probe.contended_from(meta, early, true);
    let (g, spins, sleeps) = wait();
    let hold = probe.acquired_after_wait(meta, site, waiting, spins, sleeps);
    (g, hold)
}

/// A single attempt (try-lock): a failure counts as rejected.
#[inline(always)]
pub(crate) fn try_acquire<G>(
    meta: &Meta,
    site: &'static Location<'static>,
    mode: Mode,
    attempt: impl FnOnce() -> Option<G>,
) -> Option<(G, Hold)> {
    if !recorder::observing() {
        return attempt().map(|g| (g, Hold::none()));
    }
    try_acquire_observed(meta, site, mode, attempt)
}

#[inline]
fn try_acquire_observed<G>(
    meta: &Meta,
    site: &'static Location<'static>,
    mode: Mode,
    attempt: impl FnOnce() -> Option<G>,
) -> Option<(G, Hold)> {
    let Some(probe) = Probe::lookup(meta, site, mode) else {
        return attempt().map(|g| (g, Hold::none()));
    };
    let start = probe.sample();
    let prepared = probe.prepare_hold(meta);
    match attempt() {
        Some(g) => Some((g, probe.acquired_nowait_at(meta, site, start, prepared))),
        None => {
            probe.rejected();
            None
        }
    }
}

/// An acquisition with a deadline: `wait` gives up by returning `None`,
/// which counts as rejected.
#[inline]
pub(crate) fn acquire_timed<G>(
    meta: &Meta,
    site: &'static Location<'static>,
    mode: Mode,
    attempt: impl FnOnce() -> Option<G>,
    wait: impl FnOnce() -> (Option<G>, u64, u64),
) -> Option<(G, Hold)> {
    let Some(probe) = Probe::start(meta, site, mode) else {
        return attempt().or_else(|| wait().0).map(|g| (g, Hold::none()));
    };
    let start = probe.sample();
    let prepared = probe.prepare_hold(meta);
    if let Some(g) = attempt() {
        return Some((g, probe.acquired_nowait_at(meta, site, start, prepared)));
    }
    let waiting = probe.contended_from(meta, start.start, false);
    match wait() {
        (Some(g), spins, sleeps) => Some((
            g,
            probe.acquired_after_wait(meta, site, waiting, spins, sleeps),
        )),
        (None, spins, sleeps) => {
            probe.rejected_after_wait(spins, sleeps);
            None
        }
    }
}

/// An acquisition someone else made for the caller: a raw condvar's wait
/// relocks the mutex before it returns. Counted at `site` as contended,
/// waiting since `waited_since` (the notify that woke the waiter, which
/// then waited for its notifier's unlock), or as NOWAIT without one.
pub(crate) fn reacquired(
    meta: &Meta,
    site: &'static Location<'static>,
    mode: Mode,
    waited_since: Option<u64>,
) -> Hold {
    let Some(probe) = Probe::start(meta, site, mode) else {
        return Hold::none();
    };
    let Some(start) = waited_since else {
        return probe.acquired_nowait(meta, site);
    };
    now::wait_begins(meta.instance(), probe.entry, probe.recorder);
    let waiting = Waiting {
        start,
        sampling: None,
        holder: meta.holder.load(Relaxed),
        blame: std::ptr::null(),
        pre: PreWait::Off,
    };
    probe.acquired_after_wait(meta, site, waiting, 0, 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `Meta` keeps the class and kind packed (`class_word`/`name_len`,
    /// `tag`): every role and kind, named or not, reads back as built.
    #[test]
    fn a_meta_gives_back_the_class_and_kind_it_was_built_with() {
        let here = Location::caller();
        for name in [None, Some(""), Some("a.lock"), Some("ü.µ")] {
            for role in [Role::Own, Role::InnerLock, Role::InnerWait] {
                for kind in LockKind::ALL {
                    let meta = Meta::new(Class::new(name, here).inner(role), kind);
                    let class = meta.class();
                    assert_eq!(class.name, name);
                    assert!(std::ptr::eq(class.created_at, here));
                    assert_eq!(class.role, role);
                    assert_eq!(meta.kind(), kind);
                    assert_eq!(meta.site_key(here, Mode::Exclusive).kind, kind);
                    let class_word = match name {
                        Some(n) => n.as_ptr() as usize,
                        None => here as *const Location<'static> as usize,
                    };
                    assert_eq!(meta.raw_key(here, Mode::Exclusive)[0], class_word);
                }
            }
        }
    }
}
