//! The summary of a parameter sweep: per point, the swept values and the key metrics,
//! and which points are Pareto-optimal on throughput against latency. Written as
//! `sweep_aggregate/profile_export_aiperf_sweep.json` and `.csv`, and printed as a table.
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

use crate::aggregate::ConfidenceAggregate;
use crate::export::console::{format_number, TextTable};
use crate::export::json::AIPERF_COMPAT_VERSION;
use crate::summary::Summary;
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

/// The throughput the Pareto front maximises (request throughput stands in when a run
/// produces no tokens, e.g. embeddings).
pub const PARETO_THROUGHPUT: &str = "output_token_throughput_avg";
/// The latency the Pareto front minimises.
pub const PARETO_LATENCY: &str = "request_latency_avg";

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
    /// The [`KEY_METRICS`] values in order (a missing metric is `None`), or `None` when
    /// the point failed.
    pub metrics: Option<Vec<Option<f64>>>,
}

impl SweepPoint {
    /// The key metrics of a single run.
    pub fn metrics_of_run(summary: &Summary) -> Vec<Option<f64>> {
        KEY_METRICS
            .iter()
            .map(|(tag, stat, _)| {
                let m = summary.metric(tag)?;
                let value = match *stat {
                    "avg" => Some(m.avg),
                    "p99" => m.p99,
                    _ => None,
                };
                value.filter(|v| v.is_finite())
            })
            .collect()
    }

    /// The key metrics of a multi-run point: the means over its runs.
    pub fn metrics_of_runs(aggregate: &ConfidenceAggregate) -> Vec<Option<f64>> {
        KEY_METRICS
            .iter()
            .map(|(tag, stat, _)| aggregate.metric(&format!("{tag}_{stat}")).map(|s| s.mean))
            .collect()
    }

    fn metric(&self, key: &str) -> Option<f64> {
        let index = KEY_METRICS
            .iter()
            .position(|(tag, stat, _)| format!("{tag}_{stat}") == key)?;
        self.metrics.as_ref()?.get(index).copied().flatten()
    }

    /// (throughput, latency) for the Pareto front, when the point has both.
    fn objectives(&self) -> Option<(f64, f64)> {
        let throughput = self
            .metric(PARETO_THROUGHPUT)
            .or_else(|| self.metric("request_throughput_avg"))?;
        Some((throughput, self.metric(PARETO_LATENCY)?))
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
    /// The Pareto flag of every point, in order.
    pub fn pareto_flags(&self) -> Vec<bool> {
        let objectives: Vec<Option<(f64, f64)>> =
            self.points.iter().map(SweepPoint::objectives).collect();
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
            let values = point.metrics.clone().unwrap_or_default();
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
            match &point.metrics {
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
    if point.metrics.is_some() {
        "ok"
    } else {
        "failed"
    }
}

struct SweepJson<'a>(&'a SweepSummary);

impl Serialize for SweepJson<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let s = self.0;
        let flags = s.pareto_flags();
        let points: Vec<PointJson<'_>> = s
            .points
            .iter()
            .zip(&flags)
            .map(|(point, &pareto_optimal)| PointJson {
                point,
                pareto_optimal,
            })
            .collect();
        let mut map = serializer.serialize_map(Some(4))?;
        map.serialize_entry("schema_version", "1.0")?;
        map.serialize_entry("aiperf_version", AIPERF_COMPAT_VERSION)?;
        map.serialize_entry(
            "metadata",
            &MetadataJson {
                aggregation_type: "sweep",
                sweep_type: &s.sweep_type,
                parameters: s.parameter_names(),
                num_points: s.points.len(),
                num_successful_points: s.points.iter().filter(|p| p.metrics.is_some()).count(),
                pareto_objectives: ParetoObjectives {
                    maximize: PARETO_THROUGHPUT,
                    minimize: PARETO_LATENCY,
                },
                pareto_optimal_points: s
                    .points
                    .iter()
                    .zip(&flags)
                    .filter(|(_, &optimal)| optimal)
                    .map(|(p, _)| p.label.as_str())
                    .collect(),
            },
        )?;
        map.serialize_entry("points", &points)?;
        map.end()
    }
}

