//! The recording side: recorders, per-thread shards and snapshots.
//!
//! A [`Recorder`] belongs to one [`crate::Layer`]. The primitives find the
//! recorder of the subscriber in effect on their thread, count into that
//! thread's shard, and a snapshot merges all shards (and the folded counts
//! of threads that exited) into the v1 model.

mod build;
pub(crate) mod entry;
pub(crate) mod probe;
pub(crate) mod shard;

use std::cell::Cell;
use std::sync::atomic::Ordering::{Acquire, Relaxed, Release};
use std::sync::atomic::{AtomicPtr, AtomicU64, AtomicUsize};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{SystemTime, UNIX_EPOCH};

use lockmeter_model::{ProcessInfo, Snapshot};
use tracing::Dispatch;

use self::build::Book;
use self::entry::Entry;
use self::shard::Shard;
use crate::thread_ptrs::{clear_found_scoped_layer, found_scoped_layer, set_found_scoped_layer};
use crate::Layer;

/// How many layers exist. While zero, instrumented locks skip recording
/// entirely: one relaxed load and a branch.
static OBSERVERS: AtomicUsize = AtomicUsize::new(0);

/// Whether any layer exists, so recording is worth looking up.
#[inline(always)]
pub(crate) fn observing() -> bool {
    OBSERVERS.load(Relaxed) != 0
}

/// The recorder of the subscriber in effect on this thread, if it holds a
/// lockmeter layer. Inside a subscriber callback tracing reports no
/// subscriber, so a lock used by a layer itself is not recorded into it.
///
/// Finding a layer inside a subscriber takes a virtual `downcast_raw`
/// chain (~3 ns). When the layer sits in the global default subscriber,
/// that answer never changes, so it is remembered by the global
/// dispatcher's address.
///
/// The address is taken out of `get_default` and compared after it: a
/// closure that only returns it is small enough for tracing's fast path
/// (no scoped dispatcher anywhere) to be inlined, where one that also
/// compared and looked up was a call on every observed acquisition
/// (`docs/performance.md`, "Session 21"). Anything but the remembered
/// global dispatcher asks `get_default` again ([`current_elsewhere`]):
/// nothing on this thread can change its dispatcher in between. A thread
/// that has found a layer that way under a scoped dispatcher asks once
/// instead ([`current_once`]), until it is back under the global one.
#[inline]
pub(crate) fn current() -> Option<*const Recorder> {
    if found_scoped_layer() {
        // Not marked cold, unlike the other rare ways: a thread under a
        // scoped layer takes it on every acquisition (marked, the scoped
        // SpinLock took 181 instructions against 179; `docs/performance.md`,
        // "Session 32").
        return current_once();
    }
    match current_global() {
        Some(rec) => Some(rec),
        None => {
            std::hint::cold_path();
            current_elsewhere()
        }
    }
}

/// [`current`] on a thread that has found a layer in a scoped dispatcher:
/// one `get_default`, the remembered global dispatcher compared and any
/// other looked up inside its closure. Such a closure makes tracing's
/// function a call rather than inline, which costs the global path 5-10 %
/// (`docs/performance.md`, "Session 26"), so only threads that use scoped
/// dispatchers take it; for them it saves the second `get_default`.
///
/// Once the global dispatcher is remembered, any other is only downcast:
/// what else [`find_layer`] does (remembering the global one, marking the
/// thread) has been done by then.
///
/// Back under the global dispatcher, the thread's mark is cleared, so that
/// its next acquisitions take [`current_global`]'s inlined way again: kept,
/// the mark cost every later acquisition of a thread that had once used a
/// scoped layer about 1 ns (observed SpinLock +4.2 -> +5.2 ns, Mutex
/// +2.5 -> +3.4, after the bench's `snapshot` step had run a scoped layer
/// on the same thread; `docs/performance.md`, "Session 31"). A thread that
/// goes back and forth pays one more `get_default` at each return to a
/// scoped layer ([`current_elsewhere`], which marks it again).
#[inline(never)]
fn current_once() -> Option<*const Recorder> {
    tracing::dispatcher::get_default(|d| {
        let global = GLOBAL.dispatch.load(Acquire);
        if std::ptr::eq(d, global) {
            clear_found_scoped_layer();
            Some(GLOBAL.recorder.load(Relaxed).cast_const())
        } else if global.is_null() {
            find_layer(d)
        } else {
            layer_recorder(d)
        }
    })
}

