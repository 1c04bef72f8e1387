//! Built-in contended workloads for `lockmeter demo`, each a small copy of
//! one of the problems the project reproduces:
//!
//! - **pipe** (seed 002): a pipe guarded by a semaphore next to one guarded
//!   by a spinlock. The semaphore's own inner lock and wait queue show up
//!   as rows of their own (`pipe.sem.lock`, `pipe.sem.wait`).
//! - **herd** (seed 000): sleepers on a wait queue woken all at once for one
//!   connection each time (`accept.herd`: many spurious wake-ups), next to
//!   the exclusive wake-one fix (`accept.exclusive`).
//! - **big lock** (seed 004): a mutex held across a copy that blocks
//!   (`bkl`), so UTIL nears 100 % and the hold time is charged to the copy's
//!   call site.
//!
//! Every thread works in short bursts and sleeps between them, so the demo
//! stays well under the two cores of a small machine.

use std::hint::black_box;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use lockmeter::{Handle, Layer, Mutex, Semaphore, SpinLock, WaitQueue};
use tracing_subscriber::prelude::*;

/// Operations per burst in the pipe workload.
const PIPE_BURST: usize = 400;
/// Work units inside each pipe operation.
const PIPE_COPY: usize = 64;
/// Pause between bursts.
const PIPE_PAUSE: Duration = Duration::from_millis(4);
/// Sleepers on each accept queue.
const SLEEPERS: usize = 4;
/// How often a "connection" arrives.
const CONNECTION_EVERY: Duration = Duration::from_millis(3);
/// How long a sleeper waits before re-checking the stop flag.
const SLEEP_SLICE: Duration = Duration::from_millis(100);
/// Threads competing for the big lock.
const BKL_THREADS: usize = 3;
/// Bytes copied under the big lock.
const COPY_BYTES: usize = 16 * 1024;
/// How long the copy blocks (a page fault, a slow reader) under the lock.
const COPY_BLOCKS: Duration = Duration::from_micros(300);

/// The running workloads. Dropping it stops and joins every thread.
pub struct Demo {
    handle: Handle,
    stop: Arc<AtomicBool>,
    queues: Arc<Queues>,
    threads: Vec<JoinHandle<()>>,
}

/// The wait queues, kept so `stop` can wake their sleepers.
struct Queues {
    herd: WaitQueue,
    exclusive: WaitQueue,
    herd_pending: AtomicUsize,
    exclusive_pending: AtomicUsize,
}

impl Demo {
    /// Installs a lockmeter layer as the global subscriber and starts the
    /// workloads.
    pub fn start() -> Result<Demo, String> {
        let layer = Layer::builder().process_name("lockmeter-demo").build();
        let handle = layer.handle();
        tracing_subscriber::registry()
            .with(layer)
            .try_init()
            .map_err(|e| format!("cannot install the lockmeter layer: {e}"))?;
        let stop = Arc::new(AtomicBool::new(false));
        let queues = Arc::new(Queues {
            herd: WaitQueue::named("accept.herd"),
            exclusive: WaitQueue::named("accept.exclusive"),
            herd_pending: AtomicUsize::new(0),
            exclusive_pending: AtomicUsize::new(0),
        });
        let mut demo = Demo {
            handle,
            stop,
            queues,
            threads: Vec::new(),
        };
        demo.spawn_pipes()?;
        demo.spawn_herd()?;
        demo.spawn_big_lock()?;
        Ok(demo)
    }

    /// The handle that reads what the workloads record.
    pub fn handle(&self) -> &Handle {
        &self.handle
    }

    fn spawn(&mut self, name: &str, f: impl FnOnce() + Send + 'static) -> Result<(), String> {
        let t = thread::Builder::new()
            .name(format!("demo-{name}"))
            .spawn(f)
            .map_err(|e| format!("cannot start demo thread {name}: {e}"))?;
        self.threads.push(t);
        Ok(())
    }

