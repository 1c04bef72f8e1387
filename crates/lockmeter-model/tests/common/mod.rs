//! Snapshots built in code for the golden and property tests: a program
//! that shows each seed problem (before) and the same program fixed (after).

#![allow(dead_code)] // each test binary uses a different part

use lockmeter_model::dist::{bucket_index, BUCKETS};
use lockmeter_model::{
    Dist, Holder, LockKind, LockStats, ProcessInfo, SiteStats, Snapshot, Stats, Window,
};

pub const SEC: u64 = 1_000_000_000;

/// A distribution of `(value_ns, count)` samples.
pub fn dist(samples: &[(u64, u64)]) -> Dist {
    let mut counts = vec![0u64; BUCKETS];
    let (mut count, mut total, mut min, mut max) = (0, 0, u64::MAX, 0);
    for &(v, c) in samples {
        counts[bucket_index(v)] += c;
        count += c;
        total += v * c;
        min = min.min(v);
        max = max.max(v);
    }
    Dist::from_buckets(&counts, count, total, min, max)
}

/// Acquisition stats of one call site.
pub fn acq(total: u64, contended: u64, hold: &[(u64, u64)], wait: &[(u64, u64)]) -> Stats {
    Stats {
        acquisitions: total,
        nowait: total - contended,
        contended,
        sleeps: contended,
        bounces: contended / 2,
        hold_ns: dist(hold),
        wait_ns: dist(wait),
        ..Stats::default()
    }
}

/// [`acq`] where every hold took `hold_ns` and every contended
/// acquisition waited `wait_ns`.
pub fn uniform(total: u64, contended: u64, hold_ns: u64, wait_ns: u64) -> Stats {
    acq(
        total,
        contended,
        &[(hold_ns, total)],
        &[(wait_ns, contended)],
    )
}

/// Wait-queue stats of one call site.
pub fn wq(
    waits: u64,
    wake_calls: u64,
    wakeups: u64,
    spurious: u64,
    max_waiters: u64,
    asleep: &[(u64, u64)],
    latency: &[(u64, u64)],
) -> Stats {
    Stats {
        waits,
        wake_calls,
        wakeups,
        spurious_wakeups: spurious,
        exclusive_wakeups: 0,
        max_waiters,
        wait_ns: dist(asleep),
        wake_latency_ns: dist(latency),
        ..Stats::default()
    }
}

/// `stats` with `n` failed try-locks or timed-out waits.
pub fn rejected(mut stats: Stats, n: u64) -> Stats {
    stats.rejected = n;
    stats
}

pub fn site(site: &str, mode: Option<&str>, stats: Stats) -> SiteStats {
    SiteStats {
        site: site.to_string(),
        mode: mode.map(str::to_string),
        pid: None,
        stats,
    }
}

/// A lock whose total is the sum of its sites.
pub fn lock(
    id: &str,
    kind: LockKind,
    parent: Option<&str>,
    sites: Vec<SiteStats>,
    holders: Vec<Holder>,
) -> LockStats {
    let mut total = Stats::default();
    for s in &sites {
        total.merge(&s.stats);
    }
    let mut l = LockStats::new(id, kind, total, sites);
    l.created_at = format!("examples/{}.rs:40:17", id.split('.').next().unwrap_or(id));
    l.parent = parent.map(str::to_string);
    l.holders = holders;
    l
}

/// Acquisitions at call site `name` (no mode).
fn at(name: &str, stats: Stats) -> SiteStats {
    site(name, None, stats)
}

/// A lock with one call site (no mode) and no holders.
fn single(id: &str, kind: LockKind, parent: Option<&str>, at: &str, stats: Stats) -> LockStats {
    lock(id, kind, parent, vec![site(at, None, stats)], vec![])
}

/// The lock between the pipe's writer and reader (`id`, of `kind`): each
/// side made the other wait, `(contended, wait_ns_total)` as the holder.
fn pipe(id: &str, kind: LockKind, write: Stats, read: Stats, held: [(u64, u64); 2]) -> LockStats {
    let [(by_read, read_ns), (by_write, write_ns)] = held;
    let holders = vec![
        holder(PIPE_READ, by_read, read_ns),
        holder(PIPE_WRITE, by_write, write_ns),
    ];
    let sites = vec![at(PIPE_WRITE, write), at(PIPE_READ, read)];
    lock(id, kind, None, sites, holders)
}

/// The big lock, taken around the copy and around accept().
fn bkl(copy: Stats, accept: Stats, holders: Vec<Holder>) -> LockStats {
    let sites = vec![at(TCP_COPY, copy), at(TCP_ACCEPT, accept)];
    lock("bkl", LockKind::Mutex, None, sites, holders)
}

