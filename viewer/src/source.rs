//! Where snapshots come from: the in-process demo, a live endpoint, a
//! recording or a dump. Files are read once, up front, with errors a person
//! can act on; live sources are polled by the event loop.

use std::fs;
use std::path::Path;
use std::time::{Duration, Instant};

use lockmeter_model::{parse_recording, parse_snapshot, ReadError, Snapshot};

use crate::conn::{ConnEvent, Live};
use crate::demo::Demo;
use crate::fleet::FleetFeed;
use crate::state::playback::frames_from;
use crate::state::playback::interval;
use crate::state::{Feed, Frame};

/// A file's contents.
#[allow(
    clippy::large_enum_variant,
    reason = "one per opened file, moved once; boxing would only add an allocation"
)]
#[derive(Debug)]
pub enum Loaded {
    Dump(Snapshot),
    Recording {
        snapshots: Vec<Snapshot>,
        /// Lines that were skipped, such as a last line cut short.
        warnings: Vec<String>,
    },
}

impl Loaded {
    /// The snapshot a one-shot command shows: the dump, or a recording's
    /// totals over its whole length.
    pub fn totals(self) -> Snapshot {
        match self {
            Loaded::Dump(s) => s,
            Loaded::Recording { snapshots, .. } => frames_from(snapshots)
                .pop()
                .map(|f| f.cumulative)
                .unwrap_or_else(|| Snapshot::empty(Default::default(), "unknown")),
        }
    }
}

/// Reads a dump (`.json`) or a recording (`.jsonl`, or any file of several
/// snapshot lines).
pub fn load_file(path: &Path) -> Result<Loaded, String> {
    let shown = path.display();
    let bytes = fs::read(path).map_err(|e| format!("cannot read {shown}: {e}"))?;
    let text = String::from_utf8(bytes)
        .map_err(|e| format!("{shown}: not a lockmeter snapshot: not UTF-8 text ({e})"))?;
    let is_lines = path
        .extension()
        .is_some_and(|e| e == "jsonl" || e == "ndjson");
    if is_lines {
        return read_recording(&text).map_err(|e| format!("{shown}: {e}"));
    }
    match parse_snapshot(&text) {
        Ok(s) => Ok(Loaded::Dump(s)),
        // Several lines that are not one object may be a recording without
        // the `.jsonl` name; if they are not either, the first error stands.
        Err(e @ ReadError::Json { .. }) if text.trim().lines().count() > 1 => {
            read_recording(&text).map_err(|_| format!("{shown}: {e}"))
        }
        Err(e) => Err(format!("{shown}: {e}")),
    }
}

fn read_recording(text: &str) -> Result<Loaded, ReadError> {
    let rec = parse_recording(text)?;
    Ok(Loaded::Recording {
        snapshots: rec.frames,
        warnings: rec.warnings,
    })
}

/// A source the event loop polls.
#[allow(
    clippy::large_enum_variant,
    reason = "one for the whole session; boxing would only add an indirection"
)]
pub enum Source {
    /// A file: everything was loaded up front.
    Static,
    Endpoint(Live),
    Demo(DemoFeed),
    /// Several endpoints, merged into one table.
    Fleet(FleetFeed),
}

impl Source {
    /// What happened since the last poll.
    pub fn poll(&mut self, now: Instant) -> Vec<Feed> {
        match self {
            Source::Static => Vec::new(),
            Source::Endpoint(live) => {
                let mut out = Vec::new();
                while let Some(ev) = live.try_recv() {
                    out.push(match ev {
                        ConnEvent::Connected(h) => Feed::Connected {
                            pid: h.pid,
                            name: h.name,
                        },
                        ConnEvent::Update {
                            interval,
                            cumulative,
                        } => Feed::Data(Box::new(Frame {
                            interval: *interval,
                            cumulative: *cumulative,
                        })),
                        ConnEvent::ResetDone => Feed::ResetDone,
                        ConnEvent::Lost(reason) => Feed::Lost(reason),
                        ConnEvent::Retrying { attempt, delay } => Feed::Retrying { attempt, delay },
                    });
                }
                out
            }
            Source::Demo(feed) => feed.poll(now).into_iter().collect(),
            Source::Fleet(fleet) => fleet.poll(now),
        }
    }

    /// Resets the measurement window; the message to show on success.
    pub fn reset(&mut self) -> Result<&'static str, String> {
        match self {
            Source::Static => Err("nothing to reset: this is a file".to_string()),
            Source::Endpoint(live) => live.reset().map(|()| "reset sent"),
            Source::Demo(feed) => {
                feed.reset();
                Ok("window reset")
            }
            Source::Fleet(fleet) => fleet.reset(),
        }
    }
}

/// Samples the demo's handle once per interval.
pub struct DemoFeed {
    demo: Demo,
    interval: Duration,
    next: Instant,
    prev: Option<Snapshot>,
}

impl DemoFeed {
    pub fn new(demo: Demo, interval: Duration) -> DemoFeed {
        DemoFeed {
            demo,
            interval,
            // The first sample comes after one interval, like an endpoint's.
            next: Instant::now() + interval,
            prev: None,
        }
    }

    fn poll(&mut self, now: Instant) -> Option<Feed> {
        if now < self.next {
            return None;
        }
        self.next = now + self.interval;
        let cumulative = self.demo.handle().snapshot();
        let interval = match &self.prev {
            Some(p) => interval(&cumulative, p),
            None => cumulative.clone(),
        };
        self.prev = Some(cumulative.clone());
        Some(Feed::Data(Box::new(Frame {
            interval,
            cumulative,
        })))
    }

    fn reset(&mut self) {
        self.demo.handle().reset();
        self.prev = None;
    }

    /// The workloads, to stop them.
    pub fn into_demo(self) -> Demo {
        self.demo
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str, contents: &[u8]) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("lmv-source-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        let path = dir.join(name);
        fs::write(&path, contents).unwrap();
        path
    }

    #[test]
    fn json_lines_are_a_recording_whatever_the_name() {
        let rec = include_str!("../tests/fixtures/recording.jsonl");
        let path = scratch("rec.json", rec.as_bytes());
        match load_file(&path).unwrap() {
            Loaded::Recording {
                snapshots,
                warnings,
            } => {
                assert_eq!(snapshots.len(), rec.lines().count());
                assert!(warnings.is_empty());
            }
            Loaded::Dump(_) => panic!("read as a dump"),
        }
    }

    #[test]
    fn a_pretty_dump_is_a_dump() {
        let dump = include_str!("../tests/fixtures/pipe_spin.json");
        let path = scratch("dump.txt", dump.as_bytes());
        assert!(matches!(load_file(&path).unwrap(), Loaded::Dump(_)));
    }

    #[test]
    fn binary_files_are_refused_with_the_path() {
        let path = scratch("binary.json", &[0xff, 0xfe, 0x00, 0x01]);
        let err = load_file(&path).unwrap_err();
        assert!(
            err.contains("binary.json") && err.contains("not UTF-8"),
            "{err}"
        );
    }

    #[test]
    fn totals_of_a_recording_cover_all_of_it() {
        let rec = include_str!("../tests/fixtures/recording.jsonl");
        let path = scratch("rec2.jsonl", rec.as_bytes());
        let last = parse_recording(rec).unwrap().frames.pop().unwrap();
        let totals = load_file(&path).unwrap().totals();
        assert_eq!(totals.window.elapsed_ns, last.window.elapsed_ns);
        assert_eq!(totals.locks.len(), last.locks.len());
    }
}
