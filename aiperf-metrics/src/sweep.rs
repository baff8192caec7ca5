//! The summary of a parameter sweep: per point, the swept values and the key metrics,
//! and which points are Pareto-optimal on throughput against latency. Written as
//! `sweep_aggregate/profile_export_aiperf_sweep.json` (the Python AIPerf 0.13's sweep
//! schema: `per_combination_metrics`, `best_configurations`, `pareto_optimal`) and
//! `.csv`, and printed as a table.
//!
//! ```
//! use aiperf_metrics::sweep::pareto_optimal;
//!
//! // (throughput, latency): the middle point is worse on both than the last.
//! let flags = pareto_optimal(&[Some((100.0, 10.0)), Some((150.0, 30.0)), Some((200.0, 20.0))]);
//! assert_eq!(flags, [true, false, true]);
//! ```

use std::io::Write;
use std::path::Path;

use serde::ser::{SerializeMap, Serializer};
use serde::Serialize;

use crate::aggregate::{ConfidenceAggregate, MetricsJson};
use crate::export::console::{format_number, TextTable};
use crate::export::json::AIPERF_COMPAT_VERSION;
use crate::MetricsError;

/// The sweep JSON's file name inside `sweep_aggregate/`.
pub const SWEEP_JSON: &str = "profile_export_aiperf_sweep.json";
/// The sweep CSV's file name inside `sweep_aggregate/`.
pub const SWEEP_CSV: &str = "profile_export_aiperf_sweep.csv";

/// The `<tag>_<stat>` columns of a sweep summary, with their console headers.
pub const KEY_METRICS: [(&str, &str, &str); 8] = [
    ("request_throughput", "avg", "Requests/s"),
    ("output_token_throughput", "avg", "Output tok/s"),
    ("time_to_first_token", "avg", "TTFT avg (ms)"),
    ("time_to_first_token", "p99", "TTFT p99 (ms)"),
    ("inter_token_latency", "avg", "ITL avg (ms)"),
    ("inter_token_latency", "p99", "ITL p99 (ms)"),
    ("request_latency", "avg", "Latency avg (ms)"),
    ("request_latency", "p99", "Latency p99 (ms)"),
];

/// The throughput the Pareto front maximises, as in the Python AIPerf 0.13.
pub const PARETO_THROUGHPUT: &str = "request_throughput_avg";
/// The latencies the Pareto front minimises, in order of preference: the first that every
/// successful point has (TTFT when streaming, the whole request otherwise).
pub const PARETO_LATENCIES: [&str; 2] = ["time_to_first_token_p99", "request_latency_p99"];

/// One swept flag's value at a point, e.g. `concurrency` = 8.
#[derive(Debug, Clone, PartialEq)]
pub struct SweepParameter {
    /// The flag's name with underscores, e.g. `request_rate`.
    pub name: String,
    /// Its value at this point.
    pub value: f64,
}

/// One point of the sweep.
#[derive(Debug, Clone, PartialEq)]
pub struct SweepPoint {
    /// The point's directory name, e.g. `concurrency_8_isl_128`.
    pub label: String,
    /// The swept values.
    pub parameters: Vec<SweepParameter>,
    /// The point's aggregate (of its runs, or of its single run), or `None` when the
    /// point failed.
    pub aggregate: Option<ConfidenceAggregate>,
}

impl SweepPoint {
    /// The mean over the point's runs of `key` (`<tag>_<stat>`), when it has one.
    pub fn metric(&self, key: &str) -> Option<f64> {
        let stats = self.aggregate.as_ref()?.metric(key)?;
        Some(stats.mean).filter(|v| v.is_finite())
    }

    /// The [`KEY_METRICS`] values in order (a missing metric is `None`), or `None` when
    /// the point failed.
    pub fn key_metrics(&self) -> Option<Vec<Option<f64>>> {
        self.aggregate.as_ref()?;
        Some(
            KEY_METRICS
                .iter()
                .map(|(tag, stat, _)| self.metric(&format!("{tag}_{stat}")))
                .collect(),
        )
    }
}

