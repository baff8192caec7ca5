//! Confidence aggregation over repeated runs (`--num-profile-runs N`): for every
//! `<tag>_<stat>` of the runs' summaries, the mean, the sample standard deviation and a
//! Student-t confidence interval, written as `profile_export_aiperf_aggregate.json` and
//! `.csv` in the format of the Python AIPerf 0.13.
//!
//! ```
//! use aiperf_metrics::aggregate::confidence_stats;
//!
//! // Three runs with a TTFT average of 10, 12 and 14 ms.
//! let stats = confidence_stats(&[10.0, 12.0, 14.0], 0.95, "ms").unwrap();
//! assert_eq!(stats.mean, 12.0);
//! assert_eq!(stats.std, 2.0);
//! assert!((stats.t_critical - 4.302652729).abs() < 1e-6);
//! ```

use std::collections::HashMap;
use std::io::Write;
use std::path::Path;

use serde::ser::{SerializeMap, Serializer};
use serde::Serialize;
use statrs::distribution::{ContinuousCDF, StudentsT};

use crate::export::json::AIPERF_COMPAT_VERSION;
use crate::summary::{MetricResult, Summary};
use crate::MetricsError;

/// The schema version of the aggregate JSON.
pub const AGGREGATE_SCHEMA_VERSION: &str = "1.0";
/// The aggregate JSON's file name inside `aggregate/`.
pub const AGGREGATE_JSON: &str = "profile_export_aiperf_aggregate.json";
/// The aggregate CSV's file name inside `aggregate/`.
pub const AGGREGATE_CSV: &str = "profile_export_aiperf_aggregate.csv";

/// What can make an aggregation impossible.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum AggregateError {
    /// A confidence interval needs at least two values.
    #[error("a confidence interval needs at least 2 successful runs, got {0}")]
    TooFewRuns(usize),
    /// The confidence level is not strictly between 0 and 1.
    #[error("the confidence level must be between 0 and 1 (exclusive), got {0}")]
    InvalidConfidenceLevel(f64),
}

/// One `<tag>_<stat>` across the runs.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ConfidenceStats {
    /// Mean over the runs.
    pub mean: f64,
    /// Sample standard deviation (n − 1 in the denominator).
    pub std: f64,
    /// Smallest value.
    pub min: f64,
    /// Largest value.
    pub max: f64,
    /// Coefficient of variation `std / |mean|`; infinite when the mean is 0 (written
    /// as `null` in JSON and `inf` in CSV).
    #[serde(serialize_with = "finite_or_null")]
    pub cv: f64,
    /// Standard error `std / √n`.
    pub se: f64,
    /// Lower end of the confidence interval, `mean − t·se`.
    pub ci_low: f64,
    /// Upper end of the confidence interval, `mean + t·se`.
    pub ci_high: f64,
    /// The two-sided Student-t critical value `t(1 − α/2, n − 1)`; NaN (null) for a
    /// single run.
    #[serde(serialize_with = "finite_or_null")]
    pub t_critical: f64,
    /// The metric's display unit.
    pub unit: String,
}

impl ConfidenceStats {
    /// The statistics of a single observation: mean, min and max the value; std, cv and
    /// se 0; the interval collapsed to the value; `t_critical` undefined (NaN, written as
    /// null), as 0.13 writes a single run.
    pub fn point_estimate(value: f64, unit: &str) -> Self {
        Self {
            mean: value,
            std: 0.0,
            min: value,
            max: value,
            cv: 0.0,
            se: 0.0,
            ci_low: value,
            ci_high: value,
            t_critical: f64::NAN,
            unit: unit.to_owned(),
        }
    }
}

fn finite_or_null<S: Serializer>(value: &f64, serializer: S) -> Result<S::Ok, S::Error> {
    if value.is_finite() {
        serializer.serialize_f64(*value)
    } else {
        serializer.serialize_none()
    }
}

