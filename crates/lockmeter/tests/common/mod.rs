//! Helpers shared by the integration tests.
#![allow(dead_code)]

use std::sync::Arc;

use lockmeter::Handle;
use lockmeter_model::{LockStats, Snapshot};
use tracing_subscriber::prelude::*;

/// Runs `f` with a fresh lockmeter layer in effect on this thread (and on
/// threads `f` starts through [`spawn_observed`]), returning its handle.
pub fn observe<R>(f: impl FnOnce() -> R) -> (Handle, R) {
    observe_with(lockmeter::Layer::builder(), f)
}

pub fn observe_with<R>(builder: lockmeter::LayerBuilder, f: impl FnOnce() -> R) -> (Handle, R) {
    let layer = builder.build();
    let handle = layer.handle();
    let dispatch = tracing::Dispatch::new(tracing_subscriber::registry().with(layer));
    let out = tracing::dispatcher::with_default(&dispatch, f);
    (handle, out)
}

/// A fresh layer installed as the process's global default subscriber, as
/// programs do it (`.init()`); its handle. Once per test binary: the
/// global default can be set only once.
pub fn install_global() -> Handle {
    let layer = lockmeter::Layer::new();
    let handle = layer.handle();
    tracing::subscriber::set_global_default(tracing_subscriber::registry().with(layer))
        .expect("no global subscriber yet in this test binary");
    handle
}

/// Spawns a thread that runs `f` under the caller's current dispatcher.
pub fn spawn_observed<R: Send + 'static>(
    f: impl FnOnce() -> R + Send + 'static,
) -> std::thread::JoinHandle<R> {
    let dispatch = tracing::dispatcher::get_default(|d| d.clone());
    std::thread::spawn(move || tracing::dispatcher::with_default(&dispatch, f))
}

/// Starts `n` observed threads ([`spawn_observed`]); thread `i` runs
/// `f(&shared, i)`.
pub fn spawn_each<T: Send + Sync + 'static>(
    n: u64,
    shared: &Arc<T>,
    f: impl Fn(&T, u64) + Send + Sync + 'static,
) -> Vec<std::thread::JoinHandle<()>> {
    let f = Arc::new(f);
    (0..n)
        .map(|i| {
            let (shared, f) = (Arc::clone(shared), Arc::clone(&f));
            spawn_observed(move || f(&shared, i))
        })
        .collect()
}

/// Starts an observed thread per item of `each`, releases them all at
/// once (a barrier, so that they contend), each running
/// `body(&shared, item)`, and joins them.
pub fn all_at_once<T, I>(
    shared: &Arc<T>,
    each: impl IntoIterator<Item = I>,
    body: impl Fn(&T, I) + Send + Sync + 'static,
) where
    T: Send + Sync + 'static,
    I: Send + 'static,
{
    let each: Vec<I> = each.into_iter().collect();
    let barrier = Arc::new(std::sync::Barrier::new(each.len()));
    let body = Arc::new(body);
    let threads = each
        .into_iter()
        .map(|item| {
            let (shared, barrier, body) = (Arc::clone(shared), barrier.clone(), body.clone());
            spawn_observed(move || {
                barrier.wait();
                body(&shared, item);
            })
        })
        .collect();
    join_all(threads);
}

/// Joins every thread, passing a panic on.
pub fn join_all(threads: Vec<std::thread::JoinHandle<()>>) {
    for t in threads {
        t.join().unwrap();
    }
}

/// [`spawn_each`], then [`join_all`]: every thread has exited on return.
pub fn on_each<T: Send + Sync + 'static>(
    n: u64,
    shared: &Arc<T>,
    f: impl Fn(&T, u64) + Send + Sync + 'static,
) {
    join_all(spawn_each(n, shared, f));
}

pub fn lock<'a>(snap: &'a Snapshot, id: &str) -> &'a LockStats {
    snap.lock(id).unwrap_or_else(|| {
        let ids: Vec<&str> = snap.locks.iter().map(|l| l.id.as_str()).collect();
        panic!("no lock {id:?} in snapshot; have {ids:?}")
    })
}

/// The line of the text table that starts the row of `class`, written as
/// the table names it (`"app.db (mutex)"`); fails if there is none.
pub fn table_row<'a>(table: &'a str, class: &str) -> &'a str {
    table
        .lines()
        .find(|l| l.contains(class))
        .unwrap_or_else(|| panic!("no row for {class}:\n{table}"))
}

/// Asserts that every call site of `lock` is in a file whose path
/// contains `path` (e.g. a lock taken only inside the library).
pub fn assert_sites_within(lock: &LockStats, path: &str) {
    let outside: Vec<&str> = lock
        .sites
        .iter()
        .map(|s| s.site.as_str())
        .filter(|site| !site.contains(path))
        .collect();
    assert!(
        outside.is_empty(),
        "{} has sites outside {path}: {outside:?}",
        lock.id
    );
}

pub fn arc<T>(v: T) -> Arc<T> {
    Arc::new(v)
}
