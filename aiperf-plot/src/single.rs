//! The charts of one run.

use std::collections::BTreeMap;

use aiperf_metrics::artifacts::Timeslice;

use crate::artifacts::{GpuSample, RequestRow, SingleRun};
use crate::chart::{Axis, Body, Chart, Mark, Series};
use crate::series::{self, thin, wants_log_scale};

/// Scatter charts keep at most this many requests (evenly strided beyond it).
const MAX_DOTS: usize = 5_000;
/// Histogram bins at most; fewer for few requests (twice the square root of their number,
/// at least 10) so that bars are not mostly empty.
const MAX_BINS: usize = 40;

/// Every chart the run's files allow, in report order. A chart whose data is missing
/// (a non-streaming run has no ITL, a run without `--slice-duration` no timeslices) is left
/// out.
pub fn charts(run: &SingleRun) -> Vec<Chart> {
    let ok: Vec<&RequestRow> = run.records.iter().filter(|r| !r.failed).collect();
    let mut charts = Vec::new();
    charts.extend(distribution(
        "ttft_distribution",
        "Time to first token",
        "time to first token (ms)",
        ok.iter().filter_map(|r| r.ttft_ms),
    ));
    charts.extend(distribution(
        "itl_distribution",
        "Inter-token latency, mean per request",
        "inter-token latency (ms)",
        ok.iter().filter_map(|r| r.itl_ms),
    ));
    charts.extend(distribution(
        "latency_distribution",
        "Request latency",
        "request latency (ms)",
        ok.iter().filter_map(|r| r.latency_ms),
    ));
    charts.extend(ttft_vs_isl(&ok));
    charts.extend(ttft_over_time(&ok));
    charts.extend(latency_over_time(&ok));
    charts.extend(inter_chunk_by_position(&run.records));
    charts.extend(isl_vs_osl(&ok));
    charts.extend(throughput_over_time(run));
    charts.extend(gpu_over_time(
        run,
        "gpu_utilization_over_time",
        "GPU utilization over time",
        "GPU utilization (%)",
        |s| s.utilization_pct,
    ));
    charts.extend(gpu_over_time(
        run,
        "gpu_power_over_time",
        "GPU power over time",
        "GPU power (W)",
        |s| s.power_w,
    ));
    charts.extend(timeslice_latency(
        &run.timeslices,
        "timeslices_ttft",
        "Time to first token per time slice",
        "time_to_first_token",
        "time to first token (ms)",
    ));
    charts.extend(timeslice_latency(
        &run.timeslices,
        "timeslices_itl",
        "Inter-token latency per time slice",
        "inter_token_latency",
        "inter-token latency (ms)",
    ));
    charts
}

fn distribution(
    name: &str,
    title: &str,
    label: &str,
    values: impl Iterator<Item = f64>,
) -> Option<Chart> {
    let values: Vec<f64> = values.collect();
    if values.is_empty() {
        return None;
    }
    let log = wants_log_scale(values.iter().copied());
    Some(Chart {
        name: name.into(),
        title: format!("{title} ({} requests)", values.len()),
        x: Axis::scaled(label, log),
        y: Axis::from_zero("requests"),
        body: Body::Histogram {
            bins: series::histogram(&values, bins_for(values.len()), log),
        },
    })
}

fn bins_for(values: usize) -> usize {
    ((2.0 * (values as f64).sqrt()).ceil() as usize).clamp(10, MAX_BINS)
}

/// Dots of `(x, y)` pairs, thinned to [`MAX_DOTS`]; the title says when it was thinned.
fn dots(points: Vec<[f64; 2]>, name: &str, title: &str) -> (Series, String) {
    let total = points.len();
    let (kept, stride) = thin(&points, MAX_DOTS);
    let title = if stride > 1 {
        format!("{title} (1 in {stride} of {total} requests)")
    } else {
        format!("{title} ({total} requests)")
    };
    (Series::new(name, Mark::Dots, kept), title)
}

fn ttft_vs_isl(rows: &[&RequestRow]) -> Option<Chart> {
    let points: Vec<[f64; 2]> = rows
        .iter()
        .filter_map(|r| Some([r.isl?, r.ttft_ms?]))
        .collect();
    if points.is_empty() {
        return None;
    }
    let log = wants_log_scale(points.iter().map(|p| p[1]));
    let (series, title) = dots(points, "requests", "Time to first token vs input length");
    Some(Chart {
        name: "ttft_vs_isl".into(),
        title,
        x: Axis::linear("input sequence length (tokens)"),
        y: Axis::scaled("time to first token (ms)", log),
        body: Body::Xy {
            series: vec![series],
        },
    })
}

