//! Service-level objectives on a run's statistics: "p99 time to first token ≤ 200 ms".
//!
//! Unlike goodput, which judges every request, an SLO judges one statistic of the whole
//! run, so a CI pipeline (or a Rust test) can gate a deployment on it:
//!
//! ```
//! use aiperf_metrics::slo::{parse_slos, Stat};
//!
//! let slos = parse_slos("time_to_first_token:p99:200 request_throughput:avg:50").unwrap();
//! assert_eq!(slos[0].stat, Stat::P99);
//! assert_eq!(slos[1].threshold, 50.0);
//! ```
//!
//! Direction comes from the metric: a metric where larger is better (throughputs) passes
//! when the statistic is at least the threshold, every other metric when it is at most
//! the threshold. Thresholds are in the metric's display unit (ms for latencies).

use std::fmt;
use std::str::FromStr;

use crate::catalogue::{metric_def, MetricFlags};
use crate::summary::{MetricResult, Summary};

/// One objective: `tag:stat:threshold`.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Slo {
    /// Metric tag, e.g. `time_to_first_token`.
    pub tag: String,
    /// Which statistic of the metric.
    pub stat: Stat,
    /// Threshold in the metric's display unit.
    pub threshold: f64,
}

/// A statistic an SLO can name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Stat {
    /// Mean (the value of a single-value metric).
    Avg,
    /// Minimum.
    Min,
    /// Maximum.
    Max,
    /// Population standard deviation.
    Std,
    /// 50th percentile.
    P50,
    /// 75th percentile.
    P75,
    /// 90th percentile.
    P90,
    /// 95th percentile.
    P95,
    /// 99th percentile.
    P99,
}

const STATS: [(&str, Stat); 9] = [
    ("avg", Stat::Avg),
    ("min", Stat::Min),
    ("max", Stat::Max),
    ("std", Stat::Std),
    ("p50", Stat::P50),
    ("p75", Stat::P75),
    ("p90", Stat::P90),
    ("p95", Stat::P95),
    ("p99", Stat::P99),
];

impl Stat {
    /// The spelling used in `--slo` and in the JSON export.
    pub fn as_str(self) -> &'static str {
        STATS
            .iter()
            .find(|(_, stat)| *stat == self)
            .map_or("avg", |(name, _)| name)
    }

    fn of(self, metric: &MetricResult) -> Option<f64> {
        match self {
            Stat::Avg => Some(metric.avg),
            Stat::Min => metric.min,
            Stat::Max => metric.max,
            Stat::Std => metric.std,
            Stat::P50 => metric.p50,
            Stat::P75 => metric.p75,
            Stat::P90 => metric.p90,
            Stat::P95 => metric.p95,
            Stat::P99 => metric.p99,
        }
        .filter(|value| value.is_finite())
    }
}

impl fmt::Display for Slo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}:{}", self.tag, self.stat.as_str(), self.threshold)
    }
}

/// An SLO that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid --slo {item:?}: {reason}")]
pub struct SloError {
    item: String,
    reason: String,
}

impl FromStr for Slo {
    type Err = SloError;

    fn from_str(item: &str) -> Result<Self, Self::Err> {
        let error = |reason: String| SloError {
            item: item.to_owned(),
            reason,
        };
        let mut parts = item.split(':');
        let (Some(tag), Some(stat), Some(threshold), None) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return Err(error("expected metric_tag:stat:threshold".into()));
        };
        if metric_def(tag).is_none() {
            return Err(error(format!("unknown metric tag {tag:?}")));
        }
        let stat = STATS
            .iter()
            .find(|(name, _)| *name == stat)
            .map(|(_, stat)| *stat)
            .ok_or_else(|| {
                let names: Vec<&str> = STATS.iter().map(|(name, _)| *name).collect();
                error(format!(
                    "unknown statistic {stat:?} (one of {})",
                    names.join(", ")
                ))
            })?;
        let threshold = threshold
            .parse::<f64>()
            .ok()
            .filter(|t| t.is_finite())
            .ok_or_else(|| error(format!("threshold {threshold:?} is not a number")))?;
        Ok(Slo {
            tag: tag.to_owned(),
            stat,
            threshold,
        })
    }
}

