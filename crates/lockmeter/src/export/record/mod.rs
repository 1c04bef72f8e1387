//! Recordings: every interval, the window since the previous line as one
//! compact v1 snapshot on one line of a JSON Lines file.
//!
//! Each line is written with one `write` call and the file is only ever
//! appended to, so a crash leaves at most a cut last line, which
//! `lockmeter_model::parse_recording` skips with a warning. The file is
//! bounded: past `max_bytes` it is rotated to `PATH.1` (or recording
//! stops, per [`OnFull`]); past `max_age` recording stops. Either way one
//! line on stderr says so.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender, SyncSender};
use std::sync::Arc;
use std::thread::{self, JoinHandle};
use std::time::Instant;

use lockmeter_model::Snapshot;

use crate::export::config::{expand_pid, with_suffix, OnFull, RecordConfig};
use crate::export::SnapshotSource;
use crate::report;

/// A request to the recorder thread: finish, optionally writing the window
/// since the last line first.
struct Finish {
    last_frame: bool,
    done: SyncSender<()>,
}

/// The recording thread.
pub(crate) struct Recorder {
    tx: Sender<Finish>,
    thread: JoinHandle<()>,
    path: PathBuf,
}

impl Recorder {
    /// Creates (truncates) the file and starts the thread.
    pub(crate) fn start(
        source: Arc<dyn SnapshotSource>,
        config: &RecordConfig,
    ) -> io::Result<Recorder> {
        let path = expand_pid(&config.path);
        let file = create(&path)?;
        let config = RecordConfig {
            path: path.clone(),
            ..config.clone()
        };
        // The baseline is taken here, not on the thread, so that everything
        // after `start` returns is in the first window.
        let prev = source.cumulative();
        let started = Instant::now();
        let (tx, rx) = mpsc::channel();
        let thread = thread::Builder::new()
            .name("lockmeter-record".into())
            .spawn(move || {
                let mut w = Writer {
                    source: &*source,
                    config: &config,
                    file,
                    written: 0,
                    prev,
                    started,
                };
                w.run(&rx);
            })?;
        Ok(Recorder { tx, thread, path })
    }

    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// Asks for the last line; the receiver yields when it is written.
    pub(crate) fn request_finish(&self) -> mpsc::Receiver<()> {
        let (done, wait) = mpsc::sync_channel(1);
        let _ = self.tx.send(Finish {
            last_frame: true,
            done,
        });
        wait
    }

    /// Writes the last line and ends the thread.
    pub(crate) fn finish(self) {
        let _ = self.request_finish().recv();
        drop(self.tx);
        let _ = self.thread.join();
    }
}

fn create(path: &Path) -> io::Result<File> {
    OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .open(path)
        .map_err(|e| {
            io::Error::new(
                e.kind(),
                format!("cannot record to {}: {e}", path.display()),
            )
        })
}

/// Why recording ended early.
enum Stopped {
    Limit(String),
    Failed(io::Error),
}

struct Writer<'a> {
    source: &'a dyn SnapshotSource,
    config: &'a RecordConfig,
    file: File,
    written: u64,
    prev: Snapshot,
    started: Instant,
}

impl Writer<'_> {
    fn run(&mut self, rx: &Receiver<Finish>) {
        let mut next = self.started + self.config.interval;
        loop {
            match rx.recv_timeout(next.saturating_duration_since(Instant::now())) {
                Ok(Finish { last_frame, done }) => {
                    if last_frame {
                        if let Err(stop) = self.frame() {
                            self.report(stop);
                        }
                    }
                    let _ = self.file.sync_data();
                    let _ = done.send(());
                    return;
                }
                Err(RecvTimeoutError::Timeout) => {
                    if let Err(stop) = self.frame() {
                        self.report(stop);
                        let _ = self.file.sync_data();
                        return;
                    }
                    next += self.config.interval;
                    let now = Instant::now();
                    if next <= now {
                        // Fell behind: the next line covers the gap.
                        next = now + self.config.interval;
                    }
                }
                Err(RecvTimeoutError::Disconnected) => return,
            }
        }
    }

    /// Appends the window since the previous line.
    fn frame(&mut self) -> Result<(), Stopped> {
        let cur = self.source.cumulative();
        let window = cur.since(&self.prev);
        self.prev = cur;
        let mut line = serde_json::to_string(&window).map_err(|e| Stopped::Failed(e.into()))?;
        line.push('\n');
        let len = line.len() as u64;
        if let Some(max) = self.config.max_bytes {
            if self.written > 0 && self.written + len > max {
                match self.config.on_full {
                    OnFull::Rotate => self.rotate().map_err(Stopped::Failed)?,
                    OnFull::Stop => {
                        return Err(Stopped::Limit(format!(
                            "reached its size limit of {max} bytes"
                        )));
                    }
                }
            }
        }
        self.file
            .write_all(line.as_bytes())
            .map_err(Stopped::Failed)?;
        self.written += len;
        if let Some(age) = self.config.max_age {
            if self.started.elapsed() >= age {
                return Err(Stopped::Limit(format!(
                    "reached its age limit of {} s",
                    age.as_secs_f64()
                )));
            }
        }
        Ok(())
    }

    /// `PATH` becomes `PATH.1` (replacing an older one); `PATH` starts anew.
    fn rotate(&mut self) -> io::Result<()> {
        let _ = self.file.sync_data();
        let path = &self.config.path;
        fs::rename(path, with_suffix(path, ".1"))?;
        self.file = create(path)?;
        self.written = 0;
        Ok(())
    }

    fn report(&self, stop: Stopped) {
        let path = self.config.path.display();
        match stop {
            Stopped::Limit(why) => report::warn(format_args!("recording {path} stopped: it {why}")),
            Stopped::Failed(e) => report::warn(format_args!("recording {path} stopped: {e}")),
        }
    }
}
