//! `lockmeter`: the command line and the event loop. Everything else is in
//! the library (`src/lib.rs`).

use std::io::{self, IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::{Args, Parser, Subcommand};
use crossterm::event::{self, Event};
use lockmeter_model::advice::Thresholds;
use lockmeter_model::render::{SortKey, TableOptions};
use lockmeter_wire::discovery::{list_endpoints_removing_stale, socket_dir};
use lockmeter_wire::{parse_target, EndpointAddr};

use lockmeter_model::profile::Metric;
use lockmeter_model::stacks::Side;
use lockmeter_viewer::commands::{self, Format};
use lockmeter_viewer::conn::Live;
use lockmeter_viewer::demo::Demo;
use lockmeter_viewer::profile::{self, TableFormat};
use lockmeter_viewer::source::{load_file, DemoFeed, Loaded, Source};
use lockmeter_viewer::state::picker::Entry;
use lockmeter_viewer::state::playback::frames_from;
use lockmeter_viewer::state::{Action, App, Mode, Origin};
use lockmeter_viewer::term::TerminalGuard;
use lockmeter_viewer::{dump, view};

/// A lock profiler's viewer: live lock statistics of a process, dumps,
/// recordings and diffs.
#[derive(Debug, Parser)]
#[command(name = "lockmeter", version, propagate_version = true)]
#[command(
    after_help = "Run `lockmeter demo` to see the live view on built-in contended workloads."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run built-in contended workloads in this process and watch them live
    ///
    /// Three workloads run until you quit: a pipe guarded by a semaphore
    /// next to one guarded by a spinlock, a thundering herd on a wait queue
    /// next to exclusive wake-one, and a big lock held across a copy.
    Demo(DemoArgs),
    /// Watch a running process live, or several merged into one table
    ///
    /// TARGET is a pid, a socket path or tcp://IP:PORT. Without one, the
    /// only attachable process is opened, or a picker lists several.
    /// Several TARGETs, or --all, merge their processes by lock class: the
    /// lock rows are exact sums, the expanded rows one per call site and
    /// process.
    Top(TopArgs),
    /// List the processes that can be attached to
    List,
    /// Open a dump (.json) or a recording (.jsonl) in the viewer
    // Not a doc paragraph: rustdoc would read the brackets as a link.
    #[command(
        long_about = "Open a dump (.json) or a recording (.jsonl) in the viewer\n\nRecordings can be stepped through frame by frame (, and .), ten at a time ([ and ]), or played (space)."
    )]
    View(ViewArgs),
    /// Print the table once, from a file or a live target
    ///
    /// Several sources, or --all, print one table merged by lock class:
    /// the lock rows are exact sums, the call-site rows one per process.
    Table(TableArgs),
    /// Compare two dumps (or recordings) per lock and call site
    Diff(DiffArgs),
    /// Print what is held and waited on now, and any deadlock
    ///
    /// From a live target (it answers even while its threads are
    /// deadlocked) or a dump: every lock held or waited on with its holders
    /// and waiters, longest hold first; the chains of waiting threads; the
    /// deadlocks the watchdog found; lock-order inversions.
    Now(NowArgs),
}

#[derive(Debug, Args)]
struct NowArgs {
    /// A pid, a socket path, tcp://IP:PORT, a dump, or a recording (its last frame)
    #[arg(value_name = "TARGET|FILE")]
    source: String,
    /// Print the `now`, `deadlocks` and `lock_order` fields as JSON
    #[arg(long)]
    json: bool,
}

/// Sorting and filtering shared by the viewer and the printed table.
#[derive(Debug, Args)]
struct SortArgs {
    /// Column to sort by
    #[arg(long, short, value_name = "KEY", default_value = "util", value_parser = parse_sort_key, long_help = sort_keys_help())]
    sort: SortKey,
    /// Reverse the order (numbers smallest first, names Z to A)
    #[arg(long)]
    reverse: bool,
    /// Only locks whose name, id or a call site contains TEXT
    #[arg(long, value_name = "TEXT")]
    filter: Option<String>,
}