/// Which points no other point beats: a point is Pareto-optimal when no other point has
/// at least its throughput and at most its latency while being strictly better on one
/// of the two. Points without both values (`None`) are never optimal.
pub fn pareto_optimal(points: &[Option<(f64, f64)>]) -> Vec<bool> {
    points
        .iter()
        .map(|point| {
            let Some((throughput, latency)) = *point else {
                return false;
            };
            !points
                .iter()
                .flatten()
                .any(|&(t, l)| t >= throughput && l <= latency && (t > throughput || l < latency))
        })
        .collect()
}

/// The whole sweep.
#[derive(Debug, Clone, PartialEq)]
pub struct SweepSummary {
    /// `grid` (every combination) or `zip` (the i-th value of every list together).
    pub sweep_type: String,
    /// The points in the order they ran.
    pub points: Vec<SweepPoint>,
}

impl SweepSummary {
    fn succeeded(&self) -> impl Iterator<Item = &SweepPoint> {
        self.points.iter().filter(|p| p.aggregate.is_some())
    }

    /// The latency the Pareto front and the best latency use: the first of
    /// [`PARETO_LATENCIES`] every successful point has.
    pub fn pareto_latency(&self) -> Option<&'static str> {
        PARETO_LATENCIES
            .into_iter()
            .find(|key| self.succeeded().all(|p| p.metric(key).is_some()))
    }

    /// The Pareto flag of every point, in order.
    pub fn pareto_flags(&self) -> Vec<bool> {
        let latency = self.pareto_latency();
        let objectives: Vec<Option<(f64, f64)>> = self
            .points
            .iter()
            .map(|p| Some((p.metric(PARETO_THROUGHPUT)?, p.metric(latency?)?)))
            .collect();
        pareto_optimal(&objectives)
    }

    fn parameter_names(&self) -> Vec<&str> {
        self.points
            .first()
            .map(|p| p.parameters.iter().map(|q| q.name.as_str()).collect())
            .unwrap_or_default()
    }

    /// Writes `profile_export_aiperf_sweep.json` and `.csv` into `dir` (created when
    /// missing).
    pub fn write_files(&self, dir: &Path) -> Result<(), MetricsError> {
        std::fs::create_dir_all(dir).map_err(|e| MetricsError::io(dir, e))?;
        let json_path = dir.join(SWEEP_JSON);
        std::fs::write(&json_path, self.to_json_string()?)
            .map_err(|e| MetricsError::io(&json_path, e))?;
        let csv_path = dir.join(SWEEP_CSV);
        let mut csv = Vec::new();
        self.write_csv(&mut csv)
            .map_err(|e| MetricsError::io(&csv_path, e))?;
        std::fs::write(&csv_path, csv).map_err(|e| MetricsError::io(&csv_path, e))
    }

    /// The sweep JSON: metadata, then one object per point.
    pub fn to_json_string(&self) -> Result<String, MetricsError> {
        Ok(serde_json::to_string_pretty(&SweepJson(self))?)
    }

    /// The sweep CSV: `point`, the swept flags, `status`, the key metrics (2 decimals,
    /// empty when missing) and `pareto_optimal`, one row per point.
    pub fn write_csv(&self, out: &mut impl Write) -> std::io::Result<()> {
        let mut header = vec!["point".to_owned()];
        header.extend(
            self.parameter_names()
                .iter()
                .map(std::string::ToString::to_string),
        );
        header.push("status".into());
        header.extend(KEY_METRICS.iter().map(|(t, s, _)| format!("{t}_{s}")));
        header.push("pareto_optimal".into());
        writeln!(out, "{}", header.join(","))?;
        for (point, optimal) in self.points.iter().zip(self.pareto_flags()) {
            let mut row = vec![point.label.clone()];
            row.extend(point.parameters.iter().map(|p| p.value.to_string()));
            row.push(status(point).into());
            let values = point.key_metrics().unwrap_or_default();
            row.extend(
                (0..KEY_METRICS.len()).map(|i| match values.get(i).copied().flatten() {
                    Some(v) => format!("{v:.2}"),
                    None => String::new(),
                }),
            );
            row.push(optimal.to_string());
            writeln!(out, "{}", row.join(","))?;
        }
        Ok(())
    }

    /// The console table; Pareto-optimal points are marked `*`.
    pub fn render_table(&self) -> String {
        let names = self.parameter_names();
        let mut headers: Vec<&str> = vec!["Point"];
        headers.extend(names.iter().copied());
        headers.extend(KEY_METRICS.iter().map(|(_, _, h)| *h));
        headers.push("Pareto");
        let mut table =
            TextTable::new("Parameter Sweep Summary (* Pareto-optimal)", &headers).left_align(0);
        for (point, optimal) in self.points.iter().zip(self.pareto_flags()) {
            let mut cells = vec![vec![point.label.clone()]];
            cells.extend(point.parameters.iter().map(|p| vec![p.value.to_string()]));
            match point.key_metrics() {
                Some(values) => {
                    cells.extend(values.iter().map(|v| vec![format_number(*v)]));
                }
                None => cells.extend((0..KEY_METRICS.len()).map(|_| vec!["failed".to_owned()])),
            }
            cells.push(vec![if optimal { "*" } else { "" }.to_owned()]);
            table.row(cells);
        }
        table.render()
    }
}

