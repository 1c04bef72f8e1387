//! Getting the table out of a running process: dump files, a live
//! endpoint, and recordings.
//!
//! - **Dumps** ([`ExportConfig::dump`], `LOCKMETER_DUMP`): the window since
//!   the last reset, written at normal exit, on `SIGUSR1`, and by
//!   [`Exporter::dump_now`]; atomically, in the format of the extension.
//! - **Endpoint** ([`ExportConfig::listen`], `LOCKMETER_LISTEN`): a Unix
//!   socket (or loopback TCP) speaking the newline-delimited JSON protocol
//!   of [`lockmeter_wire`], for `lockmeter top` and friends.
//! - **Recordings** ([`ExportConfig::record`], `LOCKMETER_RECORD`): one
//!   window per interval as JSON Lines.
//! - **Prometheus** ([`ExportConfig::prometheus`], `LOCKMETER_PROMETHEUS`):
//!   `GET /metrics` with cumulative counters and histograms per lock class
//!   and site (`docs/fleet.md`).
//!
//! Everything runs on threads of its own and reads through a
//! [`SnapshotSource`]; nothing here can panic the host program, and every
//! failure is one line on stderr. `docs/endpoint.md` is the user's guide.
//!
//! One folder per output; what they share sits beside them:
//!
//! | path | what |
//! |---|---|
//! | `dump/` | the dump worker and formats; `signal.rs`, the `SIGUSR1` thread |
//! | `endpoint/` | the accept loop; `session.rs`, one client; `transport.rs`, the listening sockets |
//! | `record/` | the JSON Lines recorder, rotation and limits |
//! | `prometheus/` | the `GET /metrics` listener; `encode.rs`, the families; `http.rs`, one request |
//! | `clients.rs` | the client slots both listeners cap, count and start client threads with |
//! | `config.rs` | [`ExportConfig`], the settings of all four |
//! | `exit.rs` | the one `atexit` hook that finishes them |
//!
//! The `LOCKMETER_*` variables that switch these on are read in
//! `crate::env`, with every other variable of the crate.

mod clients;
mod config;
mod dump;
mod endpoint;
mod exit;
mod prometheus;
mod record;

use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::RecvTimeoutError;
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::Instant;

use lockmeter_wire::{EndpointAddr, EndpointStats};

use crate::report;

pub use config::{ExportConfig, ListenAddr, OnFull, RecordConfig};
pub use dump::DumpFormat;
pub use prometheus::PrometheusStats;

use dump::{DumpWorker, SignalThread};

use endpoint::{Counters, Endpoint, EndpointOptions};
use exit::AtExit;
use prometheus::{PrometheusOptions, PrometheusServer};
use record::Recorder;

/// A listener's pause after an accept error such as running out of file
/// descriptors, so that a persistent error does not spin its accept thread.
const ACCEPT_ERROR_PAUSE: std::time::Duration = std::time::Duration::from_millis(50);

/// What the export paths read from: implemented by lockmeter::Handle.
pub trait SnapshotSource: Send + Sync + 'static {
    /// The window since the last reset.
    fn snapshot(&self) -> lockmeter_model::Snapshot;
    /// Everything since the layer was created (monotonic counters).
    fn cumulative(&self) -> lockmeter_model::Snapshot;
    /// Starts a new window.
    fn reset(&self);
}

