//! Every `LOCKMETER_*` environment variable, in one place: the table of
//! names, meanings and defaults ([`VARIABLES`], which `docs/endpoint.md`
//! shows and a test keeps in step), and the parsing of each. Set variables
//! win over the settings made in code, so that any program that installed
//! the layer can be told to export, or to time every hold, without a
//! change.
//!
//! Parsing is a pure function of a variable lookup, so it is tested
//! without touching the process environment. A bad value is one line on
//! stderr and is ignored.

use std::ffi::{OsStr, OsString};
use std::ops::RangeInclusive;
#[cfg(unix)]
use std::path::PathBuf;
#[cfg(unix)]
use std::time::Duration;

#[cfg(unix)]
use crate::export::{ExportConfig, ListenAddr, OnFull, RecordConfig};

/// One environment variable: its name, what it does, its default.
///
/// Read by the tests that hold the parsers and `docs/endpoint.md` to it,
/// not by the parsers themselves (each names its variable where it reads
/// it), hence no use outside tests.
#[cfg_attr(not(test), allow(dead_code))]
pub(crate) struct Variable {
    pub(crate) name: &'static str,
    pub(crate) meaning: &'static str,
    pub(crate) default: &'static str,
}

/// Every variable lockmeter reads, in the order of `docs/endpoint.md`.
#[cfg_attr(not(test), allow(dead_code))]
pub(crate) const VARIABLES: &[Variable] = &[
    Variable {
        name: "LOCKMETER_DUMP",
        meaning: "dump path at exit and on SIGUSR1 (.json, .csv, .pb.gz, .folded, .svg, else text); off disables",
        default: "none",
    },
    Variable {
        name: "LOCKMETER_DUMP_SIGNAL",
        meaning: "0 leaves SIGUSR1 alone",
        default: "1",
    },
    Variable {
        name: "LOCKMETER_LISTEN",
        meaning:
            "1/unix, a socket path, or tcp://127.0.0.1:PORT: the live endpoint; 0/off disables",
        default: "none",
    },
    Variable {
        name: "LOCKMETER_LISTEN_ALLOW_REMOTE",
        meaning: "1 allows a non-loopback TCP address",
        default: "0",
    },
    Variable {
        name: "LOCKMETER_MAX_CLIENTS",
        meaning: "endpoint clients served at once, 1-4096",
        default: "64",
    },
    Variable {
        name: "LOCKMETER_CLIENT_TIMEOUT_MS",
        meaning: "how long a client may take to accept one message",
        default: "5000",
    },
    Variable {
        name: "LOCKMETER_RECORD",
        meaning: "JSON Lines recording path; off disables",
        default: "none",
    },
    Variable {
        name: "LOCKMETER_RECORD_INTERVAL_MS",
        meaning: "length of each recorded window",
        default: "1000",
    },
    Variable {
        name: "LOCKMETER_RECORD_MAX_BYTES",
        meaning: "size limit per recording file (K/M/G suffixes); 0 = none",
        default: "64M",
    },
    Variable {
        name: "LOCKMETER_RECORD_ON_FULL",
        meaning: "rotate or stop at the size limit",
        default: "rotate",
    },
    Variable {
        name: "LOCKMETER_RECORD_MAX_SECS",
        meaning: "stop recording this long after the start; 0 = never",
        default: "0",
    },
    Variable {
        name: "LOCKMETER_DEADLOCK",
        meaning: "how often deadlocks are looked for (1s, 200ms); off disables",
        default: "1s",
    },
    Variable {
        name: "LOCKMETER_STALL",
        meaning: "report a hold or wait still going on after this long (500ms, 2s); off disables",
        default: "off",
    },
    Variable {
        name: "LOCKMETER_LOCK_ORDER",
        meaning: "1 records which locks are taken while which are held (lock-order inversions)",
        default: "0",
    },
    Variable {
        name: "LOCKMETER_HOLD_SAMPLING",
        meaning:
            "time the hold of one uncontended acquisition in N (a power of two); 1 times every hold",
        default: "64",
    },
    Variable {
        name: "LOCKMETER_BUDGET",
        meaning: "keep lockmeter's estimated cost under this share of thread time (1%, 0.5%) by lowering its sampling rates; off disables",
        default: "off",
    },
    Variable {
        name: "LOCKMETER_STACK_RATE",
        meaning: "ns: a contended wait of d is captured with probability min(1, d/rate); 0 turns stacks off",
        default: "1000000",
    },
    Variable {
        name: "LOCKMETER_STACK_DEPTH",
        meaning: "frames per stack, 1-64",
        default: "32",
    },
    Variable {
        name: "LOCKMETER_SKIP_FRAMES",
        meaning: "comma-separated module paths of wrapper frames, added to the defaults",
        default: "none",
    },
    Variable {
        name: "LOCKMETER_PROMETHEUS",
        meaning: "127.0.0.1:PORT serves GET /metrics for Prometheus; 0/off disables",
        default: "none",
    },
    Variable {
        name: "LOCKMETER_PROMETHEUS_ALLOW_REMOTE",
        meaning: "1 allows a non-loopback address for the Prometheus endpoint",
        default: "0",
    },
    Variable {
        name: "LOCKMETER_PROMETHEUS_TOP_SITES",
        meaning: "call sites per lock class with Prometheus series of their own",
        default: "10",
    },
    Variable {
        name: "LOCKMETER_QUIET",
        meaning: "1 drops the confirmation lines on stderr",
        default: "0",
    },
];