/// The confidence statistics of `values` (one per run) at `confidence_level`.
pub fn confidence_stats(
    values: &[f64],
    confidence_level: f64,
    unit: &str,
) -> Result<ConfidenceStats, AggregateError> {
    let t_critical = t_critical(values.len(), confidence_level)?;
    let n = values.len() as f64;
    let mean = values.iter().sum::<f64>() / n;
    let variance = values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1.0);
    let std = variance.sqrt();
    let se = std / n.sqrt();
    let cv = if mean == 0.0 {
        f64::INFINITY
    } else {
        std / mean.abs()
    };
    Ok(ConfidenceStats {
        mean,
        std,
        min: values.iter().copied().fold(f64::INFINITY, f64::min),
        max: values.iter().copied().fold(f64::NEG_INFINITY, f64::max),
        cv,
        se,
        ci_low: mean - t_critical * se,
        ci_high: mean + t_critical * se,
        t_critical,
        unit: unit.to_owned(),
    })
}

/// `t.ppf(1 − α/2, n − 1)` with `α = 1 − confidence_level`.
fn t_critical(runs: usize, confidence_level: f64) -> Result<f64, AggregateError> {
    if !(confidence_level > 0.0 && confidence_level < 1.0) {
        return Err(AggregateError::InvalidConfidenceLevel(confidence_level));
    }
    if runs < 2 {
        return Err(AggregateError::TooFewRuns(runs));
    }
    let alpha = 1.0 - confidence_level;
    let t = StudentsT::new(0.0, 1.0, (runs - 1) as f64)
        .map_err(|_| AggregateError::TooFewRuns(runs))?;
    Ok(t.inverse_cdf(1.0 - alpha / 2.0))
}

/// A run that produced no summary, and why.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FailedRun {
    /// The run's label, e.g. `run_0002`.
    pub label: String,
    /// What went wrong.
    pub error: String,
}

/// The aggregate of a multi-run benchmark.
#[derive(Debug, Clone, PartialEq)]
pub struct ConfidenceAggregate {
    /// Runs asked for (`--num-profile-runs`); [`ConfidenceAggregate::from_runs`] counts
    /// the successful and failed runs, a caller whose sequence stopped early sets it.
    pub num_profile_runs: usize,
    /// Labels of the runs aggregated, in order.
    pub run_labels: Vec<String>,
    /// Runs left out because they failed.
    pub failed_runs: Vec<FailedRun>,
    /// The confidence level of the intervals, e.g. 0.95.
    pub confidence_level: f64,
    /// Seconds waited between runs.
    pub cooldown_seconds: f64,
    /// `<tag>_<stat>` → statistics, in the summaries' metric order.
    pub metrics: Vec<(String, ConfidenceStats)>,
}