/// Advisory thresholds: a JSON config file, then single flags over it.
#[derive(Debug, Args)]
#[command(next_help_heading = "Advisories")]
struct AdviceArgs {
    /// Do not show advisories
    #[arg(long)]
    no_advice: bool,
    /// JSON file with any of the threshold fields (min_events,
    /// short_hold_ns, sleeping_con_pct, hot_util_pct, hot_site_share_pct,
    /// herd_wakeups_per_call, herd_spurious_pct, spurious_pct); the flags
    /// below override it
    #[arg(long, value_name = "FILE")]
    advice_config: Option<PathBuf>,
    /// Fewest events before a lock's ratios are judged [default: 10]
    #[arg(long, value_name = "N")]
    advice_min_events: Option<u64>,
    /// Sleeping lock: a mean hold below this many ns is short [default: 5000]
    #[arg(long, value_name = "NS")]
    advice_short_hold_ns: Option<u64>,
    /// Sleeping lock: CON % above this is high contention [default: 20]
    #[arg(long, value_name = "PCT")]
    advice_sleeping_con_pct: Option<f64>,
    /// Hot lock: UTIL % above this is busy [default: 50]
    #[arg(long, value_name = "PCT")]
    advice_hot_util_pct: Option<f64>,
    /// Hot lock: one site holding this share % of hold time is to blame [default: 70]
    #[arg(long, value_name = "PCT")]
    advice_hot_site_share_pct: Option<f64>,
    /// Wait queue: wakeups per wake call above this is a herd [default: 2]
    #[arg(long, value_name = "X")]
    advice_herd_wakeups_per_call: Option<f64>,
    /// Wait queue: spurious % of wakeups that makes a herd wasteful [default: 50]
    #[arg(long, value_name = "PCT")]
    advice_herd_spurious_pct: Option<f64>,
    /// Wait queue: spurious % of wakeups worth a keyed wake [default: 20]
    #[arg(long, value_name = "PCT")]
    advice_spurious_pct: Option<f64>,
}

/// Options of the live view.
#[derive(Debug, Args)]
struct LiveArgs {
    /// Milliseconds between updates (recordings: between frames when playing)
    #[arg(long, value_name = "MS", default_value_t = 1000, value_parser = clap::value_parser!(u64).range(50..=60_000))]
    interval: u64,
    /// Directory where `d` writes snapshots
    #[arg(long, value_name = "DIR", default_value = ".")]
    dump_dir: PathBuf,
    /// Start on cumulative totals instead of per-interval rates
    #[arg(long)]
    totals: bool,
}

/// What every live view takes: its update options, sorting, advisories.
#[derive(Debug, Args)]
struct ViewOpts {
    #[command(flatten)]
    live: LiveArgs,
    #[command(flatten)]
    sort: SortArgs,
    #[command(flatten)]
    advice: AdviceArgs,
}

#[derive(Debug, Args)]
struct DemoArgs {
    /// Print the table after --duration instead of opening the live view
    #[arg(long)]
    no_tui: bool,
    /// Seconds to run with --no-tui
    #[arg(long, value_name = "S", default_value_t = 3.0)]
    duration: f64,
    /// Output format with --no-tui
    #[arg(long, value_enum, default_value_t = Format::Text)]
    format: Format,
    #[command(flatten)]
    view: ViewOpts,
}

#[derive(Debug, Args)]
struct TopArgs {
    /// Pids, socket paths, or tcp://IP:PORT; several are merged
    #[arg(value_name = "TARGET")]
    targets: Vec<String>,
    /// Every attachable process of this user, merged into one table
    #[arg(long, conflicts_with = "targets")]
    all: bool,
    #[command(flatten)]
    view: ViewOpts,
}

#[derive(Debug, Args)]
struct ViewArgs {
    /// A dump (.json) or a recording (.jsonl)
    file: PathBuf,
    #[command(flatten)]
    view: ViewOpts,
}

#[derive(Debug, Args)]
struct TableArgs {
    /// A dump, a recording (its totals), a pid, a socket path or
    /// tcp://IP:PORT; several are merged into one table
    #[arg(value_name = "FILE|TARGET", required_unless_present = "all")]
    sources: Vec<String>,
    /// Every attachable process of this user, merged into one table
    #[arg(long, conflicts_with = "sources")]
    all: bool,
    /// Keep only the first N top-level locks
    #[arg(long, value_name = "N")]
    top: Option<usize>,
    /// Output format
    #[arg(long, value_enum, default_value_t = TableFormat::Text)]
    format: TableFormat,
    /// Write the output to FILE instead of stdout (pprof: required)
    #[arg(long, short = 'o', value_name = "FILE")]
    output: Option<PathBuf>,
    /// Profiles: the waiter side, or the holder side (blamed to the holder)
    #[arg(long, value_name = "SIDE", default_value = "waiter", value_parser = profile::parse_side)]
    side: Side,
    /// Folded and flame graph weights: wait, hold, contentions or acquisitions
    #[arg(long, value_name = "METRIC", default_value = "wait", value_parser = profile::parse_metric)]
    metric: Metric,
    /// Leave out the per-call-site rows
    #[arg(long)]
    no_sites: bool,
    /// Leave out the "held by" rows
    #[arg(long)]
    no_holders: bool,
    #[command(flatten)]
    sort: SortArgs,
    #[command(flatten)]
    advice: AdviceArgs,
}

