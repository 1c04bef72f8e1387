//! Faults outside the program: a clock that goes backwards or jumps, and a
//! disk that fills up under a dump. Each gets a clear outcome and no lost or
//! corrupt data.

mod common;

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use common::{lock, observe_with};
use lockmeter::export::ExportConfig;
use lockmeter::{Layer, Mutex};

#[test]
fn a_clock_that_goes_backwards_or_jumps_keeps_counts_exact() {
    let (clock, mock) = quanta::Clock::mock();
    mock.increment(Duration::from_secs(10));
    let (handle, ()) = observe_with(Layer::builder().clock(clock), || {
        let m = Mutex::named("fault.clock", ());
        // Backwards while held: the hold is clamped to zero, not wrapped.
        let g = m.lock();
        mock.decrement(Duration::from_secs(5));
        drop(g);
        // Backwards past the layer's start: the window is empty, not negative.
        mock.decrement(Duration::from_secs(5));
        drop(m.lock());
        // A jump forward: one long hold, recorded as it was measured.
        let g = m.lock();
        mock.increment(Duration::from_secs(3600));
        drop(g);
    });
    let snap = handle.snapshot();
    let s = &lock(&snap, "fault.clock").total;
    assert_eq!(s.acquisitions, 3);
    assert_eq!(s.hold_ns.count, 3);
    assert_eq!(s.hold_ns.min, 0);
    assert_eq!(s.hold_ns.max, 3_600_000_000_000);
    assert!(s.util_pct(snap.window.elapsed_ns).is_finite());
}

/// Mounts a tmpfs of `kib` KiB at `dir`, or says why not (not root, no
/// mount permission in this sandbox).
fn mount_tiny_fs(dir: &Path, kib: u32) -> Result<(), String> {
    std::fs::create_dir_all(dir).map_err(|e| e.to_string())?;
    let out = Command::new("mount")
        .args(["-t", "tmpfs", "-o", &format!("size={kib}k"), "tmpfs"])
        .arg(dir)
        .output()
        .map_err(|e| e.to_string())?;
    if out.status.success() {
        Ok(())
    } else {
        Err(String::from_utf8_lossy(&out.stderr).into_owned())
    }
}

#[test]
fn a_full_disk_fails_the_dump_and_keeps_the_previous_file() {
    let dir = std::env::temp_dir().join(format!("lockmeter-full-{}", std::process::id()));
    if let Err(why) = mount_tiny_fs(&dir, 16) {
        eprintln!("skipped: cannot mount a small tmpfs here: {why}");
        return;
    }
    let path = dir.join("locks.json");
    let result = std::panic::catch_unwind(|| {
        let layer = Layer::new();
        let exporter = lockmeter::export::start(
            std::sync::Arc::new(layer.handle()),
            ExportConfig::default().dump(&path).quiet(true),
        );
        let dispatch = tracing::Dispatch::new(tracing_subscriber::layer::SubscriberExt::with(
            tracing_subscriber::registry(),
            layer,
        ));
        // A small first dump fits.
        tracing::dispatcher::with_default(&dispatch, || {
            drop(Mutex::named("fault.small", ()).lock())
        });
        exporter
            .dump_now()
            .expect("the first, small dump fits on the disk");
        let first = std::fs::read(&path).unwrap();
        // Many lock classes make the next dump larger than the whole disk.
        tracing::dispatcher::with_default(&dispatch, || {
            for i in 0..200 {
                let name: &'static str = Box::leak(format!("fault.big.{i}").into_boxed_str());
                drop(Mutex::named(name, ()).lock());
            }
        });
        let err = exporter
            .dump_now()
            .expect_err("a dump larger than the disk must fail");
        assert!(
            err.to_string().contains("No space left") || err.raw_os_error() == Some(28),
            "{err}"
        );
        assert_eq!(
            std::fs::read(&path).unwrap(),
            first,
            "the previous dump must survive intact"
        );
        let leftovers: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .filter_map(|e| e.ok())
            .map(|e| e.file_name())
            .collect();
        assert_eq!(
            leftovers.len(),
            1,
            "no temporary file may be left behind: {leftovers:?}"
        );
    });
    let _ = Command::new("umount").arg(&dir).status();
    let _ = std::fs::remove_dir(&dir);
    if let Err(panic) = result {
        std::panic::resume_unwind(panic);
    }
}
