//! The stack settings of [`LayerBuilder`]. Their `LOCKMETER_*` variables
//! (read in `crate::env`) win over the builder, like
//! `LOCKMETER_HOLD_SAMPLING`.

use std::time::Duration;

use super::{StackSettings, DEFAULT_STACK_DEPTH, DEFAULT_STACK_RATE};
use crate::LayerBuilder;

/// What a [`LayerBuilder`] was told about stacks.
#[derive(Default, Debug, Clone)]
pub(crate) struct StackOptions {
    rate: Option<Duration>,
    depth: Option<usize>,
    skip: Vec<String>,
}

impl LayerBuilder {
    /// Captures the stacks of contended acquisitions (waiter and holder
    /// side) with a probability that grows with the wait: a wait of `d` is
    /// captured with probability `min(1, d / rate)` and counts `1/p` times,
    /// like Go's block profile rate (default [`DEFAULT_STACK_RATE`], 1 ms:
    /// every wait of 1 ms or more). `Duration::ZERO` turns stacks off.
    /// `LOCKMETER_STACK_RATE` (nanoseconds) wins over this. Uncontended
    /// acquisitions never capture a stack.
    pub fn stack_rate(mut self, rate: Duration) -> Self {
        self.stacks.rate = Some(rate);
        self
    }

    /// Frames kept per stack (default [`DEFAULT_STACK_DEPTH`], at most
    /// [`MAX_STACK_DEPTH`](crate::MAX_STACK_DEPTH)); `LOCKMETER_STACK_DEPTH` wins over this.
    pub fn stack_depth(mut self, frames: usize) -> Self {
        self.stacks.depth = Some(frames);
        self
    }

    /// Adds module-path prefixes (`my_crate::sync::`) of wrapper frames to
    /// fold away in stack views, so that the first frame outside them
    /// names the real caller. lockmeter's own frames, `lock_api`,
    /// `parking_lot` (the drop-in) and tokio's loom shim (`tokio::loom::`)
    /// are skipped by default ([`DEFAULT_SKIP_FRAMES`]);
    /// `LOCKMETER_SKIP_FRAMES` (comma-separated) adds more.
    ///
    /// [`DEFAULT_SKIP_FRAMES`]: crate::DEFAULT_SKIP_FRAMES
    pub fn skip_frames<I, S>(mut self, prefixes: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.stacks
            .skip
            .extend(prefixes.into_iter().map(Into::into));
        self
    }
}

impl StackOptions {
    /// The settings, with the environment (`crate::env::stacks`) applied.
    pub(crate) fn settings(&self) -> StackSettings {
        let env = crate::env::stacks();
        let rate = env
            .rate_ns
            .or(self
                .rate
                .map(|d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)))
            .unwrap_or(DEFAULT_STACK_RATE.as_nanos() as u64);
        let depth = env.depth.or(self.depth).unwrap_or(DEFAULT_STACK_DEPTH);
        let mut skip = StackSettings::default_skip();
        for p in self.skip.iter().chain(&env.skip) {
            if !skip.contains(p) {
                skip.push(p.clone());
            }
        }
        StackSettings::new(rate, depth, skip)
    }
}