#[derive(Debug, Args)]
struct DiffArgs {
    /// The dump (or recording) before the change
    before: PathBuf,
    /// The dump (or recording) after the change
    after: PathBuf,
    /// Keep only the first N top-level locks
    #[arg(long, value_name = "N")]
    top: Option<usize>,
    /// Output format
    #[arg(long, value_enum, default_value_t = Format::Text)]
    format: Format,
    /// Leave out the per-call-site rows
    #[arg(long)]
    no_sites: bool,
    #[command(flatten)]
    sort: SortArgs,
    #[command(flatten)]
    advice: AdviceArgs,
}

/// `--sort`'s help: every key of the metric table.
fn sort_keys_help() -> String {
    let keys: Vec<&str> = SortKey::all().iter().map(|k| k.as_str()).collect();
    format!("Column to sort by: {}", keys.join(", "))
}

fn parse_sort_key(s: &str) -> Result<SortKey, String> {
    s.parse::<SortKey>().map_err(|e| e.to_string())
}

impl AdviceArgs {
    fn thresholds(&self) -> Result<Thresholds, String> {
        let mut t = match &self.advice_config {
            Some(path) => commands::load_thresholds(path)?,
            None => Thresholds::default(),
        };
        let set_u = |v: Option<u64>, f: &mut u64| {
            if let Some(v) = v {
                *f = v;
            }
        };
        let set_f = |v: Option<f64>, f: &mut f64| {
            if let Some(v) = v {
                *f = v;
            }
        };
        set_u(self.advice_min_events, &mut t.min_events);
        set_u(self.advice_short_hold_ns, &mut t.short_hold_ns);
        set_f(self.advice_sleeping_con_pct, &mut t.sleeping_con_pct);
        set_f(self.advice_hot_util_pct, &mut t.hot_util_pct);
        set_f(self.advice_hot_site_share_pct, &mut t.hot_site_share_pct);
        set_f(
            self.advice_herd_wakeups_per_call,
            &mut t.herd_wakeups_per_call,
        );
        set_f(self.advice_herd_spurious_pct, &mut t.herd_spurious_pct);
        set_f(self.advice_spurious_pct, &mut t.spurious_pct);
        Ok(t)
    }
}

/// Table options and advisory thresholds from the sort and advice flags.
fn options(sort: &SortArgs, advice: &AdviceArgs) -> Result<(TableOptions, Thresholds), String> {
    let opts = TableOptions {
        sort: sort.sort,
        // Numbers read best largest first, names A to Z.
        descending: (sort.sort != SortKey::Name) != sort.reverse,
        filter: sort.filter.clone().filter(|f| !f.is_empty()),
        advice: !advice.no_advice,
        ..TableOptions::default()
    };
    Ok((opts, advice.thresholds()?))
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli.command) {
        Ok(()) => ExitCode::SUCCESS,
        Err(msg) => {
            lockmeter_viewer::term::restore();
            eprintln!("lockmeter: error: {msg}");
            ExitCode::FAILURE
        }
    }
}

