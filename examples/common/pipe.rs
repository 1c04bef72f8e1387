//! Seed 002: a pipe whose buffer is guarded by a semaphore, or a spinlock.
//!
//! One writer and one reader move `messages` one-byte messages through a
//! 4 KiB ring buffer, like `pipedis 500000 1`. The guard is held only to
//! copy a message in or out; all real waiting (pipe full, pipe empty) is
//! done on a separate wait queue, `pipe.wait` (`PIPE_WAIT`). With the
//! semaphore as the guard, a writer that finds the reader holding it for a
//! few nanoseconds goes to sleep on the semaphore's own wait queue and must
//! be woken: the `pipe.sem.lock` and `pipe.sem.wait` rows show that cost,
//! at call sites inside the semaphore. A spinlock just spins for the few
//! nanoseconds.
//!
//! Like the seed's dual-processor run, the writer and the reader are pinned
//! to two different CPUs when the machine allows it; each variant runs
//! `repeats` times, alternating, and the run with the median time is
//! reported.

use std::cell::UnsafeCell;
use std::io;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Instant;

use lockmeter::{Handle, Semaphore, SpinLock, WaitQueue};
use lockmeter_model::{Snapshot, Stats};
use serde::{Deserialize, Serialize};

use crate::report::{fixed, Outcome, TextTable};
use crate::{affinity, meter, repeats};

/// The semaphore guard (rows `pipe.sem`, `pipe.sem.lock`, `pipe.sem.wait`).
pub const SEM: &str = "pipe.sem";
/// The spinlock guard.
pub const SPIN: &str = "pipe.spin";
/// Where reader and writer sleep (`PIPE_WAIT`).
pub const WAIT: &str = "pipe.wait";
/// Bytes the ring holds: one page, like a Linux 2.3 pipe.
pub const CAPACITY: usize = 4096;

seed_enum! {
    /// What guards the pipe's buffer.
    pub enum Variant {
        /// A semaphore used as a mutex, like `PIPE_SEM`.
        Semaphore = ("semaphore", "semaphore"),
        /// A spinlock, as in the seed's patch.
        Spinlock = ("spinlock", "spinlock"),
    }
}

impl Variant {
    /// The seed's own time for 500,000 messages (dual PIII), in seconds.
    pub fn seed_seconds(self) -> f64 {
        match self {
            Variant::Semaphore => 5.7,
            Variant::Spinlock => 1.9,
        }
    }
}

/// Sizes of a run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    pub messages: u64,
    /// Runs per variant, alternating; the median run is reported.
    pub repeats: usize,
    /// Pin the writer and the reader to two different CPUs.
    pub pin: bool,
    pub variants: Vec<Variant>,
}

impl Config {
    /// `pipedis 500000 1`.
    pub fn full() -> Config {
        Config {
            messages: 500_000,
            repeats: 3,
            pin: true,
            variants: Variant::ALL.to_vec(),
        }
    }

    pub fn quick() -> Config {
        Config {
            messages: 50_000,
            repeats: 1,
            ..Config::full()
        }
    }
}

/// One variant.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Row {
    pub variant: Variant,
    pub messages: u64,
    pub seconds: f64,
    /// Every repeat's time, in run order (`seconds` is their median).
    #[serde(default)]
    pub runs_seconds: Vec<f64>,
    /// Whether the writer and the reader ran pinned to two CPUs.
    #[serde(default)]
    pub pinned: bool,
    /// Whether the reader got every message once, in order.
    pub in_order: bool,
    /// Acquisitions of the guard (reads + writes + retries).
    pub guard_acquisitions: u64,
    pub guard_con_pct: f64,
    /// Times a thread slept to get the guard (semaphore only).
    pub guard_sleeps: u64,
    /// The semaphore's internal spinlock (`pipe.sem.lock`): CON %.
    pub sem_lock_con_pct: f64,
    pub sem_lock_acquisitions: u64,
    /// Sleeps on `pipe.wait` (pipe full or empty).
    pub pipe_wait_sleeps: u64,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Results {
    pub rows: Vec<Row>,
}

impl Results {
    pub fn get(&self, variant: Variant) -> Option<&Row> {
        self.rows.iter().find(|r| r.variant == variant)
    }
}

