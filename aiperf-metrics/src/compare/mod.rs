//! `aiperf compare`: is a candidate run better or worse than a baseline run, and is the
//! difference real or noise?
//!
//! Both runs are artifact directories ([`RunArtifacts::read`]): the summary gives each
//! metric's avg, p50, p90 and p99; the per-request records, when both runs wrote them,
//! give the samples for the significance tests ([`significance`]): Welch's t decides
//! whether the mean moved, a seeded bootstrap confidence interval whether a percentile
//! moved, and Mann–Whitney U reports whether the whole distribution shifted. Each change
//! is then called better or worse by the metric's [`Direction`].
//!
//! ```no_run
//! use std::path::Path;
//! use aiperf_metrics::artifacts::RunArtifacts;
//! use aiperf_metrics::compare::{compare, parse_gates, render, CompareOptions};
//!
//! let baseline = RunArtifacts::read(Path::new("artifacts/before"))?;
//! let candidate = RunArtifacts::read(Path::new("artifacts/after"))?;
//! let comparison = compare(&baseline, &candidate, &CompareOptions::default());
//! let gates = parse_gates("time_to_first_token:p99:10")?;
//! let outcomes = comparison.check_gates(&gates);
//! print!("{}", render::console(&comparison, &outcomes));
//! assert!(outcomes.iter().all(|o| !o.regressed));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod diff;
mod gate;
pub mod render;
pub mod significance;

pub use diff::{
    compare, Change, CompareOptions, CompareStat, Comparison, MetricComparison, Samples,
    StatComparison, MIN_TAIL_SAMPLES,
};
pub use gate::{parse_gates, GateError, GateOutcome, RegressionGate};

use crate::catalogue::{metric_def, MetricFlags, MetricId};

#[cfg(doc)]
use crate::artifacts::RunArtifacts;

/// Which way is better for a metric.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Direction {
    /// Throughputs (the catalogue's `LARGER_IS_BETTER`, and any `…/sec` rate).
    LargerIsBetter,
    /// Latencies and durations (ms, sec) and error counts and rates.
    SmallerIsBetter,
}

/// The direction of `tag`, or `None` when a change of it is neither good nor bad (token
/// counts, concurrency) or the metric is not one we know.
pub fn direction_of(tag: &str) -> Option<Direction> {
    let def = metric_def(tag)?;
    if def.flags.contains(MetricFlags::LARGER_IS_BETTER) || def.unit.contains("/sec") {
        // The effective/active throughputs carry no LARGER_IS_BETTER flag (it only steers
        // goodput), yet more tokens per second is better for them too.
        Some(Direction::LargerIsBetter)
    } else if matches!(def.unit, "ms" | "sec")
        || matches!(
            def.id,
            MetricId::RequestErrorRate | MetricId::ErrorRequestCount
        )
    {
        Some(Direction::SmallerIsBetter)
    } else {
        None
    }
}
