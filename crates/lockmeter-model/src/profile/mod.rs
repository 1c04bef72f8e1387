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
        let rest = |site: &str, mode: Option<&str>, exact: [f64; 4]| {
            let stacked = covered
                .iter()
                .find(|(s, m, _)| *s == site && *m == mode)
                .map_or([0.0; 4], |c| c.2);
            let mut v = [0.0; 4];
            for i in 0..4 {
                v[i] = (exact[i] - stacked[i]).max(0.0);
            }
            v
        };
        match side {
            Side::Waiter => {
                for site in &lock.sites {
                    let st = &site.stats;
                    let exact = [
                        st.contended as f64,
                        st.wait_ns.total as f64,
                        st.hold_ns.total as f64,
                        st.acquisitions as f64,
                    ];
                    let values = rest(&site.site, site.mode.as_deref(), exact);
                    if values.iter().any(|&v| v > 0.0) {
                        out.push(ProfileSample {
                            frames: vec![ProfileFrame::Site(&site.site)],
                            values,
                            lock,
                            site: &site.site,
                            mode: site.mode.as_deref(),
                        });
                    }
                }
            }
            Side::Holder => {
                for h in &lock.holders {
                    let exact = [h.contended as f64, h.wait_ns_total as f64, 0.0, 0.0];
                    // Holder stacks are keyed by the holder's site and mode;
                    // the holder table has no mode, so add the modes up.
                    let stacked = covered.iter().filter(|(s, _, _)| *s == h.site).fold(
                        [0.0; 4],
                        |mut a, c| {
                            a.iter_mut().zip(c.2).for_each(|(x, y)| *x += y);
                            a
                        },
                    );
                    let mut values = [0.0; 4];
                    for i in 0..4 {
                        values[i] = (exact[i] - stacked[i]).max(0.0);
                    }
                    if values.iter().any(|&v| v > 0.0) {
                        out.push(ProfileSample {
                            frames: vec![ProfileFrame::Site(&h.site)],
                            values,
                            lock,
                            site: &h.site,
                            mode: None,
                        });
                    }
                }
            }
        }
    }
    out
}
