//! Human-readable numbers: durations, percentages, counts and names.
//!
//! Below everything that prints ([`crate::render`], [`crate::advice`]), so
//! that none of them depends on another for its number formatting.

/// A duration in nanoseconds with about three significant digits:
/// `812ns`, `1.4us`, `812us`, `12.3ms`, `3.20s`.
///
/// The unit is chosen after rounding, so 999_960 ns is `1.0ms`, not
/// `1000us`.
///
/// # Examples
///
/// ```
/// use lockmeter_model::format::format_ns;
/// assert_eq!(format_ns(812), "812ns");
/// assert_eq!(format_ns(1_400), "1.4us");
/// assert_eq!(format_ns(12_300_000), "12.3ms");
/// assert_eq!(format_ns(3_200_000_000), "3.20s");
/// ```
pub fn format_ns(ns: u64) -> String {
    if ns < 1_000 {
        return format!("{ns}ns");
    }
    for (scale, unit) in [(1e3, "us"), (1e6, "ms")] {
        let v = ns as f64 / scale;
        if round_to(v, 1) < 100.0 {
            return format!("{v:.1}{unit}");
        }
        if v.round() < 1_000.0 {
            return format!("{v:.0}{unit}");
        }
    }
    let s = ns as f64 / 1e9;
    if round_to(s, 2) < 100.0 {
        format!("{s:.2}s")
    } else if round_to(s, 1) < 1_000.0 {
        format!("{s:.1}s")
    } else {
        format!("{s:.0}s")
    }
}

/// `v` rounded to `decimals` places, as `format!` would print it.
fn round_to(v: f64, decimals: i32) -> f64 {
    let f = 10f64.powi(decimals);
    (v * f).round() / f
}

/// A percentage with one decimal: `58.0%`. Values that are not finite
/// print as `n/a`; absurdly large ones in exponent form.
///
/// # Examples
///
/// ```
/// use lockmeter_model::format::format_pct;
/// assert_eq!(format_pct(58.0), "58.0%");
/// assert_eq!(format_pct(f64::NAN), "n/a");
/// ```
pub fn format_pct(p: f64) -> String {
    if !p.is_finite() {
        "n/a".to_string()
    } else if p.abs() >= 1e6 {
        format!("{p:.1e}%")
    } else if round_to(p, 1) == 0.0 {
        // Avoids "-0.0%" for tiny negative values.
        "0.0%".to_string()
    } else {
        format!("{p:.1}%")
    }
}

/// A plain integer count (no separators, so it pastes into other tools).
pub(crate) fn format_count(n: u64) -> String {
    n.to_string()
}

/// A name made safe for a one-line cell: control characters (newlines,
/// tabs, escapes) are written as Rust escapes so they cannot break the
/// table's layout or drive the terminal.
pub(crate) fn sanitize(name: &str) -> String {
    if !name.chars().any(char::is_control) {
        return name.to_string();
    }
    let mut out = String::with_capacity(name.len() + 8);
    for c in name.chars() {
        if c.is_control() {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_pick_the_unit_after_rounding() {
        assert_eq!(format_ns(0), "0ns");
        assert_eq!(format_ns(999), "999ns");
        assert_eq!(format_ns(1_000), "1.0us");
        assert_eq!(format_ns(99_949), "99.9us");
        assert_eq!(format_ns(99_950), "100us");
        assert_eq!(format_ns(812_000), "812us");
        assert_eq!(format_ns(999_499), "999us");
        assert_eq!(format_ns(999_960), "1.0ms");
        assert_eq!(format_ns(999_600_000), "1.00s");
        assert_eq!(format_ns(99_996_000_000), "100.0s");
        assert_eq!(format_ns(3_600_000_000_000), "3600s");
        assert_eq!(format_ns(u64::MAX), "18446744074s");
    }

    #[test]
    fn percentages_have_one_decimal() {
        assert_eq!(format_pct(0.0), "0.0%");
        assert_eq!(format_pct(-0.01), "0.0%");
        assert_eq!(format_pct(99.96), "100.0%");
        assert_eq!(format_pct(250.0), "250.0%");
        assert_eq!(format_pct(f64::INFINITY), "n/a");
        assert_eq!(format_pct(1e300), "1.0e300%");
    }

    #[test]
    fn control_characters_are_escaped() {
        assert_eq!(sanitize("plain, \"quoted\" ünï"), "plain, \"quoted\" ünï");
        assert_eq!(sanitize("a\nb\tc\u{1b}"), "a\\nb\\tc\\u{1b}");
    }
}