/// Successful requests in the order they were sent.
fn by_start<'a>(rows: &[&'a RequestRow]) -> Vec<&'a RequestRow> {
    let mut sorted = rows.to_vec();
    sorted.sort_by_key(|r| r.start_ns);
    sorted
}

fn ttft_over_time(rows: &[&RequestRow]) -> Option<Chart> {
    let points: Vec<[f64; 2]> = by_start(rows)
        .iter()
        .filter_map(|r| r.ttft_ms)
        .enumerate()
        .map(|(i, ttft)| [i as f64, ttft])
        .collect();
    if points.is_empty() {
        return None;
    }
    let log = wants_log_scale(points.iter().map(|p| p[1]));
    let (series, title) = dots(points, "requests", "Time to first token by request");
    Some(Chart {
        name: "ttft_over_time".into(),
        title,
        x: Axis::linear("request number (in order sent)"),
        y: Axis::scaled("time to first token (ms)", log),
        body: Body::Xy {
            series: vec![series],
        },
    })
}

/// Request latency and TTFT at each request's end, in seconds since the first request.
fn latency_over_time(rows: &[&RequestRow]) -> Option<Chart> {
    let origin = rows.iter().filter_map(|r| r.start_ns).min()?;
    let seconds = |ns: u64| ns.saturating_sub(origin) as f64 / 1e9;
    let latency: Vec<[f64; 2]> = rows
        .iter()
        .filter_map(|r| Some([seconds(r.end_ns?), r.latency_ms?]))
        .collect();
    let ttft: Vec<[f64; 2]> = rows
        .iter()
        .filter_map(|r| Some([seconds(r.end_ns?), r.ttft_ms?]))
        .collect();
    if latency.is_empty() {
        return None;
    }
    let log = wants_log_scale(latency.iter().chain(&ttft).map(|p| p[1]));
    let (latency, title) = dots(latency, "request latency", "Latency over time");
    let mut series = vec![latency];
    if !ttft.is_empty() {
        series.push(dots(ttft, "time to first token", "").0);
    }
    Some(Chart {
        name: "latency_over_time".into(),
        title,
        x: Axis::linear("time since the first request was sent (s, at request end)"),
        y: Axis::scaled("latency (ms)", log),
        body: Body::Xy { series },
    })
}

fn inter_chunk_by_position(rows: &[RequestRow]) -> Option<Chart> {
    let stats = series::inter_chunk_by_position(rows);
    if stats.is_empty() {
        return None;
    }
    let line = |name: &str, pick: fn(&series::PositionStats) -> f64| {
        Series::new(
            name,
            Mark::Line,
            stats.iter().map(|s| [s.position as f64, pick(s)]).collect(),
        )
    };
    let series = vec![
        line("mean", |s| s.mean),
        line("p50", |s| s.p50),
        line("p90", |s| s.p90),
    ];
    // A zero gap (chunks merged by the server) rules out a log axis.
    let log = wants_log_scale(series.iter().flat_map(|s| s.points.iter().map(|p| p[1])));
    Some(Chart {
        name: "itl_by_position".into(),
        title: "Inter-chunk latency by position in the response".into(),
        x: Axis::linear("chunk position (1 = gap before the second chunk)"),
        y: Axis::scaled("inter-chunk latency (ms)", log),
        body: Body::Xy { series },
    })
}

fn isl_vs_osl(rows: &[&RequestRow]) -> Option<Chart> {
    let points: Vec<[f64; 2]> = rows.iter().filter_map(|r| Some([r.isl?, r.osl?])).collect();
    if points.is_empty() {
        return None;
    }
    let (series, title) = dots(points, "requests", "Input vs output length");
    Some(Chart {
        name: "isl_vs_osl".into(),
        title,
        x: Axis::linear("input sequence length (tokens)"),
        y: Axis::linear("output sequence length (tokens)"),
        body: Body::Xy {
            series: vec![series],
        },
    })
}

