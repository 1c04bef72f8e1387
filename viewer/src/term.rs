//! The terminal session: raw mode, alternate screen and mouse capture, undone
//! in `Drop` and in a panic hook so the user's shell is never left broken.

use std::io::{self, Stdout, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Once;

use crossterm::cursor::Show;
use crossterm::event::{DisableMouseCapture, EnableMouseCapture};
use crossterm::execute;
use crossterm::terminal::{
    disable_raw_mode, enable_raw_mode, EnterAlternateScreen, LeaveAlternateScreen,
};
use ratatui::backend::CrosstermBackend;
use ratatui::Terminal;

/// Set while the terminal is in TUI mode, so the panic hook and `Drop` restore
/// it exactly once.
static ACTIVE: AtomicBool = AtomicBool::new(false);
static HOOK: Once = Once::new();

/// Owns the terminal while the TUI runs; dropping it restores the terminal.
pub struct TerminalGuard {
    pub terminal: Terminal<CrosstermBackend<Stdout>>,
}

impl TerminalGuard {
    /// Switches the terminal to TUI mode and installs the panic hook.
    pub fn enter() -> io::Result<TerminalGuard> {
        install_panic_hook();
        enable_raw_mode()?;
        ACTIVE.store(true, Ordering::SeqCst);
        let mut stdout = io::stdout();
        if let Err(e) = execute!(stdout, EnterAlternateScreen, EnableMouseCapture) {
            restore();
            return Err(e);
        }
        match Terminal::new(CrosstermBackend::new(stdout)) {
            Ok(mut terminal) => {
                let _ = terminal.hide_cursor();
                let _ = terminal.clear();
                Ok(TerminalGuard { terminal })
            }
            Err(e) => {
                restore();
                Err(e)
            }
        }
    }
}

impl Drop for TerminalGuard {
    fn drop(&mut self) {
        restore();
    }
}

/// Leaves TUI mode if it is on. Safe to call any number of times.
///
/// Raw mode goes first, then the alternate screen: whoever sees the normal
/// screen back (a user, a script watching the terminal) may type at once,
/// and must find the terminal cooked already. The other order leaves a
/// window in which the shell's screen is back but the tty is still raw.
pub fn restore() {
    if ACTIVE.swap(false, Ordering::SeqCst) {
        restore_with(&mut Crossterm);
    }
}

/// The two halves of restoring, apart so that their order can be tested.
trait Tty {
    /// Back to the terminal mode from before raw mode.
    fn leave_raw_mode(&mut self) -> io::Result<()>;
    /// Mouse capture off, normal screen, cursor shown, flushed.
    fn leave_screen(&mut self) -> io::Result<()>;
}

/// How often an interrupted `tcsetattr` is retried (a signal arriving
/// while restoring, SIGTERM's own follow-ups included).
const RAW_MODE_ATTEMPTS: usize = 5;

fn restore_with(tty: &mut impl Tty) {
    for _ in 0..RAW_MODE_ATTEMPTS {
        match tty.leave_raw_mode() {
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            _ => break,
        }
    }
    pause_between_halves();
    let _ = tty.leave_screen();
}

/// A test hook: `LOCKMETER_TEST_RESTORE_PAUSE_MS` holds the terminal
/// between the two halves of restoring, so that `viewer/tests/tmux_demo.sh`
/// can look at the state in between (the window is microseconds wide
/// otherwise). Unset, it costs one environment lookup at exit.
fn pause_between_halves() {
    let ms = std::env::var("LOCKMETER_TEST_RESTORE_PAUSE_MS")
        .ok()
        .and_then(|v| v.parse::<u64>().ok())
        .unwrap_or(0)
        .min(5_000);
    if ms > 0 {
        std::thread::sleep(std::time::Duration::from_millis(ms));
    }
}

/// The real terminal.
struct Crossterm;

impl Tty for Crossterm {
    fn leave_raw_mode(&mut self) -> io::Result<()> {
        disable_raw_mode()
    }

    fn leave_screen(&mut self) -> io::Result<()> {
        let mut stdout = io::stdout();
        execute!(stdout, DisableMouseCapture, LeaveAlternateScreen, Show)?;
        stdout.flush()
    }
}

/// Chains a hook that restores the terminal before the default hook prints
/// the panic message, so the message lands on the normal screen.
fn install_panic_hook() {
    HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            restore();
            previous(info);
        }));
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Records the calls; fails `leave_raw_mode` with EINTR `interrupts`
    /// times first.
    #[derive(Default)]
    struct Fake {
        calls: Vec<&'static str>,
        interrupts: usize,
    }

    impl Tty for Fake {
        fn leave_raw_mode(&mut self) -> io::Result<()> {
            self.calls.push("raw");
            if self.interrupts > 0 {
                self.interrupts -= 1;
                return Err(io::ErrorKind::Interrupted.into());
            }
            Ok(())
        }

        fn leave_screen(&mut self) -> io::Result<()> {
            self.calls.push("screen");
            Ok(())
        }
    }

    #[test]
    fn raw_mode_is_left_before_the_screen_is_given_back() {
        let mut t = Fake::default();
        restore_with(&mut t);
        assert_eq!(t.calls, ["raw", "screen"]);
    }

    #[test]
    fn an_interrupted_raw_mode_reset_is_retried() {
        let mut t = Fake {
            interrupts: 2,
            ..Fake::default()
        };
        restore_with(&mut t);
        assert_eq!(t.calls, ["raw", "raw", "raw", "screen"]);
    }
}
