//! What to export where: dumps, the live endpoint, recordings.
//!
//! Built in code with builder-style setters, from the `LOCKMETER_*`
//! environment ([`ExportConfig::from_env`]), or both: code first, then
//! [`ExportConfig::with_env_overrides`], so that a user can redirect any
//! program's output without recompiling it.

use std::ffi::OsString;
use std::fmt;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::time::Duration;

use lockmeter_wire::{AddrError, EndpointAddr};

/// Where the live endpoint listens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ListenAddr {
    /// `<socket_dir>/<pid>.sock`, where `lockmeter list` looks
    /// (see `lockmeter_wire::discovery`).
    Default,
    /// A Unix socket at this path (`{pid}` is replaced by the process id).
    Unix(PathBuf),
    /// A TCP address; only loopback unless remote access is allowed.
    Tcp(SocketAddr),
}

impl FromStr for ListenAddr {
    type Err = AddrError;

    /// `1`, `unix` or `default` for [`ListenAddr::Default`];
    /// `tcp://127.0.0.1:PORT`; `unix:PATH` or a path.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let t = s.trim();
        if ["1", "unix", "default", "true", "on", "yes"]
            .iter()
            .any(|w| t.eq_ignore_ascii_case(w))
        {
            return Ok(ListenAddr::Default);
        }
        match t.parse::<EndpointAddr>()? {
            EndpointAddr::Unix(p) => Ok(ListenAddr::Unix(p)),
            EndpointAddr::Tcp(a) => Ok(ListenAddr::Tcp(a)),
        }
    }
}

impl fmt::Display for ListenAddr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ListenAddr::Default => f.write_str("the default socket"),
            ListenAddr::Unix(p) => write!(f, "unix:{}", p.display()),
            ListenAddr::Tcp(a) => write!(f, "tcp://{a}"),
        }
    }
}

/// What a recording does when it reaches its size limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OnFull {
    /// Rename the file to `PATH.1` (replacing an older one) and start a
    /// new `PATH`: at most twice the limit on disk, the latest data kept.
    #[default]
    Rotate,
    /// Stop recording, with one line on stderr: the earliest data kept.
    Stop,
}

/// A JSON Lines recording: one snapshot of each interval's window per line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordConfig {
    pub(crate) path: PathBuf,
    pub(crate) interval: Duration,
    pub(crate) max_bytes: Option<u64>,
    pub(crate) max_age: Option<Duration>,
    pub(crate) on_full: OnFull,
}

impl RecordConfig {
    /// One line per second by default.
    pub const DEFAULT_INTERVAL: Duration = Duration::from_secs(1);
    /// 64 MiB per file by default.
    pub const DEFAULT_MAX_BYTES: u64 = 64 * 1024 * 1024;
    /// The shortest interval accepted (shorter ones are raised to it).
    pub const MIN_INTERVAL: Duration = Duration::from_millis(10);
    /// The longest interval accepted (longer ones are lowered to it).
    pub const MAX_INTERVAL: Duration = Duration::from_secs(3600);

    /// Records into `path` (`{pid}` is replaced by the process id; the file
    /// is started anew) every second, rotating at 64 MiB.
    pub fn new(path: impl Into<PathBuf>) -> RecordConfig {
        RecordConfig {
            path: path.into(),
            interval: Self::DEFAULT_INTERVAL,
            max_bytes: Some(Self::DEFAULT_MAX_BYTES),
            max_age: None,
            on_full: OnFull::Rotate,
        }
    }

    /// The length of each recorded window, clamped to 10 ms ..= 1 h.
    pub fn interval(mut self, interval: Duration) -> Self {
        self.interval = interval.clamp(Self::MIN_INTERVAL, Self::MAX_INTERVAL);
        self
    }

    /// The size at which [`OnFull`] applies; `None` for no limit.
    pub fn max_bytes(mut self, max: Option<u64>) -> Self {
        self.max_bytes = max.filter(|&m| m > 0);
        self
    }

    /// Stop recording (with a line on stderr) this long after it started;
    /// `None` records until exit.
    pub fn max_age(mut self, max: Option<Duration>) -> Self {
        self.max_age = max.filter(|m| !m.is_zero());
        self
    }

