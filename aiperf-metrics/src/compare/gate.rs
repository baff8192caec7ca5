//! `--fail-on-regression METRIC:STAT:PCT`: fail a CI job when the candidate is worse than
//! the baseline by more than PCT percent on one statistic **and** the difference is
//! significant. Without per-request records nothing can be tested, so the percentage
//! alone decides (the outcome says so).

use std::fmt;
use std::str::FromStr;

use serde::Serialize;

use super::diff::{CompareStat, Comparison};
use super::{direction_of, Direction};
use crate::catalogue::metric_def;

/// One regression limit: `tag:stat:percent`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RegressionGate {
    /// Metric tag, e.g. `time_to_first_token`.
    pub tag: String,
    /// Which statistic.
    pub stat: CompareStat,
    /// How many percent worse the candidate may be.
    pub percent: f64,
}

impl fmt::Display for RegressionGate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}:{}", self.tag, self.stat.as_str(), self.percent)
    }
}

/// A `--fail-on-regression` item that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid --fail-on-regression {item:?}: {reason}")]
pub struct GateError {
    item: String,
    reason: String,
}

impl FromStr for RegressionGate {
    type Err = GateError;

    fn from_str(item: &str) -> Result<Self, Self::Err> {
        let error = |reason: String| GateError {
            item: item.to_owned(),
            reason,
        };
        let mut parts = item.split(':');
        let (Some(tag), Some(stat), Some(percent), None) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return Err(error("expected METRIC:STAT:PCT".into()));
        };
        if metric_def(tag).is_none() {
            return Err(error(format!("unknown metric tag {tag:?}")));
        }
        if direction_of(tag).is_none() {
            return Err(error(format!(
                "{tag} has no better or worse direction to regress in"
            )));
        }
        let stat = CompareStat::from_name(stat).ok_or_else(|| {
            error(format!(
                "unknown statistic {stat:?} (one of avg, p50, p90, p99)"
            ))
        })?;
        let percent = percent
            .strip_suffix('%')
            .unwrap_or(percent)
            .parse::<f64>()
            .ok()
            .filter(|p| p.is_finite() && *p >= 0.0)
            .ok_or_else(|| error(format!("{percent:?} is not a percentage ≥ 0")))?;
        Ok(Self {
            tag: tag.to_owned(),
            stat,
            percent,
        })
    }
}

/// Whitespace-separated `METRIC:STAT:PCT` items (each `--fail-on-regression` value may
/// hold several, as `--slo` does).
pub fn parse_gates(text: &str) -> Result<Vec<RegressionGate>, GateError> {
    text.split_whitespace().map(str::parse).collect()
}

/// How one gate fared.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GateOutcome {
    /// The gate.
    pub gate: RegressionGate,
    /// How many percent worse the candidate is (negative: better); `None` when a run
    /// lacks the metric or statistic, so the gate could not be checked.
    pub worse_by_percent: Option<f64>,
    /// Whether the difference is significant; `None` without per-request data, when the
    /// percentage alone decides.
    pub significant: Option<bool>,
    /// True when the candidate regressed beyond the gate.
    pub regressed: bool,
}

impl GateOutcome {
    /// True when the gate could not be checked (metric or statistic missing).
    pub fn missing(&self) -> bool {
        self.worse_by_percent.is_none()
    }
}

impl Comparison {
    /// Checks every gate against this comparison.
    pub fn check_gates(&self, gates: &[RegressionGate]) -> Vec<GateOutcome> {
        gates.iter().map(|gate| self.check_gate(gate)).collect()
    }

    fn check_gate(&self, gate: &RegressionGate) -> GateOutcome {
        let compared = self
            .metric(&gate.tag)
            .and_then(|m| Some((m.direction?, m.stat(gate.stat)?)));
        let Some((direction, stat)) = compared else {
            return GateOutcome {
                gate: gate.clone(),
                worse_by_percent: None,
                significant: None,
                regressed: false,
            };
        };
        let sign = match direction {
            Direction::SmallerIsBetter => 1.0,
            Direction::LargerIsBetter => -1.0,
        };
        // A zero baseline has no percentage: any worsening is infinitely many percent.
        let worse_by = stat.percent.unwrap_or(if stat.difference == 0.0 {
            0.0
        } else {
            stat.difference.signum() * f64::INFINITY
        }) * sign;
        GateOutcome {
            gate: gate.clone(),
            worse_by_percent: Some(worse_by),
            significant: stat.significant,
            regressed: worse_by > gate.percent && stat.significant != Some(false),
        }
    }
}
