//! Dump files: the current window rendered in the format the file name
//! asks for, written atomically, on demand or by a worker thread.
//!
//! The worker thread exists so that neither a signal handler nor the
//! thread that calls `exit` ever computes a snapshot: `SIGUSR1` (through
//! the thread in `signal.rs`) and the exit hook only send it a job, and the
//! exit hook waits a bounded time.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::mpsc::{self, Receiver, Sender, SyncSender};
use std::sync::Arc;
use std::thread::{self, JoinHandle};

use lockmeter_model::render::{self, TableOptions};
use lockmeter_model::Snapshot;

use crate::export::SnapshotSource;
use crate::report;
use lockmeter_wire::write_atomic;

mod signal;

pub(crate) use self::signal::SignalThread;

/// The rendering a dump path asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DumpFormat {
    /// `.json`: the v1 snapshot.
    Json,
    /// `.csv`: one row per lock and call site.
    Csv,
    /// Anything else: the text table.
    Text,
}

impl DumpFormat {
    /// The format for `path`, by its extension (case-insensitive).
    pub fn for_path(path: &Path) -> DumpFormat {
        match path
            .extension()
            .and_then(|e| e.to_str())
            .map(str::to_ascii_lowercase)
            .as_deref()
        {
            Some("json") => DumpFormat::Json,
            Some("csv") => DumpFormat::Csv,
            _ => DumpFormat::Text,
        }
    }

    /// `snap` in this format.
    pub fn render(self, snap: &Snapshot) -> String {
        let opts = TableOptions::default();
        match self {
            DumpFormat::Json => render::json(snap),
            DumpFormat::Csv => render::csv_table(snap, &opts),
            DumpFormat::Text => render::text_table(snap, &opts),
        }
    }
}

/// Writes `snap` to `path` atomically in the format of its extension.
pub(crate) fn write_dump(path: &Path, snap: &Snapshot) -> io::Result<()> {
    write_atomic(path, DumpFormat::for_path(path).render(snap).as_bytes())
}

/// A request to the dump worker.
pub(crate) enum DumpJob {
    /// `SIGUSR1` arrived.
    Signal,
    /// The last dump (exit or shutdown); `done` is signalled when written
    /// or failed.
    Final { done: SyncSender<()> },
}

/// The thread that writes dumps for signals and at exit.
pub(crate) struct DumpWorker {
    tx: Sender<DumpJob>,
    thread: JoinHandle<()>,
}

impl DumpWorker {
    pub(crate) fn start(
        source: Arc<dyn SnapshotSource>,
        path: PathBuf,
        quiet: bool,
    ) -> io::Result<DumpWorker> {
        let (tx, rx) = mpsc::channel();
        let thread = thread::Builder::new()
            .name("lockmeter-dump".into())
            .spawn(move || run(&*source, &path, quiet, rx))?;
        Ok(DumpWorker { tx, thread })
    }

    /// A sender for the signal thread.
    pub(crate) fn sender(&self) -> Sender<DumpJob> {
        self.tx.clone()
    }

    /// Asks for the final dump; the receiver yields when it is done (or
    /// errors if the worker is gone).
    pub(crate) fn request_final(&self) -> Receiver<()> {
        let (done, wait) = mpsc::sync_channel(1);
        let _ = self.tx.send(DumpJob::Final { done });
        wait
    }

    /// Writes the final dump and ends the thread.
    pub(crate) fn finish(self) {
        let wait = self.request_final();
        let _ = wait.recv();
        drop(self.tx);
        let _ = self.thread.join();
    }
}

fn run(source: &dyn SnapshotSource, path: &Path, quiet: bool, rx: Receiver<DumpJob>) {
    for job in rx {
        match job {
            DumpJob::Signal => {
                if dump_or_warn(source, path) {
                    report::info(
                        quiet,
                        format_args!("dumped to {} (SIGUSR1)", path.display()),
                    );
                }
            }
            DumpJob::Final { done } => {
                dump_or_warn(source, path);
                let _ = done.send(());
                // Nothing comes after the final dump.
                return;
            }
        }
    }
}

/// Dumps the current window; a failure is one line on stderr.
fn dump_or_warn(source: &dyn SnapshotSource, path: &Path) -> bool {
    match write_dump(path, &source.snapshot()) {
        Ok(()) => true,
        Err(e) => {
            report::warn(format_args!("dump failed: {e}"));
            false
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_extension_picks_the_format() {
        assert_eq!(
            DumpFormat::for_path(Path::new("/a/b.json")),
            DumpFormat::Json
        );
        assert_eq!(DumpFormat::for_path(Path::new("b.JSON")), DumpFormat::Json);
        assert_eq!(DumpFormat::for_path(Path::new("b.csv")), DumpFormat::Csv);
        assert_eq!(DumpFormat::for_path(Path::new("b.txt")), DumpFormat::Text);
        assert_eq!(DumpFormat::for_path(Path::new("b")), DumpFormat::Text);
        assert_eq!(
            DumpFormat::for_path(Path::new("b.json.txt")),
            DumpFormat::Text
        );
    }
}
