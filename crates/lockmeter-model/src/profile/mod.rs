//! Profiles for other tools: pprof, folded stacks and flame graphs.
//!
//! Every format is made from one list of [`ProfileSample`]s, built by
//! [`samples`] for one [`Side`] of the wait:
//!
//! - each captured stack gives a sample with its estimated contentions,
//!   wait, hold (after the wait) and acquisitions (= its contentions);
//! - each call site gives one more sample whose only frame is the site,
//!   with what its stacks do not account for: the exact counts and times
//!   minus the stacks' estimates. A dump without stacks therefore exports
//!   one frame per call site, and a profile's totals match the table.
//!
//! The encoders are pure (bytes or text out, no I/O): the viewer and the
//! library's dump writer put them into files.

use crate::stacks::{Frame, Side};
use crate::{LockStats, Snapshot};

pub mod file;
pub mod flamegraph;
pub mod folded;
pub mod pprof;

/// The values every sample carries, in this order (the pprof sample types).
pub const METRICS: [Metric; 4] = [
    Metric::Contentions,
    Metric::Wait,
    Metric::Hold,
    Metric::Acquisitions,
];

/// One value of a sample.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Metric {
    /// Contended acquisitions (waiter) or waits caused (holder), a count.
    Contentions,
    /// Time waited, ns.
    Wait,
    /// Time held after a contended acquisition (or, for a call-site
    /// sample, every other hold), ns.
    Hold,
    /// Acquisitions, a count.
    Acquisitions,
}

impl Metric {
    /// The pprof sample type and unit.
    pub fn pprof_type(self) -> (&'static str, &'static str) {
        match self {
            Metric::Contentions => ("contentions", "count"),
            Metric::Wait => ("wait", "nanoseconds"),
            Metric::Hold => ("hold", "nanoseconds"),
            Metric::Acquisitions => ("acquisitions", "count"),
        }
    }

    fn index(self) -> usize {
        METRICS.iter().position(|&m| m == self).unwrap_or(0)
    }
}

impl std::str::FromStr for Metric {
    type Err = String;
    fn from_str(s: &str) -> Result<Metric, String> {
        match s {
            "contentions" | "con" => Ok(Metric::Contentions),
            "wait" => Ok(Metric::Wait),
            "hold" => Ok(Metric::Hold),
            "acquisitions" | "total" => Ok(Metric::Acquisitions),
            other => Err(format!(
                "unknown metric {other:?} (expected wait, hold, contentions or acquisitions)"
            )),
        }
    }
}

/// One stack (or call site) with its values and labels.
#[derive(Debug, Clone, PartialEq)]
pub struct ProfileSample<'a> {
    /// Leaf first, wrapper frames already folded away.
    pub frames: Vec<ProfileFrame<'a>>,
    /// Indexed like [`METRICS`].
    pub values: [f64; 4],
    /// The lock the stack waited for (or held).
    pub lock: &'a LockStats,
    /// The call site of the acquisition (holder side: the holder's).
    pub site: &'a str,
    /// `read` or `write` for rwlocks.
    pub mode: Option<&'a str>,
}

impl ProfileSample<'_> {
    /// The value of one metric.
    pub fn value(&self, m: Metric) -> f64 {
        self.values[m.index()]
    }
}

/// A frame of a profile: a resolved one, or a call site standing for a
/// stack that was not captured.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ProfileFrame<'a> {
    /// A frame of a captured stack.
    Resolved(&'a Frame),
    /// A call site (`file:line:col`) standing for its uncaptured stacks.
    Site(&'a str),
}

impl<'a> ProfileFrame<'a> {
    /// The name shown for the frame.
    pub fn name(&self) -> &'a str {
        match self {
            ProfileFrame::Resolved(f) => &f.function,
            ProfileFrame::Site(s) => s,
        }
    }
}

/// The samples of one side of every lock's waits (see the module docs).
pub fn samples(snap: &Snapshot, side: Side) -> Vec<ProfileSample<'_>> {
    let stacks = &snap.stacks;
    let mut out = Vec::new();
    for lock in &snap.locks {
        // (site, mode, estimates) of the stacks taken at each site.
        let mut covered: Vec<(&str, Option<&str>, [f64; 4])> = Vec::new();
        for s in stacks
            .samples
            .iter()
            .filter(|s| s.side == side && s.lock == lock.id)
        {
            let mut frames: Vec<ProfileFrame<'_>> =
                stacks.shown_frames(s).map(ProfileFrame::Resolved).collect();
            if frames.is_empty() {
                frames.push(ProfileFrame::Site(&s.site));
            }
            let acquisitions = if side == Side::Waiter {
                s.contentions
            } else {
                0.0
            };
            let values = [s.contentions, s.wait_ns, s.hold_ns, acquisitions];
            match covered
                .iter_mut()
                .find(|(site, mode, _)| *site == s.site && *mode == s.mode.as_deref())
            {
                Some((_, _, sum)) => sum.iter_mut().zip(values).for_each(|(a, b)| *a += b),
                None => covered.push((&s.site, s.mode.as_deref(), values)),
            }
            out.push(ProfileSample {
                frames,
                values,
                lock,
                site: &s.site,
                mode: s.mode.as_deref(),
            });
        }
        // What the stacks taken at a site do not account for: `exact` minus
        // the estimates of the stacks whose site and mode pass `taken_at`.
        let rest = |exact: [f64; 4], taken_at: &dyn Fn(&str, Option<&str>) -> bool| {
            let mut stacked = [0.0; 4];
            for (_, _, estimates) in covered.iter().filter(|(s, m, _)| taken_at(s, *m)) {
                stacked.iter_mut().zip(estimates).for_each(|(a, e)| *a += e);
            }
            std::array::from_fn(|i| (exact[i] - stacked[i]).max(0.0))
        };
        let sites: Vec<(&str, Option<&str>, [f64; 4])> = match side {
            Side::Waiter => lock
                .sites
                .iter()
                .map(|site| {
                    let (at, mode, st) = (site.site.as_str(), site.mode.as_deref(), &site.stats);
                    let exact = [
                        st.contended as f64,
                        st.wait_ns.total as f64,
                        st.hold_ns.total as f64,
                        st.acquisitions as f64,
                    ];
                    (at, mode, rest(exact, &|s, m| s == at && m == mode))
                })
                .collect(),
            // Holder stacks are keyed by the holder's site and mode; the
            // holder table has no mode, so the modes add up.
            Side::Holder => lock
                .holders
                .iter()
                .map(|h| {
                    let exact = [h.contended as f64, h.wait_ns_total as f64, 0.0, 0.0];
                    (h.site.as_str(), None, rest(exact, &|s, _| s == h.site))
                })
                .collect(),
        };
        for (site, mode, values) in sites {
            if values.iter().any(|&v| v > 0.0) {
                out.push(ProfileSample {
                    frames: vec![ProfileFrame::Site(site)],
                    values,
                    lock,
                    site,
                    mode,
                });
            }
        }
    }
    out
}
