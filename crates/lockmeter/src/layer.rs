//! The `tracing` layer that turns recording on, and the handle that reads it.

use std::sync::Arc;
use std::time::Duration;

use lockmeter_model::{ProcessInfo, Snapshot};
use tracing::Subscriber;

#[cfg(unix)]
use crate::export::{self, ExportConfig, Exporter, SnapshotSource};
use crate::recorder::{Recorder, Settings};

/// Waits or holds at least this long become WARN events by default.
pub const DEFAULT_SLOW_THRESHOLD: Duration = Duration::from_millis(10);

/// By default one uncontended hold in this many is timed (per thread and
/// call site); see [`LayerBuilder::sample_uncontended_holds`].
pub const DEFAULT_HOLD_SAMPLING: u32 = 64;

/// A `tracing_subscriber` layer that records every instrumented lock used
/// while a subscriber holding it is in effect.
///
/// The layer itself observes no spans or events: per-acquisition data goes
/// into per-thread shards, never through tracing, so an `fmt` layer beside
/// it prints nothing per acquisition. Only slow acquisitions (see
/// [`LayerBuilder::slow_threshold`]) become events.
///
/// # Examples
///
/// ```
/// use tracing_subscriber::prelude::*;
///
/// let layer = lockmeter::Layer::new();
/// let handle = layer.handle();
/// let subscriber = tracing_subscriber::registry().with(layer);
/// tracing::subscriber::with_default(subscriber, || {
///     let m = lockmeter::Mutex::named("doc.mutex", 0);
///     *m.lock() += 1;
/// });
/// let snap = handle.snapshot();
/// assert_eq!(snap.lock("doc.mutex").unwrap().total.acquisitions, 1);
/// ```
pub struct Layer {
    recorder: Arc<Recorder>,
    /// Dumps, endpoint and recording, when configured (`LOCKMETER_*` or
    /// [`LayerBuilder::export`]). Dropping the layer writes the final dump.
    #[cfg(unix)]
    exporter: Option<Exporter>,
}

impl Layer {
    /// A layer with the default settings: the best clock available and a
    /// 10 ms slow-lock threshold.
    pub fn new() -> Layer {
        Layer::builder().build()
    }

    /// Settings for a layer.
    pub fn builder() -> LayerBuilder {
        LayerBuilder::default()
    }

    /// A cheap, cloneable handle to read and reset what this layer records.
    pub fn handle(&self) -> Handle {
        Handle {
            recorder: self.recorder.clone(),
        }
    }

    /// The running exports (dump, endpoint, recording), if any were configured.
    #[cfg(unix)]
    pub fn exporter(&self) -> Option<&Exporter> {
        self.exporter.as_ref()
    }

    pub(crate) fn recorder(&self) -> &Arc<Recorder> {
        &self.recorder
    }

    /// A layer over `recorder` with no exports and no process-wide
    /// settings: the private layer self-accounting calibrates under.
    pub(crate) fn with_recorder(recorder: Arc<Recorder>) -> Layer {
        Layer {
            recorder,
            #[cfg(unix)]
            exporter: None,
        }
    }
}

impl Default for Layer {
    fn default() -> Self {
        Layer::new()
    }
}

impl std::fmt::Debug for Layer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("lockmeter::Layer").finish_non_exhaustive()
    }
}

impl<S: Subscriber> tracing_subscriber::Layer<S> for Layer {
    /// Remembers the subscriber, so the watchdog's deadlock and stall
    /// events go where this layer's user looks.
    fn on_register_dispatch(&self, subscriber: &tracing::Dispatch) {
        crate::now::remember_dispatch(Arc::as_ptr(&self.recorder) as usize, subscriber);
    }
}

/// Settings for a [`Layer`].
#[derive(Default)]
pub struct LayerBuilder {
    clock: Option<quanta::Clock>,
    slow_threshold: Option<Duration>,
    sample_every: Option<u32>,
    process_name: Option<String>,
    /// [`LayerBuilder::overhead_budget`]: `Some(None)` turns it off.
    budget: Option<Option<f64>>,
    /// See `stacks::options` for its builder methods.
    pub(crate) stacks: crate::stacks::options::StackOptions,
    now: crate::now::Settings,
    #[cfg(unix)]
    export: ExportConfig,
}

impl LayerBuilder {
    /// Where the table goes besides [`Handle`]: a dump at exit, a live
    /// endpoint, a recording. `LOCKMETER_*` variables that are set win over
    /// these settings (see `docs/endpoint.md`).
    #[cfg(unix)]
    pub fn export(mut self, config: ExportConfig) -> Self {
        self.export = config;
        self
    }

    /// Acquisitions that wait or hold at least `threshold` are emitted as
    /// WARN events with target `lockmeter` (default 10 ms).
    pub fn slow_threshold(mut self, threshold: Duration) -> Self {
        self.slow_threshold = Some(threshold);
        self
    }

    /// Times the hold of one uncontended acquisition in `every` per thread
    /// and call site (rounded up to a power of two; default
    /// [`DEFAULT_HOLD_SAMPLING`]); 1 times every hold. The environment
    /// variable `LOCKMETER_HOLD_SAMPLING` wins over this. Counts are exact
    /// whatever this is, and contended acquisitions are always timed: they
    /// pay for a clock read anyway. Sampling is what keeps an uncontended
    /// observed acquisition within a few nanoseconds of the bare lock (two
    /// clock reads cost ~19 ns; see `docs/performance.md`). Hold
    /// distributions and UTIL are scaled up from the sample.
    pub fn sample_uncontended_holds(mut self, every: u32) -> Self {
        self.sample_every = Some(every);
        self
    }

