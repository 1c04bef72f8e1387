//! One scrape's metric families, encoded by `prometheus-client` from the
//! bounded series of a cumulative snapshot.
//!
//! Histogram buckets are the snapshot's log buckets folded into one bucket
//! per power of two: each `le` is `2^k - 1` ns, the inclusive upper bound
//! of the last log bucket of an octave, so every log bucket falls wholly
//! inside one Prometheus bucket and the counts are exact, not interpolated.
// Without the `prometheus` feature only the server's refusal is compiled in.
#![cfg_attr(not(feature = "prometheus"), allow(dead_code, unused_imports))]

use std::fmt;

use lockmeter_model::series::Series;
use lockmeter_model::{Dist, LockKind, Snapshot};
#[cfg(feature = "prometheus")]
use prometheus_client::collector::Collector;
#[cfg(feature = "prometheus")]
use prometheus_client::encoding::{DescriptorEncoder, MetricEncoder, NoLabelSet};
#[cfg(feature = "prometheus")]
use prometheus_client::metrics::MetricType;
#[cfg(feature = "prometheus")]
use prometheus_client::registry::{Registry, Unit};

/// The smallest exported bucket bound is `2^FIRST_OCTAVE - 1` ns (~1 µs).
const FIRST_OCTAVE: u32 = 10;
/// The largest finite bound is `2^LAST_OCTAVE - 1` ns (~17 s).
const LAST_OCTAVE: u32 = 34;

/// Which exposition format a client gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Format {
    /// Prometheus text format 0.0.4: what `curl` and `promtool` read.
    Text,
    /// OpenMetrics 1.0 text: what a Prometheus server asks for.
    OpenMetrics,
}

impl Format {
    /// The format a request's `Accept` header prefers.
    pub(crate) fn negotiate(accept: Option<&str>) -> Format {
        match accept {
            Some(a) if a.contains("application/openmetrics-text") => Format::OpenMetrics,
            _ => Format::Text,
        }
    }

    pub(crate) fn content_type(self) -> &'static str {
        match self {
            Format::Text => "text/plain; version=0.0.4; charset=utf-8",
            Format::OpenMetrics => "application/openmetrics-text; version=1.0.0; charset=utf-8",
        }
    }
}

/// Everything one scrape exposes.
#[derive(Debug)]
pub(crate) struct Scrape {
    pub(crate) series: Vec<Series>,
    pub(crate) clock: String,
    pub(crate) hold_sampling: u32,
    pub(crate) dropped_records: u64,
    /// Per lock class: (id, kind, threads holding it, threads waiting).
    pub(crate) now: Vec<(String, LockKind, u64, u64)>,
    pub(crate) deadlocks: u64,
}

impl Scrape {
    pub(crate) fn new(cumulative: &Snapshot, series: Vec<Series>) -> Scrape {
        // Every class gets its gauges, zero when nothing is held, so that
        // a series does not come and go with the traffic.
        let mut now: Vec<(String, LockKind, u64, u64)> = cumulative
            .locks
            .iter()
            .map(|l| (l.id.clone(), l.kind, 0, 0))
            .collect();
        for lock in &cumulative.now.locks {
            let i = match now.iter().position(|(id, ..)| *id == lock.id) {
                Some(i) => i,
                None => {
                    now.push((lock.id.clone(), lock.kind, 0, 0));
                    now.len() - 1
                }
            };
            now[i].2 += lock.holders.len() as u64;
            now[i].3 += lock.waiters.len() as u64;
        }
        Scrape {
            series,
            clock: cumulative.clock.clone(),
            hold_sampling: cumulative.sampling.uncontended_hold_every,
            dropped_records: cumulative.dropped_records,
            now,
            deadlocks: cumulative.deadlocks.len() as u64,
        }
    }

    /// The whole exposition in `format`.
    #[cfg(feature = "prometheus")]
    pub(crate) fn encode(self, format: Format) -> String {
        let mut registry = Registry::default();
        registry.register_collector(Box::new(self));
        let mut out = String::new();
        let encoded = match format {
            Format::Text => {
                prometheus_client::encoding::prometheus_text::encode(&mut out, &registry)
            }
            Format::OpenMetrics => prometheus_client::encoding::text::encode(&mut out, &registry),
        };
        // Writing into a String fails only if an encoder rejects a value,
        // which none of ours can be; say so rather than serve half a page.
        if encoded.is_err() {
            out = String::from("# lockmeter: encoding failed\n");
        }
        out
    }

