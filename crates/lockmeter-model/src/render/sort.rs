//! What to sort rows by, and the options every table rendering takes.

use std::fmt;
use std::str::FromStr;

use crate::Stats;

/// A column to sort locks (and the call sites under each lock) by.
///
/// Numeric keys compare [`SortKey::value`]; [`SortKey::Name`] compares
/// names. Ties are always broken by name, then id, ascending, so the order
/// is deterministic.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum SortKey {
    /// UTIL: share of the window the lock was held.
    Util,
    /// CON: share of acquisitions that had to wait.
    Con,
    /// Mean hold time.
    HoldMean,
    /// 99th percentile hold time.
    HoldP99,
    /// Longest hold.
    HoldMax,
    /// Mean wait (wait queues: mean time asleep).
    WaitMean,
    /// 99th percentile wait.
    WaitP99,
    /// Longest wait.
    WaitMax,
    /// TOTAL: acquisitions.
    Total,
    /// NOWAIT: acquisitions at the first attempt.
    Nowait,
    /// SPIN: contended acquisitions.
    Spin,
    /// RJECT: failed try-locks and timed-out waits.
    Rject,
    /// Wait queues: waiters woken.
    Wakeups,
    /// Wait queues: woken waiters that slept again.
    Spurious,
    /// Wait queues: mean time from wake call to the waiter running.
    WakeLatency,
    /// The lock name (call sites: the site).
    Name,
}

impl SortKey {
    /// Every key, in column order.
    pub const ALL: &'static [SortKey] = &[
        SortKey::Util,
        SortKey::Con,
        SortKey::HoldMean,
        SortKey::HoldP99,
        SortKey::HoldMax,
        SortKey::WaitMean,
        SortKey::WaitP99,
        SortKey::WaitMax,
        SortKey::Total,
        SortKey::Nowait,
        SortKey::Spin,
        SortKey::Rject,
        SortKey::Wakeups,
        SortKey::Spurious,
        SortKey::WakeLatency,
        SortKey::Name,
    ];

    /// The name [`FromStr`] accepts, e.g. `hold_p99`.
    pub fn as_str(self) -> &'static str {
        match self {
            SortKey::Util => "util",
            SortKey::Con => "con",
            SortKey::HoldMean => "hold",
            SortKey::HoldP99 => "hold_p99",
            SortKey::HoldMax => "hold_max",
            SortKey::WaitMean => "wait",
            SortKey::WaitP99 => "wait_p99",
            SortKey::WaitMax => "wait_max",
            SortKey::Total => "total",
            SortKey::Nowait => "nowait",
            SortKey::Spin => "spin",
            SortKey::Rject => "rject",
            SortKey::Wakeups => "wakeups",
            SortKey::Spurious => "spurious",
            SortKey::WakeLatency => "wake_latency",
            SortKey::Name => "name",
        }
    }

    /// A short column title, e.g. `HOLD P99`, for headers and key hints.
    pub fn title(self) -> &'static str {
        match self {
            SortKey::Util => "UTIL",
            SortKey::Con => "CON",
            SortKey::HoldMean => "HOLD MEAN",
            SortKey::HoldP99 => "HOLD P99",
            SortKey::HoldMax => "HOLD MAX",
            SortKey::WaitMean => "WAIT MEAN",
            SortKey::WaitP99 => "WAIT P99",
            SortKey::WaitMax => "WAIT MAX",
            SortKey::Total => "TOTAL",
            SortKey::Nowait => "NOWAIT",
            SortKey::Spin => "SPIN",
            SortKey::Rject => "RJECT",
            SortKey::Wakeups => "WAKEUPS",
            SortKey::Spurious => "SPURIOUS",
            SortKey::WakeLatency => "WAKE LAT",
            SortKey::Name => "NAME",
        }
    }

    /// The number this key sorts by; 0 for [`SortKey::Name`]. Durations are
    /// nanoseconds, percentages are 0..=100 (or more, for UTIL of classes
    /// with several instances).
    pub fn value(self, stats: &Stats) -> f64 {
        match self {
            SortKey::Util => stats.util_pct,
            SortKey::Con => stats.con_pct,
            SortKey::HoldMean => stats.hold_ns.mean as f64,
            SortKey::HoldP99 => stats.hold_ns.p99 as f64,
            SortKey::HoldMax => stats.hold_ns.max as f64,
            SortKey::WaitMean => stats.wait_ns.mean as f64,
            SortKey::WaitP99 => stats.wait_ns.p99 as f64,
            SortKey::WaitMax => stats.wait_ns.max as f64,
            SortKey::Total => stats.acquisitions as f64,
            SortKey::Nowait => stats.nowait as f64,
            SortKey::Spin => stats.contended as f64,
            SortKey::Rject => stats.rejected as f64,
            SortKey::Wakeups => stats.wakeups as f64,
            SortKey::Spurious => stats.spurious_wakeups as f64,
            SortKey::WakeLatency => stats.wake_latency_ns.mean as f64,
            SortKey::Name => 0.0,
        }
    }
}

