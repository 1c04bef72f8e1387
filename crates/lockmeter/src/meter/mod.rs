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
//! Every acquisition is counted. Every contended one is timed (it waits
//! anyway). One uncontended acquisition in `sample_every` per entry is
//! timed, with one clock read just before the attempt and one just after
//! the unlock, both outside the critical section; the others cost a lookup
//! and a few single-writer counter stores, and their release costs nothing.
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

use std::panic::Location;
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU64, AtomicUsize, Ordering::Relaxed};

use lockmeter_model::LockKind;

use crate::class::{Class, Mode, Role, SiteKey};
use crate::now;
use crate::recorder::{self, entry::Entry};

mod hold;
mod wait;

pub(crate) use self::hold::Hold;
pub(crate) use self::wait::{WaitStats, WakeCall};

/// Per-instance metering state, embedded in every instrumented lock: what
/// the instance is (its class and [`LockKind`], fixed when it is built) and
/// the notes its acquisitions leave. Touched only while observed; the
/// fields sit next to the lock word, on a cache line the acquiring thread
/// owns anyway.
///
/// `repr(C)`, written-on-every-acquisition fields first: placed right after
/// the lock word, they share its cache line; the read-only class follows,
/// flattened so that `kind` fits in the padding after `role` (56 bytes in
/// all, see `docs/performance.md`).
#[repr(C)]
pub(crate) struct Meta {
    /// The call site of the current (or last) holder.
    holder: AtomicPtr<Location<'static>>,
    /// A token of the thread that acquired last, for `bounces`.
    owner: AtomicUsize,
    /// The address of the recorder that counted this instance, for `instances`.
    seen: AtomicU64,
    /// [`Class::name`].
    name: Option<&'static str>,
    /// [`Class::created_at`].
    created_at: &'static Location<'static>,
    /// [`Class::role`].
    role: Role,
    kind: LockKind,
    /// `role` and `kind` as they enter [`Meta::raw_key`], so that the hot
    /// path reads one load for both, as it did when the kind was a
    /// constant of each call.
    tag: u16,
    /// Semaphores only: set once a permit was taken by `down` or given by
    /// `up` while observed. Such permits belong to no guard and any thread
    /// may return one, so a wait on the semaphore is never part of a
    /// reported deadlock (`now`). In the padding after `tag`: free.
    pub(crate) loose: AtomicBool,
}

impl Meta {
    /// The instance's identity in `now`: this field's address.
    #[inline(always)]
    fn instance(&self) -> usize {
        self as *const Meta as usize
    }

    /// The state of a new instance of `class`, a primitive of `kind`.
    pub(crate) const fn new(class: Class, kind: LockKind) -> Meta {
        Meta {
            holder: AtomicPtr::new(std::ptr::null_mut()),
            owner: AtomicUsize::new(0),
            seen: AtomicU64::new(0),
            name: class.name,
            created_at: class.created_at,
            role: class.role,
            kind,
            tag: class.role as u16 | (kind as u16) << 4,
            loose: AtomicBool::new(false),
        }
    }