fn status(point: &SweepPoint) -> &'static str {
    if point.aggregate.is_some() {
        "ok"
    } else {
        "failed"
    }
}

/// The sweep JSON in the Python AIPerf 0.13's schema.
struct SweepJson<'a>(&'a SweepSummary);

impl Serialize for SweepJson<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let s = self.0;
        let runs: usize = s.points.iter().map(SweepPoint::runs).sum();
        let successful_runs: usize = s
            .succeeded()
            .filter_map(|p| p.aggregate.as_ref())
            .map(|a| a.run_labels.len())
            .sum();
        let failed_runs: Vec<&str> = s
            .points
            .iter()
            .filter(|p| p.aggregate.is_none())
            .map(|p| p.label.as_str())
            .collect();
        let combinations: Vec<CombinationJson<'_>> = s
            .succeeded()
            .map(|point| CombinationJson {
                parameters: ParametersJson(&point.parameters),
                metrics: point.aggregate.as_ref().map(|a| MetricsJson(&a.metrics)),
            })
            .collect();
        let pareto: Vec<ParametersJson<'_>> = s
            .points
            .iter()
            .zip(s.pareto_flags())
            .filter(|(_, optimal)| *optimal)
            .map(|(p, _)| ParametersJson(&p.parameters))
            .collect();
        let mut map = serializer.serialize_map(Some(8))?;
        map.serialize_entry("aggregation_type", "sweep")?;
        map.serialize_entry("num_profile_runs", &runs)?;
        map.serialize_entry("num_successful_runs", &successful_runs)?;
        map.serialize_entry("failed_runs", &failed_runs)?;
        map.serialize_entry(
            "metadata",
            &MetadataJson {
                sweep_parameters: s.sweep_parameters(),
                num_combinations: s.points.len(),
                sweep_type: &s.sweep_type,
                aiperf_version: AIPERF_COMPAT_VERSION,
            },
        )?;
        map.serialize_entry("per_combination_metrics", &combinations)?;
        map.serialize_entry("best_configurations", &BestJson(s))?;
        map.serialize_entry("pareto_optimal", &pareto)?;
        map.end()
    }
}

impl SweepPoint {
    /// Runs the point made: its aggregate's, or one for a failed point.
    fn runs(&self) -> usize {
        self.aggregate
            .as_ref()
            .map_or(1, |a| a.num_profile_runs.max(1))
    }
}

impl SweepSummary {
    /// Each swept flag with its values in first-seen order.
    fn sweep_parameters(&self) -> Vec<SweptJson<'_>> {
        let mut swept: Vec<SweptJson<'_>> = Vec::new();
        for parameter in self.points.iter().flat_map(|p| &p.parameters) {
            match swept.iter_mut().find(|s| s.name == parameter.name) {
                Some(entry) if !entry.values.contains(&parameter.value) => {
                    entry.values.push(parameter.value);
                }
                Some(_) => {}
                None => swept.push(SweptJson {
                    name: &parameter.name,
                    values: vec![parameter.value],
                }),
            }
        }
        swept
    }
}

#[derive(Serialize)]
struct SweptJson<'a> {
    name: &'a str,
    values: Vec<f64>,
}

