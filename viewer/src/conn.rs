//! Keeping a subscription to a live endpoint alive: a background thread
//! that connects with [`lockmeter_wire::Client`], forwards updates to the
//! UI, and reconnects with backoff when the target goes away.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use lockmeter_model::Snapshot;
use lockmeter_wire::{Client, ClientError, EndpointAddr, Hello, Request, Response, Writer};

/// How long a one-shot request waits for the greeting and the answer.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(5);
/// How often the subscription thread wakes from a blocking read to check
/// whether it should stop.
const POLL: Duration = Duration::from_millis(200);

/// Delay between reconnection attempts: doubles from [`Backoff::INITIAL`]
/// to [`Backoff::MAX`], back to the start after a good connection.
#[derive(Debug, Clone)]
pub struct Backoff {
    next: Duration,
    pub attempt: u32,
}

impl Backoff {
    pub const INITIAL: Duration = Duration::from_millis(250);
    pub const MAX: Duration = Duration::from_secs(5);

    pub fn new() -> Backoff {
        Backoff {
            next: Backoff::INITIAL,
            attempt: 0,
        }
    }

    /// The delay before the next attempt; each call doubles the following.
    pub fn next_delay(&mut self) -> Duration {
        let d = self.next;
        self.next = (self.next * 2).min(Backoff::MAX);
        self.attempt += 1;
        d
    }

    pub fn reset(&mut self) {
        *self = Backoff::new();
    }
}

impl Default for Backoff {
    fn default() -> Self {
        Backoff::new()
    }
}

/// What the subscription thread reports to the UI.
#[derive(Debug)]
pub enum ConnEvent {
    Connected(Hello),
    Update {
        interval: Box<Snapshot>,
        cumulative: Box<Snapshot>,
    },
    /// The endpoint acknowledged a reset.
    ResetDone,
    /// The connection failed or closed; the thread will retry.
    Lost(String),
    /// The next attempt happens after `delay`.
    Retrying {
        attempt: u32,
        delay: Duration,
    },
}

/// State shared between the UI and the subscription thread.
struct Control {
    stop: AtomicBool,
    /// A second handle to the current connection, for sending resets and
    /// for shutting the socket down to wake the reader.
    writer: Mutex<Option<Writer>>,
}

/// A subscription to a live endpoint, kept alive by a background thread.
/// Dropping it stops the thread.
pub struct Live {
    pub target: EndpointAddr,
    events: Receiver<ConnEvent>,
    control: Arc<Control>,
    thread: Option<thread::JoinHandle<()>>,
}

impl Live {
    /// Starts the subscription thread; events start arriving on
    /// [`Live::try_recv`].
    pub fn spawn(target: EndpointAddr, interval: Duration) -> Live {
        let (tx, rx) = mpsc::channel();
        let control = Arc::new(Control {
            stop: AtomicBool::new(false),
            writer: Mutex::new(None),
        });
        let thread = {
            let control = Arc::clone(&control);
            let target = target.clone();
            thread::Builder::new()
                .name("lockmeter-conn".into())
                .spawn(move || subscription(target, interval, tx, control))
                .ok()
        };
        Live {
            target,
            events: rx,
            control,
            thread,
        }
    }

    /// The next event, if one is waiting.
    pub fn try_recv(&self) -> Option<ConnEvent> {
        self.events.try_recv().ok()
    }

    /// Asks the endpoint to reset its window. The acknowledgement arrives as
    /// [`ConnEvent::ResetDone`].
    pub fn reset(&self) -> Result<(), String> {
        let guard = self
            .control
            .writer
            .lock()
            .map_err(|_| "connection state poisoned".to_string())?;
        match guard.as_ref() {
            Some(w) => w
                .send(&Request::Reset)
                .map_err(|e| format!("reset failed: {e}")),
            None => Err("not connected".to_string()),
        }
    }
}

impl Drop for Live {
    fn drop(&mut self) {
        self.control.stop.store(true, Ordering::SeqCst);
        if let Ok(guard) = self.control.writer.lock() {
            if let Some(w) = guard.as_ref() {
                w.shutdown();
            }
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// The subscription thread: connect, subscribe, forward updates; on any
/// failure report it, wait with backoff, and start over.
fn subscription(
    target: EndpointAddr,
    interval: Duration,
    tx: Sender<ConnEvent>,
    control: Arc<Control>,
) {
    let mut backoff = Backoff::new();
    while !control.stop.load(Ordering::SeqCst) {
        let reason = match session(&target, interval, &tx, &control, &mut backoff) {
            Ok(()) => return, // stopped, or the UI went away
            Err(e) => e.to_string(),
        };
        if let Ok(mut w) = control.writer.lock() {
            *w = None;
        }
        if control.stop.load(Ordering::SeqCst) || tx.send(ConnEvent::Lost(reason)).is_err() {
            return;
        }
        let delay = backoff.next_delay();
        let retry = ConnEvent::Retrying {
            attempt: backoff.attempt,
            delay,
        };
        if tx.send(retry).is_err() {
            return;
        }
        let until = Instant::now() + delay;
        while Instant::now() < until {
            if control.stop.load(Ordering::SeqCst) {
                return;
            }
            thread::sleep(POLL.min(until.saturating_duration_since(Instant::now())));
        }
    }
}

/// One connection's life. `Ok(())` means stop for good.
fn session(
    target: &EndpointAddr,
    interval: Duration,
    tx: &Sender<ConnEvent>,
    control: &Control,
    backoff: &mut Backoff,
) -> Result<(), ClientError> {
    let mut client = Client::connect(target, REQUEST_TIMEOUT)?;
    let writer = client.writer()?;
    client.subscribe(interval)?;
    if let Ok(mut w) = control.writer.lock() {
        *w = Some(writer);
    }
    backoff.reset();
    if tx
        .send(ConnEvent::Connected(client.hello().clone()))
        .is_err()
    {
        return Ok(());
    }
    loop {
        if control.stop.load(Ordering::SeqCst) {
            return Ok(());
        }
        let msg = match client.recv_until(Instant::now() + POLL) {
            Err(_) if control.stop.load(Ordering::SeqCst) => return Ok(()),
            other => other?,
        };
        let event = match msg {
            None => continue,
            Some(Response::Update {
                interval,
                cumulative,
                ..
            }) => ConnEvent::Update {
                interval: Box::new(interval),
                cumulative: Box::new(cumulative),
            },
            Some(Response::Ok) => ConnEvent::ResetDone,
            Some(Response::Stats(_)) => continue,
            Some(Response::Error { message }) => {
                return Err(ClientError::Remote {
                    target: client.target().to_string(),
                    message,
                })
            }
            Some(other) => {
                return Err(ClientError::Protocol {
                    target: client.target().to_string(),
                    detail: format!("unexpected {} message", other.kind()),
                })
            }
        };
        if tx.send(event).is_err() {
            return Ok(());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_up_to_the_cap_and_resets() {
        let mut b = Backoff::new();
        let delays: Vec<Duration> = (0..8).map(|_| b.next_delay()).collect();
        assert_eq!(delays[0], Backoff::INITIAL);
        assert_eq!(delays[1], Backoff::INITIAL * 2);
        assert!(delays.windows(2).all(|w| w[0] <= w[1]));
        assert_eq!(*delays.last().unwrap(), Backoff::MAX);
        assert_eq!(b.attempt, 8);
        b.reset();
        assert_eq!(b.next_delay(), Backoff::INITIAL);
    }
}
