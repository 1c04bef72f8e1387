//! The round trip through a real Prometheus server: the Debian
//! `prometheus` binary, started here on loopback with a generated config
//! and a scratch storage directory, scrapes `examples/prometheus_demo.rs`
//! every second. Its query API must return the program's exact
//! acquisitions for the counter's call site, and `histogram_quantile` over
//! `lockmeter_wait_seconds` must land in the bucket the program's own
//! exact histogram puts each quantile of its forced (>= 24 ms) waits in.
//!
//! Skipped when `prometheus` is not installed, unless
//! `LOCKMETER_REQUIRE_PROMETHEUS=1` (as `.ci/prometheus` sets it).

mod child_common;
mod export_common;
mod prometheus_common;

use std::fs;
use std::net::{SocketAddr, TcpListener};
use std::process::{Child, Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use export_common::scratch_dir;
use prometheus_common::{get, have, only_site, samples, tool_or_skip, Demo, PATIENCE, WAIT_BUCKET};

/// A Prometheus server of our own, killed when dropped.
struct Prometheus {
    child: Child,
    addr: SocketAddr,
}

impl Prometheus {
    fn start(target: SocketAddr) -> Prometheus {
        let dir = scratch_dir("prom");
        // A free port: bind, read it, release it for Prometheus.
        let addr = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap();
        let config = dir.join("prometheus.yml");
        fs::write(
            &config,
            format!(
                "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n  evaluation_interval: 1s\n\
                 scrape_configs:\n  - job_name: lockmeter_demo\n    static_configs:\n      - targets: ['{target}']\n"
            ),
        )
        .unwrap();
        let child = Command::new("prometheus")
            .arg(format!("--config.file={}", config.display()))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.join("data").display()
            ))
            .arg(format!("--web.listen-address={addr}"))
            .arg("--log.level=warn")
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("cannot start prometheus");
        Prometheus { child, addr }
    }

    /// The result vector of an instant query (empty until data arrives).
    fn query(&self, promql: &str) -> Vec<(serde_json::Value, f64)> {
        let reply = get(
            self.addr,
            &format!("/api/v1/query?query={}", percent_encode(promql)),
            None,
        );
        if reply.status != 200 {
            return Vec::new();
        }
        let json: serde_json::Value = serde_json::from_str(&reply.body)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {}", reply.body));
        assert_eq!(json["status"], "success", "{json}");
        json["data"]["result"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| {
                let v = r["value"][1].as_str().unwrap().parse().unwrap();
                (r["metric"].clone(), v)
            })
            .collect()
    }

    /// Polls `promql` until it returns one series with a value that
    /// `done` accepts; that value (or the last seen, on timeout).
    fn wait_for(&self, promql: &str, done: impl Fn(f64) -> bool) -> Option<f64> {
        let end = Instant::now() + PATIENCE;
        let mut last = None;
        while Instant::now() < end {
            // The server may not listen yet: a refused connection panics
            // in `get`, so check first.
            if std::net::TcpStream::connect(self.addr).is_ok() {
                let r = self.query(promql);
                if let [(_, v)] = r.as_slice() {
                    last = Some(*v);
                    if done(*v) {
                        return last;
                    }
                }
            }
            thread::sleep(Duration::from_millis(250));
        }
        last
    }
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Every query of `docs/grafana-dashboard.json`, with Grafana's variables
/// filled in as Grafana would, is valid PromQL for the real server, and
/// every panel finds data over the demo's locks (`prom.held` is held and
/// waited on for good, `prom.busy` stays contended).
fn dashboard_queries_are_valid_and_find_the_demo(prom: &Prometheus) {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../docs/grafana-dashboard.json"
    );
    let dashboard: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(path).unwrap()).unwrap();
    let mut checked = 0;
    for panel in dashboard["panels"].as_array().unwrap() {
        for target in panel["targets"].as_array().unwrap() {
            let expr = target["expr"]
                .as_str()
                .unwrap()
                .replace("$job", ".*")
                .replace("$instance", ".*")
                .replace("$lock", "prom.*")
                .replace("$__rate_interval", "1m")
                .replace("$__range", "1m");
            let reply = get(
                prom.addr,
                &format!("/api/v1/query?query={}", percent_encode(&expr)),
                None,
            );
            assert_eq!(
                reply.status, 200,
                "{}: {expr}: {}",
                panel["title"], reply.body
            );
            checked += 1;
            let found = prom.wait_for(&format!("count({expr})"), |v| v > 0.0);
            assert!(found.is_some(), "{}: no data for {expr}", panel["title"]);
        }
    }
    assert!(checked >= 8, "only {checked} dashboard queries");
}

