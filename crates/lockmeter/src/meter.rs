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

use std::panic::Location;
use std::sync::atomic::{AtomicPtr, AtomicU64, AtomicUsize, Ordering::Relaxed};

use lockmeter_model::LockKind;

use crate::class::{Class, Mode, SiteKey};
use crate::now;
use crate::recorder::{self, entry::Entry};
use crate::slow;

/// Per-instance metering state, embedded in every instrumented lock.
/// Touched only while observed; the fields sit next to the lock word, on a
/// cache line the acquiring thread owns anyway.
///
/// `repr(C)`, written-on-every-acquisition fields first: placed right after
/// the lock word, they share its cache line; the read-only class follows.
#[repr(C)]
pub(crate) struct Meta {
    /// The call site of the current (or last) holder.
    holder: AtomicPtr<Location<'static>>,
    /// A token of the thread that acquired last, for `bounces`.
    owner: AtomicUsize,
    /// The address of the recorder that counted this instance, for `instances`.
    seen: AtomicU64,
    pub(crate) class: Class,
}

impl Meta {
    /// The instance's identity in `now`: this field's address.
    #[inline(always)]
    fn instance(&self) -> usize {
        self as *const Meta as usize
    }

    pub(crate) const fn new(class: Class) -> Meta {
        Meta {
            class,
            holder: AtomicPtr::new(std::ptr::null_mut()),
            owner: AtomicUsize::new(0),
            seen: AtomicU64::new(0),
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
        kind: LockKind,
        site: &'static Location<'static>,
        mode: Mode,
    ) -> Option<Probe> {
        if !recorder::observing() {
            return None;
        }
        Self::lookup(meta, kind, site, mode)
    }

    #[inline(always)]
    fn lookup(
        meta: &Meta,
        kind: LockKind,
        site: &'static Location<'static>,
        mode: Mode,
    ) -> Option<Probe> {
        let rec = recorder::current()?;
        let raw = SiteKey::raw_of(&meta.class, kind, site, mode);
        let entry = recorder::shard::entry(rec, raw, || SiteKey {
            class: meta.class,
            kind,
            site,
            mode,
        })?;
        Some(Probe {
            entry,
            recorder: rec,
        })
    }

    #[inline]
    pub(crate) fn entry(&self) -> &Entry {
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
        e.sample_uncontended().then(|| e.clock.raw())
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
        self.entry().nowait.add(1);
        self.note_owner(meta, site);
    }

    #[inline(always)]
    fn acquired_nowait_at(
        self,
        meta: &Meta,
        site: &'static Location<'static>,
        start: Option<u64>,
    ) -> Hold {
        let e = self.entry();
        e.nowait.add(1);
        self.note_owner(meta, site);
        let held = now::hold_begins(meta.instance(), self.entry, self.recorder);
        match start {
            None => Hold { held, ..Hold::NONE },
            Some(start) => {
                e.outstanding.add(1);
                Hold {
                    entry: self.entry,
                    start,
                    wait_ns: 0,
                    waited_behind: None,
                    held,
                }
            }
        }
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
            start: sampled_start.unwrap_or_else(|| self.entry().clock.raw()),
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
        let now = e.clock.raw();
        let wait_ns = e.clock.delta_as_nanos(waiting.start, now);
        // Only counts here, inside the critical section: the wait time and
        // its holder are recorded when the hold ends, after the unlock
        // (see `Hold::release`). Slower bookkeeping under a lock that is
        // already contended lengthens every hold and feeds the convoy.
        e.contended.add(1);
        e.spins.add(spins);
        e.sleeps.add(sleeps);
        self.note_owner(meta, site);
        e.outstanding.add(1);
        let held = now::wait_ends_held(meta.instance(), self.entry, self.recorder, wait_ns);
        Hold {
            entry: self.entry,
            start: now,
            wait_ns,
            waited_behind: Some(waiting.holder),
            held,
        }
    }

    /// A try-lock failed or a timed wait gave up.
    pub(crate) fn rejected(self) {
        self.entry().rejected.add(1);
    }

    /// A timed acquisition that waited and gave up.
    pub(crate) fn rejected_after_wait(self, spins: u64, sleeps: u64) {
        now::wait_ends();
        let e = self.entry();
        e.rejected.add(1);
        e.spins.add(spins);
        e.sleeps.add(sleeps);
    }

    #[inline]
    fn note_owner(&self, meta: &Meta, site: &'static Location<'static>) {
        let e = self.entry();
        let me = thread_token();
        let prev = meta.owner.load(Relaxed);
        if prev != me {
            if prev != 0 {
                e.bounces.add(1);
            }
            meta.owner.store(me, Relaxed);
        }
        meta.holder.store(site as *const _ as *mut _, Relaxed);
        let tag = self.recorder as u64;
        if meta.seen.load(Relaxed) != tag {
            meta.seen.store(tag, Relaxed);
            e.instances.add(1);
        }
    }
}

/// Carried by a guard: where and since when the lock is held. Holds that
/// are not timed (unobserved, or an uncontended one not sampled) carry no
/// entry and cost nothing to release.
pub(crate) struct Hold {
    entry: *const Entry,
    start: u64,
    wait_ns: u64,
    /// For a contended acquisition, the site that held the lock when the
    /// wait began (null if unknown): the wait is recorded with the hold.
    /// `None` on a timed hold means an uncontended one, timed as one of a
    /// sample.
    waited_behind: Option<*mut Location<'static>>,
    /// Where `now` records this hold ([`now::UNTRACKED`]: nowhere).
    held: u32,
}

impl Hold {
    /// The hold of an unobserved acquisition: releasing it records nothing.
    pub(crate) const NONE: Hold = Hold {
        entry: std::ptr::null(),
        start: 0,
        wait_ns: 0,
        waited_behind: None,
        held: now::UNTRACKED,
    };