fn run(command: Command) -> Result<(), String> {
    match command {
        Command::List => print(&commands::list()),
        Command::Table(a) => {
            let (mut opts, thresholds) = options(&a.sort, &a.advice)?;
            opts.top = a.top;
            opts.sites = !a.no_sites;
            opts.holders = !a.no_holders;
            let (snap, warnings) = match a.sources.as_slice() {
                [one] => commands::read_input(one)?,
                _ => commands::read_merged(&a.sources, a.all)?,
            };
            warn(&warnings);
            match a.format.split() {
                Ok(format) => {
                    let text = commands::table(&snap, &opts, &thresholds, format);
                    match &a.output {
                        Some(path) => lockmeter_wire::write_atomic(path, text.as_bytes())
                            .map_err(|e| e.to_string()),
                        None => print(&text),
                    }
                }
                Err(format) => {
                    match profile::export(&snap, format, a.side, a.metric, a.output.as_deref())? {
                        Some(bytes) => print(&String::from_utf8_lossy(&bytes)),
                        None => Ok(()),
                    }
                }
            }
        }
        Command::Now(a) => {
            let (snap, warnings) = commands::read_latest(&a.source)?;
            warn(&warnings);
            print(&commands::now(&snap, a.json))
        }
        Command::Diff(a) => {
            let (mut opts, thresholds) = options(&a.sort, &a.advice)?;
            opts.top = a.top;
            opts.sites = !a.no_sites;
            let (before, w1) = commands::read_file(&a.before)?;
            let (after, w2) = commands::read_file(&a.after)?;
            warn(&w1);
            warn(&w2);
            print(&commands::diff(
                &before,
                &after,
                &opts,
                &thresholds,
                a.format,
            ))
        }
        Command::View(a) => {
            let (opts, thresholds) = options(&a.view.sort, &a.view.advice)?;
            let shown = a.file.display().to_string();
            let interval = Duration::from_millis(a.view.live.interval);
            let mut app = match load_file(&a.file)? {
                Loaded::Dump(snap) => App::for_dump(&shown, snap, opts),
                Loaded::Recording {
                    snapshots,
                    warnings,
                } => {
                    let mut app =
                        App::for_recording(&shown, frames_from(snapshots), opts, interval);
                    if let Some(w) = warnings.first() {
                        app.set_status(format!("warning: {w}"));
                    }
                    app
                }
            };
            needs_terminal()?;
            app.set_thresholds(thresholds);
            run_tui(app, Source::Static, &a.view.live)
        }
        Command::Top(a) => {
            let (opts, thresholds) = options(&a.view.sort, &a.view.advice)?;
            let interval = Duration::from_millis(a.view.live.interval);
            // What to attach to: the target, the only endpoint, or a choice.
            if a.all || a.targets.len() > 1 {
                return top_fleet(&a, opts, thresholds);
            }
            let chosen = match a.targets.first() {
                Some(t) => Ok(parse_target(t).map_err(|e| e.to_string())?),
                None => match list_endpoints_removing_stale().as_slice() {
                    [] => {
                        return Err(format!(
                            "no attachable lockmeter process found in {} (start one with LOCKMETER_LISTEN=1, or give a TARGET)",
                            socket_dir().display()
                        ))
                    }
                    [one] => Ok(one.addr()),
                    many => Err(many
                        .iter()
                        .map(|e| Entry {
                            pid: Some(e.pid),
                            name: Some(e.name.clone()).filter(|n| !n.is_empty()),
                            path: e.path.clone(),
                        })
                        .collect::<Vec<_>>()),
                },
            };
            needs_terminal()?;
            let (mut app, source) = match chosen {
                Ok(addr) => (
                    App::new(Origin::Endpoint(addr.as_target()), opts, interval),
                    Source::Endpoint(Live::spawn(addr, interval)),
                ),
                Err(entries) => (App::for_picker(entries, opts, interval), Source::Static),
            };
            if a.view.live.totals {
                app.view.mode = Mode::Totals;
            }
            app.set_thresholds(thresholds);
            run_tui(app, source, &a.view.live)
        }
        Command::Demo(a) => {
            let (opts, thresholds) = options(&a.view.sort, &a.view.advice)?;
            let interval = Duration::from_millis(a.view.live.interval);
            if a.no_tui {
                if !(a.duration.is_finite() && a.duration > 0.0 && a.duration <= 3600.0) {
                    return Err(format!(
                        "--duration {} is not between 0 and 3600 seconds",
                        a.duration
                    ));
                }
                let demo = Demo::start()?;
                std::thread::sleep(Duration::from_secs_f64(a.duration));
                let snap = demo.handle().snapshot();
                demo.stop();
                return print(&commands::table(&snap, &opts, &thresholds, a.format));
            }
            needs_terminal()?;
            let mut app = App::new(Origin::Demo, opts, interval);
            if a.view.live.totals {
                app.view.mode = Mode::Totals;
            }
            app.set_thresholds(thresholds);
            let demo = Demo::start()?;
            run_tui(
                app,
                Source::Demo(DemoFeed::new(demo, interval)),
                &a.view.live,
            )
        }
    }
}

/// `top --all` or several targets: one live table merged over them.
fn top_fleet(a: &TopArgs, opts: TableOptions, thresholds: Thresholds) -> Result<(), String> {
    let targets = if a.all {
        let all = lockmeter_viewer::fleet::all_targets();
        if all.is_empty() {
            return Err(format!(
                "no attachable lockmeter process found in {} (start them with LOCKMETER_LISTEN=1)",
                socket_dir().display()
            ));
        }
        all
    } else {
        a.targets
            .iter()
            .map(|t| parse_target(t).map_err(|e| format!("{t}: {e}")))
            .collect::<Result<Vec<_>, _>>()?
    };
    needs_terminal()?;
    let interval = Duration::from_millis(a.view.live.interval);
    let what = if a.all {
        "all processes".to_string()
    } else {
        format!("{} targets", targets.len())
    };
    let mut app = App::new(Origin::Endpoint(what), opts, interval);
    if a.view.live.totals {
        app.view.mode = Mode::Totals;
    }
    app.set_thresholds(thresholds);
    let fleet = if a.all {
        lockmeter_viewer::fleet::FleetFeed::spawn_discovering(targets, interval)
    } else {
        lockmeter_viewer::fleet::FleetFeed::spawn(targets, interval)
    };
    run_tui(app, Source::Fleet(fleet), &a.view.live)
}