/// From the timeslices when the run has them (the server's view per slice), otherwise
/// binned from the records.
fn throughput_over_time(run: &SingleRun) -> Option<Chart> {
    let from_slices = slice_points(&run.timeslices, "output_token_throughput", "avg");
    let (points, source) = if from_slices.is_empty() {
        let binned: Vec<[f64; 2]> = series::output_throughput_over_time(&run.records)
            .into_iter()
            .map(|(t, rate)| [t, rate])
            .collect();
        (binned, "records binned by end time")
    } else {
        (from_slices, "per time slice")
    };
    if points.is_empty() {
        return None;
    }
    Some(Chart {
        name: "throughput_over_time".into(),
        title: format!("Output token throughput over time ({source})"),
        x: Axis::linear(slice_axis_label(&run.timeslices, source)),
        y: Axis::from_zero("output token throughput (tokens/s)"),
        body: Body::Xy {
            series: vec![Series::new("output tokens/s", Mark::Line, points)],
        },
    })
}

/// One line per GPU of a telemetry reading, on the time axis of the other charts (seconds
/// since the first request was sent; since the first scrape without records).
fn gpu_over_time(
    run: &SingleRun,
    name: &str,
    title: &str,
    label: &str,
    reading: fn(&GpuSample) -> Option<f64>,
) -> Option<Chart> {
    let first_scrape = run.gpu_samples.iter().map(|s| s.timestamp_ns).min()?;
    let origin = run
        .records
        .iter()
        .filter_map(|r| r.start_ns)
        .min()
        .unwrap_or(first_scrape);
    let several_endpoints = run
        .gpu_samples
        .iter()
        .any(|s| s.endpoint != run.gpu_samples[0].endpoint);
    let mut lines: BTreeMap<String, Vec<[f64; 2]>> = BTreeMap::new();
    for sample in &run.gpu_samples {
        let Some(value) = reading(sample) else {
            continue;
        };
        let gpu = if several_endpoints {
            format!("{} GPU {}", sample.endpoint, sample.gpu_index)
        } else {
            format!("GPU {}", sample.gpu_index)
        };
        let seconds = (sample.timestamp_ns as f64 - origin as f64) / 1e9;
        lines.entry(gpu).or_default().push([seconds, value]);
    }
    if lines.is_empty() {
        return None;
    }
    let series = lines
        .into_iter()
        .map(|(gpu, mut points)| {
            points.sort_by(|a, b| a[0].total_cmp(&b[0]));
            Series::new(gpu, Mark::Line, points)
        })
        .collect();
    Some(Chart {
        name: name.into(),
        title: title.into(),
        x: Axis::linear("time since the first request was sent (s)"),
        y: Axis::from_zero(label),
        body: Body::Xy { series },
    })
}

fn slice_axis_label(slices: &[Timeslice], source: &str) -> &'static str {
    let timed = slices.first().is_some_and(|s| s.start_ns.is_some());
    if source == "per time slice" && !timed {
        "time slice (index)"
    } else if source == "per time slice" {
        "time since the first slice began (s, slice start)"
    } else {
        "time since the first request was sent (s)"
    }
}

/// `(slice start in s since the first slice, or the slice index; value)` of one statistic.
fn slice_points(slices: &[Timeslice], tag: &str, stat: &str) -> Vec<[f64; 2]> {
    let origin = slices.iter().filter_map(|s| s.start_ns).min();
    slices
        .iter()
        .enumerate()
        .filter_map(|(index, slice)| {
            let value = *slice.metrics.get(tag)?.stats.get(stat)?;
            let x = match (origin, slice.start_ns) {
                (Some(origin), Some(start)) => start.saturating_sub(origin) as f64 / 1e9,
                _ => index as f64,
            };
            Some([x, value])
        })
        .collect()
}