/// The statistics of a [`MetricResult`] that are aggregated, by name.
fn metric_values(m: &MetricResult) -> impl Iterator<Item = (&'static str, f64)> + '_ {
    [
        ("avg", Some(m.avg)),
        ("min", m.min),
        ("max", m.max),
        ("p1", m.p1),
        ("p5", m.p5),
        ("p10", m.p10),
        ("p25", m.p25),
        ("p50", m.p50),
        ("p75", m.p75),
        ("p90", m.p90),
        ("p95", m.p95),
        ("p99", m.p99),
        ("std", m.std),
        ("sum", m.sum),
    ]
    .into_iter()
    .filter_map(|(stat, value)| value.filter(|v| v.is_finite()).map(|v| (stat, v)))
}

impl ConfidenceAggregate {
    /// Aggregates the summaries of the successful `runs` (label, summary). A
    /// `<tag>_<stat>` is aggregated over the runs that have a finite value for it and
    /// left out when fewer than two do.
    pub fn from_runs(
        runs: &[(String, &Summary)],
        failed_runs: Vec<FailedRun>,
        confidence_level: f64,
        cooldown_seconds: f64,
    ) -> Result<Self, AggregateError> {
        t_critical(runs.len(), confidence_level)?;
        // First-seen order of the keys, and each key's values over the runs.
        let mut keys: Vec<(String, &'static str)> = Vec::new();
        let mut values: Vec<Vec<f64>> = Vec::new();
        let mut index: HashMap<String, usize> = HashMap::new();
        for (_, summary) in runs {
            for metric in &summary.metrics {
                for (stat, value) in metric_values(metric) {
                    let key = format!("{}_{stat}", metric.tag);
                    if let Some(&i) = index.get(&key) {
                        values[i].push(value);
                    } else {
                        index.insert(key.clone(), keys.len());
                        keys.push((key, metric.unit));
                        values.push(vec![value]);
                    }
                }
            }
        }
        let mut metrics = Vec::with_capacity(keys.len());
        for ((key, unit), values) in keys.into_iter().zip(values) {
            if values.len() >= 2 {
                metrics.push((key, confidence_stats(&values, confidence_level, unit)?));
            }
        }
        Ok(Self {
            num_profile_runs: runs.len() + failed_runs.len(),
            run_labels: runs.iter().map(|(label, _)| label.clone()).collect(),
            failed_runs,
            confidence_level,
            cooldown_seconds,
            metrics,
        })
    }

    /// The aggregate of one run, as the Python AIPerf 0.13 writes it for a sweep point
    /// run once: every `<tag>_<stat>` a point estimate (mean, min and max the run's
    /// value; std, cv and se 0; the interval collapsed to the mean; `t_critical`
    /// undefined, written as null), flagged `single_run` in the metadata.
    pub fn from_single_run(
        label: String,
        summary: &Summary,
        confidence_level: f64,
        cooldown_seconds: f64,
    ) -> Self {
        let metrics = summary
            .metrics
            .iter()
            .flat_map(|metric| {
                metric_values(metric).map(|(stat, value)| {
                    let stats = ConfidenceStats::point_estimate(value, metric.unit);
                    (format!("{}_{stat}", metric.tag), stats)
                })
            })
            .collect();
        Self {
            num_profile_runs: 1,
            run_labels: vec![label],
            failed_runs: Vec::new(),
            confidence_level,
            cooldown_seconds,
            metrics,
        }
    }

    /// True for the aggregate of a single run, which has no confidence interval.
    pub fn is_single_run(&self) -> bool {
        self.run_labels.len() == 1
    }

    /// The statistics of one `<tag>_<stat>`, e.g. `time_to_first_token_p99`.
    pub fn metric(&self, key: &str) -> Option<&ConfidenceStats> {
        self.metrics.iter().find(|(k, _)| k == key).map(|(_, s)| s)
    }

    /// Writes `profile_export_aiperf_aggregate.json` and `.csv` into `dir` (created
    /// when missing).
    pub fn write_files(&self, dir: &Path) -> Result<(), MetricsError> {
        std::fs::create_dir_all(dir).map_err(|e| MetricsError::io(dir, e))?;
        let json_path = dir.join(AGGREGATE_JSON);
        let json = serde_json::to_string_pretty(&AggregateJson(self))?;
        std::fs::write(&json_path, json).map_err(|e| MetricsError::io(&json_path, e))?;
        let csv_path = dir.join(AGGREGATE_CSV);
        let mut csv = Vec::new();
        self.write_csv(&mut csv)
            .map_err(|e| MetricsError::io(&csv_path, e))?;
        std::fs::write(&csv_path, csv).map_err(|e| MetricsError::io(&csv_path, e))
    }

    /// The aggregate CSV: one row per `<tag>_<stat>` (cv, se and t with 4 decimals, the
    /// rest with 2), a blank line, then the metadata.
    pub fn write_csv(&self, out: &mut impl Write) -> std::io::Result<()> {
        writeln!(
            out,
            "metric,mean,std,min,max,cv,se,ci_low,ci_high,t_critical,unit"
        )?;
        for (key, s) in &self.metrics {
            writeln!(
                out,
                "{key},{:.2},{:.2},{:.2},{:.2},{:.4},{:.4},{:.2},{:.2},{:.4},{}",
                s.mean, s.std, s.min, s.max, s.cv, s.se, s.ci_low, s.ci_high, s.t_critical, s.unit
            )?;
        }
        writeln!(out)?;
        writeln!(out, "Aggregation Type,confidence")?;
        writeln!(out, "Total Runs,{}", self.num_profile_runs)?;
        writeln!(out, "Successful Runs,{}", self.run_labels.len())?;
        if !self.failed_runs.is_empty() {
            let labels: Vec<&str> = self.failed_runs.iter().map(|f| f.label.as_str()).collect();
            writeln!(out, "Failed Runs,\"{}\"", python_list(&labels))?;
        }
        writeln!(out, "Confidence Level,{:?}", self.confidence_level)?;
        let labels: Vec<&str> = self.run_labels.iter().map(String::as_str).collect();
        writeln!(out, "Run Labels,\"{}\"", python_list(&labels))?;
        writeln!(out, "Cooldown Seconds,{:?}", self.cooldown_seconds)
    }
}

/// `['a', 'b']`, as Python prints a list of strings.
fn python_list(items: &[&str]) -> String {
    let quoted: Vec<String> = items.iter().map(|s| format!("'{s}'")).collect();
    format!("[{}]", quoted.join(", "))
}

#[derive(Serialize)]
struct MetadataJson<'a> {
    aggregation_type: &'static str,
    num_profile_runs: usize,
    num_successful_runs: usize,
    failed_runs: &'a [FailedRun],
    confidence_level: f64,
    run_labels: &'a [String],
    cooldown_seconds: f64,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    single_run: bool,
}

/// `<tag>_<stat>` → statistics, as a JSON object in order (also the sweep summary's).
pub(crate) struct MetricsJson<'a>(pub(crate) &'a [(String, ConfidenceStats)]);