#[derive(Serialize)]
struct MetadataJson<'a> {
    aggregation_type: &'static str,
    sweep_type: &'a str,
    parameters: Vec<&'a str>,
    num_points: usize,
    num_successful_points: usize,
    pareto_objectives: ParetoObjectives,
    pareto_optimal_points: Vec<&'a str>,
}

#[derive(Serialize)]
struct ParetoObjectives {
    maximize: &'static str,
    minimize: &'static str,
}

struct PointJson<'a> {
    point: &'a SweepPoint,
    pareto_optimal: bool,
}

impl Serialize for PointJson<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let p = self.point;
        let mut map = serializer.serialize_map(Some(5))?;
        map.serialize_entry("label", &p.label)?;
        map.serialize_entry("parameters", &ParametersJson(&p.parameters))?;
        map.serialize_entry("status", status(p))?;
        let metrics = p.metrics.as_ref().map(|values| MetricValuesJson(values));
        map.serialize_entry("metrics", &metrics)?;
        map.serialize_entry("pareto_optimal", &self.pareto_optimal)?;
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

struct MetricValuesJson<'a>(&'a [Option<f64>]);

impl Serialize for MetricValuesJson<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(KEY_METRICS.len()))?;
        for ((tag, stat, _), value) in KEY_METRICS.iter().zip(self.0) {
            map.serialize_entry(&format!("{tag}_{stat}"), value)?;
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

    fn point(concurrency: f64, throughput: f64, latency: f64) -> SweepPoint {
        SweepPoint {
            label: format!("concurrency_{concurrency}"),
            parameters: vec![SweepParameter {
                name: "concurrency".into(),
                value: concurrency,
            }],
            metrics: Some(vec![
                Some(throughput / 10.0),
                Some(throughput),
                Some(5.0),
                Some(6.0),
                None,
                None,
                Some(latency),
                Some(latency * 2.0),
            ]),
        }
    }

    fn summary() -> SweepSummary {
        let failed = SweepPoint {
            label: "concurrency_8".into(),
            parameters: vec![SweepParameter {
                name: "concurrency".into(),
                value: 8.0,
            }],
            metrics: None,
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
                "concurrency_1,1,ok,10.00,100.00,5.00,6.00,,,10.00,20.00,true",
                "concurrency_2,2,ok,15.00,150.00,5.00,6.00,,,30.00,60.00,false",
                "concurrency_4,4,ok,20.00,200.00,5.00,6.00,,,20.00,40.00,true",
                "concurrency_8,8,failed,,,,,,,,,false",
            ]
        );
    }

    #[test]
    fn the_json_names_the_parameters_and_the_optimal_points() {
        let json: serde_json::Value =
            serde_json::from_str(&summary().to_json_string().unwrap()).unwrap();
        let meta = &json["metadata"];
        assert_eq!(meta["sweep_type"], "grid");
        assert_eq!(meta["parameters"], serde_json::json!(["concurrency"]));
        assert_eq!(meta["num_points"], 4);
        assert_eq!(meta["num_successful_points"], 3);
        assert_eq!(
            meta["pareto_optimal_points"],
            serde_json::json!(["concurrency_1", "concurrency_4"])
        );
        let second = &json["points"][1];
        assert_eq!(second["label"], "concurrency_2");
        assert_eq!(second["parameters"]["concurrency"], 2.0);
        assert_eq!(second["metrics"]["request_latency_avg"], 30.0);
        assert!(second["metrics"]["inter_token_latency_avg"].is_null());
        assert_eq!(second["pareto_optimal"], false);
        assert_eq!(json["points"][3]["status"], "failed");
        assert!(json["points"][3]["metrics"].is_null());
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
        assert!(row("concurrency_1")
            .trim_end_matches('│')
            .trim_end()
            .ends_with('*'));
        assert!(!row("concurrency_2").contains('*'));
        assert!(row("concurrency_8").contains("failed"));
    }
}
