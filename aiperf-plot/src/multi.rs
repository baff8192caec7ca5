//! The charts comparing several runs: Pareto curves and per-run bars.

use crate::chart::{Axis, BarGroup, Body, Chart, Mark, Series};
use crate::series::pareto_front;
use aiperf_metrics::artifacts::RunSummary;

/// A run of a comparison with its summary.
#[derive(Debug, Clone)]
pub struct ComparedRun {
    /// The run's label (its path relative to the folder given).
    pub label: String,
    /// Its summary.
    pub summary: RunSummary,
}

/// Every comparison chart the summaries allow, in report order.
pub fn charts(runs: &[ComparedRun]) -> Vec<Chart> {
    let mut charts = Vec::new();
    charts.extend(pareto(
        runs,
        "pareto_throughput_vs_latency",
        "Output token throughput vs request latency",
        (Axis::linear("request latency, average (ms)"), false),
        |s| s.stat("request_latency", "avg"),
        |s| s.stat("output_token_throughput", "avg"),
        "output token throughput (tokens/s)",
    ));
    let per_gpu = runs
        .iter()
        .all(|r| throughput_per_gpu(&r.summary).is_some());
    let (y_label, y_value): (&str, fn(&RunSummary) -> Option<f64>) = if per_gpu {
        (
            "output token throughput per GPU (tokens/s/GPU)",
            throughput_per_gpu,
        )
    } else {
        // Without GPU telemetry the GPU count is unknown: compare whole runs instead.
        (
            "output token throughput per run (tokens/s, GPU count unknown)",
            |s| s.stat("output_token_throughput", "avg"),
        )
    };
    charts.extend(pareto(
        runs,
        "pareto_throughput_per_gpu_vs_interactivity",
        "Throughput vs interactivity (tokens/s per user)",
        (
            Axis::linear("output token throughput per user, average (tokens/s/user)"),
            true,
        ),
        |s| s.stat("output_token_throughput_per_user", "avg"),
        y_value,
        y_label,
    ));
    for (name, title, tag, label) in [
        (
            "ttft_by_run",
            "Time to first token by run",
            "time_to_first_token",
            "time to first token (ms)",
        ),
        (
            "itl_by_run",
            "Inter-token latency by run",
            "inter_token_latency",
            "inter-token latency (ms)",
        ),
        (
            "latency_by_run",
            "Request latency by run",
            "request_latency",
            "request latency (ms)",
        ),
    ] {
        charts.extend(bars(runs, name, title, tag, &["avg", "p99"], label));
    }
    charts.extend(bars(
        runs,
        "throughput_by_run",
        "Output token throughput by run",
        "output_token_throughput",
        &["avg"],
        "output token throughput (tokens/s)",
    ));
    charts
}

/// Output token throughput per GPU: the run's own metric when it has one, else the
/// throughput divided by the GPUs the telemetry saw.
fn throughput_per_gpu(summary: &RunSummary) -> Option<f64> {
    summary
        .stat("output_token_throughput_per_gpu", "avg")
        .or_else(|| {
            let gpus = summary.gpu_count?;
            Some(summary.stat("output_token_throughput", "avg")? / gpus as f64)
        })
}

/// Runs as labelled markers with the Pareto front drawn through the best ones; y is always
/// higher-better (throughput), x is higher-better when `x.1`.
fn pareto(
    runs: &[ComparedRun],
    name: &str,
    title: &str,
    x: (Axis, bool),
    x_value: fn(&RunSummary) -> Option<f64>,
    y_value: fn(&RunSummary) -> Option<f64>,
    y_label: &str,
) -> Option<Chart> {
    let (x_axis, higher_x_better) = x;
    let (labels, points): (Vec<String>, Vec<(f64, f64)>) = runs
        .iter()
        .filter_map(|r| {
            Some((
                r.label.clone(),
                (x_value(&r.summary)?, y_value(&r.summary)?),
            ))
        })
        .unzip();
    if points.is_empty() {
        return None;
    }
    let front = pareto_front(&points, higher_x_better, true);
    let as_array = |&(x, y): &(f64, f64)| [x, y];
    let mut runs_series = Series::new("runs", Mark::Markers, points.iter().map(as_array).collect());
    runs_series.point_labels = labels;
    let front_series = Series::new(
        "Pareto front",
        Mark::Highlight,
        front.iter().map(|&i| as_array(&points[i])).collect(),
    );
    Some(Chart {
        name: name.into(),
        title: title.into(),
        x: x_axis,
        y: Axis::linear(y_label),
        body: Body::Xy {
            series: vec![runs_series, front_series],
        },
    })
}

