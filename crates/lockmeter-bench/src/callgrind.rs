//! `--callgrind`: instructions per operation of the uncontended rows,
//! counted by `valgrind --tool=callgrind`, which repeat exactly from run
//! to run where timings on a shared machine do not.
//!
//! For every row of `uncontended::OPS` the bench re-executes itself under
//! callgrind three times: the bare side, the instrumented side with no
//! layer in the process, and the instrumented side with a layer installed
//! as the global default; for SpinLock and Mutex a fourth time, with a
//! second layer's dispatcher in effect as a scoped default on top of the
//! global one (the `scoped vs global` rows). Each child (hidden flag `--callgrind-child
//! WHAT:SIDE`) runs the operation `ops / 10 + 1` times to warm up (a new
//! call site's entry, lazily built tables), then `ops` times inside
//! [`callgrind_measured`]; callgrind collects only inside that function
//! (`--toggle-collect`), so process start-up, the layer's set-up and the
//! warm-up do not count. Ir/op is the `totals:` line of the output
//! divided by `ops`; the loop's own increment and branch are in both
//! sides alike.

use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::measure::Pair;
use crate::report::{Goal, Row, Unit};
use crate::uncontended::{row_of, Loop, Op, Phase, Runner, OPS};

/// Operations counted per child by default: enough that a per-call cost
/// of one instruction shows as 1.00 Ir/op, small enough for ~1 s a child.
pub const DEFAULT_OPS: u64 = 200_000;

/// The one function callgrind collects in (a pattern over its demangled
/// name, which the crate and module prefix and a hash suffix surround).
const MEASURED: &str = "*callgrind_measured*";

/// Which side of a row a child runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    Bare,
    Instrumented(Phase),
    /// Observed by a scoped dispatcher, a global one installed too.
    Scoped,
    /// The bare lock with the least the default features cost
    /// (`least.rs`), a global layer installed: SpinLock and Mutex only.
    Least,
    /// The least features under a scoped dispatcher holding a layer, a
    /// global one installed too (`least::part::SCOPED`).
    LeastScoped,
    /// Observed by the global dispatcher on a thread that has taken a
    /// lock under a scoped one first: what a thread pays under the global
    /// layer after using a scoped one.
    AfterScoped,
}

impl Side {
    fn key(self) -> &'static str {
        match self {
            Side::Bare => "bare",
            Side::Instrumented(Phase::Unobserved) => "unobserved",
            Side::Instrumented(Phase::Observed) => "observed",
            Side::Scoped => "scoped",
            Side::Least => "least",
            Side::LeastScoped => "least_scoped",
            Side::AfterScoped => "after_scoped",
        }
    }

    fn parse(s: &str) -> Option<Side> {
        match s {
            "bare" => Some(Side::Bare),
            "unobserved" => Some(Side::Instrumented(Phase::Unobserved)),
            "observed" => Some(Side::Instrumented(Phase::Observed)),
            "scoped" => Some(Side::Scoped),
            "least" => Some(Side::Least),
            "least_scoped" => Some(Side::LeastScoped),
            "after_scoped" => Some(Side::AfterScoped),
            _ => None,
        }
    }
}

/// A child's [`Runner`]: runs one side's loop, warm-up then measured.
pub struct Child {
    side: Side,
    ops: u64,
}

impl Runner for Child {
    fn pair(&self, mut bare: impl Loop, mut inst: impl Loop) -> Pair {
        match self.side {
            Side::Bare => warm_then_measure(self.ops, &mut bare),
            Side::Instrumented(_) | Side::Scoped | Side::AfterScoped => {
                warm_then_measure(self.ops, &mut inst)
            }
            Side::Least | Side::LeastScoped => {
                unreachable!("the least sides run `least::callgrind_loop`")
            }
        }
        // Nothing is timed in a child; the counts are callgrind's.
        Pair::from_runs(&[], &[])
    }
}

fn warm_then_measure(ops: u64, run: &mut (impl FnMut(u64) + ?Sized)) {
    run(ops / 10 + 1);
    callgrind_measured(black_box(ops), run);
}

/// The operations callgrind counts: `run(ops)` and nothing else.
#[inline(never)]
fn callgrind_measured(ops: u64, run: &mut (impl FnMut(u64) + ?Sized)) {
    run(ops);
}