    /// What to do at the size limit.
    pub fn on_full(mut self, on_full: OnFull) -> Self {
        self.on_full = on_full;
        self
    }

    /// The file recorded into (before `{pid}` expansion).
    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// Everything the exporter may start. The default starts nothing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExportConfig {
    pub(crate) dump: Option<PathBuf>,
    pub(crate) dump_signal: bool,
    pub(crate) listen: Option<ListenAddr>,
    pub(crate) allow_remote: bool,
    pub(crate) max_clients: usize,
    pub(crate) client_timeout: Duration,
    pub(crate) record: Option<RecordConfig>,
    pub(crate) quiet: bool,
    pub(crate) prometheus: Option<SocketAddr>,
    pub(crate) prometheus_allow_remote: bool,
    pub(crate) prometheus_top_sites: usize,
}

impl Default for ExportConfig {
    fn default() -> Self {
        ExportConfig {
            dump: None,
            dump_signal: true,
            listen: None,
            allow_remote: false,
            max_clients: Self::DEFAULT_MAX_CLIENTS,
            client_timeout: Self::DEFAULT_CLIENT_TIMEOUT,
            record: None,
            quiet: false,
            prometheus: None,
            prometheus_allow_remote: false,
            prometheus_top_sites: lockmeter_model::series::SiteBound::DEFAULT_TOP_SITES,
        }
    }
}

impl ExportConfig {
    /// Clients served at once by default; more are refused and counted.
    pub const DEFAULT_MAX_CLIENTS: usize = 64;
    /// How long a client may take to accept one message before it is
    /// dropped and counted.
    pub const DEFAULT_CLIENT_TIMEOUT: Duration = Duration::from_secs(5);

    /// The settings of the `LOCKMETER_*` environment variables (see
    /// `docs/endpoint.md`). A bad value gets one line on stderr and is
    /// ignored.
    pub fn from_env() -> ExportConfig {
        ExportConfig::default().with_env_overrides()
    }

    /// These settings, with every `LOCKMETER_*` variable that is set
    /// taking precedence.
    pub fn with_env_overrides(self) -> ExportConfig {
        let (config, warnings) = crate::env::export_overrides(self, &|name| std::env::var_os(name));
        for w in warnings {
            crate::report::warn(w);
        }
        config
    }

    /// Write the final snapshot to `path` at exit, and on `SIGUSR1` or
    /// [`Exporter::dump_now`](super::Exporter::dump_now). The extension
    /// picks the format: `.json`, `.csv`, else the text table. `{pid}` is
    /// replaced by the process id.
    pub fn dump(mut self, path: impl Into<PathBuf>) -> Self {
        self.dump = Some(path.into());
        self
    }

    /// Whether `SIGUSR1` triggers a dump (default: yes, when a dump path is
    /// set). Turn it off if the program uses `SIGUSR1` itself.
    pub fn dump_signal(mut self, on: bool) -> Self {
        self.dump_signal = on;
        self
    }

    /// Serve the live endpoint at `addr`.
    pub fn listen(mut self, addr: ListenAddr) -> Self {
        self.listen = Some(addr);
        self
    }

    /// Allow a TCP endpoint on a non-loopback address. The protocol has no
    /// authentication: anyone who can reach the port can read the stats
    /// and reset the window.
    pub fn allow_remote(mut self, allow: bool) -> Self {
        self.allow_remote = allow;
        self
    }

    /// Clients served at once (at least 1).
    pub fn max_clients(mut self, n: usize) -> Self {
        self.max_clients = n.max(1);
        self
    }

    /// How long a client may take to accept one message (at least 10 ms).
    pub fn client_timeout(mut self, timeout: Duration) -> Self {
        self.client_timeout = timeout.max(Duration::from_millis(10));
        self
    }

    /// Record a JSON Lines file.
    pub fn record(mut self, record: RecordConfig) -> Self {
        self.record = Some(record);
        self
    }

    /// No confirmation lines on stderr (errors are still printed).
    pub fn quiet(mut self, quiet: bool) -> Self {
        self.quiet = quiet;
        self
    }

    /// Serve `GET /metrics` for Prometheus at `addr` (loopback unless
    /// [`ExportConfig::prometheus_allow_remote`]; port 0 picks one). See
    /// `docs/fleet.md`.
    pub fn prometheus(mut self, addr: SocketAddr) -> Self {
        self.prometheus = Some(addr);
        self
    }