fn warn(warnings: &[String]) {
    for w in warnings {
        eprintln!("lockmeter: warning: {w}");
    }
}

/// Prints to stdout; a closed pipe (`| head`) is not an error.
fn print(text: &str) -> Result<(), String> {
    let mut out = io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Err(e) if e.kind() != io::ErrorKind::BrokenPipe => Err(format!("cannot write output: {e}")),
        _ => Ok(()),
    }
}

fn needs_terminal() -> Result<(), String> {
    if io::stdout().is_terminal() {
        Ok(())
    } else {
        Err("the live view needs a terminal; use `lockmeter table` (or `demo --no-tui`) to print instead".to_string())
    }
}

/// The event loop: one draw per iteration, then at most one input event,
/// then whatever the source has, then the playback tick.
fn run_tui(mut app: App, mut source: Source, live: &LiveArgs) -> Result<(), String> {
    let interval = Duration::from_millis(live.interval);
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGTERM, signal_hook::consts::SIGINT] {
        signal_hook::flag::register(sig, Arc::clone(&stop))
            .map_err(|e| format!("cannot watch signals: {e}"))?;
    }
    exit_on_hangup()?;
    let mut guard =
        TerminalGuard::enter().map_err(|e| format!("cannot set up the terminal: {e}"))?;
    let mut next_tick = Instant::now() + interval;
    loop {
        guard
            .terminal
            .draw(|f| view::draw(f, &mut app))
            .map_err(|e| format!("cannot draw: {e}"))?;
        if stop.load(Ordering::SeqCst) {
            break;
        }
        let wait = next_tick
            .saturating_duration_since(Instant::now())
            .min(Duration::from_millis(100));
        if event::poll(wait).map_err(|e| format!("cannot read the terminal: {e}"))? {
            let action =
                match event::read().map_err(|e| format!("cannot read the terminal: {e}"))? {
                    Event::Key(k) => app.on_key(k),
                    Event::Mouse(m) => app.on_mouse(m),
                    // The next draw picks up the new size.
                    _ => Action::None,
                };
            match action {
                Action::None => {}
                Action::Quit => break,
                Action::Reset => match source.reset() {
                    Ok(msg) => app.set_status(msg),
                    Err(e) => app.set_status(format!("reset failed: {e}")),
                },
                Action::Dump => write_dump(&mut app, &live.dump_dir),
                Action::Attach(entry) => {
                    let addr = EndpointAddr::Unix(entry.path.clone());
                    app.attached(addr.as_target());
                    source = Source::Endpoint(Live::spawn(addr, interval));
                }
            }
        }
        for feed in source.poll(Instant::now()) {
            app.apply(feed);
        }
        if Instant::now() >= next_tick {
            app.on_tick();
            next_tick = Instant::now() + interval;
        }
    }
    drop(guard);
    // Stops the demo threads or the connection thread after the terminal is
    // back, so quitting feels immediate.
    drop(source);
    Ok(())
}

/// On SIGHUP the terminal is gone: crossterm's reader then spins on the
/// dead tty instead of returning, so the loop would never see a flag. Exit
/// from a watcher thread instead (running exit hooks, unlike a handler).
fn exit_on_hangup() -> Result<(), String> {
    let mut signals = signal_hook::iterator::Signals::new([signal_hook::consts::SIGHUP])
        .map_err(|e| format!("cannot watch signals: {e}"))?;
    std::thread::Builder::new()
        .name("sighup".into())
        .spawn(move || {
            if signals.forever().next().is_some() {
                lockmeter_viewer::term::restore();
                std::process::exit(129);
            }
        })
        .map_err(|e| format!("cannot watch signals: {e}"))?;
    Ok(())
}

fn write_dump(app: &mut App, dir: &Path) {
    let what = match app.view.mode {
        Mode::Rates => "interval",
        Mode::Totals => "totals",
    };
    let msg = match app.shown() {
        None => "nothing to write yet".to_string(),
        Some(snap) => match dump::write_snapshot(dir, snap, what) {
            Ok(path) => format!("wrote {what} snapshot to {}", path.display()),
            Err(e) => format!("cannot write a snapshot in {}: {e}", dir.display()),
        },
    };
    app.set_status(msg);
}