/// Starts what `config` asks for: the dump worker and `SIGUSR1` thread,
/// the endpoint, the recorder, and the exit hook.
///
/// Never panics: whatever cannot be started is reported on stderr in one
/// line and left out. The source must not own the returned [`Exporter`]
/// (that would be a cycle that keeps both alive until exit).
pub fn start(source: Arc<dyn SnapshotSource>, config: ExportConfig) -> Exporter {
    let quiet = config.quiet;
    let dump_path = config.dump.as_deref().map(config::expand_pid);
    let mut parts = Parts::default();

    if let Some(path) = &dump_path {
        match DumpWorker::start(Arc::clone(&source), path.clone(), quiet) {
            Ok(worker) => {
                if config.dump_signal {
                    match SignalThread::start(worker.sender()) {
                        Ok(t) => parts.signal = Some(t),
                        Err(e) => report::warn(format_args!("SIGUSR1 dumps are off: {e}")),
                    }
                }
                parts.dump = Some(worker);
            }
            Err(e) => report::warn(format_args!("no dump at exit or on SIGUSR1: {e}")),
        }
    }

    let mut endpoint_addr = None;
    let mut endpoint_counters = None;
    if let Some(listen) = &config.listen {
        let opts = EndpointOptions {
            listen: listen.clone(),
            allow_remote: config.allow_remote,
            max_clients: config.max_clients,
            client_timeout: config.client_timeout,
        };
        match Endpoint::start(Arc::clone(&source), opts) {
            Ok(ep) => {
                report::info(quiet, format_args!("endpoint listening on {}", ep.addr()));
                endpoint_addr = Some(ep.addr().clone());
                endpoint_counters = Some(ep.counters());
                parts.endpoint = Some(ep);
            }
            Err(e) => report::warn(format_args!("endpoint not started: {e}")),
        }
    }

    if let Some(rec) = &config.record {
        match Recorder::start(Arc::clone(&source), rec) {
            Ok(r) => parts.recorder = Some(r),
            Err(e) => report::warn(format_args!("not recording: {e}")),
        }
    }

    let mut prometheus = None;
    if let Some(addr) = config.prometheus {
        let opts = PrometheusOptions {
            addr,
            allow_remote: config.prometheus_allow_remote,
            top_sites: config.prometheus_top_sites,
            max_clients: config.max_clients,
            client_timeout: config.client_timeout,
        };
        match PrometheusServer::start(Arc::clone(&source), opts) {
            Ok(server) => {
                report::info(
                    quiet,
                    format_args!("Prometheus metrics on http://{}/metrics", server.addr()),
                );
                prometheus = Some((server.addr(), server.stats_source()));
                parts.prometheus = Some(server);
            }
            Err(e) => report::warn(format_args!("Prometheus endpoint not started: {e}")),
        }
    }

    let has_parts = !parts.is_empty();
    let inner = Arc::new(Inner {
        source,
        dump_path,
        endpoint_addr,
        endpoint_counters,
        prometheus,
        parts: Mutex::new(Some(parts)),
        exit_id: AtomicU64::new(0),
    });
    if has_parts {
        let weak: Weak<dyn AtExit> = Arc::downgrade(&inner) as Weak<dyn AtExit>;
        inner.exit_id.store(exit::register(weak), Ordering::Relaxed);
    }
    Exporter { inner }
}

/// The running exports of one layer. Dropping it (or [`Exporter::shutdown`])
/// writes the final dump and recording line and removes the socket; at
/// process exit the same happens through an exit hook.
pub struct Exporter {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Exporter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Exporter")
            .field("dump", &self.inner.dump_path)
            .field("endpoint", &self.inner.endpoint_addr)
            .finish_non_exhaustive()
    }
}

impl Exporter {
    /// Writes the current window to the dump path now, on this thread, and
    /// returns the path. Fails if no dump path is configured.
    pub fn dump_now(&self) -> io::Result<PathBuf> {
        let path = self.inner.dump_path.clone().ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::NotFound,
                "no dump path configured (set LOCKMETER_DUMP or ExportConfig::dump)",
            )
        })?;
        self.dump_to(&path)?;
        Ok(path)
    }

    /// Writes the current window to `path` (format by extension), atomically.
    pub fn dump_to(&self, path: &Path) -> io::Result<()> {
        dump::write_dump(path, &self.inner.source.snapshot())
    }

    /// Where the endpoint listens, if it runs (the real port for port 0).
    pub fn endpoint_addr(&self) -> Option<EndpointAddr> {
        self.inner.endpoint_addr.clone()
    }

    /// The endpoint's counters (clients, refused, dropped), if it runs.
    pub fn endpoint_stats(&self) -> Option<EndpointStats> {
        self.inner.endpoint_counters.as_ref().map(|c| c.stats())
    }

    /// Where the Prometheus endpoint listens, if it runs (the real port
    /// for port 0).
    pub fn prometheus_addr(&self) -> Option<std::net::SocketAddr> {
        self.inner.prometheus.as_ref().map(|(addr, _)| *addr)
    }

    /// The Prometheus endpoint's counters, if it runs.
    pub fn prometheus_stats(&self) -> Option<PrometheusStats> {
        self.inner.prometheus.as_ref().map(|(_, stats)| stats())
    }

    /// The dump path after `{pid}` expansion, if any.
    pub fn dump_path(&self) -> Option<&Path> {
        self.inner.dump_path.as_deref()
    }

    /// Stops everything: final dump and recording line, endpoint closed and
    /// its socket removed. Same as dropping the exporter.
    pub fn shutdown(self) {
        drop(self);
    }
}