impl fmt::Display for SortKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A sort key name that is not one of [`SortKey::ALL`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseSortKeyError {
    /// What was given.
    pub input: String,
}

impl fmt::Display for ParseSortKeyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "unknown sort key {:?}; valid keys: ", self.input)?;
        for (i, key) in SortKey::ALL.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            f.write_str(key.as_str())?;
        }
        Ok(())
    }
}

impl std::error::Error for ParseSortKeyError {}

impl FromStr for SortKey {
    type Err = ParseSortKeyError;

    /// Accepts the [`SortKey::as_str`] names in any case, `-` for `_`, and
    /// the aliases `hold_mean`, `wait_mean`, `reject`/`rejected`.
    fn from_str(s: &str) -> Result<SortKey, ParseSortKeyError> {
        let norm = s.trim().to_ascii_lowercase().replace('-', "_");
        let alias = match norm.as_str() {
            "hold_mean" => Some(SortKey::HoldMean),
            "wait_mean" => Some(SortKey::WaitMean),
            "reject" | "rejected" => Some(SortKey::Rject),
            _ => None,
        };
        alias
            .or_else(|| SortKey::ALL.iter().copied().find(|k| k.as_str() == norm))
            .ok_or_else(|| ParseSortKeyError {
                input: s.to_string(),
            })
    }
}

/// How to select, order and decorate the rows of a table.
#[derive(Debug, Clone, PartialEq)]
pub struct TableOptions {
    /// The column to sort locks and their call sites by.
    pub sort: SortKey,
    /// Largest first (the default) or smallest first.
    pub descending: bool,
    /// Keep only the first N top-level locks (each with its nested locks).
    /// The `*TOTAL*` row still sums every lock that passed the filter.
    pub top: Option<usize>,
    /// Show per-call-site rows under each lock.
    pub sites: bool,
    /// Show "held by" rows (the sites that made others wait).
    pub holders: bool,
    /// Keep locks whose id, name or any call site contains this text
    /// (case-insensitive), plus the locks nested inside them.
    pub filter: Option<String>,
    /// Show advisories (`! ...` lines) under the rows they concern, under
    /// default [`Thresholds`](crate::advice::Thresholds) unless given to
    /// [`text_table_with`](super::text_table_with).
    pub advice: bool,
}

impl Default for TableOptions {
    fn default() -> TableOptions {
        TableOptions {
            sort: SortKey::Util,
            descending: true,
            top: None,
            sites: true,
            holders: true,
            filter: None,
            advice: true,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_key_parses_from_its_name() {
        for &key in SortKey::ALL {
            assert_eq!(key.as_str().parse::<SortKey>(), Ok(key));
            assert_eq!(key.as_str().to_uppercase().parse::<SortKey>(), Ok(key));
        }
        assert_eq!("wake-latency".parse::<SortKey>(), Ok(SortKey::WakeLatency));
        assert_eq!("hold_mean".parse::<SortKey>(), Ok(SortKey::HoldMean));
    }

    #[test]
    fn unknown_key_lists_the_valid_ones() {
        let err = "speed".parse::<SortKey>().unwrap_err();
        let msg = err.to_string();
        assert!(msg.starts_with("unknown sort key \"speed\""), "{msg}");
        for key in SortKey::ALL {
            assert!(msg.contains(key.as_str()), "{msg} lacks {key}");
        }
    }
}
