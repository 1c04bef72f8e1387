//! Every thread's [`Table`], in one process-wide list that readers walk.
//!
//! A thread registers on its first observed acquisition (cold) and leaves
//! the list when it exits. The hot path touches only its own table through
//! a `const` thread-local pointer: no lock, no allocation.
//!
//! Readers resolve a record's entry pointer to its class and site while
//! holding [`REGISTRY`]. That is sound because a thread leaves the list
//! (taking the lock) before its shard, which owns the entries, is dropped:
//! the shard's destructor calls [`exiting`] first.
//!
//! A table's head (its state and first record) is in its thread's own
//! thread-local (`thread_ptrs`), which readers reach through the table
//! while holding [`REGISTRY`]: sound because the thread leaves the list
//! before its thread-local memory is freed, and marks the head not live
//! once it has, so that its later acquisitions go the way that finds it
//! exiting.

use std::ptr::NonNull;
use std::sync::{Arc, Mutex, MutexGuard};

use lockmeter_model::now::ThreadRef;

use super::order::Edges;
use super::table::Table;

/// One thread's state as readers see it.
pub(crate) struct ThreadSlot {
    pub(crate) table: Table,
    pub(crate) edges: Edges,
    pub(crate) thread: ThreadRef,
}

/// Every registered thread. Taken by readers, and by threads only when
/// they start recording and when they exit.
static REGISTRY: Mutex<Vec<Arc<ThreadSlot>>> = Mutex::new(Vec::new());

/// The value of [`slot`] once the thread is past recording.
const DEAD: *const ThreadSlot = std::ptr::dangling();

thread_local! {
    /// Owns the slot; dropping it (thread exit) unregisters.
    static OWNER: Owner = Owner::register();
}

/// This thread's slot: null before registration, [`DEAD`] after exit.
/// In `thread_ptrs`, with the recorder's first slot: one thread-local.
#[inline(always)]
fn slot() -> *const ThreadSlot {
    crate::thread_ptrs::now_slot()
}

/// Sets [`slot`], giving back what it was.
fn replace_slot(p: *const ThreadSlot) -> *const ThreadSlot {
    crate::thread_ptrs::replace_now_slot(p)
}

struct Owner(Arc<ThreadSlot>);

impl Owner {
    fn register() -> Owner {
        // SAFETY: this thread's head, valid while it runs; the slot leaves
        // the list, the one way readers reach the table, in `unregister`,
        // on this thread, before its thread-local memory is freed.
        let head = unsafe { &*crate::thread_ptrs::now_head() };
        head.go_live();
        // SAFETY: as above; no other table uses the head (one per thread,
        // and a thread registers once: `OWNER` is built once).
        let table = unsafe { Table::on_head(NonNull::from(head)) };
        let slot = Arc::new(ThreadSlot {
            table,
            edges: Edges::new(),
            thread: ThreadRef {
                tid: os_tid(),
                name: std::thread::current().name().unwrap_or("").to_string(),
            },
        });
        registry().push(slot.clone());
        Owner(slot)
    }
}

impl Drop for Owner {
    fn drop(&mut self) {
        replace_slot(DEAD);
        // By its own pointer, whatever `slot` said: the slot must not stay
        // in the list once the thread is gone.
        unregister(Arc::as_ptr(&self.0));
    }
}

/// The list, even if a reader panicked while holding it.
pub(crate) fn registry() -> MutexGuard<'static, Vec<Arc<ThreadSlot>>> {
    REGISTRY.lock().unwrap_or_else(|e| e.into_inner())
}

/// Runs `f` on this thread's slot, registering it first if needed; `None`
/// once the thread is exiting.
#[inline(always)]
pub(crate) fn with_slot<R>(f: impl FnOnce(&ThreadSlot) -> R) -> Option<R> {
    let mut p = slot();
    if !is_live(p) {
        // Null or `DEAD`, tested as one: on the common way one test, where
        // two took four instructions.
        p = register_if_new(p);
        if p == DEAD {
            return None;
        }
    }
    // SAFETY: `p` came from `OWNER`'s Arc, which lives until `exiting`
    // sets the slot to DEAD on this same thread; until then it is valid.
    Some(f(unsafe { &*p }))
}

/// Whether `p`, a value of [`slot`], is a registered thread's slot:
/// neither null nor [`DEAD`].
#[inline(always)]
fn is_live(p: *const ThreadSlot) -> bool {
    !p.is_null() && p != DEAD
}

/// [`slot`] for a thread whose slot `p` is not live: registered now if
/// new, [`DEAD`] if exiting.
#[cold]
#[inline(never)]
fn register_if_new(p: *const ThreadSlot) -> *const ThreadSlot {
    if p.is_null() {
        register()
    } else {
        p
    }
}

fn register() -> *const ThreadSlot {
    let p = OWNER.try_with(|o| Arc::as_ptr(&o.0)).unwrap_or(DEAD);
    // `exiting` may already have run (a shard destructor before OWNER was
    // ever touched): then the thread stays unrecorded.
    if slot() != DEAD {
        replace_slot(p);
    }
    slot()
}

/// The thread stops recording: its slot leaves the list and its lock-order
/// edges are kept in the retired ones. Idempotent; called by the shard's
/// destructor (`OWNER`'s does the same by its own pointer), whichever of
/// the two runs first does the work.
pub(crate) fn exiting() {
    let p = replace_slot(DEAD);
    if is_live(p) {
        unregister(p);
    }
}

/// Takes this thread's slot `p` out of the list, if it is there, and then
/// marks its head not live. Idempotent.
fn unregister(p: *const ThreadSlot) {
    let mut list = registry();
    let Some(i) = list.iter().position(|s| Arc::as_ptr(s) == p) else {
        return;
    };
    let slot = list.swap_remove(i);
    // Under the list's lock, so that a snapshot sees the edges either
    // here or among the retired ones.
    super::order::retire(&slot);
    drop(list);
    // No reader reaches the table any more (each reads under the list's
    // lock, taken and released above).
    slot.table.head().retire();
}

#[cfg(all(target_os = "linux", not(miri)))]
fn os_tid() -> u64 {
    // SAFETY: gettid has no preconditions.
    (unsafe { libc::gettid() }) as u64
}

/// Elsewhere (and under Miri, which has no `gettid`): a counter.
#[cfg(any(not(target_os = "linux"), miri))]
fn os_tid() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
    static NEXT: AtomicU64 = AtomicU64::new(1);
    NEXT.fetch_add(1, Relaxed)
}
