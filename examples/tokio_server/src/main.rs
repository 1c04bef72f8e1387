//! A key-value counter server on tokio's multi-thread runtime, serving
//! loopback TCP under a load it generates itself, with every parking_lot
//! lock in the process (tokio's own included) metered through lockmeter's
//! parking_lot compat crate.
//!
//! Protocol: one line `INCR <key>` per request, answered by the new value.
//! Each request line is read under an idle timeout (a timer entry in
//! tokio's time driver) and its increment runs on tokio's blocking pool
//! (`spawn_blocking`, as CPU-bound work should), so the runtime's own locks
//! (blocking pool, scheduler inject queue and idle set, timer wheel, I/O
//! driver) are taken from many places in tokio's source, by four workers
//! and the blocking threads at once: where they wait is what the stacks
//! tell apart. Per request the server takes, exactly once each:
//! - the keyspace lock (`parking_lot::Mutex`, created in this file), on a
//!   blocking thread;
//! - tokio's `watch` channel lock for writing (`send_replace` of the
//!   request count): a `parking_lot::RwLock` inside tokio;
//! - a `static` `tokio::sync::Notify`'s waiter list (`notify_waiters`): a
//!   `parking_lot::const_mutex` inside tokio.
//!
//! `tokio_server [CLIENTS] [REQUESTS_PER_CLIENT]` prints
//! `requests=<N>` and exits; set `LOCKMETER_DUMP=x.json` for the table,
//! `x.folded` or `x.pb.gz` for the stacks (`LOCKMETER_STACK_RATE=1` to
//! capture every contended wait, the short ones included).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{watch, Notify};
use tracing_subscriber::prelude::*;

/// Woken on every request, for anyone who waits for activity.
static ACTIVITY: Notify = Notify::const_new();

/// How long a connection may stay silent between requests.
const IDLE_TIMEOUT: Duration = Duration::from_secs(30);

struct State {
    keyspace: parking_lot::Mutex<HashMap<String, u64>>,
    served: watch::Sender<u64>,
}

fn main() {
    let mut args = std::env::args().skip(1);
    let clients: u64 = parse(args.next(), 8, "CLIENTS");
    let per_client: u64 = parse(args.next(), 250, "REQUESTS_PER_CLIENT");

    // Global, so tokio's worker and blocking threads are all observed.
    // `Layer::new` honours LOCKMETER_DUMP: the dump is written at exit.
    tracing_subscriber::registry()
        .with(lockmeter::Layer::new())
        .init();

    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(4)
        .enable_io()
        .enable_time()
        .build()
        .expect("runtime");
    let served = rt.block_on(run(clients, per_client));
    drop(rt);
    dump_now();
    println!("requests={served}");
}

/// Writes the `LOCKMETER_DUMP` file now, on this thread, if one is asked
/// for. The dump at exit has a budget of a few seconds (exit must not
/// hang), and resolving the stacks' frames in a debug build on a busy
/// machine can take longer; this one has no deadline, and the frames it
/// resolves are cached for the dump at exit, which writes the file again.
fn dump_now() {
    tracing::dispatcher::get_default(|d| {
        let exporter = d
            .downcast_ref::<lockmeter::Layer>()
            .and_then(lockmeter::Layer::exporter);
        if let Some(Err(e)) = exporter
            .filter(|e| e.dump_path().is_some())
            .map(|e| e.dump_now())
        {
            eprintln!("tokio_server: cannot write the dump: {e}");
        }
    });
}

fn parse(arg: Option<String>, default: u64, what: &str) -> u64 {
    match arg {
        None => default,
        Some(s) => s.parse().unwrap_or_else(|_| {
            eprintln!("tokio_server: {what} must be a number, got {s:?}");
            std::process::exit(2)
        }),
    }
}

async fn run(clients: u64, per_client: u64) -> u64 {
    let listener = TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind loopback");
    let addr = listener.local_addr().expect("local addr");
    let (served, _rx) = watch::channel(0);
    let state = Arc::new(State {
        keyspace: parking_lot::Mutex::new(HashMap::new()),
        served,
    });

    let server = {
        let state = Arc::clone(&state);
        tokio::spawn(async move {
            for _ in 0..clients {
                let (conn, _) = listener.accept().await.expect("accept");
                tokio::spawn(serve(conn, Arc::clone(&state)));
            }
        })
    };

    let load: Vec<_> = (0..clients)
        .map(|c| tokio::spawn(client(addr, c, per_client)))
        .collect();
    for l in load {
        l.await.expect("client task");
    }
    server.await.expect("server task");

    let total: u64 = state.keyspace.lock().values().sum();
    assert_eq!(total, clients * per_client, "every INCR counted once");
    let served = *state.served.borrow();
    served
}

async fn serve(conn: TcpStream, state: Arc<State>) {
    let (rd, mut wr) = conn.into_split();
    let mut lines = BufReader::new(rd).lines();
    loop {
        let line = match tokio::time::timeout(IDLE_TIMEOUT, lines.next_line()).await {
            Ok(line) => line.expect("read request"),
            Err(_) => break, // idle too long: hang up
        };
        let Some(line) = line else { break };
        let reply = match line.strip_prefix("INCR ") {
            Some(key) => {
                let (key, st) = (key.to_owned(), Arc::clone(&state));
                let value = tokio::task::spawn_blocking(move || incr(&st, key))
                    .await
                    .expect("increment");
                state.served.send_modify(|n| *n += 1);
                ACTIVITY.notify_waiters();
                format!("{value}\n")
            }
            None => "ERR unknown command\n".to_owned(),
        };
        wr.write_all(reply.as_bytes()).await.expect("write reply");
    }
}

/// The increment itself, on a blocking thread.
fn incr(state: &State, key: String) -> u64 {
    let mut keys = state.keyspace.lock();
    let v = keys.entry(key).or_insert(0);
    *v += 1;
    *v
}

async fn client(addr: std::net::SocketAddr, id: u64, requests: u64) {
    let conn = TcpStream::connect(addr).await.expect("connect");
    let (rd, mut wr) = conn.into_split();
    let mut replies = BufReader::new(rd).lines();
    for i in 0..requests {
        let key = format!("k{}", (id + i) % 16);
        wr.write_all(format!("INCR {key}\n").as_bytes())
            .await
            .expect("send request");
        let reply = replies.next_line().await.expect("reply").expect("open");
        reply.parse::<u64>().expect("a count");
    }
}
