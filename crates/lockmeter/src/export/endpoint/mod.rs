//! The live endpoint: a listening socket (`transport.rs`), an accept
//! thread, and one thread per client (`session.rs`), at most `max_clients`
//! of them.
//!
//! Nothing here runs on an application thread or holds a lock the
//! application uses: clients are served from owned snapshots, and a client
//! that stops reading is dropped after the client timeout, so it can cost
//! one thread and one message of memory, never the application's time.

use std::io::{self, Write};
use std::net::SocketAddr;
use std::os::fd::AsRawFd;
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::thread::{self, JoinHandle};
use std::time::Duration;

use lockmeter_wire::discovery;
use lockmeter_wire::{self as wire, EndpointAddr, EndpointStats, Response};

use crate::export::config::{expand_pid, ListenAddr};
use lockmeter_wire::Stream;

use self::transport::{bind_unix, Listener, SocketFile};
use crate::export::SnapshotSource;

mod session;
mod transport;

use super::clients::{serve_client, ClientSlots};
use super::ACCEPT_ERROR_PAUSE;

/// The endpoint's counters, shared with the client threads.
#[derive(Debug)]
pub(crate) struct Counters {
    pub(crate) slots: ClientSlots,
    pub(crate) accepted: AtomicU64,
    pub(crate) protocol_errors: AtomicU64,
}

impl Counters {
    pub(crate) fn stats(&self) -> EndpointStats {
        EndpointStats {
            clients: self.slots.in_use(),
            max_clients: self.slots.max(),
            accepted: self.accepted.load(Ordering::Relaxed),
            refused_clients: self.slots.refused(),
            dropped_clients: self.slots.dropped(),
            protocol_errors: self.protocol_errors.load(Ordering::Relaxed),
        }
    }
}

/// What the accept thread and the client threads share.
pub(crate) struct Shared {
    pub(crate) source: Arc<dyn SnapshotSource>,
    pub(crate) counters: Arc<Counters>,
    pub(crate) stop: AtomicBool,
    pub(crate) client_timeout: Duration,
    name: OnceLock<String>,
    /// Clones of the open connections, to wake their threads at shutdown.
    conns: Mutex<Vec<(u64, Stream)>>,
    next_conn: AtomicU64,
}

impl Shared {
    /// The process name for the greeting, read from the first snapshot.
    pub(crate) fn process_name(&self) -> &str {
        self.name
            .get_or_init(|| self.source.cumulative().process.name)
    }

    fn forget_conn(&self, id: u64) {
        self.conns
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .retain(|(i, _)| *i != id);
    }
}

/// How an endpoint is set up.
pub(crate) struct EndpointOptions {
    pub(crate) listen: ListenAddr,
    pub(crate) allow_remote: bool,
    pub(crate) max_clients: usize,
    pub(crate) client_timeout: Duration,
}

/// A running endpoint.
pub(crate) struct Endpoint {
    addr: EndpointAddr,
    shared: Arc<Shared>,
    wake: UnixStream,
    acceptor: JoinHandle<()>,
    socket_file: Option<SocketFile>,
}

impl Endpoint {
    /// Binds and starts the accept thread. Errors say what was refused.
    pub(crate) fn start(
        source: Arc<dyn SnapshotSource>,
        opts: EndpointOptions,
    ) -> io::Result<Endpoint> {
        let (listener, addr, socket_file) = bind(&opts)?;
        listener.set_nonblocking(true)?;
        let (wake, wake_rx) = UnixStream::pair()?;
        let counters = Arc::new(Counters {
            slots: ClientSlots::new(opts.max_clients),
            accepted: AtomicU64::new(0),
            protocol_errors: AtomicU64::new(0),
        });
        let shared = Arc::new(Shared {
            source,
            counters,
            stop: AtomicBool::new(false),
            client_timeout: opts.client_timeout,
            name: OnceLock::new(),
            conns: Mutex::new(Vec::new()),
            next_conn: AtomicU64::new(0),
        });
        let for_thread = Arc::clone(&shared);
        let spawned = thread::Builder::new()
            .name("lockmeter-endpoint".into())
            .spawn(move || accept_loop(&listener, &wake_rx, &for_thread));
        match spawned {
            Ok(acceptor) => Ok(Endpoint {
                addr,
                shared,
                wake,
                acceptor,
                socket_file,
            }),
            Err(e) => {
                if let Some(f) = &socket_file {
                    f.remove();
                }
                Err(e)
            }
        }
    }

    /// Where clients connect (with the real port for `tcp://...:0`).
    pub(crate) fn addr(&self) -> &EndpointAddr {
        &self.addr
    }

    pub(crate) fn counters(&self) -> Arc<Counters> {
        Arc::clone(&self.shared.counters)
    }

