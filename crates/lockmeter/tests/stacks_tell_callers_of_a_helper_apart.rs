//! One lock taken in a helper (`state`) that two functions call, on real
//! threads that contend for it: the stacks, the folded output and the
//! pprof profile (read back by the real `go tool pprof`) name the helper
//! and both callers, each with its own weight.

mod common;

use std::hint::black_box;
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{all_at_once, observe_with};
use lockmeter::model::profile::{folded, pprof, Metric};
use lockmeter::model::stacks::Side;
use lockmeter::model::Snapshot;

/// Enough rounds that the holder side, which counts one wait in 8, sees
/// both callers even when the machine is busy.
const ROUNDS: u32 = 500;

struct Shared {
    m: lockmeter::Mutex<u64>,
}

/// The helper every caller goes through: one call site for the table.
#[inline(never)]
fn state(s: &Shared) -> lockmeter::MutexGuard<'_, u64> {
    s.m.lock()
}

/// Holds the lock by spinning (no sleep: the other thread must wait).
fn busy(d: Duration) {
    let t = Instant::now();
    while t.elapsed() < d {
        black_box(0);
    }
}

/// Holds longer than the other thread rests (a sleep), so that it finds
/// the lock taken nearly every time.
fn hold_then_rest(g: lockmeter::MutexGuard<'_, u64>) {
    busy(Duration::from_micros(300));
    drop(g);
    std::thread::sleep(Duration::from_micros(100));
}

#[inline(never)]
fn from_alpha(s: &Shared, rounds: u32) {
    for _ in 0..rounds {
        let mut g = state(s);
        *g += 1;
        hold_then_rest(g);
    }
}

/// Not the same body as `from_alpha`'s: identical functions are folded
/// into one in a release build, and then so are their stacks.
#[inline(never)]
fn from_beta(s: &Shared, rounds: u32) {
    for _ in 0..rounds {
        let mut g = state(s);
        *g += 2;
        hold_then_rest(g);
    }
}

fn contended_snapshot() -> Snapshot {
    run_contended(lockmeter::Layer::builder())
}

/// Runs alpha and beta against each other under a layer built from
/// `builder` (stacks sampled at 10 µs), which is dropped before returning
/// (so its final dump, if any, is written).
fn run_contended(builder: lockmeter::LayerBuilder) -> Snapshot {
    let shared = Arc::new(Shared {
        m: lockmeter::Mutex::named("helper.lock", 0),
    });
    let (handle, ()) = observe_with(builder.stack_rate(Duration::from_micros(10)), || {
        all_at_once(
            &shared,
            [from_alpha as fn(&Shared, u32), from_beta],
            |s, f| f(s, ROUNDS),
        );
    });
    assert_eq!(
        *shared.m.lock(),
        3 * u64::from(ROUNDS),
        "alpha adds 1 a round, beta 2"
    );
    handle.snapshot()
}

/// [`run_contended`] with a quiet dump to `path` when the layer is dropped.
fn dump_contended(path: impl Into<std::path::PathBuf>) {
    run_contended(
        lockmeter::Layer::builder().export(
            lockmeter::export::ExportConfig::default()
                .dump(path)
                .quiet(true),
        ),
    );
}

fn shown(snap: &Snapshot, s: &lockmeter::model::stacks::StackSample) -> Vec<String> {
    snap.stacks
        .shown_frames(s)
        .map(|f| f.function.clone())
        .collect()
}

#[test]
fn both_callers_of_the_helper_come_apart_on_both_sides() {
    let snap = contended_snapshot();
    let lock = snap.lock("helper.lock").expect("lock recorded");
    assert_eq!(
        lock.total.acquisitions,
        2 * u64::from(ROUNDS),
        "counts stay exact"
    );
    assert!(
        lock.total.contended > 10,
        "forced contention: {:?}",
        lock.total.contended
    );
    assert_eq!(lock.sites.len(), 1, "one call site: the helper");
    snap.stacks.validate().unwrap();
    assert_eq!(snap.stacks.rate_ns, 10_000);

    // Waiter side: the caller is the helper, then alpha or beta.
    let waiters = snap.stacks.top(&lock.id, None, Side::Waiter);
    assert!(!waiters.is_empty(), "no waiter stacks: {:?}", snap.stacks);
    let weight_of = |side: Side, name: &str| -> f64 {
        snap.stacks
            .top(&lock.id, None, side)
            .into_iter()
            .filter(|s| shown(&snap, s).iter().any(|f| f.contains(name)))
            .map(|s| s.wait_ns)
            .sum()
    };
    for s in &waiters {
        let frames = shown(&snap, s);
        assert!(
            frames[0].ends_with("state"),
            "caller is the helper: {frames:?}"
        );
    }
    let (alpha, beta) = (
        weight_of(Side::Waiter, "from_alpha"),
        weight_of(Side::Waiter, "from_beta"),
    );
    assert!(alpha > 0.0 && beta > 0.0, "alpha {alpha} beta {beta}");
    // The estimates add up to about the measured wait (unbiased sampling).
    let est: f64 = waiters.iter().map(|s| s.wait_ns).sum();
    let exact = lock.total.wait_ns.total as f64;
    assert!(
        (est / exact - 1.0).abs() < 0.35,
        "estimate {est} vs exact {exact}"
    );

    // Holder side: the holds that made the other wait, released in alpha or beta.
    let (ha, hb) = (
        weight_of(Side::Holder, "from_alpha"),
        weight_of(Side::Holder, "from_beta"),
    );
    assert!(ha > 0.0 && hb > 0.0, "holder alpha {ha} beta {hb}");

    // Folded: both callers under the lock, each on its own line with its weight.
    let lines = folded::lines(&snap, Side::Waiter, Metric::Wait);
    let line_of = |name: &str| {
        lines
            .iter()
            .filter(|l| l.contains(name) && l.contains("state"))
            .map(|l| l.rsplit(' ').next().unwrap().parse::<u64>().unwrap())
            .sum::<u64>()
    };
    assert!(
        line_of("from_alpha") > 0 && line_of("from_beta") > 0,
        "{lines:#?}"
    );
    assert!(
        lines.iter().all(|l| l.starts_with("[lock helper.lock];")),
        "{lines:#?}"
    );
    assert!(
        !lines.iter().any(|l| l.contains("lockmeter::")),
        "wrapper frames folded away: {lines:#?}"
    );
}