    /// Without the `prometheus` feature no server starts (see
    /// `PrometheusServer::start`), so nothing asks for an exposition.
    #[cfg(not(feature = "prometheus"))]
    pub(crate) fn encode(self, _format: Format) -> String {
        String::from("# lockmeter: built without the prometheus feature\n")
    }
}

/// A counter family: its name (without `_total`), help, the field it
/// reads, and whether it applies to wait queues or to the lock kinds.
struct CounterFamily {
    name: &'static str,
    help: &'static str,
    value: fn(&lockmeter_model::Stats) -> u64,
    applies: fn(LockKind) -> bool,
}

/// The counter families from one line each: `field for applies: help`.
/// A family is named `lockmeter_<field>` after the `Stats` field it
/// reads, so the exported name and the counter cannot drift apart.
macro_rules! counter_families {
    ($($field:ident for $applies:ident: $help:literal,)*) => {
        [$(CounterFamily {
            name: concat!("lockmeter_", stringify!($field)),
            help: $help,
            value: |s| s.$field,
            applies: $applies,
        },)*]
    };
}

fn locks(kind: LockKind) -> bool {
    kind != LockKind::Waitqueue
}

fn queues(kind: LockKind) -> bool {
    kind == LockKind::Waitqueue
}

fn all(_: LockKind) -> bool {
    true
}

const COUNTERS: [CounterFamily; 7] = counter_families! {
    acquisitions for locks: "Successful acquisitions, including successful try-locks (TOTAL).",
    contended for locks: "Acquisitions that had to spin or sleep first (SPIN).",
    rejected for locks: "Failed try-locks and timed-out waits (RJECT).",
    spins for locks: "Busy-wait iterations of contended acquisitions.",
    sleeps for all: "Times a waiter blocked in the OS.",
    wakeups for queues: "Wait queues: waiters woken.",
    spurious_wakeups for queues: "Wait queues: woken waiters whose condition was still false.",
};

/// The labels of one series, in a fixed order.
fn labels(s: &Series) -> [(&'static str, &str); 4] {
    [
        ("lock", s.lock.as_str()),
        ("site", s.site.as_str()),
        ("kind", s.kind.as_str()),
        ("mode", s.mode.as_str()),
    ]
}

#[cfg(feature = "prometheus")]
impl Collector for Scrape {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), fmt::Error> {
        for family in &COUNTERS {
            let mut rows = self
                .series
                .iter()
                .filter(|s| (family.applies)(s.kind))
                .peekable();
            if rows.peek().is_none() {
                continue;
            }
            let mut metric =
                encoder.encode_descriptor(family.name, family.help, None, MetricType::Counter)?;
            for s in rows {
                let labels = labels(s);
                let mut m = metric.encode_family(&labels)?;
                m.encode_counter::<NoLabelSet, u64, f64>(&(family.value)(&s.stats), None)?;
            }
        }
        histogram(
            &mut encoder,
            "lockmeter_wait",
            "Time from the first attempt to acquisition of contended acquisitions; for wait queues, time asleep per wait.",
            &self.series,
            all,
            |s| &s.stats.wait_ns,
        )?;
        histogram(
            &mut encoder,
            "lockmeter_hold",
            "Time from acquisition to release; with sampling, the timed holds scaled to stand for every hold.",
            &self.series,
            locks,
            |s| &s.stats.hold_ns,
        )?;
        for (name, help, pick) in [
            (
                "lockmeter_holders",
                "Threads holding a lock of this class at the scrape.",
                (|n: &(String, LockKind, u64, u64)| n.2)
                    as fn(&(String, LockKind, u64, u64)) -> u64,
            ),
            (
                "lockmeter_waiters",
                "Threads waiting for a lock of this class at the scrape.",
                |n: &(String, LockKind, u64, u64)| n.3,
            ),
        ] {
            if self.now.is_empty() {
                break;
            }
            let mut metric = encoder.encode_descriptor(name, help, None, MetricType::Gauge)?;
            for n in &self.now {
                let labels = [("lock", n.0.as_str()), ("kind", n.1.as_str())];
                metric
                    .encode_family(&labels)?
                    .encode_gauge(&(pick(n) as i64))?;
            }
        }
        unlabelled_counter(
            &mut encoder,
            "lockmeter_deadlocks",
            "Deadlocks found since the layer was built.",
            self.deadlocks,
        )?;
        let hold_every = self.hold_sampling.to_string();
        let info = [
            ("clock", self.clock.as_str()),
            ("uncontended_hold_every", hold_every.as_str()),
            ("version", env!("CARGO_PKG_VERSION")),
        ];
        let mut metric = encoder.encode_descriptor(
            "lockmeter_info",
            "Always 1; its labels are the recorder's clock and hold sampling.",
            None,
            MetricType::Gauge,
        )?;
        metric.encode_family(&info)?.encode_gauge(&1i64)?;
        unlabelled_counter(
            &mut encoder,
            "lockmeter_dropped_records",
            "Records that could not be attributed because a bounded table was full.",
            self.dropped_records,
        )
    }
}