    /// At exit: stop accepting and remove the socket file, waiting for
    /// nothing (the process is about to end the threads anyway).
    pub(crate) fn stop_at_exit(&self) {
        self.signal_stop();
        if let Some(f) = &self.socket_file {
            f.remove();
        }
    }

    /// Stops accepting, disconnects every client and removes the socket.
    pub(crate) fn stop(self) {
        self.signal_stop();
        let _ = self.acceptor.join();
        for (_, conn) in self
            .shared
            .conns
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
        {
            conn.shutdown();
        }
        if let Some(f) = &self.socket_file {
            f.remove();
        }
    }

    fn signal_stop(&self) {
        self.shared.stop.store(true, Ordering::Release);
        let _ = (&self.wake).write(b"x");
    }
}

/// Opens the listening socket `opts` asks for.
fn bind(opts: &EndpointOptions) -> io::Result<(Listener, EndpointAddr, Option<SocketFile>)> {
    let path = match &opts.listen {
        ListenAddr::Tcp(addr) => return bind_tcp(*addr, opts.allow_remote),
        ListenAddr::Unix(path) => expand_pid(path),
        ListenAddr::Default => {
            let dir = discovery::socket_dir();
            discovery::create_private_dir(&dir)?;
            dir.join(format!("{}.sock", std::process::id()))
        }
    };
    let (listener, file) = bind_unix(&path)?;
    Ok((
        Listener::Unix(listener),
        EndpointAddr::Unix(path),
        Some(file),
    ))
}

fn bind_tcp(
    addr: SocketAddr,
    allow_remote: bool,
) -> io::Result<(Listener, EndpointAddr, Option<SocketFile>)> {
    if !addr.ip().is_loopback() && !allow_remote {
        return Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            format!(
                "refusing to listen on tcp://{addr}: not a loopback address, and the endpoint has no \
                 authentication (set LOCKMETER_LISTEN_ALLOW_REMOTE=1 to force it)"
            ),
        ));
    }
    let listener = std::net::TcpListener::bind(addr)
        .map_err(|e| io::Error::new(e.kind(), format!("cannot listen on tcp://{addr}: {e}")))?;
    let bound = listener.local_addr()?;
    Ok((Listener::Tcp(listener), EndpointAddr::Tcp(bound), None))
}

/// Accepts until the wake socket is written to or closed.
fn accept_loop(listener: &Listener, wake: &UnixStream, shared: &Arc<Shared>) {
    while wait_for_client(listener, wake) {
        if shared.stop.load(Ordering::Acquire) {
            break;
        }
        match listener.accept() {
            Ok(conn) => admit(conn, shared),
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock
                        | io::ErrorKind::Interrupted
                        | io::ErrorKind::ConnectionAborted
                ) => {}
            Err(_) => thread::sleep(ACCEPT_ERROR_PAUSE),
        }
    }
}

/// Blocks until the listener is readable (true) or the wake socket is
/// (false: time to stop).
fn wait_for_client(listener: &Listener, wake: &UnixStream) -> bool {
    let mut fds = [
        libc::pollfd {
            fd: listener.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        },
        libc::pollfd {
            fd: wake.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        },
    ];
    loop {
        // SAFETY: `fds` is a valid array of two pollfd structs, alive and
        // exclusively borrowed for the duration of the call.
        let rc = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, -1) };
        if rc < 0 {
            if io::Error::last_os_error().kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return false;
        }
        if fds[1].revents != 0 {
            return false;
        }
        if fds[0].revents & (libc::POLLERR | libc::POLLNVAL) != 0 {
            return false;
        }
        return fds[0].revents != 0;
    }
}

/// Serves `conn` on a thread of its own, or refuses it when full.
fn admit(conn: Stream, shared: &Arc<Shared>) {
    let counters = &shared.counters;
    if counters.slots.full() {
        refuse(
            &conn,
            counters,
            &format!("too many clients (at most {})", counters.slots.max()),
        );
        return;
    }
    if conn.set_nonblocking(false).is_err() {
        return;
    }
    counters.accepted.fetch_add(1, Ordering::Relaxed);
    let id = shared.next_conn.fetch_add(1, Ordering::Relaxed);
    if let Ok(clone) = conn.try_clone() {
        shared
            .conns
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push((id, clone));
    }
    let served = serve_client(
        shared,
        |s| &s.counters.slots,
        "lockmeter-client",
        move |shared| {
            session::serve(conn, shared);
            shared.forget_conn(id);
        },
    );
    if !served {
        shared.forget_conn(id);
    }
}

fn refuse(conn: &Stream, counters: &Counters, why: &str) {
    counters.slots.count_refused();
    conn.send_once(
        wire::encode(&Response::Error {
            message: why.to_string(),
        })
        .as_bytes(),
    );
    conn.shutdown();
}