    /// The class this instance counts in.
    pub(crate) fn class(&self) -> Class {
        Class {
            name: self.name,
            created_at: self.created_at,
            role: self.role,
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
        let class = match self.name {
            Some(n) => n.as_ptr() as usize,
            None => self.created_at as *const Location<'static> as usize,
        };
        let tag = self.tag as usize | (mode as usize) << 2;
        [class, site as *const Location<'static> as usize, tag]
    }

    /// The full key of an acquisition at `site`, for a new entry.
    #[inline(always)]
    fn site_key(&self, site: &'static Location<'static>, mode: Mode) -> SiteKey {
        SiteKey {
            class: self.class(),
            kind: self.kind,
            site,
            mode,
        }
    }
}

/// A token unique to each live thread: the address of a thread-local.
#[inline]
fn thread_token() -> usize {
    thread_local!(static TOKEN: u8 = const { 0 });
    TOKEN.with(|t| t as *const u8 as usize)
}

/// An acquisition being recorded.
pub(crate) struct Probe {
    entry: *const Entry,
    recorder: *const recorder::Recorder,
}

/// A wait in progress: when it began and who held the lock.
pub(crate) struct Waiting {
    start: u64,
    holder: *mut Location<'static>,
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
        let rec = recorder::current()?;
        let raw = meta.raw_key(site, mode);
        let entry = recorder::shard::entry(rec, raw, move || meta.site_key(site, mode))?;
        Some(Probe {
            entry,
            recorder: rec,
        })
    }

    /// The entry this acquisition counts in. Private to the meter: the
    /// meter is the only writer of entries.
    #[inline]
    fn entry(&self) -> &Entry {
        // SAFETY: entries live as long as their thread's slot, which
        // outlives every probe and guard of the thread (see `shard`).
        unsafe { &*self.entry }
    }

    /// Counts an uncontended acquisition about to be attempted and, if it
    /// is one of the sampled ones, reads the clock: `Some(start)` when its
    /// hold is to be timed. Read before the attempt, the clock stays out of
    /// the critical section and doubles as the start of a wait if the
    /// attempt fails.
    #[inline(always)]
    fn sample(&self) -> Option<u64> {
        let e = self.entry();
        e.sample_uncontended().then(|| e.clock().raw())
    }

    /// The attempt that [`Probe::sample`] counted failed after all.
    #[inline]
    fn unsample(&self) {
        self.entry().unsample_uncontended();
    }

    /// The lock was free at the first attempt; the hold is timed when this
    /// acquisition is sampled.
    #[inline]
    pub(crate) fn acquired_nowait(self, meta: &Meta, site: &'static Location<'static>) -> Hold {
        let start = self.sample();
        self.acquired_nowait_at(meta, site, start)
    }

    /// Like [`Probe::acquired_nowait`], for a hold that is never timed
    /// (a semaphore `down`, which hands out no guard).
    pub(crate) fn acquired_nowait_untimed(self, meta: &Meta, site: &'static Location<'static>) {
        self.entry().count_nowait();
        self.note_owner(meta, site);
    }

    #[inline(always)]
    fn acquired_nowait_at(
        self,
        meta: &Meta,
        site: &'static Location<'static>,
        start: Option<u64>,
    ) -> Hold {
        self.entry().count_nowait();
        self.note_owner(meta, site);
        let held = now::hold_begins(meta.instance(), self.entry, self.recorder);
        match start {
            None => Hold::NONE,
            Some(start) => Hold::sampled(self.entry(), start),
        }
        .in_now(held)
    }

    /// The first attempt failed: the wait begins now.
    #[inline]
    pub(crate) fn contended(&self, meta: &Meta) -> Waiting {
        self.contended_from(meta, None)
    }

    /// Like [`Probe::contended`], starting the wait at the clock read a
    /// sampled attempt already took, if it took one.
    #[inline]
    fn contended_from(&self, meta: &Meta, sampled_start: Option<u64>) -> Waiting {
        now::wait_begins(meta.instance(), self.entry, self.recorder);
        Waiting {
            start: sampled_start.unwrap_or_else(|| self.entry().clock().raw()),
            holder: meta.holder.load(Relaxed),
        }
    }

    /// The lock was acquired after waiting `spins` rounds and `sleeps`
    /// blocking sleeps.
    pub(crate) fn acquired_after_wait(
        self,
        meta: &Meta,
        site: &'static Location<'static>,
        waiting: Waiting,
        spins: u64,
        sleeps: u64,
    ) -> Hold {
        let e = self.entry();
        let now = e.clock().raw();
        let wait_ns = e.clock().delta_as_nanos(waiting.start, now);
        // Only counts here, inside the critical section: the wait time and
        // its holder are recorded when the hold ends, after the unlock
        // (see `Hold::release`). Slower bookkeeping under a lock that is
        // already contended lengthens every hold and feeds the convoy.
        e.count_contended(spins, sleeps);
        self.note_owner(meta, site);
        let held = now::wait_ends_held(meta.instance(), self.entry, self.recorder, wait_ns);
        Hold::contended(e, now, wait_ns, waiting.holder).in_now(held)
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

    #[inline]
    fn note_owner(&self, meta: &Meta, site: &'static Location<'static>) {
        let e = self.entry();
        let me = thread_token();
        let prev = meta.owner.load(Relaxed);
        if prev != me {
            if prev != 0 {
                e.count_bounce();
            }
            meta.owner.store(me, Relaxed);
        }
        meta.holder.store(site as *const _ as *mut _, Relaxed);
        let tag = self.recorder as u64;
        if meta.seen.load(Relaxed) != tag {
            meta.seen.store(tag, Relaxed);
            e.count_instance();
        }
    }
}

/// A blocking acquisition: records it when observed, otherwise runs `plain`.
///
/// `attempt` tries once without waiting; `wait` blocks until acquired and
/// reports the spin rounds and OS sleeps it took.
///
/// Forced inline, observed part included: out of line, returning the
/// guard and [`Hold`] through memory cost the spinlock ~4 ns. What stays
/// inline is small; the slow parts (a new site, a contended wait) are
/// calls, so an unobserved lock stays as small as the bare one plus the
/// `observing()` test.
#[inline(always)]
pub(crate) fn acquire<G>(
    meta: &Meta,
    site: &'static Location<'static>,
    mode: Mode,
    plain: impl FnOnce() -> G,
    attempt: impl FnOnce() -> Option<G>,
    wait: impl FnOnce() -> (G, u64, u64),
) -> (G, Hold) {
    let probe = match recorder::observing() {
        true => Probe::lookup(meta, site, mode),
        false => None,
    };
    let Some(probe) = probe else {
        return (plain(), Hold::NONE);
    };
    let start = probe.sample();
    if let Some(g) = attempt() {
        return (g, probe.acquired_nowait_at(meta, site, start));
    }
    probe.unsample();
    acquire_contended(probe, meta, site, start, wait)
}

#[inline(never)]
fn acquire_contended<G>(
    probe: Probe,
    meta: &Meta,
    site: &'static Location<'static>,
    early: Option<u64>,
    wait: impl FnOnce() -> (G, u64, u64),
) -> (G, Hold) {
    let waiting = probe.contended_from(meta, early);
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
        return attempt().map(|g| (g, Hold::NONE));
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
        return attempt().map(|g| (g, Hold::NONE));
    };
    let start = probe.sample();
    match attempt() {
        Some(g) => Some((g, probe.acquired_nowait_at(meta, site, start))),
        None => {
            probe.unsample();
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
        return attempt().or_else(|| wait().0).map(|g| (g, Hold::NONE));
    };
    let start = probe.sample();
    if let Some(g) = attempt() {
        return Some((g, probe.acquired_nowait_at(meta, site, start)));
    }
    probe.unsample();
    let waiting = probe.contended_from(meta, start);
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