/// Looks a variable up; `std::env::var_os` in production.
pub(crate) type Lookup<'a> = &'a dyn Fn(&str) -> Option<OsString>;

/// The line for a value that is ignored.
fn ignored(name: &str, value: &OsStr, why: &str) -> String {
    format!("{name}={}: {why}; ignored", value.to_string_lossy())
}

/// The variables as a lookup sees them, and one warning per value that was
/// ignored: the parsers below read through one, so that a bad value is
/// reported the same way whichever variable it is. (`now_overrides` keeps
/// its own lookup: it also takes a value of blanks for unset.)
struct Reader<'a> {
    get: Lookup<'a>,
    warnings: Vec<String>,
}

impl<'a> Reader<'a> {
    fn new(get: Lookup<'a>) -> Self {
        Reader {
            get,
            warnings: Vec::new(),
        }
    }

    /// The value of `name`; an empty value is no value.
    fn raw(&self, name: &str) -> Option<OsString> {
        (self.get)(name).filter(|v| !v.is_empty())
    }

    /// Reports `value` of `name` as ignored, for `why`.
    fn bad(&mut self, name: &str, value: &OsStr, why: &str) {
        self.warnings.push(ignored(name, value, why));
    }

    /// `name` through `parse`; a value `parse` refuses is reported with
    /// what was `expected`, and is `None` like an unset one.
    fn parse<T>(
        &mut self,
        name: &str,
        expected: &str,
        parse: impl FnOnce(&OsStr) -> Option<T>,
    ) -> Option<T> {
        let v = self.raw(name)?;
        let parsed = parse(&v);
        if parsed.is_none() {
            self.bad(name, &v, expected);
        }
        parsed
    }

    /// `name` as off (`Some(None)`: `0`, `off`, `none`, `false`, `no`) or a
    /// value `parse` takes; a value it refuses is reported with its reason.
    #[cfg(unix)]
    fn off_or<T>(
        &mut self,
        name: &str,
        parse: impl FnOnce(&OsStr) -> Result<T, String>,
    ) -> Option<Option<T>> {
        let v = self.raw(name)?;
        if is_off(&v) {
            return Some(None);
        }
        match parse(&v) {
            Ok(value) => Some(Some(value)),
            Err(why) => {
                self.bad(name, &v, &why);
                None
            }
        }
    }

    /// A whole number in `range`; `expected` says which.
    fn number(&mut self, name: &str, range: RangeInclusive<u64>, expected: &str) -> Option<u64> {
        self.parse(name, expected, |v| {
            parse_u64(v).filter(|n| range.contains(n))
        })
    }

    /// A count from 1 to `max`.
    #[cfg(unix)]
    fn count(&mut self, name: &str, max: usize) -> Option<usize> {
        let expected = format!("expected a number from 1 to {max}");
        let n = self.number(name, 1..=max as u64, &expected)?;
        Some(n as usize)
    }

    /// A switch: `1`/`true`/`on`/`yes` or `0`/`false`/`off`/`no`.
    #[cfg(unix)]
    fn flag(&mut self, name: &str) -> Option<bool> {
        self.parse(name, "expected 1 or 0", parse_bool)
    }

    /// A positive number of milliseconds.
    #[cfg(unix)]
    fn millis(&mut self, name: &str) -> Option<Duration> {
        self.parse(name, "expected a positive number of milliseconds", |v| {
            parse_u64(v).filter(|&n| n > 0).map(Duration::from_millis)
        })
    }
}