pub fn run(cfg: &Config, handle: &Handle) -> io::Result<Outcome<Results>> {
    let cpus = if cfg.pin {
        match affinity::allowed_cpus().as_slice() {
            [a, b, ..] => Some((*a, *b)),
            _ => None,
        }
    } else {
        None
    };
    let mut out = Outcome::new(Results::default());
    if cfg.pin && cpus.is_none() {
        out.notes
            .push("fewer than two CPUs available: writer and reader ran unpinned".to_string());
    }
    let done = repeats::alternating(
        "pipe_contention",
        &format!("{} messages", cfg.messages),
        &cfg.variants,
        cfg.repeats,
        |variant| run_one(variant, cfg.messages, cpus, handle),
    )?;
    for (variant, mut reps) in done {
        let times: Vec<f64> = reps.iter().map(|(r, _)| r.seconds).collect();
        reps.sort_by(|a, b| a.0.seconds.total_cmp(&b.0.seconds));
        let mid = reps.len() / 2;
        let Some((mut row, snap)) = reps.into_iter().nth(mid) else {
            continue;
        };
        if cpus.is_some() && !row.pinned {
            out.notes
                .push(format!("{variant}: pinning failed; ran unpinned"));
        }
        row.runs_seconds = times;
        out.keep_run(
            variant.name(),
            format!("pipe guarded by a {variant} (median run)"),
            snap,
            "pipe",
        );
        out.results.rows.push(row);
    }
    Ok(out)
}

/// The ring buffer.
struct Ring {
    buf: [u8; CAPACITY],
    head: usize,
    len: usize,
}

impl Ring {
    fn push(&mut self, v: u8) -> bool {
        if self.len == CAPACITY {
            return false;
        }
        self.buf[(self.head + self.len) % CAPACITY] = v;
        self.len += 1;
        true
    }

    fn pop(&mut self) -> Option<u8> {
        if self.len == 0 {
            return None;
        }
        let v = self.buf[self.head];
        self.head = (self.head + 1) % CAPACITY;
        self.len -= 1;
        Some(v)
    }
}

#[allow(
    clippy::large_enum_variant,
    reason = "one per run, never moved; boxing would add an indirection to the measured path"
)]
enum Guard {
    Semaphore(Semaphore),
    Spin(SpinLock<()>),
}

/// The pipe: a guarded ring, and a wait queue for full/empty.
struct Pipe {
    guard: Guard,
    ring: UnsafeCell<Ring>,
    /// The ring's length, readable without the guard, for wait conditions.
    level: AtomicUsize,
    /// Threads inside `pipe_wait`; a waker skips the wake call when zero
    /// (`waitqueue_active`).
    sleepers: AtomicUsize,
    wait: WaitQueue,
}

// SAFETY: `ring` is only reached through `Pipe::with`, which holds the
// guard (a one-permit semaphore or a spinlock) for the whole access.
unsafe impl Sync for Pipe {}

impl Pipe {
    fn new(variant: Variant) -> Pipe {
        Pipe {
            guard: match variant {
                Variant::Semaphore => Guard::Semaphore(Semaphore::named(SEM, 1)),
                Variant::Spinlock => Guard::Spin(SpinLock::named(SPIN, ())),
            },
            ring: UnsafeCell::new(Ring {
                buf: [0; CAPACITY],
                head: 0,
                len: 0,
            }),
            level: AtomicUsize::new(0),
            sleepers: AtomicUsize::new(0),
            wait: WaitQueue::named(WAIT),
        }
    }

    /// Runs `f` on the ring under the guard, charged to the caller's site.
    #[track_caller]
    fn with<R>(&self, f: impl FnOnce(&mut Ring) -> R) -> R {
        match &self.guard {
            Guard::Semaphore(sem) => {
                let _permit = sem.acquire();
                // SAFETY: the semaphore has one permit and we hold it.
                f(unsafe { &mut *self.ring.get() })
            }
            Guard::Spin(lock) => {
                let _held = lock.lock();
                // SAFETY: the spinlock is held.
                f(unsafe { &mut *self.ring.get() })
            }
        }
    }

    /// `pipe_write` of one message.
    fn write(&self, msg: u8) {
        loop {
            let pushed = self.with(|r| {
                let ok = r.push(msg);
                self.level.store(r.len, Ordering::SeqCst);
                ok
            });
            if pushed {
                self.wake();
                return;
            }
            self.sleep_until(|| self.level.load(Ordering::SeqCst) < CAPACITY);
        }
    }