    /// Both ends of each pipe work in bursts that start together (on a
    /// shared clock), so they meet on the lock as a busy pipe's would.
    fn spawn_pipes(&mut self) -> Result<(), String> {
        let epoch = Instant::now();
        let sem_pipe = Arc::new((Semaphore::named("pipe.sem", 1), AtomicUsize::new(0)));
        let spin_pipe = Arc::new(SpinLock::named("pipe.spin", [0u8; 256]));
        for role in ["writer-1", "writer-2", "reader"] {
            let (pipe, stop) = (Arc::clone(&sem_pipe), Arc::clone(&self.stop));
            self.spawn(&format!("sem-{role}"), move || {
                while !stop.load(Ordering::Relaxed) {
                    for i in 0..PIPE_BURST {
                        // Fill the buffer outside the lock, then move it in
                        // under the semaphore, held briefly.
                        let n = copy_work(i);
                        let _permit = pipe.0.acquire();
                        pipe.1.fetch_add(copy_work(n), Ordering::Relaxed);
                    }
                    sleep_to_next_tick(epoch, PIPE_PAUSE);
                }
            })?;
            let (pipe, stop) = (Arc::clone(&spin_pipe), Arc::clone(&self.stop));
            self.spawn(&format!("spin-{role}"), move || {
                while !stop.load(Ordering::Relaxed) {
                    for i in 0..PIPE_BURST {
                        let n = copy_work(i);
                        let mut buf = pipe.lock();
                        buf[i % 256] = buf[i % 256].wrapping_add(copy_work(n) as u8);
                    }
                    sleep_to_next_tick(epoch, PIPE_PAUSE);
                }
            })?;
        }
        Ok(())
    }

    fn spawn_herd(&mut self) -> Result<(), String> {
        for n in 0..SLEEPERS {
            self.spawn_sleeper(&format!("herd-{n}"), false)?;
            self.spawn_sleeper(&format!("excl-{n}"), true)?;
        }
        let (q, stop) = (Arc::clone(&self.queues), Arc::clone(&self.stop));
        self.spawn("acceptor", move || {
            while !stop.load(Ordering::Relaxed) {
                thread::sleep(CONNECTION_EVERY);
                q.herd_pending.fetch_add(1, Ordering::SeqCst);
                q.herd.wake_up_all();
                q.exclusive_pending.fetch_add(1, Ordering::SeqCst);
                q.exclusive.wake_up();
            }
        })
    }

    /// One server of the herd: it sleeps on `herd` (every sleeper wakes
    /// on every connection; one gets it) or, `exclusive`, on `exclusive`
    /// (one sleeper woken per connection), and claims a connection when woken.
    fn spawn_sleeper(&mut self, name: &str, exclusive: bool) -> Result<(), String> {
        let (q, stop) = (Arc::clone(&self.queues), Arc::clone(&self.stop));
        self.spawn(name, move || {
            let (queue, pending) = if exclusive {
                (&q.exclusive, &q.exclusive_pending)
            } else {
                (&q.herd, &q.herd_pending)
            };
            let woken = || stop.load(Ordering::Relaxed) || claim(pending);
            while !stop.load(Ordering::Relaxed) {
                if exclusive {
                    queue.wait_event_exclusive_timeout(woken, SLEEP_SLICE);
                } else {
                    queue.wait_event_timeout(woken, SLEEP_SLICE);
                }
            }
        })
    }

    fn spawn_big_lock(&mut self) -> Result<(), String> {
        let bkl = Arc::new(Mutex::named("bkl", vec![0u8; COPY_BYTES]));
        for n in 0..BKL_THREADS {
            let (bkl, stop) = (Arc::clone(&bkl), Arc::clone(&self.stop));
            self.spawn(&format!("bkl-{n}"), move || {
                let source = vec![n as u8; COPY_BYTES];
                let mut iteration = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    iteration += 1;
                    {
                        // The copy runs under the big lock and may block.
                        let mut buf = bkl.lock();
                        buf.copy_from_slice(&source);
                        thread::sleep(COPY_BLOCKS);
                    }
                    if iteration.is_multiple_of(8) {
                        // A short critical section elsewhere that now waits
                        // behind the copy.
                        let buf = bkl.lock();
                        black_box(buf[0]);
                    }
                    thread::sleep(Duration::from_micros(100));
                }
            })?;
        }
        Ok(())
    }

    /// Stops every workload and waits for its threads.
    pub fn stop(mut self) {
        self.shutdown();
    }

    fn shutdown(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        self.queues.herd.wake_up_all();
        self.queues.exclusive.wake_up_all();
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

impl Drop for Demo {
    fn drop(&mut self) {
        self.shutdown();
    }
}

/// The same short critical section for both pipes: moving a few bytes.
fn copy_work(i: usize) -> usize {
    let mut acc = 0usize;
    for k in 0..PIPE_COPY {
        acc = acc.wrapping_add(black_box(i ^ k));
    }
    acc & 1
}

/// Sleeps until the next multiple of `period` since `epoch`.
fn sleep_to_next_tick(epoch: Instant, period: Duration) {
    let period_ns = period.as_nanos().max(1);
    let since = epoch.elapsed().as_nanos();
    let left = period_ns - since % period_ns;
    thread::sleep(Duration::from_nanos(u64::try_from(left).unwrap_or(0)));
}

/// Takes one pending connection, if there is one.
fn claim(pending: &AtomicUsize) -> bool {
    pending
        .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
        .is_ok()
}