/// `LOCKMETER_HOLD_SAMPLING` from the process environment, which wins over
/// `LayerBuilder::sample_uncontended_holds` so that a run can time every
/// hold (`1`) without recompiling. A bad value is reported and ignored.
pub(crate) fn hold_sampling() -> Option<u32> {
    let (every, warning) = hold_sampling_in(&|name| std::env::var_os(name));
    if let Some(w) = warning {
        crate::report::warn(w);
    }
    every
}

/// `LOCKMETER_HOLD_SAMPLING` as `get` sees it, and the warning for a bad value.
fn hold_sampling_in(get: Lookup<'_>) -> (Option<u32>, Option<String>) {
    let mut r = Reader::new(get);
    let expected = format!("expected a whole number from 1 to {}", 1u32 << 31);
    let every = r.number("LOCKMETER_HOLD_SAMPLING", 1..=1 << 31, &expected);
    (every.map(|n| n as u32), r.warnings.pop())
}

/// `LOCKMETER_BUDGET` from the process environment, which wins over
/// `LayerBuilder::overhead_budget`: `Some(None)` when set to off, `None`
/// when unset or bad (a bad value is reported).
pub(crate) fn budget() -> Option<Option<f64>> {
    let (budget, warning) = budget_in(&|name| std::env::var_os(name));
    if let Some(w) = warning {
        crate::report::warn(w);
    }
    budget
}

/// `LOCKMETER_BUDGET` as `get` sees it, and the warning for a bad value.
fn budget_in(get: Lookup<'_>) -> (Option<Option<f64>>, Option<String>) {
    let mut r = Reader::new(get);
    let budget = r.parse(
        "LOCKMETER_BUDGET",
        "expected a share such as 1% or 0.5% (at most 100%), or off",
        |v| v.to_str().and_then(crate::recorder::probe::parse_budget),
    );
    (budget, r.warnings.pop())
}

/// What the stack variables say; `None` and empty where unset.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct StackVars {
    pub(crate) rate_ns: Option<u64>,
    pub(crate) depth: Option<usize>,
    pub(crate) skip: Vec<String>,
}

/// `LOCKMETER_STACK_RATE`, `LOCKMETER_STACK_DEPTH` and
/// `LOCKMETER_SKIP_FRAMES` from the process environment, which win over
/// (and, for the skip list, add to) the `LayerBuilder` settings.
pub(crate) fn stacks() -> StackVars {
    let (vars, warnings) = stacks_in(&|name| std::env::var_os(name));
    for w in warnings {
        crate::report::warn(w);
    }
    vars
}

/// The stack variables as `get` sees them, and a warning per bad value.
fn stacks_in(get: Lookup<'_>) -> (StackVars, Vec<String>) {
    let mut r = Reader::new(get);
    let max_depth = crate::stacks::MAX_STACK_DEPTH as u64;
    let vars = StackVars {
        rate_ns: r.parse(
            "LOCKMETER_STACK_RATE",
            "expected a whole number of nanoseconds (0 turns stacks off)",
            parse_u64,
        ),
        depth: r
            .number(
                "LOCKMETER_STACK_DEPTH",
                1..=max_depth,
                &format!("expected a whole number from 1 to {max_depth}"),
            )
            .map(|n| n as usize),
        skip: r.raw("LOCKMETER_SKIP_FRAMES").map_or_else(Vec::new, |v| {
            v.to_string_lossy()
                .split(',')
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(str::to_string)
                .collect()
        }),
    };
    (vars, r.warnings)
}

/// `s` with `LOCKMETER_DEADLOCK`, `LOCKMETER_STALL` and
/// `LOCKMETER_LOCK_ORDER` put over it, and one message per value that was
/// ignored.
pub(crate) fn now_overrides(
    mut s: crate::now::Settings,
    get: Lookup<'_>,
) -> (crate::now::Settings, Vec<String>) {
    let mut warnings = Vec::new();
    let set = |name: &str| get(name).filter(|v| !v.to_string_lossy().trim().is_empty());
    for (name, slot, what) in [
        (
            "LOCKMETER_DEADLOCK",
            &mut s.deadlock,
            "expected off, or an interval such as 1s or 200ms",
        ),
        (
            "LOCKMETER_STALL",
            &mut s.stall,
            "expected off, or a duration such as 500ms or 2s",
        ),
    ] {
        if let Some(v) = set(name) {
            match v.to_str().and_then(parse_switch_duration) {
                Some(d) => *slot = Some(d),
                None => warnings.push(ignored(name, &v, what)),
            }
        }
    }
    if let Some(v) = set("LOCKMETER_LOCK_ORDER") {
        match v.to_str().map(str::trim) {
            Some("1" | "on" | "true" | "yes") => s.lock_order = Some(true),
            Some("0" | "off" | "false" | "no") => s.lock_order = Some(false),
            _ => warnings.push(ignored("LOCKMETER_LOCK_ORDER", &v, "expected 1 or 0")),
        }
    }
    (s, warnings)
}