/// `go tool pprof` (Debian's golang-go) reads the profile: `-top` lists
/// the helper and both callers, `-raw` the four sample types.
#[test]
fn go_tool_pprof_reads_the_profile() {
    if Command::new("go").arg("version").output().is_err() {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI must install golang-go (see .ci/test)"
        );
        eprintln!("skipped: `go` is not installed (apt-get install golang-go)");
        return;
    }
    let snap = contended_snapshot();
    let dir = std::env::temp_dir().join(format!("lockmeter-pprof-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("waiter.pb.gz");
    std::fs::write(&path, pprof::encode_gz(&snap, Side::Waiter)).unwrap();
    let run = |args: &[&str]| {
        let out = Command::new("go")
            .args(["tool", "pprof"])
            .args(args)
            .arg(&path)
            .env("HOME", &dir)
            .env("PPROF_TMPDIR", &dir)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "go tool pprof {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let top = run(&["-top", "-cum", "-sample_index=wait"]);
    assert_shows(&top, "-top", &["state", "from_alpha", "from_beta"]);
    let raw = run(&["-raw"]);
    let sample_types = [
        "contentions/count",
        "wait/nanoseconds",
        "hold/nanoseconds",
        "acquisitions/count",
    ];
    assert_shows(&raw, "-raw (sample types)", &sample_types);
    assert_shows(
        &raw,
        "-raw (labels)",
        &["lock:[helper.lock]", "kind:[mutex]"],
    );
    // Each caller has a weight of its own in the profile.
    let peek = run(&["-top", "-sample_index=contentions", "-focus=from_alpha"]);
    assert!(
        !peek.contains("from_beta"),
        "focus on alpha still shows beta:\n{peek}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// Asserts that `output` of `what` shows every one of `wants`, naming all
/// that it lacks.
fn assert_shows(output: &str, what: &str, wants: &[&str]) {
    let lacking: Vec<&str> = wants
        .iter()
        .copied()
        .filter(|w| !output.contains(w))
        .collect();
    assert!(lacking.is_empty(), "{what} lacks {lacking:?}:\n{output}");
}

/// `LOCKMETER_DUMP` (here its builder form) picks the profile format by
/// extension and writes the holder side beside it; an unwritable path is
/// reported, not a panic.
#[test]
fn dumps_pick_profile_formats_by_extension() {
    let dir = std::env::temp_dir().join(format!("lockmeter-stack-dumps-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let folded = dir.join("out.folded");
    dump_contended(&folded);
    let text = std::fs::read_to_string(&folded).expect("the folded dump was written");
    assert!(
        text.lines()
            .any(|l| l.contains("from_alpha") && l.starts_with("[lock helper.lock];")),
        "{text}"
    );
    let holder =
        std::fs::read_to_string(dir.join("out.holder.folded")).expect("holder side beside it");
    assert!(holder.contains("helper.lock"), "{holder}");

    let svg = dir.join("out.svg");
    dump_contended(&svg);
    let svg = std::fs::read_to_string(&svg).expect("the flame graph was written");
    assert!(
        svg.starts_with("<?xml") && svg.contains("from_beta"),
        "not an SVG with the callers"
    );

    let pb = dir.join("out.pb.gz");
    dump_contended(&pb);
    let bytes = std::fs::read(&pb).unwrap();
    assert_eq!(&bytes[..2], &[0x1f, 0x8b], "gzip");
    assert!(dir.join("out.holder.pb.gz").exists());

    // A directory that does not exist: the dump fails with a message, the
    // program goes on.
    dump_contended(dir.join("no/such/dir/out.pb.gz"));
    let _ = std::fs::remove_dir_all(&dir);
}
