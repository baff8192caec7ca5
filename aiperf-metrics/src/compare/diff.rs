//! Building the comparison: for every metric both runs report, each statistic side by
//! side, the difference, its significance and whether it is better or worse.

use std::path::PathBuf;

use serde::Serialize;

use super::significance::{bootstrap_percentile_diffs, mann_whitney_u, welch_t, Interval};
use super::significance::{MannWhitney, Welch};
use super::{direction_of, Direction};
use crate::artifacts::{MetricStats, RunArtifacts};
use crate::catalogue::{index_of, metric_def, MetricFlags};

/// Settings of a comparison.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CompareOptions {
    /// Significance level: a difference is significant when its p-value is below `alpha`
    /// (percentiles: when the `1 − alpha` bootstrap interval excludes zero).
    pub alpha: f64,
    /// Seed of the bootstrap resampling.
    pub seed: u64,
    /// Number of bootstrap resamples.
    pub resamples: usize,
}

impl Default for CompareOptions {
    /// α = 0.05, seed 42, 1,000 resamples.
    fn default() -> Self {
        Self {
            alpha: 0.05,
            seed: 42,
            resamples: 1000,
        }
    }
}

/// A statistic compared between runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum CompareStat {
    /// Mean (the value of a single-value metric); tested with Welch's t.
    Avg,
    /// Median; tested with the bootstrap.
    P50,
    /// 90th percentile; tested with the bootstrap.
    P90,
    /// 99th percentile; tested with the bootstrap.
    P99,
}

impl CompareStat {
    /// Every statistic, in display order.
    pub const ALL: [CompareStat; 4] = [Self::Avg, Self::P50, Self::P90, Self::P99];

    /// The spelling in tables, JSON and `--fail-on-regression`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Avg => "avg",
            Self::P50 => "p50",
            Self::P90 => "p90",
            Self::P99 => "p99",
        }
    }

    /// The statistic spelled `name`.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|stat| stat.as_str() == name)
    }

    fn of(self, metric: &MetricStats) -> Option<f64> {
        metric.stat(self.as_str()).filter(|v| v.is_finite())
    }
}

/// Whether the candidate moved the right way.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Change {
    /// Moved the way the metric's direction prefers.
    Better,
    /// Moved the other way.
    Worse,
    /// Identical values.
    Same,
}

/// One statistic of one metric in both runs.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StatComparison {
    /// Which statistic.
    pub stat: CompareStat,
    /// Baseline value (display unit).
    pub baseline: f64,
    /// Candidate value (display unit).
    pub candidate: f64,
    /// `candidate − baseline`.
    pub difference: f64,
    /// The difference in percent of the baseline; `None` when the baseline is zero.
    pub percent: Option<f64>,
    /// Bootstrap confidence interval of the difference (percentiles, when both runs have
    /// enough per-request values: see [`MIN_TAIL_SAMPLES`]).
    pub interval: Option<Interval>,
    /// Whether the difference is significant; `None` without per-request data. For a
    /// percentile with too few samples to bootstrap, the Mann–Whitney test decides.
    pub significant: Option<bool>,
    /// Better or worse by the metric's direction; `None` when it has none.
    pub change: Option<Change>,
}

/// Sample sizes of the per-request values tested.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Samples {
    /// Baseline values.
    pub baseline: usize,
    /// Candidate values.
    pub candidate: usize,
}

/// One metric in both runs.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MetricComparison {
    /// Metric tag.
    pub tag: String,
    /// Display name (the tag for metrics we do not know).
    pub header: String,
    /// Display unit (the baseline's).
    pub unit: String,
    /// Which way is better; `None`: no verdict.
    pub direction: Option<Direction>,
    /// Per-request values tested, when both runs have them for this metric.
    pub samples: Option<Samples>,
    /// Mann–Whitney U on the per-request values.
    pub mann_whitney: Option<MannWhitney>,
    /// Welch's t on the per-request values.
    pub welch: Option<Welch>,
    /// The statistics both runs report.
    pub stats: Vec<StatComparison>,
}