    /// Ends a hold without timing it (a semaphore `down` without a permit).
    pub(crate) fn discard(self) {
        now::hold_ends(self.held);
        if !self.entry.is_null() {
            // SAFETY: see `Probe::entry`.
            let e = unsafe { &*self.entry };
            match self.waited_behind {
                None => e.unsample_uncontended(),
                Some(_) => self.record_wait(e),
            }
            e.outstanding.sub(1);
        }
    }

    /// Records the wait of a contended acquisition and charges it to the
    /// site that held the lock.
    #[inline]
    fn record_wait(&self, e: &Entry) {
        if let Some(holder) = self.waited_behind {
            e.wait.record(self.wait_ns);
            e.record_holder(holder, self.wait_ns);
        }
    }

    /// Runs `unlock` and records the hold time if the hold is timed. The
    /// hold leaves `now` before the unlock, so `now` never shows a lock
    /// held that another thread may already have.
    #[inline(always)]
    pub(crate) fn release(&self, unlock: impl FnOnce()) {
        now::hold_ends(self.held);
        if self.entry.is_null() {
            unlock();
            return;
        }
        self.release_timed(unlock);
    }

    /// The hold ends with a clock read just after `unlock`, outside the
    /// critical section.
    #[inline]
    fn release_timed(&self, unlock: impl FnOnce()) {
        // SAFETY: see `Probe::entry`.
        let e = unsafe { &*self.entry };
        unlock();
        let end = e.clock.raw();
        let hold_ns = e.clock.delta_as_nanos(self.start, end);
        match self.waited_behind {
            None => e.hold_sampled.record(hold_ns),
            Some(_) => {
                e.hold.record(hold_ns);
                self.record_wait(e);
            }
        }
        e.outstanding.sub(1);
        if hold_ns >= e.slow_ns || self.wait_ns >= e.slow_ns {
            slow::report(e, self.wait_ns, hold_ns);
        }
    }
}

/// A blocking acquisition: records it when observed, otherwise runs `plain`.
///
/// `attempt` tries once without waiting; `wait` blocks until acquired and
/// reports the spin rounds and OS sleeps it took. Only the `observing()`
/// test is forced inline, so an unobserved lock stays as small as the bare
/// one.
#[inline(always)]
pub(crate) fn acquire<G>(
    meta: &Meta,
    kind: LockKind,
    site: &'static Location<'static>,
    mode: Mode,
    plain: impl FnOnce() -> G,
    attempt: impl FnOnce() -> Option<G>,
    wait: impl FnOnce() -> (G, u64, u64),
) -> (G, Hold) {
    if !recorder::observing() {
        return (plain(), Hold::NONE);
    }
    acquire_observed(meta, kind, site, mode, plain, attempt, wait)
}

/// Forced inline too: out of line, returning the guard and [`Hold`]
/// through memory cost the spinlock ~4 ns. What stays inline is small; the
/// slow parts (a new site, a contended wait) are calls.
#[inline(always)]
fn acquire_observed<G>(
    meta: &Meta,
    kind: LockKind,
    site: &'static Location<'static>,
    mode: Mode,
    plain: impl FnOnce() -> G,
    attempt: impl FnOnce() -> Option<G>,
    wait: impl FnOnce() -> (G, u64, u64),
) -> (G, Hold) {
    let Some(probe) = Probe::lookup(meta, kind, site, mode) else {
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
    kind: LockKind,
    site: &'static Location<'static>,
    mode: Mode,
    attempt: impl FnOnce() -> Option<G>,
) -> Option<(G, Hold)> {
    if !recorder::observing() {
        return attempt().map(|g| (g, Hold::NONE));
    }
    try_acquire_observed(meta, kind, site, mode, attempt)
}

#[inline]
fn try_acquire_observed<G>(
    meta: &Meta,
    kind: LockKind,
    site: &'static Location<'static>,
    mode: Mode,
    attempt: impl FnOnce() -> Option<G>,
) -> Option<(G, Hold)> {
    let Some(probe) = Probe::lookup(meta, kind, site, mode) else {
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
    kind: LockKind,
    site: &'static Location<'static>,
    mode: Mode,
    attempt: impl FnOnce() -> Option<G>,
    wait: impl FnOnce() -> (Option<G>, u64, u64),
) -> Option<(G, Hold)> {
    let Some(probe) = Probe::start(meta, kind, site, mode) else {
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