    /// Allow the Prometheus endpoint on a non-loopback address. It has no
    /// authentication: anyone who can reach the port reads the lock table.
    pub fn prometheus_allow_remote(mut self, allow: bool) -> Self {
        self.prometheus_allow_remote = allow;
        self
    }

    /// N: the sites per lock class ranked into series of their own at each
    /// scrape (at least 1; at most 2N per class ever; the rest are summed
    /// into `site="(other)"`). Default 10.
    pub fn prometheus_top_sites(mut self, n: usize) -> Self {
        self.prometheus_top_sites = n.max(1);
        self
    }

    /// The Prometheus endpoint's address, if any.
    pub fn prometheus_addr(&self) -> Option<SocketAddr> {
        self.prometheus
    }

    /// The dump path, if any (before `{pid}` expansion).
    pub fn dump_path(&self) -> Option<&Path> {
        self.dump.as_deref()
    }

    /// The endpoint address, if any.
    pub fn listen_addr(&self) -> Option<&ListenAddr> {
        self.listen.as_ref()
    }

    /// The recording, if any.
    pub fn recording(&self) -> Option<&RecordConfig> {
        self.record.as_ref()
    }

    /// Whether there is nothing to start.
    pub fn is_empty(&self) -> bool {
        self.dump.is_none()
            && self.listen.is_none()
            && self.record.is_none()
            && self.prometheus.is_none()
    }
}

/// `path` with every `{pid}` replaced by this process's id, so that one
/// environment shared by several processes gives each its own file.
pub(crate) fn expand_pid(path: &Path) -> PathBuf {
    match path.to_str() {
        Some(s) if s.contains("{pid}") => {
            PathBuf::from(s.replace("{pid}", &std::process::id().to_string()))
        }
        _ => path.to_path_buf(),
    }
}

/// `path` with `suffix` appended to its last component (`a.jsonl` -> `a.jsonl.1`).
pub(crate) fn with_suffix(path: &Path, suffix: &str) -> PathBuf {
    let mut s = OsString::from(path.as_os_str());
    s.push(suffix);
    PathBuf::from(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listen_addresses_parse() {
        assert_eq!("1".parse::<ListenAddr>().unwrap(), ListenAddr::Default);
        assert_eq!("unix".parse::<ListenAddr>().unwrap(), ListenAddr::Default);
        assert_eq!(
            "/tmp/a.sock".parse::<ListenAddr>().unwrap(),
            ListenAddr::Unix("/tmp/a.sock".into())
        );
        assert_eq!(
            "unix:/tmp/b".parse::<ListenAddr>().unwrap(),
            ListenAddr::Unix("/tmp/b".into())
        );
        assert_eq!(
            "tcp://127.0.0.1:0".parse::<ListenAddr>().unwrap(),
            ListenAddr::Tcp("127.0.0.1:0".parse().unwrap())
        );
        assert!("tcp://nowhere:1".parse::<ListenAddr>().is_err());
    }

    #[test]
    fn pid_is_expanded_and_suffixes_append() {
        let p = expand_pid(Path::new("/tmp/lm-{pid}.json"));
        assert_eq!(
            p,
            PathBuf::from(format!("/tmp/lm-{}.json", std::process::id()))
        );
        assert_eq!(expand_pid(Path::new("/a/b")), PathBuf::from("/a/b"));
        assert_eq!(
            with_suffix(Path::new("/a/r.jsonl"), ".1"),
            PathBuf::from("/a/r.jsonl.1")
        );
    }

    #[test]
    fn setters_clamp_nonsense() {
        let r = RecordConfig::new("x")
            .interval(Duration::ZERO)
            .max_bytes(Some(0))
            .max_age(Some(Duration::ZERO));
        assert_eq!(r.interval, RecordConfig::MIN_INTERVAL);
        assert_eq!(r.max_bytes, None);
        assert_eq!(r.max_age, None);
        let c = ExportConfig::default()
            .max_clients(0)
            .client_timeout(Duration::ZERO);
        assert_eq!(c.max_clients, 1);
        assert!(c.client_timeout >= Duration::from_millis(10));
        assert!(ExportConfig::default().is_empty());
    }
}