/// `off`/`0` → `Some(None)`; `1.5s`, `200ms`, `50us`, `10ns`, or a bare
/// number of milliseconds → `Some(Some(d))`; else `None`.
fn parse_switch_duration(v: &str) -> Option<Option<std::time::Duration>> {
    let v = v.trim();
    if matches!(v, "off" | "0" | "false" | "no") {
        return Some(None);
    }
    parse_duration(v).filter(|d| !d.is_zero()).map(Some)
}

fn parse_duration(v: &str) -> Option<std::time::Duration> {
    let split = v
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(v.len());
    let (num, unit) = v.split_at(split);
    let n: f64 = num.parse().ok()?;
    let scale = match unit.trim() {
        "" | "ms" => 1e-3,
        "s" => 1.0,
        "us" | "µs" => 1e-6,
        "ns" => 1e-9,
        "m" | "min" => 60.0,
        _ => return None,
    };
    let secs = n * scale;
    (0.0..1e9)
        .contains(&secs)
        .then(|| std::time::Duration::from_secs_f64(secs))
}

/// `config` with every set export variable applied, and one message per
/// value that was ignored.
#[cfg(unix)]
pub(crate) fn export_overrides(
    mut config: ExportConfig,
    get: Lookup<'_>,
) -> (ExportConfig, Vec<String>) {
    let mut r = Reader::new(get);
    // Each variable that is set, and good, replaces what the code set.
    let path = |v: &OsStr| Ok(PathBuf::from(v));
    config.dump = r.off_or("LOCKMETER_DUMP", path).unwrap_or(config.dump);
    config.listen = r
        .off_or("LOCKMETER_LISTEN", parse_listen)
        .unwrap_or(config.listen);
    config.max_clients = r
        .count("LOCKMETER_MAX_CLIENTS", 4096)
        .unwrap_or(config.max_clients);
    if let Some(timeout) = r.millis("LOCKMETER_CLIENT_TIMEOUT_MS") {
        // Through the setter, which keeps its floor.
        config = config.client_timeout(timeout);
    }
    let record = |v: &OsStr| Ok(RecordConfig::new(PathBuf::from(v)));
    config.record = r
        .off_or("LOCKMETER_RECORD", record)
        .unwrap_or(config.record);
    apply_record_limits(&mut config, &mut r);
    apply_prometheus(&mut config, &mut r);
    for (name, switch) in [
        ("LOCKMETER_DUMP_SIGNAL", &mut config.dump_signal),
        ("LOCKMETER_LISTEN_ALLOW_REMOTE", &mut config.allow_remote),
        (
            "LOCKMETER_PROMETHEUS_ALLOW_REMOTE",
            &mut config.prometheus_allow_remote,
        ),
        ("LOCKMETER_QUIET", &mut config.quiet),
    ] {
        if let Some(on) = r.flag(name) {
            *switch = on;
        }
    }
    (config, r.warnings)
}

/// The `LOCKMETER_RECORD_*` settings, which need a recording to apply to.
#[cfg(unix)]
fn apply_record_limits(config: &mut ExportConfig, r: &mut Reader<'_>) {
    const NAMES: [&str; 4] = [
        "LOCKMETER_RECORD_INTERVAL_MS",
        "LOCKMETER_RECORD_MAX_BYTES",
        "LOCKMETER_RECORD_MAX_SECS",
        "LOCKMETER_RECORD_ON_FULL",
    ];
    let Some(mut rec) = config.record.take() else {
        for name in NAMES {
            if let Some(v) = r.raw(name) {
                r.bad(name, &v, "no recording is set (LOCKMETER_RECORD)");
            }
        }
        return;
    };
    if let Some(interval) = r.millis(NAMES[0]) {
        rec = rec.interval(interval);
    }
    let size = "expected a size such as 1048576, 512K, 64M or 1G (0 for no limit)";
    if let Some(n) = r.parse(NAMES[1], size, |v| v.to_str().and_then(parse_size)) {
        rec = rec.max_bytes(Some(n));
    }
    let secs = "expected a number of seconds (0 for no limit)";
    if let Some(s) = r.parse(NAMES[2], secs, parse_u64) {
        rec = rec.max_age(Some(Duration::from_secs(s)));
    }
    let on_full = |v: &OsStr| match v.to_str()?.trim().to_ascii_lowercase().as_str() {
        "rotate" => Some(OnFull::Rotate),
        "stop" => Some(OnFull::Stop),
        _ => None,
    };
    if let Some(on_full) = r.parse(NAMES[3], "expected rotate or stop", on_full) {
        rec = rec.on_full(on_full);
    }
    config.record = Some(rec);
}

