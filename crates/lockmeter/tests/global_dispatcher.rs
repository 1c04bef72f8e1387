//! The layer installed as the global default subscriber, as programs do it
//! (`.init()`): every thread records into it, counts stay exact, and a
//! thread that sets a scoped subscriber of its own is not recorded into the
//! global layer (the remembered global dispatcher must not leak into
//! scopes). One test per binary: the global subscriber can be set once.

mod common;

use std::sync::{Arc, Barrier};

use common::{install_global, lock};
use lockmeter::{Mutex, Semaphore, SpinLock};
use tracing_subscriber::prelude::*;

const THREADS: usize = 4;
const ROUNDS: u64 = 20_000;

#[test]
fn every_thread_records_into_the_global_layer_and_scopes_stay_apart() {
    let global = install_global();

    let spin = Arc::new(SpinLock::named("global.spin", 0u64));
    let mutex = Arc::new(Mutex::named("global.mutex", 0u64));
    let sem = Arc::new(Semaphore::named("global.sem", 2));
    let start = Arc::new(Barrier::new(THREADS));
    let workers: Vec<_> = (0..THREADS)
        .map(|_| {
            let (spin, mutex, sem, start) =
                (spin.clone(), mutex.clone(), sem.clone(), start.clone());
            std::thread::spawn(move || {
                start.wait();
                for _ in 0..ROUNDS {
                    *spin.lock() += 1;
                    *mutex.lock() += 1;
                    sem.down();
                    sem.up();
                }
            })
        })
        .collect();
    workers.into_iter().for_each(|w| w.join().unwrap());

    // A thread under a scoped subscriber with a layer of its own records
    // there, and not into the global layer.
    let scoped_layer = lockmeter::Layer::new();
    let scoped = scoped_layer.handle();
    let dispatch = tracing::Dispatch::new(tracing_subscriber::registry().with(scoped_layer));
    let spin2 = spin.clone();
    std::thread::spawn(move || {
        tracing::dispatcher::with_default(&dispatch, || {
            for _ in 0..100 {
                *spin2.lock() += 1;
            }
        })
    })
    .join()
    .unwrap();
    // And a thread under a scoped subscriber without lockmeter records
    // nowhere.
    let spin3 = spin.clone();
    std::thread::spawn(move || {
        let plain = tracing::Dispatch::new(tracing_subscriber::registry());
        tracing::dispatcher::with_default(&plain, || {
            for _ in 0..10 {
                *spin3.lock() += 1;
            }
        })
    })
    .join()
    .unwrap();

    let all = THREADS as u64 * ROUNDS;
    let snap = global.snapshot();
    assert_eq!(lock(&snap, "global.spin").total.acquisitions, all);
    assert_eq!(lock(&snap, "global.mutex").total.acquisitions, all);
    assert_eq!(lock(&snap, "global.sem").total.acquisitions, all);
    assert_eq!(*spin.lock(), all + 110, "the data saw every acquisition");
    let scoped_snap = scoped.snapshot();
    assert_eq!(lock(&scoped_snap, "global.spin").total.acquisitions, 100);
    assert!(scoped_snap.lock("global.mutex").is_none());

    // One thread going from a scoped layer to the global one, to a second
    // scoped layer, to a scoped subscriber without lockmeter and back:
    // while it uses a layer in a scoped dispatcher it asks tracing once
    // per acquisition (`recorder::current`), back under the global layer
    // it takes the global way again, and every acquisition still lands in
    // the layer in effect.
    let first = lockmeter::Layer::new();
    let (first_handle, first) = (
        first.handle(),
        tracing::Dispatch::new(tracing_subscriber::registry().with(first)),
    );
    let second = lockmeter::Layer::new();
    let (second_handle, second) = (
        second.handle(),
        tracing::Dispatch::new(tracing_subscriber::registry().with(second)),
    );
    let plain = tracing::Dispatch::new(tracing_subscriber::registry());
    let switching = Arc::new(Mutex::named("global.switching", 0u64));
    let s = switching.clone();
    std::thread::spawn(move || {
        let take = |n: u64| (0..n).for_each(|_| *s.lock() += 1);
        let scoped_way = lockmeter::__thread_takes_scoped_way;
        tracing::dispatcher::with_default(&first, || take(3));
        assert!(scoped_way(), "a layer found in a scoped dispatcher");
        take(5);
        assert!(!scoped_way(), "back under the global layer");
        tracing::dispatcher::with_default(&second, || take(7));
        tracing::dispatcher::with_default(&plain, || take(11));
        assert!(scoped_way(), "no layer in the plain one: still scoped");
        tracing::dispatcher::with_default(&first, || take(13));
        take(17);
        assert!(!scoped_way(), "back under the global layer again");
    })
    .join()
    .unwrap();
    let count = |snap: &lockmeter_model::Snapshot| {
        snap.lock("global.switching")
            .map_or(0, |l| l.total.acquisitions)
    };
    assert_eq!(count(&first_handle.snapshot()), 3 + 13);
    assert_eq!(count(&second_handle.snapshot()), 7);
    assert_eq!(count(&global.snapshot()), 5 + 17);
    assert_eq!(*switching.lock(), 3 + 5 + 7 + 11 + 13 + 17);
}