/// [`current`] when the dispatcher in effect is the remembered global
/// one; `None`, with no call of lockmeter's, otherwise (then
/// [`current_elsewhere`] answers).
#[inline(always)]
pub(crate) fn current_global() -> Option<*const Recorder> {
    let d = tracing::dispatcher::get_default(|d| d as *const Dispatch);
    std::ptr::eq(d, GLOBAL.dispatch.load(Acquire))
        .then(|| GLOBAL.recorder.load(Relaxed).cast_const())
}

/// [`current`] under a scoped dispatcher, or before the global one is
/// known to hold a layer.
#[cold]
#[inline(never)]
fn current_elsewhere() -> Option<*const Recorder> {
    tracing::dispatcher::get_default(find_layer)
}

/// The global default dispatcher, once it is known to hold a lockmeter
/// layer, and that layer's recorder. One static for both: a library's
/// statics are each reached through an address loaded from the GOT, so
/// two cost the hot path two loads more than one.
struct RememberedGlobal {
    /// The dispatcher's address; null until it is known.
    dispatch: AtomicPtr<Dispatch>,
    /// The layer's recorder. A global subscriber is never dropped, so
    /// neither is its layer's recorder.
    recorder: AtomicPtr<Recorder>,
}

static GLOBAL: RememberedGlobal = RememberedGlobal {
    dispatch: AtomicPtr::new(std::ptr::null_mut()),
    recorder: AtomicPtr::new(std::ptr::null_mut()),
};

thread_local! {
    /// The last dispatcher address on this thread found not to be the
    /// global one, so that scoped subscribers skip the check below.
    static LAST_SCOPED: Cell<usize> = const { Cell::new(0) };
}

/// The recorder of the lockmeter layer in `d`, if it holds one: a
/// downcast through its subscriber stack.
#[inline(always)]
fn layer_recorder(d: &Dispatch) -> Option<*const Recorder> {
    d.downcast_ref::<Layer>().map(|l| Arc::as_ptr(l.recorder()))
}

#[cold]
fn find_layer(d: &Dispatch) -> Option<*const Recorder> {
    let recorder = layer_recorder(d)?;
    let addr = d as *const Dispatch as usize;
    if LAST_SCOPED.with(Cell::get) != addr && GLOBAL.dispatch.load(Relaxed).is_null() {
        if is_global(d) {
            GLOBAL.recorder.store(recorder.cast_mut(), Relaxed);
            GLOBAL
                .dispatch
                .store((d as *const Dispatch).cast_mut(), Release);
            return Some(recorder);
        }
        LAST_SCOPED.with(|c| c.set(addr));
    }
    if !std::ptr::eq(d, GLOBAL.dispatch.load(Relaxed)) && !found_scoped_layer() {
        set_found_scoped_layer();
    }
    Some(recorder)
}

/// Whether `d` is the global default dispatcher (leaked, so `'static`).
/// tracing says so only in `Debug`, which names the variant first; the
/// formatting stops right after it. If the wording ever changed, the
/// answer would be "no" and only the shortcut above would be lost.
fn is_global(d: &Dispatch) -> bool {
    struct Prefix {
        seen: [u8; 16],
        len: usize,
    }
    impl std::fmt::Write for Prefix {
        fn write_str(&mut self, s: &str) -> std::fmt::Result {
            for &b in s.as_bytes() {
                if self.len == self.seen.len() {
                    return Err(std::fmt::Error);
                }
                self.seen[self.len] = b;
                self.len += 1;
            }
            Ok(())
        }
    }
    let mut p = Prefix {
        seen: [0; 16],
        len: 0,
    };
    let _ = std::fmt::write(&mut p, format_args!("{d:?}"));
    &p.seen[..p.len] == b"Dispatch::Global"
}

/// Like [`current`], with a reference count, for the cold path.
pub(crate) fn current_arc() -> Option<Arc<Recorder>> {
    tracing::dispatcher::get_default(|d| d.downcast_ref::<Layer>().map(|l| l.recorder().clone()))
}

/// Settings a recorder is built with.
pub(crate) struct Settings {
    pub(crate) clock: quanta::Clock,
    pub(crate) clock_name: &'static str,
    pub(crate) slow_ns: u64,
    /// A power of two: one uncontended hold in this many is timed.
    pub(crate) sample_every: u32,
    pub(crate) process: ProcessInfo,
    pub(crate) stacks: crate::stacks::StackSettings,
}