impl MetricComparison {
    /// The comparison of `stat`, if both runs report it.
    pub fn stat(&self, stat: CompareStat) -> Option<&StatComparison> {
        self.stats.iter().find(|s| s.stat == stat)
    }
}

/// Candidate against baseline, metric by metric.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Comparison {
    /// The baseline directory.
    pub baseline: PathBuf,
    /// The candidate directory.
    pub candidate: PathBuf,
    /// Significance level used.
    pub alpha: f64,
    /// Bootstrap seed used.
    pub seed: u64,
    /// Bootstrap resamples used.
    pub resamples: usize,
    /// True when both runs have per-request records (significance can be tested).
    pub per_request_data: bool,
    /// Every metric both runs report in the same unit, in console order (unknown metrics
    /// last, by name).
    pub metrics: Vec<MetricComparison>,
    /// Metrics only the baseline reports (e.g. streaming metrics when the candidate did
    /// not stream), by tag.
    pub only_in_baseline: Vec<String>,
    /// Metrics only the candidate reports, by tag.
    pub only_in_candidate: Vec<String>,
    /// Metrics left out because the runs report them in different units, as
    /// `tag (baseline unit vs candidate unit)`.
    pub unit_mismatches: Vec<String>,
}

impl Comparison {
    /// The comparison of metric `tag`, if both runs report it.
    pub fn metric(&self, tag: &str) -> Option<&MetricComparison> {
        self.metrics.iter().find(|m| m.tag == tag)
    }
}

/// Compares `candidate` against `baseline`.
pub fn compare(
    baseline: &RunArtifacts,
    candidate: &RunArtifacts,
    options: &CompareOptions,
) -> Comparison {
    let mut metrics = Vec::new();
    let mut unit_mismatches = Vec::new();
    for (tag, base) in &baseline.summary.metrics {
        let Some(cand) = candidate.summary.metrics.get(tag) else {
            continue;
        };
        if base.unit != cand.unit {
            unit_mismatches.push(format!("{tag} ({} vs {})", base.unit, cand.unit));
            continue;
        }
        let samples = samples_of(tag, baseline, candidate);
        let metric = compare_metric(tag, base, cand, samples, options);
        if !metric.stats.is_empty() {
            metrics.push(metric);
        }
    }
    metrics.sort_by_key(|m| (index_of(&m.tag).unwrap_or(usize::MAX), m.tag.clone()));
    let only_in = |run: &RunArtifacts, other: &RunArtifacts| -> Vec<String> {
        run.summary
            .metrics
            .keys()
            .filter(|tag| !other.summary.metrics.contains_key(*tag))
            .cloned()
            .collect()
    };
    Comparison {
        baseline: baseline.dir.clone(),
        candidate: candidate.dir.clone(),
        alpha: options.alpha,
        seed: options.seed,
        resamples: options.resamples,
        per_request_data: baseline.records.is_some() && candidate.records.is_some(),
        metrics,
        only_in_baseline: only_in(baseline, candidate),
        only_in_candidate: only_in(candidate, baseline),
        unit_mismatches,
    }
}

/// The per-request values of `tag` in both runs, when both have at least two. A list
/// metric (inter-chunk latency) is left out: its values within one request are not
/// independent samples, and the tests assume they are.
fn samples_of<'a>(
    tag: &str,
    baseline: &'a RunArtifacts,
    candidate: &'a RunArtifacts,
) -> Option<(&'a [f64], &'a [f64])> {
    if metric_def(tag).is_some_and(|d| d.flags.contains(MetricFlags::LIST)) {
        return None;
    }
    let a = baseline.records.as_ref()?.get(tag)?;
    let b = candidate.records.as_ref()?.get(tag)?;
    (a.len() >= 2 && b.len() >= 2).then_some((a.as_slice(), b.as_slice()))
}