/// The `LOCKMETER_PROMETHEUS*` settings.
#[cfg(unix)]
fn apply_prometheus(config: &mut ExportConfig, r: &mut Reader<'_>) {
    let addr = |v: &OsStr| {
        v.to_str()
            .and_then(parse_socket_addr)
            .ok_or_else(|| "expected an address such as 127.0.0.1:9464".to_string())
    };
    config.prometheus = r
        .off_or("LOCKMETER_PROMETHEUS", addr)
        .unwrap_or(config.prometheus);
    let top_sites = r.count("LOCKMETER_PROMETHEUS_TOP_SITES", 10_000);
    config.prometheus_top_sites = top_sites.unwrap_or(config.prometheus_top_sites);
}

/// A `LOCKMETER_LISTEN` address; a non-UTF-8 value can only be a path.
#[cfg(unix)]
fn parse_listen(v: &OsStr) -> Result<ListenAddr, String> {
    match v.to_str() {
        Some(s) => s
            .parse()
            .map_err(|e: lockmeter_wire::AddrError| e.to_string()),
        None => Ok(ListenAddr::Unix(PathBuf::from(v))),
    }
}

/// `HOST:PORT` with a numeric host, optionally written `http://HOST:PORT`
/// or `tcp://HOST:PORT` (a trailing `/metrics` is allowed).
#[cfg(unix)]
fn parse_socket_addr(s: &str) -> Option<std::net::SocketAddr> {
    let s = s.trim();
    let s = ["http://", "tcp://"]
        .iter()
        .find_map(|p| s.strip_prefix(p))
        .unwrap_or(s);
    let s = s.strip_suffix("/metrics").unwrap_or(s);
    s.parse().ok()
}

#[cfg(unix)]
fn is_off(v: &OsStr) -> bool {
    v.to_str().is_some_and(|s| {
        ["0", "off", "none", "false", "no"]
            .iter()
            .any(|w| s.trim().eq_ignore_ascii_case(w))
    })
}

#[cfg(unix)]
fn parse_bool(v: &OsStr) -> Option<bool> {
    let s = v.to_str()?.trim().to_ascii_lowercase();
    match s.as_str() {
        "1" | "true" | "on" | "yes" => Some(true),
        "0" | "false" | "off" | "no" => Some(false),
        _ => None,
    }
}

fn parse_u64(v: &OsStr) -> Option<u64> {
    v.to_str()?.trim().parse().ok()
}