/// The counts of one layer: live shards, folded counts of exited threads,
/// and the baseline of the current window.
pub(crate) struct Recorder {
    /// Unique per recorder made in this process (never 0): what a lock's
    /// `Meta` keeps to tell whether this recorder has counted it yet, in
    /// 4 bytes where the recorder's address took 8.
    pub(crate) serial: u32,
    pub(crate) clock: quanta::Clock,
    clock_name: &'static str,
    pub(crate) slow_ns: u64,
    pub(crate) sample_every: u32,
    pub(crate) stacks: crate::stacks::StackSettings,
    process: ProcessInfo,
    start: quanta::Instant,
    start_unix_ns: u64,
    dropped: AtomicU64,
    state: Mutex<State>,
    /// Shards of threads that started since `state` was last taken: a
    /// new thread registers here, so its first acquisition never waits
    /// for a snapshot being built under `state` (milliseconds); whoever
    /// takes `state` moves them into `live` first.
    newcomers: Mutex<Vec<Arc<Shard>>>,
    baseline: Mutex<Option<Snapshot>>,
    /// Self-accounting and the overhead budget (`probe`).
    pub(crate) probe: probe::ProbeState,
    /// Whether this CPU takes the observed Mutex's hint for the lock's
    /// line (`hint::OwnLine`), asked when the recorder is made.
    pub(crate) own_line: crate::hint::OwnLine,
}

#[derive(Default)]
struct State {
    live: Vec<Arc<Shard>>,
    /// What snapshots are built from besides the live shards.
    book: Book,
    /// Resolved stack addresses, and the stacks of exited threads.
    stacks: build::stacks::StackBook,
}

impl Recorder {
    pub(crate) fn new(settings: Settings) -> Recorder {
        OBSERVERS.fetch_add(1, Relaxed);
        // 0 is the "no recorder yet" of a new lock; 2^32 recorders in one
        // process are out of reach, so a serial never repeats in practice.
        static SERIALS: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(1);
        Recorder {
            own_line: crate::hint::OwnLine::ask(),
            serial: SERIALS.fetch_add(1, Relaxed),
            start: settings.clock.now(),
            clock: settings.clock,
            clock_name: settings.clock_name,
            slow_ns: settings.slow_ns,
            sample_every: settings.sample_every,
            probe: probe::ProbeState::new(settings.sample_every, settings.stacks.rate_ns),
            stacks: settings.stacks,
            process: settings.process,
            start_unix_ns: unix_now_ns(),
            dropped: AtomicU64::new(0),
            state: Mutex::new(State::default()),
            newcomers: Mutex::new(Vec::new()),
            baseline: Mutex::new(None),
        }
    }

    /// What `sampling.contended_wait_every` says with uncontended holds
    /// timed one in `hold_every`: the same rate, when the slow threshold
    /// lets contended timing be sampled at all (`meter`'s `forced`).
    pub(crate) fn contended_wait_every(&self, hold_every: u32) -> u32 {
        match crate::meter::samples_contended_timing(self.slow_ns) {
            true => hold_every,
            false => 1,
        }
    }