/// The child's side of `--callgrind-child WHAT:SIDE`: runs that side of
/// row `what` (installing a global layer first for `observed` and
/// `scoped`). An error for a spec that names no row or side.
pub fn child(spec: &str, ops: u64) -> Result<(), String> {
    let (what, side) = spec
        .split_once(':')
        .ok_or_else(|| format!("--callgrind-child wants WHAT:SIDE, got {spec:?}"))?;
    let side = Side::parse(side).ok_or_else(|| {
        format!(
            "side {side:?}: expected bare, unobserved, observed, scoped, least, \
                 least_scoped or after_scoped"
        )
    })?;
    let op = OPS
        .iter()
        .find(|o| o.what == what)
        .ok_or_else(|| format!("no uncontended row {what:?}"))?;
    use tracing_subscriber::layer::SubscriberExt;
    let layered = || tracing_subscriber::registry().with(lockmeter::Layer::new());
    if matches!(
        side,
        Side::Instrumented(Phase::Observed)
            | Side::Scoped
            | Side::Least
            | Side::LeastScoped
            | Side::AfterScoped
    ) {
        tracing::subscriber::set_global_default(layered())
            .map_err(|e| format!("could not install the layer: {e}"))?;
    }
    let least =
        |scoped| crate::least::callgrind_loop(what, scoped, &mut |run| warm_then_measure(ops, run));
    match side {
        Side::Least => return least(None),
        Side::LeastScoped => return least(Some(&tracing::Dispatch::new(layered()))),
        _ => {}
    }
    let run = || (op.child)(&Child { side, ops });
    if side == Side::Scoped {
        // As in the timed rows, whose global side runs first: a process
        // whose global layer has counted something, so lockmeter has
        // remembered the global dispatcher. On a thread of its own, which
        // leaves the measured thread's state as it was.
        std::thread::spawn(|| *lockmeter::Mutex::named("bench.callgrind.global", 0u64).lock() += 1)
            .join()
            .map_err(|_| "the global acquisition panicked".to_string())?;
        tracing::dispatcher::with_default(&tracing::Dispatch::new(layered()), run);
    } else if side == Side::AfterScoped {
        // One acquisition under the global layer (so that lockmeter has
        // remembered it), one under a scoped layer, then the loop under
        // the global one again, all on this thread.
        *lockmeter::Mutex::named("bench.callgrind.global", 0u64).lock() += 1;
        tracing::dispatcher::with_default(&tracing::Dispatch::new(layered()), || {
            *lockmeter::Mutex::named("bench.callgrind.scoped", 0u64).lock() += 1;
        });
        run();
    } else {
        run();
    }
    Ok(())
}

/// The instruction count callgrind wrote: the first figure of the
/// `totals:` line (or of `summary:`, which older versions write instead).
pub fn parse_ir(out: &str) -> Option<u64> {
    let figure = |prefix: &str| {
        out.lines()
            .find_map(|l| l.strip_prefix(prefix))
            .and_then(|rest| rest.split_whitespace().next())
            .and_then(|n| n.parse().ok())
    };
    figure("totals:").or_else(|| figure("summary:"))
}

/// Runs one child under callgrind; its Ir per operation.
fn count(exe: &Path, dir: &Path, what: &str, side: Side, ops: u64) -> Result<f64, String> {
    let out = dir.join(format!("{what}.{}.callgrind", side.key()));
    let run = Command::new("valgrind")
        .arg("--tool=callgrind")
        .arg(format!("--callgrind-out-file={}", out.display()))
        .arg(format!("--toggle-collect={MEASURED}"))
        .arg(exe)
        .arg("--callgrind-child")
        .arg(format!("{what}:{}", side.key()))
        .arg("--callgrind-ops")
        .arg(ops.to_string())
        .output()
        .map_err(|e| format!("cannot run valgrind: {e} (is it installed?)"))?;
    if !run.status.success() {
        let stderr = String::from_utf8_lossy(&run.stderr);
        let last = stderr.lines().last().unwrap_or("").to_string();
        return Err(format!("valgrind exited with {}: {last}", run.status));
    }
    let text =
        std::fs::read_to_string(&out).map_err(|e| format!("cannot read {}: {e}", out.display()))?;
    let _ = std::fs::remove_file(&out);
    match parse_ir(&text) {
        Some(0) => Err(format!("callgrind counted nothing inside {MEASURED}")),
        Some(ir) => Ok(ir as f64 / ops as f64),
        None => Err(format!("no totals: line in {}", out.display())),
    }
}