impl Drop for Exporter {
    fn drop(&mut self) {
        self.inner.stop();
    }
}

/// The threads and files an exporter owns.
#[derive(Default)]
struct Parts {
    dump: Option<DumpWorker>,
    signal: Option<SignalThread>,
    endpoint: Option<Endpoint>,
    recorder: Option<Recorder>,
    prometheus: Option<PrometheusServer>,
}

impl Parts {
    fn is_empty(&self) -> bool {
        self.dump.is_none()
            && self.signal.is_none()
            && self.endpoint.is_none()
            && self.recorder.is_none()
            && self.prometheus.is_none()
    }
}

/// Reads the Prometheus endpoint's counters.
type PrometheusStatsFn = Arc<dyn Fn() -> PrometheusStats + Send + Sync>;

struct Inner {
    source: Arc<dyn SnapshotSource>,
    dump_path: Option<PathBuf>,
    endpoint_addr: Option<EndpointAddr>,
    endpoint_counters: Option<Arc<Counters>>,
    prometheus: Option<(std::net::SocketAddr, PrometheusStatsFn)>,
    /// `None` once stopped (by shutdown or at exit), whichever came first.
    parts: Mutex<Option<Parts>>,
    exit_id: AtomicU64,
}

impl Inner {
    fn take_parts(&self) -> Option<Parts> {
        self.parts
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
    }

    /// The orderly stop: waits for every thread.
    fn stop(&self) {
        let Some(parts) = self.take_parts() else {
            return;
        };
        let id = self.exit_id.load(Ordering::Relaxed);
        if id != 0 {
            exit::unregister(id);
        }
        if let Some(s) = parts.signal {
            s.stop();
        }
        if let Some(ep) = parts.endpoint {
            ep.stop();
        }
        if let Some(p) = parts.prometheus {
            p.stop();
        }
        if let Some(r) = parts.recorder {
            r.finish();
        }
        if let Some(d) = parts.dump {
            d.finish();
        }
    }
}

impl AtExit for Inner {
    /// The exit-time stop: asks the threads for the final recording line
    /// and dump, waits for them until `deadline`, and joins nothing.
    fn at_exit(&self, deadline: Instant) {
        let Some(parts) = self.take_parts() else {
            return;
        };
        if let Some(ep) = &parts.endpoint {
            ep.stop_at_exit();
        }
        if let Some(p) = &parts.prometheus {
            p.stop_at_exit();
        }
        let recording = parts
            .recorder
            .as_ref()
            .map(|r| (r.path().to_path_buf(), r.request_finish()));
        let dumping = parts.dump.as_ref().map(|d| d.request_final());
        if let Some((path, wait)) = recording {
            if let Err(RecvTimeoutError::Timeout) =
                wait.recv_timeout(deadline.saturating_duration_since(Instant::now()))
            {
                report::warn(format_args!(
                    "the last line of recording {} was not written in time at exit",
                    path.display()
                ));
            }
        }
        if let (Some(wait), Some(path)) = (dumping, &self.dump_path) {
            if let Err(RecvTimeoutError::Timeout) =
                wait.recv_timeout(deadline.saturating_duration_since(Instant::now()))
            {
                report::warn(format_args!(
                    "final dump to {} skipped: no snapshot within {} s at exit (a lock held while exiting, or frames too slow to resolve? `Exporter::dump_now()` before exiting has no deadline)",
                    path.display(),
                    exit::EXIT_BUDGET.as_secs()
                ));
            }
        }
        // The process is ending: leave the threads to it rather than join
        // one that may be stuck.
        std::mem::forget(parts);
    }
}