#[derive(Serialize)]
struct MetadataJson<'a> {
    sweep_parameters: Vec<SweptJson<'a>>,
    num_combinations: usize,
    sweep_type: &'a str,
    aiperf_version: &'static str,
}

#[derive(Serialize)]
struct CombinationJson<'a> {
    parameters: ParametersJson<'a>,
    metrics: Option<MetricsJson<'a>>,
}

/// `best_configurations`: the point with the highest request throughput and the one
/// with the lowest p99 latency (the Pareto latency), each with its value.
struct BestJson<'a>(&'a SweepSummary);

#[derive(Serialize)]
struct BestPointJson<'a> {
    parameters: ParametersJson<'a>,
    metric: f64,
    unit: &'a str,
}

impl Serialize for BestJson<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let s = self.0;
        let best = |key: &str, highest: bool| -> Option<BestPointJson<'_>> {
            let (point, value) = s
                .succeeded()
                .filter_map(|p| Some((p, p.metric(key)?)))
                .reduce(|a, b| {
                    let better = if highest { b.1 > a.1 } else { b.1 < a.1 };
                    if better {
                        b
                    } else {
                        a
                    }
                })?;
            let unit = point.aggregate.as_ref()?.metric(key)?.unit.as_str();
            Some(BestPointJson {
                parameters: ParametersJson(&point.parameters),
                metric: value,
                unit,
            })
        };
        let mut map = serializer.serialize_map(None)?;
        if let Some(throughput) = best(PARETO_THROUGHPUT, true) {
            map.serialize_entry("best_throughput", &throughput)?;
        }
        if let Some(latency) = s.pareto_latency().and_then(|key| best(key, false)) {
            map.serialize_entry("best_latency_p99", &latency)?;
        }
        map.end()
    }
}

struct ParametersJson<'a>(&'a [SweepParameter]);