/// Whitespace-separated `tag:stat:threshold` items, as `--slo` takes them.
pub fn parse_slos(text: &str) -> Result<Vec<Slo>, SloError> {
    text.split_whitespace().map(str::parse).collect()
}

/// How one SLO fared.
#[derive(Debug, Clone, PartialEq)]
pub struct SloOutcome {
    /// The objective.
    pub slo: Slo,
    /// The statistic observed; `None` when the run did not produce it (which fails).
    pub observed: Option<f64>,
    /// The metric's display unit.
    pub unit: &'static str,
    /// True when larger values are better (the threshold is a floor, not a ceiling).
    pub larger_is_better: bool,
    /// Whether the objective was met.
    pub passed: bool,
}

/// The outcome of every SLO of a run.
#[derive(Debug, Clone, PartialEq)]
pub struct SloReport {
    /// One outcome per SLO, in the order given.
    pub outcomes: Vec<SloOutcome>,
}

impl SloReport {
    /// True when every SLO was met.
    pub fn passed(&self) -> bool {
        self.outcomes.iter().all(|o| o.passed)
    }

    /// The report as a console table: one row per SLO and a PASS/FAIL verdict.
    pub fn render(&self) -> String {
        let mut out = String::from("NVIDIA AIPerf | SLO Check\n");
        let rows: Vec<[String; 4]> = self
            .outcomes
            .iter()
            .map(|o| {
                let op = if o.larger_is_better { ">=" } else { "<=" };
                [
                    format!("{} {}", o.slo.tag, o.slo.stat.as_str()),
                    format!("{op} {} {}", o.slo.threshold, o.unit),
                    o.observed
                        .map_or_else(|| "N/A".to_owned(), |v| format!("{v:.2} {}", o.unit)),
                    if o.passed { "PASS" } else { "FAIL" }.to_owned(),
                ]
            })
            .collect();
        let header = ["SLO", "Objective", "Observed", "Result"].map(String::from);
        let widths: Vec<usize> = (0..4)
            .map(|i| {
                rows.iter()
                    .chain(std::iter::once(&header))
                    .map(|row| row[i].chars().count())
                    .max()
                    .unwrap_or(0)
            })
            .collect();
        for row in std::iter::once(&header).chain(&rows) {
            let cells: Vec<String> = row
                .iter()
                .zip(&widths)
                .map(|(cell, width)| format!("{cell:<width$}"))
                .collect();
            out.push_str(cells.join("  ").trim_end());
            out.push('\n');
        }
        out.push_str(if self.passed() {
            "All SLOs met.\n"
        } else {
            "SLOs not met.\n"
        });
        out
    }
}

impl Summary {
    /// Checks `slos` against this run's statistics.
    pub fn check_slos(&self, slos: &[Slo]) -> SloReport {
        let outcomes = slos
            .iter()
            .map(|slo| {
                let def = metric_def(&slo.tag);
                let larger_is_better =
                    def.is_some_and(|d| d.flags.contains(MetricFlags::LARGER_IS_BETTER));
                let observed = self.metric(&slo.tag).and_then(|m| slo.stat.of(m));
                let passed = observed.is_some_and(|value| {
                    if larger_is_better {
                        value >= slo.threshold
                    } else {
                        value <= slo.threshold
                    }
                });
                SloOutcome {
                    slo: slo.clone(),
                    observed,
                    unit: def.map_or("", |d| d.unit),
                    larger_is_better,
                    passed,
                }
            })
            .collect();
        SloReport { outcomes }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn items_parse_and_bad_items_say_why() {
        assert_eq!(
            "request_latency:p90:1000.5".parse::<Slo>().unwrap(),
            Slo {
                tag: "request_latency".into(),
                stat: Stat::P90,
                threshold: 1000.5
            }
        );
        let err = |item: &str| item.parse::<Slo>().unwrap_err().to_string();
        assert_eq!(
            err("ttft:p99:200"),
            "invalid --slo \"ttft:p99:200\": unknown metric tag \"ttft\""
        );
        assert_eq!(
            err("request_latency:p42:1"),
            "invalid --slo \"request_latency:p42:1\": unknown statistic \"p42\" (one of avg, \
             min, max, std, p50, p75, p90, p95, p99)"
        );
        assert!(err("request_latency:p99").contains("expected metric_tag:stat:threshold"));
        assert!(err("request_latency:p99:fast").contains("is not a number"));
    }
}
