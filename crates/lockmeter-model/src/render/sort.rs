//! What to sort rows by, and the options every table rendering takes.

use std::fmt;
use std::str::FromStr;

use std::sync::LazyLock;

use crate::metric::Metric;
use crate::Stats;

/// A column to sort locks (and the call sites under each lock) by: a
/// sortable [`Metric`] or the name.
///
/// Metric keys compare [`SortKey::value`]; [`SortKey::Name`] compares
/// names. Ties are always broken by name, then id, ascending, so the order
/// is deterministic.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum SortKey {
    /// A metric whose table row has a sort name.
    By(Metric),
    /// The lock name (call sites: the site).
    Name,
}

/// The sortable metrics in table order, then the name.
static ALL_KEYS: LazyLock<Vec<SortKey>> = LazyLock::new(|| {
    Metric::ALL
        .iter()
        .filter(|m| m.def().sortable())
        .map(|&m| SortKey::By(m))
        .chain([SortKey::Name])
        .collect()
});

impl SortKey {
    /// Every key, in column order.
    pub fn all() -> &'static [SortKey] {
        &ALL_KEYS
    }

    /// The metric this key sorts by; `None` for [`SortKey::Name`].
    pub fn metric(self) -> Option<Metric> {
        match self {
            SortKey::By(m) => Some(m),
            SortKey::Name => None,
        }
    }

    /// The name [`FromStr`] accepts, e.g. `hold_p99`.
    pub fn as_str(self) -> &'static str {
        match self {
            SortKey::By(m) => m.def().sort.unwrap_or(m.def().name),
            SortKey::Name => "name",
        }
    }

    /// A short column title, e.g. `HOLD P99`, for headers and key hints.
    pub fn title(self) -> &'static str {
        match self {
            SortKey::By(m) => m.def().title,
            SortKey::Name => "NAME",
        }
    }

    /// The number this key sorts by, for stats over a window of
    /// `elapsed_ns`; 0 for [`SortKey::Name`]. Durations are nanoseconds,
    /// percentages are 0..=100 (or more, for UTIL of classes with several
    /// instances).
    pub fn value(self, stats: &Stats, elapsed_ns: u64) -> f64 {
        self.metric()
            .and_then(|m| m.value(stats, elapsed_ns))
            .unwrap_or(0.0)
    }
}

impl fmt::Display for SortKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A sort key name that is not one of [`SortKey::all`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseSortKeyError {
    /// What was given.
    pub input: String,
}

impl fmt::Display for ParseSortKeyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "unknown sort key {:?}; valid keys: ", self.input)?;
        for (i, key) in SortKey::all().iter().enumerate() {
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
            "hold_mean" => Some(SortKey::By(Metric::HoldMean)),
            "wait_mean" => Some(SortKey::By(Metric::WaitMean)),
            "reject" | "rejected" => Some(SortKey::By(Metric::Rejected)),
            _ => None,
        };
        alias
            .or_else(|| SortKey::all().iter().copied().find(|k| k.as_str() == norm))
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
            sort: SortKey::By(Metric::Util),
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
        for &key in SortKey::all() {
            assert_eq!(key.as_str().parse::<SortKey>(), Ok(key));
            assert_eq!(key.as_str().to_uppercase().parse::<SortKey>(), Ok(key));
        }
        assert_eq!(
            "wake-latency".parse::<SortKey>(),
            Ok(SortKey::By(Metric::WakeLatencyMean))
        );
        assert_eq!(
            "hold_mean".parse::<SortKey>(),
            Ok(SortKey::By(Metric::HoldMean))
        );
        let names: Vec<&str> = SortKey::all().iter().map(|k| k.as_str()).collect();
        assert_eq!(
            names.join(", "),
            "util, con, hold, hold_p99, hold_max, wait, wait_p99, wait_max, total, nowait, spin, rject, wakeups, spurious, wake_latency, name"
        );
    }

    #[test]
    fn unknown_key_lists_the_valid_ones() {
        let err = "speed".parse::<SortKey>().unwrap_err();
        let msg = err.to_string();
        assert!(msg.starts_with("unknown sort key \"speed\""), "{msg}");
        for key in SortKey::all() {
            assert!(msg.contains(key.as_str()), "{msg} lacks {key}");
        }
    }
}
