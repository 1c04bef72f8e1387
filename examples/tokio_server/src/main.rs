//! A key-value counter server on tokio's multi-thread runtime, serving
//! loopback TCP under a load it generates itself, with every parking_lot
//! lock in the process (tokio's own included) metered through lockmeter's
//! parking_lot compat crate.
//!
//! Protocol: one line `INCR <key>` per request, answered by the new value.
//! Per request the server takes, exactly once each:
//! - the keyspace lock (`parking_lot::Mutex`, created in this file);
//! - tokio's `watch` channel lock for writing (`send_replace` of the
//!   request count): a `parking_lot::RwLock` inside tokio;
//! - a `static` `tokio::sync::Notify`'s waiter list (`notify_waiters`): a
//!   `parking_lot::const_mutex` inside tokio.
//!
//! `tokio_server [CLIENTS] [REQUESTS_PER_CLIENT]` prints
//! `requests=<N>` and exits; set `LOCKMETER_DUMP=x.json` for the table.

use std::collections::HashMap;
use std::sync::Arc;

use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{watch, Notify};
use tracing_subscriber::prelude::*;

/// Woken on every request, for anyone who waits for activity.
static ACTIVITY: Notify = Notify::const_new();

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
        .worker_threads(2)
        .enable_io()
        .build()
        .expect("runtime");
    let served = rt.block_on(run(clients, per_client));
    drop(rt);
    println!("requests={served}");
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
    while let Some(line) = lines.next_line().await.expect("read request") {
        let reply = match line.strip_prefix("INCR ") {
            Some(key) => {
                let value = {
                    let mut keys = state.keyspace.lock();
                    let v = keys.entry(key.to_owned()).or_insert(0);
                    *v += 1;
                    *v
                };
                state.served.send_modify(|n| *n += 1);
                ACTIVITY.notify_waiters();
                format!("{value}\n")
            }
            None => "ERR unknown command\n".to_owned(),
        };
        wr.write_all(reply.as_bytes()).await.expect("write reply");
    }
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