    /// The state, with every registered shard in `live`. Lock order:
    /// `state`, then `newcomers`.
    fn state(&self) -> MutexGuard<'_, State> {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let mut newcomers = self.newcomers.lock().unwrap_or_else(|e| e.into_inner());
        state.live.append(&mut newcomers);
        drop(newcomers);
        state
    }

    /// Runs `f` on every entry of the threads alive in this recorder (the
    /// overhead budget's rate changes, calibration's timed class).
    pub(crate) fn for_each_live_entry(&self, mut f: impl FnMut(&entry::Entry)) {
        for shard in &self.state().live {
            let entries = shard.entries.lock().unwrap_or_else(|e| e.into_inner());
            entries.iter().for_each(|e| f(e));
        }
    }

    /// Registers a new thread's shard, without waiting for a snapshot.
    pub(crate) fn adopt(&self, shard: Arc<Shard>) {
        self.newcomers
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(shard);
    }

    /// Folds an exiting thread's shard into the retired counts, in one
    /// critical section so a snapshot sees it exactly once.
    pub(crate) fn retire(&self, shard: &Arc<Shard>) {
        let mut state = self.state();
        let entries = shard.entries.lock().unwrap_or_else(|e| e.into_inner());
        for entry in entries.iter() {
            state.stacks.retire(entry);
        }
        state.book.retire(shard, &entries);
        drop(entries);
        state.live.retain(|s| !Arc::ptr_eq(s, shard));
    }

    pub(crate) fn count_dropped(&self) {
        self.dropped.fetch_add(1, Relaxed);
    }

    /// Everything recorded since the recorder was created.
    pub(crate) fn cumulative(&self) -> Snapshot {
        let (locks, stacks, elapsed) = {
            let mut state = self.state();
            let state = &mut *state;
            let elapsed = self.clock.now().duration_since(self.start).as_nanos() as u64;
            // Both passes must see the same entries: each shard's list is
            // copied under its lock, which is then let go, so that a
            // thread's first acquisition at a new site (which pushes onto
            // that list) waits for the copy, not for the whole build.
            // Exiting threads still wait (`retire` takes `state`): a shard
            // retired mid-build would be counted twice.
            let shards: Vec<Vec<Arc<Entry>>> = state
                .live
                .iter()
                .map(|s| s.entries.lock().unwrap_or_else(|e| e.into_inner()).clone())
                .collect();
            let stacks = state.stacks.build(
                shards.iter().flat_map(|s| s.iter().map(|e| &**e)),
                &self.stacks,
            );
            let live: Vec<_> = state
                .live
                .iter()
                .zip(&shards)
                .map(|(shard, entries)| (&**shard, &entries[..]))
                .collect();
            (state.book.locks(&live), stacks, elapsed)
        };
        let mut snap = Snapshot::empty(self.process.clone(), self.clock_name);
        snap.window.start_unix_ns = self.start_unix_ns;
        snap.window.end_unix_ns = unix_now_ns();
        snap.window.elapsed_ns = elapsed;
        snap.dropped_records = self.dropped.load(Relaxed);
        snap.sampling.uncontended_hold_every = self.sample_every;
        snap.sampling.contended_wait_every = self.contended_wait_every(self.sample_every);
        snap.locks = locks;
        snap.stacks = Box::new(stacks);
        crate::now::fill(&mut snap, self);
        probe::fill(self, &mut snap);
        snap
    }

    /// The window since the last [`Recorder::reset`].
    pub(crate) fn snapshot(&self) -> Snapshot {
        let now = self.cumulative();
        match &*self.baseline.lock().unwrap_or_else(|e| e.into_inner()) {
            Some(base) => now.into_since(base),
            None => now,
        }
    }

    /// Starts a new window.
    pub(crate) fn reset(&self) {
        let now = self.cumulative();
        *self.baseline.lock().unwrap_or_else(|e| e.into_inner()) = Some(now);
    }
}

impl Drop for Recorder {
    fn drop(&mut self) {
        OBSERVERS.fetch_sub(1, Relaxed);
        crate::now::forget_recorder(self as *const Recorder as usize);
    }
}

fn unix_now_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
}

#[cfg(test)]
mod tests {
    use super::is_global;
    use tracing::Dispatch;

    /// `is_global` reads tracing's `Debug` output. If a tracing release
    /// changed it, the global-dispatcher shortcut would silently stop
    /// working (3.8 ns more per acquisition): this test says so instead.
    #[test]
    fn global_dispatchers_are_told_apart_from_scoped_ones() {
        // `Dispatch::none()` is tracing's own `'static` (global-kind) value.
        assert!(is_global(&Dispatch::none()));
        let scoped = Dispatch::new(tracing_subscriber::registry());
        assert!(!is_global(&scoped));
    }

    /// A thread takes the one-`get_default` way only once it has found a
    /// lockmeter layer in a scoped dispatcher; one without lockmeter does
    /// not set it, and either way the recorder found is the one in effect.
    #[test]
    fn only_a_layer_found_in_a_scoped_dispatcher_marks_the_thread() {
        use tracing_subscriber::prelude::*;
        std::thread::spawn(|| {
            use crate::thread_ptrs::found_scoped_layer;
            let plain = Dispatch::new(tracing_subscriber::registry());
            tracing::dispatcher::with_default(&plain, || {
                assert_eq!(super::current(), None);
            });
            assert!(!found_scoped_layer(), "no layer there");
            let layer = crate::Layer::new();
            let handle = layer.handle();
            let with_layer = Dispatch::new(tracing_subscriber::registry().with(layer));
            tracing::dispatcher::with_default(&with_layer, || {
                let found = super::current().expect("the scoped layer's recorder");
                assert!(found_scoped_layer());
                // The same answer the one-`get_default` way gives.
                assert_eq!(super::current(), Some(found));
                let lock = crate::Mutex::named("recorder.tests.marked", 0u64);
                *lock.lock() += 1;
            });
            let snap = handle.snapshot();
            assert_eq!(
                snap.lock("recorder.tests.marked")
                    .unwrap()
                    .total
                    .acquisitions,
                1
            );
            tracing::dispatcher::with_default(&plain, || {
                assert_eq!(super::current(), None, "still none where there is none");
            });
        })
        .join()
        .unwrap();
    }
}