/// The accept() wait queue: `waits` waiters (12 at most), each asleep
/// `asleep_ns` and woken once by `wake_calls` calls, `spurious` of them
/// for nothing, `timeouts` waits timed out.
fn accept_wait(
    (waits, wake_calls, spurious): (u64, u64, u64),
    asleep_ns: u64,
    latency: &[(u64, u64)],
    timeouts: u64,
) -> LockStats {
    let asleep = [(asleep_ns, waits)];
    let stats = wq(waits, wake_calls, waits, spurious, 12, &asleep, latency);
    single(
        "accept.wait",
        LockKind::Waitqueue,
        None,
        TCP_ACCEPT,
        rejected(stats, timeouts),
    )
}

/// The UDP receivers' wait queue: `waits` waiters (two at most), each
/// asleep `asleep_ns` and woken by `wake_calls` TX completions after
/// `latency_ns`, `spurious` of them for nothing.
fn udp_rx_wait(
    waits: u64,
    wake_calls: u64,
    spurious: u64,
    asleep_ns: u64,
    latency_ns: u64,
) -> LockStats {
    let (asleep, latency) = ([(asleep_ns, waits)], [(latency_ns, waits)]);
    let stats = wq(waits, wake_calls, waits, spurious, 2, &asleep, &latency);
    single("udp.rx.wait", LockKind::Waitqueue, None, UDP_RX, stats)
}

/// The spinlock inside the epoll-like wait queue, taken at `sites`.
fn ep_wait_lock(sites: Vec<SiteStats>) -> LockStats {
    lock(
        "ep.wait.lock",
        LockKind::Spinlock,
        Some("ep.wait"),
        sites,
        vec![],
    )
}

/// The epoll-like wait queue: `events` waits, each woken once (50 us
/// asleep, 3 us to run), one waiter at a time.
fn ep_wait(events: u64) -> LockStats {
    let stats = wq(
        events,
        events,
        events,
        0,
        1,
        &[(50_000, events)],
        &[(3_000, events)],
    );
    single("ep.wait", LockKind::Waitqueue, None, EP_POLL, stats)
}

/// The cache's rwlock: reads at one site (1 us held, 5 us waited), writes
/// (9 us, 3 us) and reads (0.8 us, 2 us) at another, each given as
/// `(acquisitions, contended)`; `held` is `(contended, wait_ns_total)`
/// the writes made others wait.
fn cache_rw(
    reads: (u64, u64),
    writes: (u64, u64),
    rereads: (u64, u64),
    held: (u64, u64),
) -> LockStats {
    const READ: &str = "examples/cache.rs:31:22";
    const WRITE: &str = "examples/cache.rs:47:22";
    let sites = vec![
        site(READ, Some("read"), uniform(reads.0, reads.1, 1_000, 5_000)),
        site(
            WRITE,
            Some("write"),
            uniform(writes.0, writes.1, 9_000, 3_000),
        ),
        site(
            WRITE,
            Some("read"),
            uniform(rereads.0, rereads.1, 800, 2_000),
        ),
    ];
    let holders = vec![holder(WRITE, held.0, held.1)];
    lock("cache.rw", LockKind::Rwlock, None, sites, holders)
}

pub fn holder(site: &str, contended: u64, wait_ns_total: u64) -> Holder {
    Holder {
        site: site.to_string(),
        contended,
        wait_ns_total,
    }
}

fn snapshot(pid: u32, elapsed_ns: u64, locks: Vec<LockStats>) -> Snapshot {
    let process = ProcessInfo {
        pid,
        name: "lockbench".to_string(),
    };
    let mut s = Snapshot::empty(process, "tsc");
    s.window = Window {
        start_unix_ns: 1_700_000_000 * SEC,
        end_unix_ns: 1_700_000_000 * SEC + elapsed_ns,
        elapsed_ns,
    };
    s.locks = locks;
    s
}

const SEM_DOWN: &str = "crates/lockmeter/src/semaphore.rs:120:9";
const SEM_ADD: &str = "crates/lockmeter/src/semaphore.rs:88:13";
const SEM_UP: &str = "crates/lockmeter/src/semaphore.rs:151:9";
const SEM_WAIT: &str = "crates/lockmeter/src/semaphore.rs:131:17";
const PIPE_WRITE: &str = "examples/pipe.rs:88:20";
const PIPE_READ: &str = "examples/pipe.rs:95:9";
const TCP_COPY: &str = "examples/apache.rs:412:9";
const TCP_ACCEPT: &str = "examples/apache.rs:130:13";
const UDP_RX: &str = "examples/udp.rs:77:21";
const EP_POLL: &str = "crates/lockmeter/src/waitqueue.rs:210:9";
const EP_WAKE: &str = "crates/lockmeter/src/waitqueue.rs:260:9";