/// `4096`, `512K`, `64M`, `1G` (powers of 1024; a trailing `B`/`iB` is allowed).
#[cfg(unix)]
fn parse_size(s: &str) -> Option<u64> {
    let s = s.trim().to_ascii_uppercase();
    let s = s
        .strip_suffix("IB")
        .or_else(|| s.strip_suffix('B'))
        .unwrap_or(&s);
    let (digits, shift) = match s.chars().last()? {
        'K' => (&s[..s.len() - 1], 10),
        'M' => (&s[..s.len() - 1], 20),
        'G' => (&s[..s.len() - 1], 30),
        _ => (s, 0),
    };
    digits
        .trim()
        .parse::<u64>()
        .ok()?
        .checked_mul(1u64 << shift)
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn run(vars: &[(&str, &str)]) -> (ExportConfig, Vec<String>) {
        run_on(ExportConfig::default(), vars)
    }

    fn run_on(base: ExportConfig, vars: &[(&str, &str)]) -> (ExportConfig, Vec<String>) {
        let map: HashMap<String, OsString> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), OsString::from(v)))
            .collect();
        export_overrides(base, &|name| map.get(name).cloned())
    }

    #[test]
    fn nothing_set_changes_nothing() {
        let (c, w) = run(&[]);
        assert_eq!(c, ExportConfig::default());
        assert!(w.is_empty());
    }

    #[test]
    fn every_variable_is_read() {
        let (c, w) = run(&[
            ("LOCKMETER_DUMP", "/tmp/d.csv"),
            ("LOCKMETER_DUMP_SIGNAL", "0"),
            ("LOCKMETER_LISTEN", "tcp://127.0.0.1:7000"),
            ("LOCKMETER_LISTEN_ALLOW_REMOTE", "yes"),
            ("LOCKMETER_MAX_CLIENTS", "8"),
            ("LOCKMETER_CLIENT_TIMEOUT_MS", "250"),
            ("LOCKMETER_RECORD", "/tmp/r.jsonl"),
            ("LOCKMETER_RECORD_INTERVAL_MS", "200"),
            ("LOCKMETER_RECORD_MAX_BYTES", "2M"),
            ("LOCKMETER_RECORD_MAX_SECS", "30"),
            ("LOCKMETER_RECORD_ON_FULL", "stop"),
            ("LOCKMETER_QUIET", "1"),
            ("LOCKMETER_PROMETHEUS", "127.0.0.1:9464"),
            ("LOCKMETER_PROMETHEUS_ALLOW_REMOTE", "1"),
            ("LOCKMETER_PROMETHEUS_TOP_SITES", "3"),
        ]);
        assert!(w.is_empty(), "{w:?}");
        assert_eq!(c.prometheus, Some("127.0.0.1:9464".parse().unwrap()));
        assert!(c.prometheus_allow_remote);
        assert_eq!(c.prometheus_top_sites, 3);
        assert_eq!(c.dump, Some(PathBuf::from("/tmp/d.csv")));
        assert!(!c.dump_signal);
        assert_eq!(
            c.listen,
            Some(ListenAddr::Tcp("127.0.0.1:7000".parse().unwrap()))
        );
        assert!(c.allow_remote);
        assert_eq!(c.max_clients, 8);
        assert_eq!(c.client_timeout, Duration::from_millis(250));
        let r = c.record.unwrap();
        assert_eq!(r.path, PathBuf::from("/tmp/r.jsonl"));
        assert_eq!(r.interval, Duration::from_millis(200));
        assert_eq!(r.max_bytes, Some(2 << 20));
        assert_eq!(r.max_age, Some(Duration::from_secs(30)));
        assert_eq!(r.on_full, OnFull::Stop);
        assert!(c.quiet);
    }

    #[test]
    fn listen_values() {
        for (v, want) in [
            ("1", Some(ListenAddr::Default)),
            ("unix", Some(ListenAddr::Default)),
            ("/run/x.sock", Some(ListenAddr::Unix("/run/x.sock".into()))),
            ("0", None),
            ("off", None),
        ] {
            assert_eq!(run(&[("LOCKMETER_LISTEN", v)]).0.listen, want, "{v}");
        }
    }

    #[test]
    fn env_overrides_code_and_can_switch_things_off() {
        let base = ExportConfig::default()
            .dump("/code.json")
            .listen(ListenAddr::Default);
        let (c, w) = run_on(base.clone(), &[("LOCKMETER_DUMP", "/env.txt")]);
        assert_eq!(c.dump, Some(PathBuf::from("/env.txt")));
        assert_eq!(c.listen, Some(ListenAddr::Default));
        assert!(w.is_empty());
        let (c, _) = run_on(
            base,
            &[("LOCKMETER_DUMP", "off"), ("LOCKMETER_LISTEN", "0")],
        );
        assert!(c.is_empty());
    }

    #[test]
    fn bad_values_are_reported_once_each_and_ignored() {
        let (c, w) = run(&[
            ("LOCKMETER_LISTEN", "tcp://example.com:80"),
            ("LOCKMETER_MAX_CLIENTS", "0"),
            ("LOCKMETER_CLIENT_TIMEOUT_MS", "soon"),
            ("LOCKMETER_QUIET", "maybe"),
            ("LOCKMETER_RECORD_INTERVAL_MS", "100"),
        ]);
        // One line each, in the order of the table, saying what was expected.
        assert_eq!(
            w,
            [
                "LOCKMETER_LISTEN=tcp://example.com:80: tcp://example.com:80: expected tcp://IP:PORT such as tcp://127.0.0.1:7878 (host names other than localhost are not looked up); ignored",
                "LOCKMETER_MAX_CLIENTS=0: expected a number from 1 to 4096; ignored",
                "LOCKMETER_CLIENT_TIMEOUT_MS=soon: expected a positive number of milliseconds; ignored",
                "LOCKMETER_RECORD_INTERVAL_MS=100: no recording is set (LOCKMETER_RECORD); ignored",
                "LOCKMETER_QUIET=maybe: expected 1 or 0; ignored",
            ]
        );
        assert_eq!(c, ExportConfig::default());
        let (c, w) = run(&[
            ("LOCKMETER_RECORD", "/r"),
            ("LOCKMETER_RECORD_MAX_BYTES", "lots"),
        ]);
        assert_eq!(w.len(), 1);
        assert_eq!(
            c.record.unwrap().max_bytes,
            Some(RecordConfig::DEFAULT_MAX_BYTES)
        );
    }

    #[test]
    fn prometheus_values() {
        for (v, want) in [
            ("127.0.0.1:0", Some("127.0.0.1:0")),
            ("http://[::1]:9464/metrics", Some("[::1]:9464")),
            ("tcp://0.0.0.0:1", Some("0.0.0.0:1")),
            ("off", None),
        ] {
            let (c, w) = run(&[("LOCKMETER_PROMETHEUS", v)]);
            assert!(w.is_empty(), "{v}: {w:?}");
            assert_eq!(c.prometheus, want.map(|a| a.parse().unwrap()), "{v}");
        }
        for bad in ["localhost:9464", "9464", "127.0.0.1"] {
            let (c, w) = run(&[("LOCKMETER_PROMETHEUS", bad)]);
            assert_eq!((c.prometheus, w.len()), (None, 1), "{bad}");
        }
        let (c, w) = run(&[("LOCKMETER_PROMETHEUS_TOP_SITES", "0")]);
        assert_eq!(c.prometheus_top_sites, 10);
        assert_eq!(w.len(), 1);
    }

    #[test]
    fn sizes() {
        for (v, want) in [
            ("4096", Some(4096)),
            ("512K", Some(512 << 10)),
            ("64MiB", Some(64 << 20)),
            ("1gb", Some(1 << 30)),
            ("0", Some(0)),
            ("", None),
            ("M", None),
            ("-1", None),
            ("1.5M", None),
            // Too large for a u64, as a number and after the unit.
            ("99999999999999999999", None),
            ("17179869184G", None),
        ] {
            assert_eq!(parse_size(v), want, "{v:?}");
        }
    }

    #[test]
    fn hold_sampling_values_parse_or_are_refused() {
        let get = |v: &str| {
            let v = OsString::from(v);
            hold_sampling_in(&move |_| Some(v.clone()))
        };
        assert_eq!(get("1"), (Some(1), None));
        assert_eq!(get(" 64 "), (Some(64), None));
        assert_eq!(get("2147483648"), (Some(1 << 31), None));
        assert_eq!(get(""), (None, None));
        for bad in ["0", "-1", "abc", "4294967295", "1.5"] {
            let (every, warning) = get(bad);
            assert_eq!(every, None, "{bad:?}");
            let warning = warning.expect("a warning");
            assert!(warning.starts_with(&format!("LOCKMETER_HOLD_SAMPLING={bad}: ")));
        }
    }

    #[test]
    fn budget_values_parse_or_are_refused() {
        let get = |v: &str| {
            let v = OsString::from(v);
            budget_in(&move |_| Some(v.clone()))
        };
        assert_eq!(get("1%"), (Some(Some(0.01)), None));
        assert_eq!(get(" 0.5 % "), (Some(Some(0.005)), None));
        assert_eq!(get("2"), (Some(Some(0.02)), None));
        assert_eq!(get("100%"), (Some(Some(1.0)), None));
        assert_eq!(get("off"), (Some(None), None));
        assert_eq!(get("0"), (Some(None), None));
        assert_eq!(get(""), (None, None));
        for bad in ["-1%", "101%", "abc", "1%%", "nan"] {
            let (b, warning) = get(bad);
            assert_eq!(b, None, "{bad:?}");
            assert!(warning
                .expect("a warning")
                .starts_with(&format!("LOCKMETER_BUDGET={bad}: ")));
        }
    }

    #[test]
    fn stack_variables_parse_or_are_refused() {
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |name: &str| {
                pairs
                    .iter()
                    .find(|(n, _)| *n == name)
                    .map(|(_, v)| OsString::from(v))
            }
        };
        let (v, w) = stacks_in(&env(&[
            ("LOCKMETER_STACK_RATE", "0"),
            ("LOCKMETER_STACK_DEPTH", " 8 "),
            ("LOCKMETER_SKIP_FRAMES", "my::sync::, ,other::"),
        ]));
        assert!(w.is_empty(), "{w:?}");
        assert_eq!(
            v,
            StackVars {
                rate_ns: Some(0),
                depth: Some(8),
                skip: vec!["my::sync::".into(), "other::".into()],
            }
        );
        let (v, w) = stacks_in(&env(&[
            ("LOCKMETER_STACK_RATE", "fast"),
            ("LOCKMETER_STACK_DEPTH", "65"),
        ]));
        assert_eq!(v, StackVars::default());
        assert_eq!(w.len(), 2);
        assert!(w[1].starts_with("LOCKMETER_STACK_DEPTH=65: expected a whole number from 1 to 64"));
    }

    /// The table is the truth: every variable in it is looked up, and
    /// nothing outside it is.
    #[test]
    fn the_table_is_every_variable_read() {
        let asked = std::cell::RefCell::new(Vec::new());
        let get = |name: &str| {
            asked.borrow_mut().push(name.to_string());
            // A recording, so that the LOCKMETER_RECORD_* limits are read too.
            (name == "LOCKMETER_RECORD").then(|| OsString::from("/r.jsonl"))
        };
        export_overrides(ExportConfig::default(), &get);
        now_overrides(crate::now::Settings::default(), &get);
        hold_sampling_in(&get);
        budget_in(&get);
        stacks_in(&get);
        let mut asked = asked.into_inner();
        asked.sort();
        asked.dedup();
        let mut table: Vec<String> = VARIABLES.iter().map(|v| v.name.to_string()).collect();
        table.sort();
        assert_eq!(asked, table);
    }

    /// `docs/endpoint.md` shows the table: one row per variable, with the
    /// same default, and no other variable.
    #[test]
    fn the_users_guide_lists_the_table() {
        let guide = include_str!("../../../docs/endpoint.md");
        let rows: Vec<Vec<&str>> = guide
            .lines()
            .filter(|l| l.starts_with("| `LOCKMETER_"))
            .map(|l| l.trim_matches('|').split(" | ").map(str::trim).collect())
            .collect();
        assert_eq!(rows.len(), VARIABLES.len(), "{rows:?}");
        for v in VARIABLES {
            let row = rows
                .iter()
                .find(|r| r[0] == format!("`{}`", v.name))
                .unwrap_or_else(|| panic!("{} is not in docs/endpoint.md", v.name));
            assert!(!v.meaning.is_empty());
            let default = row.last().unwrap().trim_matches('`');
            assert_eq!(default, v.default, "{}", v.name);
        }
    }

    #[test]
    fn durations_and_switches_parse_or_are_refused() {
        let ms = Duration::from_millis;
        assert_eq!(parse_switch_duration("off"), Some(None));
        assert_eq!(parse_switch_duration("0"), Some(None));
        assert_eq!(parse_switch_duration("200ms"), Some(Some(ms(200))));
        assert_eq!(parse_switch_duration("1.5s"), Some(Some(ms(1500))));
        assert_eq!(parse_switch_duration("250"), Some(Some(ms(250))));
        assert_eq!(
            parse_switch_duration(" 50us "),
            Some(Some(Duration::from_micros(50)))
        );
        for bad in ["", "abc", "-1s", "1h", "1e9s", "0ms", "1..2s"] {
            assert_eq!(parse_switch_duration(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn now_settings_are_read_and_bad_ones_reported() {
        let map: HashMap<&str, OsString> = [
            ("LOCKMETER_DEADLOCK", "200ms"),
            ("LOCKMETER_STALL", "soon"),
            ("LOCKMETER_LOCK_ORDER", "1"),
        ]
        .into_iter()
        .map(|(k, v)| (k, OsString::from(v)))
        .collect();
        let (s, w) = now_overrides(crate::now::Settings::default(), &|n| map.get(n).cloned());
        assert_eq!(s.deadlock, Some(Some(Duration::from_millis(200))));
        assert_eq!(s.stall, None);
        assert_eq!(s.lock_order, Some(true));
        assert_eq!(
            w,
            ["LOCKMETER_STALL=soon: expected off, or a duration such as 500ms or 2s; ignored"]
        );
    }
}