impl Serialize for ParametersJson<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.0.len()))?;
        for p in self.0 {
            map.serialize_entry(&p.name, &p.value)?;
        }
        map.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pareto_keeps_the_points_nothing_beats_on_both() {
        let flags = pareto_optimal(&[
            Some((100.0, 10.0)), // lowest latency: optimal
            Some((150.0, 30.0)), // beaten by (200, 20) on both
            Some((200.0, 20.0)), // optimal
            Some((200.0, 25.0)), // same throughput as (200, 20), worse latency
            None,                // failed point
            Some((250.0, 40.0)), // highest throughput: optimal
        ]);
        assert_eq!(flags, [true, false, true, false, false, true]);
    }

    #[test]
    fn identical_points_are_both_optimal() {
        assert_eq!(
            pareto_optimal(&[Some((1.0, 1.0)), Some((1.0, 1.0))]),
            [true, true]
        );
    }

    /// A point run once whose key metrics are derived from `throughput` (output tokens
    /// per second) and `latency` (request latency average, ms).
    fn point(concurrency: f64, throughput: f64, latency: f64) -> SweepPoint {
        let metrics = [
            ("request_throughput_avg", throughput / 10.0, "requests/sec"),
            ("output_token_throughput_avg", throughput, "tokens/sec"),
            ("time_to_first_token_avg", 5.0, "ms"),
            ("time_to_first_token_p99", 6.0, "ms"),
            ("request_latency_avg", latency, "ms"),
            ("request_latency_p99", latency * 2.0, "ms"),
        ]
        .into_iter()
        .map(|(key, value, unit)| {
            (
                key.to_owned(),
                crate::aggregate::ConfidenceStats::point_estimate(value, unit),
            )
        })
        .collect();
        SweepPoint {
            label: format!("concurrency_{concurrency}"),
            parameters: vec![SweepParameter {
                name: "concurrency".into(),
                value: concurrency,
            }],
            aggregate: Some(ConfidenceAggregate {
                num_profile_runs: 1,
                run_labels: vec!["run".into()],
                failed_runs: Vec::new(),
                confidence_level: 0.95,
                cooldown_seconds: 0.0,
                metrics,
            }),
        }
    }

    /// Three points with the same TTFT p99, so the front is throughput against it:
    /// the highest throughput alone. And a failed point.
    fn summary() -> SweepSummary {
        let failed = SweepPoint {
            label: "concurrency_8".into(),
            parameters: vec![SweepParameter {
                name: "concurrency".into(),
                value: 8.0,
            }],
            aggregate: None,
        };
        SweepSummary {
            sweep_type: "grid".into(),
            points: vec![
                point(1.0, 100.0, 10.0),
                point(2.0, 150.0, 30.0),
                point(4.0, 200.0, 20.0),
                failed,
            ],
        }
    }

    #[test]
    fn the_csv_has_a_row_per_point_with_its_values_and_flag() {
        let mut csv = Vec::new();
        summary().write_csv(&mut csv).unwrap();
        let csv = String::from_utf8(csv).unwrap();
        let lines: Vec<&str> = csv.lines().collect();
        assert_eq!(
            lines,
            [
                "point,concurrency,status,request_throughput_avg,output_token_throughput_avg,\
                 time_to_first_token_avg,time_to_first_token_p99,inter_token_latency_avg,\
                 inter_token_latency_p99,request_latency_avg,request_latency_p99,pareto_optimal",
                "concurrency_1,1,ok,10.00,100.00,5.00,6.00,,,10.00,20.00,false",
                "concurrency_2,2,ok,15.00,150.00,5.00,6.00,,,30.00,60.00,false",
                "concurrency_4,4,ok,20.00,200.00,5.00,6.00,,,20.00,40.00,true",
                "concurrency_8,8,failed,,,,,,,,,false",
            ]
        );
    }

    #[test]
    fn the_json_follows_the_python_sweep_schema() {
        let json: serde_json::Value =
            serde_json::from_str(&summary().to_json_string().unwrap()).unwrap();
        assert_eq!(json["aggregation_type"], "sweep");
        assert_eq!(json["num_profile_runs"], 4);
        assert_eq!(json["num_successful_runs"], 3);
        assert_eq!(json["failed_runs"], serde_json::json!(["concurrency_8"]));
        assert_eq!(
            json["metadata"]["sweep_parameters"],
            serde_json::json!([{"name": "concurrency", "values": [1.0, 2.0, 4.0, 8.0]}])
        );
        assert_eq!(json["metadata"]["num_combinations"], 4);
        let combinations = json["per_combination_metrics"].as_array().unwrap();
        assert_eq!(combinations.len(), 3);
        assert_eq!(
            combinations[1]["parameters"],
            serde_json::json!({"concurrency": 2.0})
        );
        let latency = &combinations[1]["metrics"]["request_latency_avg"];
        assert_eq!(latency["mean"], 30.0);
        assert_eq!(latency["ci_low"], 30.0);
        assert!(latency["t_critical"].is_null(), "one run has no interval");
        // TTFT p99 is the same everywhere: the best latency is the first point reaching it.
        assert_eq!(
            json["best_configurations"],
            serde_json::json!({
                "best_throughput": {"parameters": {"concurrency": 4.0}, "metric": 20.0, "unit": "requests/sec"},
                "best_latency_p99": {"parameters": {"concurrency": 1.0}, "metric": 6.0, "unit": "ms"},
            })
        );
        assert_eq!(
            json["pareto_optimal"],
            serde_json::json!([{"concurrency": 4.0}])
        );
    }

    #[test]
    fn without_ttft_the_front_is_on_request_latency() {
        let mut sweep = summary();
        for point in &mut sweep.points {
            if let Some(aggregate) = &mut point.aggregate {
                aggregate
                    .metrics
                    .retain(|(key, _)| !key.starts_with("time_to_first_token"));
            }
        }
        assert_eq!(sweep.pareto_latency(), Some("request_latency_p99"));
        assert_eq!(sweep.pareto_flags(), [true, false, true, false]);
    }

    #[test]
    fn the_table_marks_pareto_points() {
        let table = summary().render_table();
        let row = |label: &str| {
            table
                .lines()
                .find(|l| l.contains(&format!(" {label} ")))
                .unwrap()
                .to_owned()
        };
        assert!(row("concurrency_4")
            .trim_end_matches('│')
            .trim_end()
            .ends_with('*'));
        assert!(!row("concurrency_2").contains('*'));
        assert!(row("concurrency_8").contains("failed"));
    }
}