/// The program with every seed problem: a short-hold pipe semaphore with
/// its inner spinlock and wait queue, a big lock held around a copy, an
/// accept() herd, UDP receivers woken by TX completions, an rwlock, and
/// an epoll-like wait queue whose lock is taken twice per event.
pub fn before() -> Snapshot {
    let w = 2 * SEC;
    let pipe_write = acq(
        11254,
        6430,
        &[(800, 11000), (4_000, 254)],
        &[(12_000, 6000), (90_000, 430)],
    );
    let pipe_read = acq(
        11254,
        6421,
        &[(700, 11200), (3_000, 54)],
        &[(11_000, 6000), (80_000, 421)],
    );
    let sem_down = acq(
        22508,
        12851,
        &[(300, 22508)],
        &[(1_400, 12800), (20_000, 51)],
    );
    let sem_add = acq(22508, 5920, &[(250, 22508)], &[(700, 5900), (9_000, 20)]);
    let sem_wait = wq(
        12851,
        12851,
        12851,
        412,
        2,
        &[(9_000, 12000), (60_000, 851)],
        &[(4_000, 12851)],
    );
    let locks = vec![
        pipe(
            "pipe.sem",
            LockKind::Semaphore,
            pipe_write,
            pipe_read,
            [(6430, 101_000_000), (6421, 96_000_000)],
        ),
        lock(
            "pipe.sem.lock",
            LockKind::Spinlock,
            Some("pipe.sem"),
            vec![
                at(SEM_DOWN, sem_down),
                at(SEM_ADD, sem_add),
                at(SEM_UP, uniform(22508, 2100, 200, 500)),
            ],
            vec![
                holder(SEM_DOWN, 9000, 13_000_000),
                holder(SEM_ADD, 8000, 9_000_000),
            ],
        ),
        single(
            "pipe.sem.wait",
            LockKind::Waitqueue,
            Some("pipe.sem"),
            SEM_WAIT,
            sem_wait,
        ),
        bkl(
            uniform(2000, 1500, 850_000, 2_500_000),
            rejected(uniform(3000, 900, 40_000, 1_200_000), 37),
            vec![
                holder(TCP_COPY, 2300, 5_100_000_000),
                holder(TCP_ACCEPT, 100, 90_000_000),
            ],
        ),
        accept_wait(
            (6000, 500, 5500),
            3_000_000,
            &[(25_000, 5000), (400_000, 1000)],
            4,
        ),
        udp_rx_wait(4200, 4000, 1500, 30_000, 6_000),
        cache_rw((90000, 300), (1200, 700), (1200, 10), (980, 2_900_000)),
        ep_wait_lock(vec![
            at(EP_POLL, uniform(20000, 1200, 150, 600)),
            at(EP_WAKE, uniform(20000, 1100, 180, 600)),
        ]),
        ep_wait(20000),
    ];
    let mut snap = snapshot(4242, w, locks);
    if let Some(cache) = snap.locks.iter_mut().find(|l| l.id == "cache.rw") {
        cache.instances = 4;
    }
    snap
}

/// The same program after the fixes: the pipe semaphore replaced by a
/// spinlock (its inner locks are gone), the copy moved out of the big
/// lock, exclusive waits on accept, keyed UDP wakeups, and the epoll wait
/// queue using its `*_locked` operations (one lock acquisition per event).
pub fn after() -> Snapshot {
    let w = 19 * SEC / 10;
    let (write, read) = (
        uniform(11254, 1200, 600, 900),
        uniform(11254, 1100, 500, 800),
    );
    let locks = vec![
        pipe(
            "pipe.lock",
            LockKind::Spinlock,
            write,
            read,
            [(1200, 1_000_000), (1100, 900_000)],
        ),
        bkl(
            uniform(7600, 400, 30_000, 60_000),
            uniform(11400, 300, 40_000, 50_000),
            vec![holder(TCP_ACCEPT, 420, 20_000_000)],
        ),
        accept_wait((19000, 19000, 0), 700_000, &[(20_000, 19000)], 0),
        udp_rx_wait(4300, 4300, 20, 20_000, 5_000),
        cache_rw((88000, 250), (1150, 650), (1150, 12), (900, 2_700_000)),
        ep_wait_lock(vec![at(EP_WAKE, uniform(19000, 400, 180, 500))]),
        ep_wait(19000),
    ];
    let mut snap = snapshot(4300, w, locks);
    snap.dropped_records = 3;
    snap
}