fn compare_metric(
    tag: &str,
    base: &MetricStats,
    cand: &MetricStats,
    samples: Option<(&[f64], &[f64])>,
    options: &CompareOptions,
) -> MetricComparison {
    let direction = direction_of(tag);
    let mann_whitney = samples.and_then(|(a, b)| mann_whitney_u(a, b));
    let welch = samples.and_then(|(a, b)| welch_t(a, b));
    let intervals = samples.and_then(|(a, b)| {
        bootstrap_percentile_diffs(
            a,
            b,
            options.alpha,
            options.resamples,
            seed_for(options.seed, tag),
        )
    });
    let stats = CompareStat::ALL
        .into_iter()
        .filter_map(|stat| {
            let (baseline, candidate) = (stat.of(base)?, stat.of(cand)?);
            let difference = candidate - baseline;
            let interval = match stat {
                CompareStat::Avg => None,
                CompareStat::P50 => intervals.map(|i| i[0]),
                CompareStat::P90 => intervals.map(|i| i[1]),
                CompareStat::P99 => intervals.map(|i| i[2]),
            }
            .filter(|_| samples.is_some_and(|(a, b)| enough_tail(stat, a.len().min(b.len()))));
            let significant = samples.map(|_| match stat {
                // Welch's t is undefined when neither sample has any spread: then any
                // difference of the means is certain.
                CompareStat::Avg => welch.map_or(difference != 0.0, |w| w.p_value < options.alpha),
                // Too few samples to bootstrap this percentile: whether the distribution
                // as a whole shifted decides.
                _ => interval.map_or_else(
                    || mann_whitney.is_some_and(|mw| mw.p_value < options.alpha),
                    |i| i.excludes_zero(),
                ),
            });
            Some(StatComparison {
                stat,
                baseline,
                candidate,
                difference,
                percent: (baseline != 0.0).then(|| difference / baseline.abs() * 100.0),
                interval,
                significant,
                change: direction.map(|d| change(d, difference)),
            })
        })
        .collect();
    MetricComparison {
        tag: tag.to_owned(),
        header: metric_def(tag).map_or_else(|| tag.to_owned(), |d| d.header.to_owned()),
        unit: base.unit.clone(),
        direction,
        samples: samples.map(|(a, b)| Samples {
            baseline: a.len(),
            candidate: b.len(),
        }),
        mann_whitney,
        welch,
        stats,
    }
}

/// Samples beyond a percentile that each run must have for its bootstrap to mean anything.
pub const MIN_TAIL_SAMPLES: usize = 5;

/// Whether `n` samples put at least [`MIN_TAIL_SAMPLES`] beyond `stat`: the bootstrap of
/// an extreme percentile of a small sample only reshuffles its few largest values and
/// gives intervals far too narrow (p99 needs 500 samples, p90 50, p50 10); a noise-only
/// rerun of 60 requests came out "significantly better" at p99.
fn enough_tail(stat: CompareStat, n: usize) -> bool {
    let above = match stat {
        CompareStat::Avg => return true,
        CompareStat::P50 => 50,
        CompareStat::P90 => 10,
        CompareStat::P99 => 1,
    };
    n * above >= MIN_TAIL_SAMPLES * 100
}

fn change(direction: Direction, difference: f64) -> Change {
    if difference == 0.0 {
        Change::Same
    } else if (difference > 0.0) == (direction == Direction::LargerIsBetter) {
        Change::Better
    } else {
        Change::Worse
    }
}

/// One bootstrap seed per metric (FNV-1a of the tag mixed into `seed`), so a metric's
/// interval does not depend on which other metrics the runs hold.
fn seed_for(seed: u64, tag: &str) -> u64 {
    tag.bytes()
        .fold(0xcbf2_9ce4_8422_2325 ^ seed, |hash, byte| {
            (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3)
        })
}