impl Serialize for MetricsJson<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.0.len()))?;
        for (key, stats) in self.0 {
            map.serialize_entry(key, stats)?;
        }
        map.end()
    }
}

struct AggregateJson<'a>(&'a ConfidenceAggregate);

impl Serialize for AggregateJson<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let a = self.0;
        let mut map = serializer.serialize_map(Some(4))?;
        map.serialize_entry("schema_version", AGGREGATE_SCHEMA_VERSION)?;
        map.serialize_entry("aiperf_version", AIPERF_COMPAT_VERSION)?;
        map.serialize_entry(
            "metadata",
            &MetadataJson {
                aggregation_type: "confidence",
                num_profile_runs: a.num_profile_runs,
                num_successful_runs: a.run_labels.len(),
                failed_runs: &a.failed_runs,
                confidence_level: a.confidence_level,
                run_labels: &a.run_labels,
                cooldown_seconds: a.cooldown_seconds,
                single_run: a.is_single_run(),
            },
        )?;
        map.serialize_entry("metrics", &MetricsJson(&a.metrics))?;
        map.end()
    }
}

/// The aggregate JSON as a string.
pub fn to_json_string(aggregate: &ConfidenceAggregate) -> Result<String, MetricsError> {
    Ok(serde_json::to_string_pretty(&AggregateJson(aggregate))?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalogue::metric_def;
    use crate::catalogue::MetricsContext;
    use aiperf_core::BenchmarkConfig;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() <= 1e-9 * b.abs().max(1.0)
    }

    #[test]
    fn three_runs_give_the_hand_computed_interval() {
        // mean 12, deviations −2, 0, 2 → variance (4 + 0 + 4) / 2 = 4, std 2,
        // se 2/√3 = 1.1547005383792517, t(0.975, 2) = 4.302652729749464 (scipy),
        // half-width 4.302652729749464 × 1.1547005383792517 = 4.968275423500662
        let s = confidence_stats(&[10.0, 12.0, 14.0], 0.95, "ms").unwrap();
        let se = 2.0 / 3f64.sqrt();
        assert_eq!((s.mean, s.std, s.min, s.max), (12.0, 2.0, 10.0, 14.0));
        assert!(close(s.se, se));
        assert!(close(s.cv, 2.0 / 12.0));
        assert!((s.t_critical - 4.302_652_729_749_464).abs() < 1e-9);
        assert!((s.ci_low - (12.0 - 4.968_275_424)).abs() < 1e-6);
        assert!((s.ci_high - (12.0 + 4.968_275_424)).abs() < 1e-6);
        assert_eq!(s.unit, "ms");
    }

    #[test]
    fn two_runs_match_the_python_example() {
        // effective_latency_p99 of examples/multi-run-2: runs 49.618752 and 68.57082368.
        let s = confidence_stats(&[49.618752, 68.57082367999999], 0.95, "ms").unwrap();
        assert!(close(s.mean, 59.094787839999995));
        assert!(close(s.std, 13.401138402461516));
        assert!(close(s.se, 9.476035839999994));
        assert!((s.t_critical - 12.706204736174694).abs() < 1e-9);
        assert!((s.ci_low - -61.30966363036909).abs() < 1e-6);
        assert!(close(s.cv, 0.22677361053812892));
    }

    #[test]
    fn a_zero_mean_has_an_infinite_cv_written_as_null_and_inf() {
        let s = confidence_stats(&[0.0, 0.0], 0.90, "ms").unwrap();
        assert_eq!((s.std, s.se, s.ci_low, s.ci_high), (0.0, 0.0, 0.0, 0.0));
        assert!(s.cv.is_infinite());
        // t(0.95, 1) = tan(π·0.45) = 6.313751514675043.
        assert!((s.t_critical - 6.313_751_514_675_043).abs() < 1e-9);
        let json = serde_json::to_value(&s).unwrap();
        assert!(json["cv"].is_null());
    }

    #[test]
    fn one_run_or_a_bad_level_is_refused() {
        assert_eq!(
            confidence_stats(&[1.0], 0.95, "ms"),
            Err(AggregateError::TooFewRuns(1))
        );
        assert_eq!(
            confidence_stats(&[1.0, 2.0], 1.0, "ms"),
            Err(AggregateError::InvalidConfidenceLevel(1.0))
        );
    }

    fn summary_with(ttft_avg: f64, ttft_p99: f64, requests: f64) -> Summary {
        let mut summary = Summary::new(BenchmarkConfig::default(), MetricsContext::default());
        let ttft = metric_def("time_to_first_token").unwrap();
        let mut m = MetricResult::single(ttft, ttft_avg);
        m.p99 = Some(ttft_p99);
        summary.metrics.push(m);
        let count = metric_def("request_count").unwrap();
        summary.metrics.push(MetricResult::single(count, requests));
        summary
    }

    #[test]
    fn runs_aggregate_per_tag_and_stat_into_the_example_format() {
        let runs = [
            summary_with(10.0, 20.0, 8.0),
            summary_with(12.0, 26.0, 8.0),
            summary_with(14.0, 26.0, 8.0),
        ];
        let labelled: Vec<(String, &Summary)> = runs
            .iter()
            .enumerate()
            .map(|(i, s)| (format!("run_{:04}", i + 1), s))
            .collect();
        let failed = vec![FailedRun {
            label: "run_0004".into(),
            error: "connection refused".into(),
        }];
        let aggregate = ConfidenceAggregate::from_runs(&labelled, failed, 0.95, 1.5).unwrap();
        let keys: Vec<&str> = aggregate.metrics.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(
            keys,
            [
                "time_to_first_token_avg",
                "time_to_first_token_p99",
                "request_count_avg"
            ]
        );
        let p99 = aggregate.metric("time_to_first_token_p99").unwrap();
        // (20, 26, 26): mean 24, variance (16 + 4 + 4) / 2 = 12.
        assert_eq!(p99.mean, 24.0);
        assert!(close(p99.std, 12f64.sqrt()));

        let json: serde_json::Value =
            serde_json::from_str(&to_json_string(&aggregate).unwrap()).unwrap();
        assert_eq!(json["schema_version"], "1.0");
        assert_eq!(json["aiperf_version"], "0.13.0");
        let meta = &json["metadata"];
        assert_eq!(meta["aggregation_type"], "confidence");
        assert_eq!(meta["num_profile_runs"], 4);
        assert_eq!(meta["num_successful_runs"], 3);
        assert_eq!(meta["failed_runs"][0]["label"], "run_0004");
        assert_eq!(meta["confidence_level"], 0.95);
        assert_eq!(meta["run_labels"][2], "run_0003");
        assert_eq!(meta["cooldown_seconds"], 1.5);
        assert_eq!(json["metrics"]["time_to_first_token_avg"]["mean"], 12.0);
        assert_eq!(json["metrics"]["request_count_avg"]["unit"], "requests");

        let mut csv = Vec::new();
        aggregate.write_csv(&mut csv).unwrap();
        let csv = String::from_utf8(csv).unwrap();
        let lines: Vec<&str> = csv.lines().collect();
        assert_eq!(
            lines[0],
            "metric,mean,std,min,max,cv,se,ci_low,ci_high,t_critical,unit"
        );
        assert_eq!(
            lines[1],
            "time_to_first_token_avg,12.00,2.00,10.00,14.00,0.1667,1.1547,7.03,16.97,4.3027,ms"
        );
        assert_eq!(
            lines[3],
            "request_count_avg,8.00,0.00,8.00,8.00,0.0000,0.0000,8.00,8.00,4.3027,requests"
        );
        assert_eq!(
            &lines[4..],
            [
                "",
                "Aggregation Type,confidence",
                "Total Runs,4",
                "Successful Runs,3",
                "Failed Runs,\"['run_0004']\"",
                "Confidence Level,0.95",
                "Run Labels,\"['run_0001', 'run_0002', 'run_0003']\"",
                "Cooldown Seconds,1.5",
            ]
        );
    }
}