fn timeslice_latency(
    slices: &[Timeslice],
    name: &str,
    title: &str,
    tag: &str,
    label: &str,
) -> Option<Chart> {
    let series: Vec<Series> = ["avg", "p50", "p90", "p99"]
        .into_iter()
        .map(|stat| Series::new(stat, Mark::Line, slice_points(slices, tag, stat)))
        .filter(|s| !s.points.is_empty())
        .collect();
    if series.is_empty() {
        return None;
    }
    let log = wants_log_scale(series.iter().flat_map(|s| s.points.iter().map(|p| p[1])));
    Some(Chart {
        name: name.into(),
        title: title.into(),
        x: Axis::linear(slice_axis_label(slices, "per time slice")),
        y: Axis::scaled(label, log),
        body: Body::Xy { series },
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use aiperf_metrics::artifacts::{MetricStats, RunSummary};

    fn run(records: Vec<RequestRow>, timeslices: Vec<Timeslice>) -> SingleRun {
        SingleRun {
            dir: "run".into(),
            summary: RunSummary::default(),
            records,
            timeslices,
            gpu_samples: Vec::new(),
        }
    }

    fn names(charts: &[Chart]) -> Vec<&str> {
        charts.iter().map(|c| c.name.as_str()).collect()
    }

    #[test]
    fn a_non_streaming_run_without_slices_gets_the_charts_its_data_allows() {
        let row = |i: u64| RequestRow {
            start_ns: Some(i * 1_000_000_000),
            end_ns: Some(i * 1_000_000_000 + 500_000_000),
            ttft_ms: Some(500.0),
            latency_ms: Some(500.0),
            isl: Some(100.0),
            osl: Some(10.0),
            ..RequestRow::default()
        };
        let charts = charts(&run((0..4).map(row).collect(), Vec::new()));
        crate::kinds::assert_listed(&charts);
        assert_eq!(
            names(&charts),
            [
                "ttft_distribution",
                "latency_distribution",
                "ttft_vs_isl",
                "ttft_over_time",
                "latency_over_time",
                "isl_vs_osl",
                "throughput_over_time"
            ]
        );
        assert_eq!(charts[0].title, "Time to first token (4 requests)");
        assert_eq!(
            charts[6].title,
            "Output token throughput over time (records binned by end time)"
        );
    }

    #[test]
    fn timeslices_give_throughput_and_latency_per_slice_in_seconds() {
        let slice = |start_s: u64, rate: f64, ttft: f64| Timeslice {
            start_ns: Some(start_s * 1_000_000_000),
            metrics: [
                (
                    "output_token_throughput".to_string(),
                    MetricStats {
                        unit: "tokens/sec".into(),
                        stats: [("avg".to_string(), rate)].into(),
                    },
                ),
                (
                    "time_to_first_token".to_string(),
                    MetricStats {
                        unit: "ms".into(),
                        stats: [("avg".to_string(), ttft), ("p99".to_string(), ttft * 2.0)].into(),
                    },
                ),
            ]
            .into(),
        };
        let charts = charts(&run(
            Vec::new(),
            vec![slice(100, 50.0, 10.0), slice(102, 70.0, 12.0)],
        ));
        crate::kinds::assert_listed(&charts);
        assert_eq!(names(&charts), ["throughput_over_time", "timeslices_ttft"]);
        let Body::Xy { series } = &charts[0].body else {
            panic!("xy chart");
        };
        assert_eq!(series[0].points, [[0.0, 50.0], [2.0, 70.0]]);
        let Body::Xy { series } = &charts[1].body else {
            panic!("xy chart");
        };
        let stats: Vec<&str> = series.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(stats, ["avg", "p99"]);
        assert_eq!(series[1].points, [[0.0, 20.0], [2.0, 24.0]]);
    }

    #[test]
    fn gpu_readings_are_one_line_per_gpu_timed_from_the_first_request() {
        let mut run = run(
            vec![RequestRow {
                start_ns: Some(10_000_000_000),
                ..RequestRow::default()
            }],
            Vec::new(),
        );
        let sample = |at_s: u64, gpu: &str, utilization: f64| GpuSample {
            timestamp_ns: at_s * 1_000_000_000,
            endpoint: "h:9400".into(),
            gpu_index: gpu.into(),
            utilization_pct: Some(utilization),
            power_w: None,
        };
        run.gpu_samples = vec![
            sample(12, "1", 30.0),
            sample(11, "0", 50.0),
            sample(9, "0", 0.0),
        ];
        let charts = charts(&run);
        crate::kinds::assert_listed(&charts);
        let chart = charts
            .iter()
            .find(|c| c.name == "gpu_utilization_over_time")
            .expect("utilization chart");
        assert!(!charts.iter().any(|c| c.name == "gpu_power_over_time"));
        let Body::Xy { series } = &chart.body else {
            panic!("xy chart");
        };
        assert_eq!(series[0].name, "GPU 0");
        assert_eq!(series[0].points, [[-1.0, 0.0], [1.0, 50.0]]);
        assert_eq!(series[1].points, [[2.0, 30.0]]);
    }

    #[test]
    fn latency_spanning_decades_gets_a_log_axis() {
        let rows: Vec<RequestRow> = [1.0, 10.0, 1000.0]
            .into_iter()
            .map(|ttft| RequestRow {
                ttft_ms: Some(ttft),
                ..RequestRow::default()
            })
            .collect();
        let chart = &charts(&run(rows, Vec::new()))[0];
        assert!(chart.x.log);
        assert_eq!(chart.x.label, "time to first token (ms)");
    }
}