    /// Reports deadlocks (cycles of threads each waiting on a lock the next
    /// holds) within `interval` of forming, as ERROR events with target
    /// `lockmeter` and in snapshots' `deadlocks`; `None` turns detection
    /// off. Default: on, within [`DEFAULT_DEADLOCK_INTERVAL`].
    /// `LOCKMETER_DEADLOCK` (`off`, `200ms`, ...) wins over this. The
    /// watchdog is one thread per process: the last layer built sets it.
    ///
    /// [`DEFAULT_DEADLOCK_INTERVAL`]: crate::DEFAULT_DEADLOCK_INTERVAL
    pub fn deadlock_detection(mut self, interval: Option<Duration>) -> Self {
        self.now.deadlock = Some(interval);
        self
    }

    /// Reports a hold or wait still going on after `threshold`, once, as a
    /// WARN event, and marks it `stalled` in snapshots' `now`. Default: off.
    /// `LOCKMETER_STALL` wins over this. Process-wide, like
    /// [`deadlock_detection`](Self::deadlock_detection).
    pub fn stall_threshold(mut self, threshold: Option<Duration>) -> Self {
        self.now.stall = Some(threshold);
        self
    }

    /// Records lock order: every acquisition made while the thread holds
    /// other locks counts an edge, and classes taken in both orders are
    /// reported in snapshots' `lock_order.inversions`. Default: off (it
    /// costs a table probe per held lock on every nested acquisition);
    /// `LOCKMETER_LOCK_ORDER=1` wins over this. Process-wide.
    pub fn lock_order(mut self, on: bool) -> Self {
        self.now.lock_order = Some(on);
        self
    }

    /// Keeps lockmeter's estimated cost under `fraction` of its threads'
    /// time (0.01 for 1 %) by lowering its sampling rates: uncontended hold
    /// timing and waiter stack sampling. Counts stay exact, so their cost
    /// is a floor no rate can lower; snapshots say what was lowered and the
    /// estimate (`self_cost.budget`, `docs/performance.md`,
    /// "Self-accounting"). Re-evaluated at snapshots and once a second.
    /// `None`, or a fraction outside (0, 1], turns it off (the default).
    /// `LOCKMETER_BUDGET` (`1%`) wins over this.
    pub fn overhead_budget(mut self, fraction: Option<f64>) -> Self {
        self.budget = Some(fraction.filter(|f| *f > 0.0 && *f <= 1.0));
        self
    }

    /// The clock to time with, e.g. `quanta::Clock::mock()` in tests.
    pub fn clock(mut self, clock: quanta::Clock) -> Self {
        self.clock = Some(clock);
        self
    }

    /// The process name shown in snapshots (default: the executable's name).
    pub fn process_name(mut self, name: impl Into<String>) -> Self {
        self.process_name = Some(name.into());
        self
    }

    /// Builds the layer. Recording starts once a subscriber holding it is
    /// in effect.
    pub fn build(self) -> Layer {
        let (clock, clock_name) = match self.clock {
            Some(c) => (c, crate::clock::MOCK_CLOCK),
            None => crate::clock::default_clock(),
        };
        let slow = self.slow_threshold.unwrap_or(DEFAULT_SLOW_THRESHOLD);
        let settings = Settings {
            clock,
            clock_name,
            slow_ns: u64::try_from(slow.as_nanos()).unwrap_or(u64::MAX),
            sample_every: crate::env::hold_sampling()
                .or(self.sample_every)
                .unwrap_or(DEFAULT_HOLD_SAMPLING)
                .max(1)
                .checked_next_power_of_two()
                .unwrap_or(1 << 31),
            process: ProcessInfo {
                pid: std::process::id(),
                name: self.process_name.unwrap_or_else(current_exe_name),
            },
            stacks: self.stacks.settings(),
        };
        let recorder = Arc::new(Recorder::new(settings));
        let budget = crate::env::budget().or(self.budget).flatten();
        recorder.probe.set_budget(budget);
        if budget.is_some() {
            crate::recorder::probe::start_ticks(&recorder);
        }
        crate::now::configure(self.now);
        #[cfg(unix)]
        {
            let config = self.export.with_env_overrides();
            let exporter = (!config.is_empty()).then(|| {
                // The source holds only the recorder, never the exporter.
                let source = Handle {
                    recorder: Arc::clone(&recorder),
                };
                export::start(Arc::new(source), config)
            });
            Layer { recorder, exporter }
        }
        #[cfg(not(unix))]
        Layer { recorder }
    }
}

fn current_exe_name() -> String {
    std::env::current_exe()
        .ok()
        .and_then(|p| p.file_stem().map(|s| s.to_string_lossy().into_owned()))
        .unwrap_or_else(|| "unknown".to_string())
}

/// Reads and resets what a [`Layer`] records. Clone it freely; it keeps
/// the counts alive after the layer is gone.
#[derive(Clone)]
pub struct Handle {
    recorder: Arc<Recorder>,
}

impl Handle {
    /// The window since the last [`reset`](Handle::reset) (or since the
    /// layer was built), in the v1 model.
    pub fn snapshot(&self) -> Snapshot {
        self.recorder.snapshot()
    }

    /// Everything recorded since the layer was built, ignoring resets.
    pub fn cumulative(&self) -> Snapshot {
        self.recorder.cumulative()
    }

    /// Starts a new window: later snapshots count from now.
    pub fn reset(&self) {
        self.recorder.reset();
    }
}

#[cfg(unix)]
impl SnapshotSource for Handle {
    fn snapshot(&self) -> Snapshot {
        Handle::snapshot(self)
    }

    fn cumulative(&self) -> Snapshot {
        Handle::cumulative(self)
    }

    fn reset(&self) {
        Handle::reset(self)
    }
}

impl std::fmt::Debug for Handle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("lockmeter::Handle").finish_non_exhaustive()
    }
}
