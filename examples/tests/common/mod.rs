//! Helpers shared by the example tests.
#![allow(dead_code)]

use lockmeter_model::{LockStats, Snapshot};
use seed_harness::meter::observe;

/// What one observed run measured (`seed_harness::meter::observe`, which
/// also checks that no false deadlock was reported); panics naming `what`
/// if the run failed.
pub fn measured<T, E: std::fmt::Debug>(
    what: &str,
    run: impl FnOnce(&lockmeter::Handle) -> Result<T, E>,
) -> T {
    let (_, out) = observe(run);
    out.unwrap_or_else(|e| panic!("{what} failed: {e:?}"))
}

/// The lock `id` of `snap`; panics with the ids present if it is missing.
pub fn lock<'a>(snap: &'a Snapshot, id: &str) -> &'a LockStats {
    snap.lock(id).unwrap_or_else(|| {
        let ids: Vec<&str> = snap.locks.iter().map(|l| l.id.as_str()).collect();
        panic!("no lock {id:?} in snapshot; have {ids:?}")
    })
}

/// Acquisitions of `lock` at call sites whose path contains `file`.
pub fn acquisitions_at(lock: &LockStats, file: &str) -> u64 {
    lock.sites
        .iter()
        .filter(|s| s.site.contains(file))
        .map(|s| s.stats.acquisitions)
        .sum()
}