fn bars(
    runs: &[ComparedRun],
    name: &str,
    title: &str,
    tag: &str,
    stats: &[&str],
    label: &str,
) -> Option<Chart> {
    let groups: Vec<BarGroup> = stats
        .iter()
        .map(|stat| BarGroup {
            name: (*stat).into(),
            values: runs.iter().map(|r| r.summary.stat(tag, stat)).collect(),
        })
        .filter(|g| g.values.iter().any(Option::is_some))
        .collect();
    if groups.is_empty() {
        return None;
    }
    Some(Chart {
        name: name.into(),
        title: title.into(),
        x: Axis::from_zero(label),
        y: Axis::linear("run"),
        body: Body::Bars {
            categories: runs.iter().map(|r| r.label.clone()).collect(),
            groups,
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use aiperf_metrics::artifacts::MetricStats;

    fn run(
        label: &str,
        latency: f64,
        throughput: f64,
        per_user: f64,
        gpus: Option<usize>,
    ) -> ComparedRun {
        let metric = |unit: &str, avg: f64| MetricStats {
            unit: unit.into(),
            stats: [("avg".to_string(), avg), ("p99".to_string(), avg * 2.0)].into(),
        };
        ComparedRun {
            label: label.into(),
            summary: RunSummary {
                metrics: [
                    ("request_latency".to_string(), metric("ms", latency)),
                    (
                        "output_token_throughput".to_string(),
                        metric("tokens/sec", throughput),
                    ),
                    (
                        "output_token_throughput_per_user".to_string(),
                        metric("tokens/sec/user", per_user),
                    ),
                ]
                .into(),
                gpu_count: gpus,
            },
        }
    }

    #[test]
    fn comparison_charts_mark_the_pareto_front_and_divide_by_gpus() {
        let runs = [
            run("c1", 100.0, 1000.0, 90.0, Some(2)),
            run("c4", 150.0, 900.0, 80.0, Some(2)),
            run("c8", 300.0, 3000.0, 60.0, Some(2)),
        ];
        let charts = charts(&runs);
        crate::kinds::assert_listed(&charts);
        let names: Vec<&str> = charts.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "pareto_throughput_vs_latency",
                "pareto_throughput_per_gpu_vs_interactivity",
                "latency_by_run",
                "throughput_by_run"
            ]
        );
        let Body::Xy { series } = &charts[0].body else {
            panic!("xy");
        };
        assert_eq!(series[1].points, [[100.0, 1000.0], [300.0, 3000.0]]);
        assert_eq!(series[0].point_labels, ["c1", "c4", "c8"]);

        let Body::Xy { series } = &charts[1].body else {
            panic!("xy");
        };
        assert_eq!(
            charts[1].y.label,
            "output token throughput per GPU (tokens/s/GPU)"
        );
        assert_eq!(series[0].points[2], [60.0, 1500.0]);
        // Interactivity and throughput both higher-better: c1 and c8 trade off, c4 loses.
        assert_eq!(series[1].points, [[60.0, 1500.0], [90.0, 500.0]]);

        let Body::Bars { categories, groups } = &charts[2].body else {
            panic!("bars");
        };
        assert_eq!(categories, &["c1", "c4", "c8"]);
        assert_eq!(groups[1].name, "p99");
        assert_eq!(groups[1].values, [Some(200.0), Some(300.0), Some(600.0)]);
    }

    #[test]
    fn without_gpu_counts_throughput_is_per_run() {
        let runs = [
            run("a", 1.0, 10.0, 5.0, None),
            run("b", 2.0, 20.0, 4.0, Some(1)),
        ];
        let charts = charts(&runs);
        crate::kinds::assert_listed(&charts);
        assert_eq!(
            charts[1].y.label,
            "output token throughput per run (tokens/s, GPU count unknown)"
        );
    }
}