/// A counter family of one sample without labels.
#[cfg(feature = "prometheus")]
fn unlabelled_counter(
    encoder: &mut DescriptorEncoder,
    name: &'static str,
    help: &str,
    value: u64,
) -> Result<(), fmt::Error> {
    encoder
        .encode_descriptor(name, help, None, MetricType::Counter)?
        .encode_counter::<NoLabelSet, u64, f64>(&value, None)
}

/// One histogram family over the series `applies` selects.
#[cfg(feature = "prometheus")]
fn histogram(
    encoder: &mut DescriptorEncoder,
    name: &'static str,
    help: &str,
    series: &[Series],
    applies: fn(LockKind) -> bool,
    dist: fn(&Series) -> &Dist,
) -> Result<(), fmt::Error> {
    let mut rows = series.iter().filter(|s| applies(s.kind)).peekable();
    if rows.peek().is_none() {
        return Ok(());
    }
    let mut metric: MetricEncoder =
        encoder.encode_descriptor(name, help, Some(&Unit::Seconds), MetricType::Histogram)?;
    for s in rows {
        let labels = labels(s);
        let d = dist(s);
        let buckets = fold_buckets(d);
        let count = buckets.iter().map(|&(_, c)| c).sum();
        let sum = d.total as f64 / 1e9;
        metric
            .encode_family(&labels)?
            .encode_histogram::<NoLabelSet>(sum, count, &buckets, None)?;
    }
    Ok(())
}

/// The log buckets of `d` as `(le seconds, count)` per power of two, the
/// last being `+Inf` (counts per bucket, not cumulative).
pub(crate) fn fold_buckets(d: &Dist) -> Vec<(f64, u64)> {
    let bounds: Vec<u64> = (FIRST_OCTAVE..=LAST_OCTAVE)
        .map(|k| (1u64 << k) - 1)
        .collect();
    let mut counts = vec![0u64; bounds.len() + 1];
    for &(upper, c) in &d.buckets {
        let i = bounds.partition_point(|&b| b < upper);
        counts[i] = counts[i].saturating_add(c);
    }
    bounds
        .iter()
        .map(|&b| b as f64 / 1e9)
        .chain(std::iter::once(f64::INFINITY))
        .zip(counts)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use lockmeter_model::dist::{bucket_index, bucket_upper_bound, BUCKETS};

    #[test]
    fn every_log_bucket_falls_inside_one_exported_bucket() {
        for idx in 0..BUCKETS {
            let upper = bucket_upper_bound(idx);
            let lower = lockmeter_model::dist::bucket_lower_bound(idx);
            let d = Dist {
                buckets: vec![(upper, 1)],
                ..Dist::default()
            };
            let folded = fold_buckets(&d);
            let (le, _) = folded.iter().find(|&&(_, c)| c == 1).unwrap();
            // Both ends of the log bucket are within this `le` and above
            // the previous one: the fold never splits a bucket.
            let le_ns = if le.is_infinite() {
                u64::MAX
            } else {
                (le * 1e9).round() as u64
            };
            assert!(upper <= le_ns, "bucket {idx}");
            let prev = folded
                .iter()
                .take_while(|(b, _)| b < le)
                .last()
                .map_or(0, |(b, _)| (b * 1e9).round() as u64);
            assert!(lower > prev || prev == 0, "bucket {idx}");
        }
        // 20 ms lands in (2^24 - 1, 2^25 - 1] ns.
        let d = Dist {
            buckets: vec![(bucket_upper_bound(bucket_index(20_000_000)), 3)],
            ..Dist::default()
        };
        let folded = fold_buckets(&d);
        let (le, c) = folded.iter().find(|&&(_, c)| c > 0).unwrap();
        assert_eq!((*le, *c), (((1u64 << 25) - 1) as f64 / 1e9, 3));
    }
}