fn percent_encode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

#[test]
fn prometheus_stores_the_exact_counts_and_the_wait_bucket() {
    if !tool_or_skip("prometheus", have("prometheus", &["--version"])) {
        return;
    }
    let demo = Demo::start("127.0.0.1:0", &["12345", "3", "4"]);
    let metrics = samples(&get(demo.addr, "/metrics", None).body);
    let site = only_site(&metrics, "prom.counter", "lockmeter_acquisitions_total");
    let waiter = metrics
        .iter()
        .find(|s| {
            s.name == "lockmeter_contended_total"
                && s.labels.get("lock").map(String::as_str) == Some("prom.slow")
                && s.value > 0.0
        })
        .and_then(|s| s.labels.get("site").cloned())
        .expect("prom.slow has no contended site");

    let prom = Prometheus::start(demo.addr);
    let up = prom.wait_for("up{job=\"lockmeter_demo\"}", |v| v == 1.0);
    assert_eq!(up, Some(1.0), "Prometheus never scraped the demo");

    let want = demo.acquisitions as f64;
    let got = prom.wait_for(
        &format!("lockmeter_acquisitions_total{{lock=\"prom.counter\",site=\"{site}\"}}"),
        |v| v == want,
    );
    assert_eq!(got, Some(want), "stored acquisitions of {site}");

    let waits = prom.wait_for(
        &format!("lockmeter_wait_seconds_count{{lock=\"prom.slow\",site=\"{waiter}\"}}"),
        |v| v == demo.waits as f64,
    );
    assert_eq!(waits, Some(demo.waits as f64));
    // The bucket each quantile must land in is the one the program's own
    // exact histogram puts it in: the forced waits are at least ~24 ms, but
    // a loaded machine may stretch some of them past the next bound, so
    // the bucket comes from what was measured, not from what was intended.
    let buckets = wait_buckets(&metrics, &waiter);
    for q in [0.5, 0.99] {
        let (low, high) = quantile_bucket(&buckets, q);
        assert!(
            low >= WAIT_BUCKET.0,
            "the program measured p{q} of its >= 24 ms waits below {} s: ({low}, {high}]",
            WAIT_BUCKET.0
        );
        let quantile = prom.wait_for(
            &format!(
                "histogram_quantile({q}, lockmeter_wait_seconds_bucket{{lock=\"prom.slow\",site=\"{waiter}\"}})"
            ),
            |_| true,
        );
        let quantile = quantile.expect("no histogram_quantile result");
        assert!(
            quantile > low && quantile <= high,
            "p{q} of the waits is {quantile} s in Prometheus, outside the program's ({low}, {high}]"
        );
    }
    // Summed the way a dashboard does: the same exact total.
    let sum = prom.wait_for(
        "sum(lockmeter_acquisitions_total{lock=\"prom.counter\"})",
        |v| v == want,
    );
    assert_eq!(sum, Some(want));
    dashboard_queries_are_valid_and_find_the_demo(&prom);
    drop(prom);
    demo.finish();
}

/// The cumulative `(le, count)` buckets of `prom.slow`'s wait histogram at
/// `site`, in order, from the program's own exposition.
fn wait_buckets(metrics: &[prometheus_common::Sample], site: &str) -> Vec<(f64, f64)> {
    let mut buckets: Vec<(f64, f64)> = metrics
        .iter()
        .filter(|s| {
            s.name == "lockmeter_wait_seconds_bucket"
                && s.labels.get("lock").map(String::as_str) == Some("prom.slow")
                && s.labels.get("site").map(String::as_str) == Some(site)
        })
        .map(|s| {
            let le = match s.labels["le"].as_str() {
                "+Inf" => f64::INFINITY,
                v => v.parse().expect("le is a number"),
            };
            (le, s.value)
        })
        .collect();
    buckets.sort_by(|a, b| a.0.total_cmp(&b.0));
    assert!(!buckets.is_empty(), "no wait buckets for {site}");
    buckets
}

/// The bucket `(lower, upper]` holding the `q` quantile of cumulative
/// buckets, the way `histogram_quantile` picks it.
fn quantile_bucket(buckets: &[(f64, f64)], q: f64) -> (f64, f64) {
    let total = buckets.last().unwrap().1;
    let rank = q * total;
    let mut lower = 0.0;
    for &(le, count) in buckets {
        if count >= rank {
            return (lower, le);
        }
        lower = le;
    }
    unreachable!("the +Inf bucket holds every wait")
}
