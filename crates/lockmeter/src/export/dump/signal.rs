//! `SIGUSR1` asks for a dump. The handler (signal-hook's) only wakes this
//! thread, which forwards the request to the dump worker: no snapshot is
//! ever computed inside a signal handler.

use std::io;
use std::sync::mpsc::Sender;
use std::thread::{self, JoinHandle};

use signal_hook::consts::SIGUSR1;
use signal_hook::iterator::{Handle, Signals};

use super::DumpJob;

/// The thread waiting for `SIGUSR1`.
pub(crate) struct SignalThread {
    handle: Handle,
    thread: JoinHandle<()>,
}

impl SignalThread {
    /// Installs the handler and starts the thread.
    pub(crate) fn start(jobs: Sender<DumpJob>) -> io::Result<SignalThread> {
        let mut signals = Signals::new([SIGUSR1])?;
        let handle = signals.handle();
        let thread = thread::Builder::new()
            .name("lockmeter-signal".into())
            .spawn(move || {
                for _ in signals.forever() {
                    if jobs.send(DumpJob::Signal).is_err() {
                        break;
                    }
                }
            });
        match thread {
            Ok(thread) => Ok(SignalThread { handle, thread }),
            Err(e) => {
                handle.close();
                Err(e)
            }
        }
    }

    /// Stops waiting and ends the thread. The handler stays installed (as
    /// signal-hook does), so a later `SIGUSR1` is ignored, not fatal.
    pub(crate) fn stop(self) {
        self.handle.close();
        let _ = self.thread.join();
    }
}