    /// `pipe_read` of one message.
    fn read(&self) -> u8 {
        loop {
            let popped = self.with(|r| {
                let v = r.pop();
                self.level.store(r.len, Ordering::SeqCst);
                v
            });
            if let Some(v) = popped {
                self.wake();
                return v;
            }
            self.sleep_until(|| self.level.load(Ordering::SeqCst) > 0);
        }
    }

    /// `pipe_wait`: sleeps on `PIPE_WAIT` until `cond` holds.
    fn sleep_until(&self, cond: impl FnMut() -> bool) {
        // SeqCst pairs with `wake`: either the waker sees us counted, or
        // our condition sees its update of `level`.
        self.sleepers.fetch_add(1, Ordering::SeqCst);
        self.wait.wait_event(cond);
        self.sleepers.fetch_sub(1, Ordering::SeqCst);
    }

    fn wake(&self) {
        if self.sleepers.load(Ordering::SeqCst) > 0 {
            self.wait.wake_up();
        }
    }
}

/// Moves `messages` messages through a pipe guarded as `variant` says,
/// with the writer and the reader on `cpus` if given.
pub fn run_one(
    variant: Variant,
    messages: u64,
    cpus: Option<(usize, usize)>,
    handle: &Handle,
) -> io::Result<(Row, Snapshot)> {
    let pipe = Arc::new(Pipe::new(variant));
    handle.reset();
    let start = Instant::now();
    let p = pipe.clone();
    let writer = meter::spawn("pipe-writer", None, move || {
        let pinned = cpus.is_some_and(|(cpu, _)| affinity::pin_current_thread(cpu));
        for seq in 0..messages {
            p.write(seq as u8);
        }
        pinned
    })?;
    let p = pipe.clone();
    let reader = meter::spawn("pipe-reader", None, move || {
        let pinned = cpus.is_some_and(|(_, cpu)| affinity::pin_current_thread(cpu));
        let mut in_order = true;
        for seq in 0..messages {
            in_order &= p.read() == seq as u8;
        }
        (pinned, in_order)
    })?;
    let writer_pinned = writer
        .join()
        .map_err(|_| io::Error::other("pipe writer panicked"))?;
    let (reader_pinned, in_order) = reader
        .join()
        .map_err(|_| io::Error::other("pipe reader panicked"))?;
    let seconds = start.elapsed().as_secs_f64();
    let snap = handle.snapshot();

    let stats = |id: &str| snap.lock(id).map(|l| l.total.clone()).unwrap_or_default();
    let guard: Stats = stats(match variant {
        Variant::Semaphore => SEM,
        Variant::Spinlock => SPIN,
    });
    let sem_lock = stats(&format!("{SEM}.lock"));
    let row = Row {
        variant,
        messages,
        seconds,
        runs_seconds: vec![seconds],
        pinned: writer_pinned && reader_pinned,
        in_order,
        guard_acquisitions: guard.acquisitions,
        guard_con_pct: guard.con_pct(),
        guard_sleeps: guard.sleeps,
        sem_lock_con_pct: sem_lock.con_pct(),
        sem_lock_acquisitions: sem_lock.acquisitions,
        pipe_wait_sleeps: stats(WAIT).sleeps,
    };
    Ok((row, snap))
}

/// The results next to the seed's `pipedis 500000 1` timings.
pub fn render(results: &Results) -> String {
    let messages = results.rows.first().map_or(0, |r| r.messages);
    let mut t = TextTable::new(
        &[
            "Guard",
            "seconds",
            "msgs/s",
            "guard CON",
            "guard sleeps",
            "sem.lock CON",
            "in order",
            "seed (dual PIII)",
            "every run (s)",
        ],
        1,
    );
    for r in &results.rows {
        t.row(vec![
            r.variant.to_string(),
            fixed(r.seconds, 3),
            fixed(r.messages as f64 / r.seconds.max(1e-9), 0),
            format!("{}%", fixed(r.guard_con_pct, 1)),
            r.guard_sleeps.to_string(),
            match r.variant {
                Variant::Semaphore => format!("{}%", fixed(r.sem_lock_con_pct, 1)),
                Variant::Spinlock => "-".to_string(),
            },
            if r.in_order { "yes" } else { "NO" }.to_string(),
            format!("~{} s", r.variant.seed_seconds()),
            r.runs_seconds
                .iter()
                .map(|s| fixed(*s, 3))
                .collect::<Vec<_>>()
                .join(" "),
        ]);
    }
    format!(
        "Pipe, one writer and one reader, {messages} messages, median of the runs (seed 002: pipedis 500000 1)\n{}",
        t.render()
    )
}