/// The Ir/op rows of the ops named in `only` (all when empty): for each,
/// bare against instrumented unobserved, and against observed.
pub fn rows(only: &[String], ops: u64) -> Vec<Row> {
    let selected: Vec<&Op> = OPS
        .iter()
        .filter(|o| only.is_empty() || only.iter().any(|w| w == o.what))
        .collect();
    let exe = std::env::current_exe();
    let dir = scratch_dir();
    let mut rows = Vec::new();
    for op in selected {
        eprintln!("  callgrind: {}", op.what);
        let counted = |side| match (&exe, &dir) {
            (Ok(exe), Ok(dir)) => count(exe, dir, op.what, side, ops),
            (Err(e), _) => Err(format!("cannot find this executable: {e}")),
            (_, Err(e)) => Err(e.clone()),
        };
        let bare = counted(Side::Bare);
        let unobserved = counted(Side::Instrumented(Phase::Unobserved));
        let observed = counted(Side::Instrumented(Phase::Observed));
        let note = format!("bare: {}; {ops} ops after warm-up", op.bare);
        for (phase, inst) in [
            (Phase::Unobserved, &unobserved),
            (Phase::Observed, &observed),
        ] {
            let row = row_of(op, phase, Unit::InstrPerOp, "callgrind");
            rows.push(filled(row, &bare, inst, &note));
        }
        if SCOPED.contains(&op.what) {
            let (scoped, least) = (counted(Side::Scoped), counted(Side::Least));
            let least_scoped = counted(Side::LeastScoped);
            let after_scoped = counted(Side::AfterScoped);
            let label = op.label;
            let least_note = format!("{LEAST_NOTE}; bare: {}", op.bare);
            // (key, label, bare side, instrumented side, note)
            let more = [
                (
                    "scoped_vs_global",
                    format!("observed {label}, scoped dispatcher vs global"),
                    &observed,
                    &scoped,
                    "bare: the same lockmeter loop under the global dispatcher",
                ),
                (
                    "least",
                    format!("least features, {label}"),
                    &bare,
                    &least,
                    least_note.as_str(),
                ),
                (
                    "observed_vs_least",
                    format!("observed {label}, against the least features"),
                    &least,
                    &observed,
                    "bare: the least features around the bare lock (least.rs)",
                ),
                (
                    "least_scoped_vs_global",
                    format!("least features {label}, scoped dispatcher vs global"),
                    &least,
                    &least_scoped,
                    "bare: the least features under the global dispatcher; \
                     instrumented: under a scoped one, its layer found by a downcast",
                ),
                (
                    "after_scoped_vs_global",
                    format!("observed {label}, global, on a thread that used a scoped layer"),
                    &observed,
                    &after_scoped,
                    "bare: the same loop on a thread that never used a scoped layer; \
                     instrumented: after one acquisition under a scoped layer",
                ),
            ];
            for (key, label, bare_side, inst_side, note) in more {
                let row = Row::new(
                    &format!("callgrind_{key}_{}", op.what),
                    &format!("callgrind {label}"),
                    Unit::InstrPerOp,
                    Goal::Info,
                );
                rows.push(filled(row, bare_side, inst_side, note));
            }
        }
    }
    if let Ok(dir) = dir {
        let _ = std::fs::remove_dir(dir);
    }
    rows
}

/// What the `callgrind_least_*` rows count.
const LEAST_NOTE: &str = "the bare lock with the least lockmeter's default features cost \
                          (least.rs), a global layer installed";

/// The rows that also get a scoped-vs-global count, as the timed mode
/// rows, and a count of the least features (`least.rs`).
const SCOPED: [&str; 2] = ["spinlock", "mutex"];

/// `row` (as information: counts have no goal) with Ir/op `inst`
/// against `bare`, or the error that kept either from being counted.
fn filled(mut row: Row, bare: &Result<f64, String>, inst: &Result<f64, String>, note: &str) -> Row {
    row.goal = Goal::Info;
    match (bare, inst) {
        (Ok(b), Ok(i)) => {
            row.bare = Some(*b);
            row.instrumented = Some(*i);
            row.ratio = Some(i / b);
            row.note = note.to_string();
        }
        (Err(e), _) | (_, Err(e)) => row.note = format!("not measured: {e}"),
    }
    row
}

/// A fresh directory of this process's for the callgrind output files.
fn scratch_dir() -> Result<PathBuf, String> {
    let dir = std::env::temp_dir().join(format!("lockmeter-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    Ok(dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_totals_line() {
        let out = "version: 1\ncreator: callgrind-3.22.0\nevents: Ir\nfn=(1) main\n5 10\ntotals: 4200017\n";
        assert_eq!(parse_ir(out), Some(4_200_017));
        assert_eq!(parse_ir("events: Ir\nsummary: 99\n"), Some(99));
        assert_eq!(parse_ir("events: Ir\n"), None);
        assert_eq!(parse_ir("totals: many\n"), None);
    }

    #[test]
    fn a_bad_child_spec_is_an_error() {
        assert!(child("mutex", 1).is_err());
        assert!(child("mutex:sideways", 1).is_err());
        assert!(child("nosuchrow:bare", 1).is_err());
    }

    #[test]
    fn sides_round_trip_through_their_keys() {
        for side in [
            Side::Bare,
            Side::Instrumented(Phase::Unobserved),
            Side::Instrumented(Phase::Observed),
            Side::Scoped,
            Side::Least,
            Side::LeastScoped,
            Side::AfterScoped,
        ] {
            assert_eq!(Side::parse(side.key()), Some(side));
        }
    }
}
